"""Streaming decides every delimiter from a bounded look (docs/FORMATS.md §9, issue 27): on the team's examples
in models/, long outputs are fed to transformers' own ``ResponseParser`` a few characters at a time, and the
text it holds back (read but not yet emitted as a region chunk) stays within a marker's or a call head's length,
whatever the output's length; the streamed message equals the one-shot ``parse_response``. And each decision
is local: the open of a later call matches the same on the text cut a few hundred characters before it (no
look back to the section's start)."""

from __future__ import annotations

import json
from pathlib import Path

import regex
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.cli.parse import generation_prompt
from autoparser.emit.streamed_calls import CALL_WINDOW
from autoparser.emit.template import bounded_whitespace

MODELS = Path(__file__).resolve().parents[1] / "models"
HEAD = 300  # more than any marker or call head in these examples; far less than the outputs below


def _stream(name: str, text: str, delta: int = 4, **switches) -> tuple[dict, int]:
    """(the streamed message, the most characters held back after any delta); asserts it equals one-shot.
    ``switches``: the template's own (``enable_thinking``), for the prompt."""
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src, **switches)
    p = ResponseParser(template, prefix=prefix)
    held = 0
    for i in range(0, len(text), delta):
        p.feed(text[i : i + delta])
        held = max(held, len(p._buffer) - p._pos)
    msg = p.finalize()[0]
    assert msg == parse_response(text, template, prefix=prefix)
    return msg, held


def _args(i: int) -> dict:
    return {"query": f"select * from t where id = {i} and x = '{{}}'", "n": {"a": [i, {"b": i}]}}


def test_a_keyed_json_array_streams_call_by_call():
    """``<|calls|>[{"id", "name", "arguments"}, …]``: each call opens on its keyed head; the array read whole
    held every call back until its end (``_json_keyed``)."""
    calls = [{"id": f"c{i}", "name": f"f{i % 3}", "arguments": _args(i)} for i in range(60)]
    text = "<|calls|>[" + ", ".join(json.dumps(c) for c in calls) + "]<|eot|>"
    msg, held = _stream("json-array-ids", text)
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == \
        [(c["id"], c["name"], c["arguments"]) for c in calls]
    assert held < HEAD, held


def test_a_keyed_json_call_without_its_id_still_parses():
    msg, _ = _stream("json-array-ids", '<|calls|>[{"name": "f", "arguments": {"a": 1}}, {"id": "x", "name": "g", "arguments": {}}]<|eot|>')
    assert [(c["id"], c["function"]["name"]) for c in msg["tool_calls"]] == [("", "f"), ("x", "g")]


def test_a_fenced_action_block_streams_call_by_call():
    """``Action: ```json [{"tool_name", "parameters"}, …] ``` `` (Command R+'s layout)."""
    calls = [{"tool_name": f"f{i % 3}", "parameters": _args(i)} for i in range(40)]
    text = "Action:\n```json\n" + json.dumps(calls, indent=4) + "\n```<|end|>"
    msg, held = _stream("action-fence-json", text)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == \
        [(c["tool_name"], c["parameters"]) for c in calls]
    assert held < HEAD, held


def test_whitespace_in_a_lookbehind_after_a_marker_is_possessive():
    r"""A content open that looks behind for the markers it follows (Command R7B's
    ``(?<=(?:<|END_RESPONSE|>|…)\s*)``): the ``regex`` module's partial search reported that lookbehind,
    failing, as a partial match from a space to the buffer's end, so a stream held everything after it (Command
    R7B's calls, 99% of the output). Taken possessively after a marker it does not; the matches are the same."""
    source = r"(?<=(?:<\|END_RESPONSE\|>|<\|END_THINKING\|>|<\|END_ACTION\|>)\s*)(?=\s*+[^\s<])"
    pattern = bounded_whitespace(source + r"|(?<=\}\s*,\s*)\{|(?<=[ab]\s*)")
    assert pattern == (r"(?<=(?:<\|END_RESPONSE\|>|<\|END_THINKING\|>|<\|END_ACTION\|>)\s{0,64}+)(?=\s{0,64}+[^\s<])"
                       r"|(?<=\}\s{0,64}+,\s{0,64}+)\{|(?<=[ab]\s{0,64})")
    text = '<|START_ACTION|>[\n    {"a": 1}},\n    {"tool_call_id": "1", "tool_name": "run_query", "p'
    m = regex.compile(bounded_whitespace(source)).search(text, 30, partial=True)
    assert m is None or m.start() == len(text), m
    for done in ("<|END_ACTION|>\n  Answer", "<|END_THINKING|>Answer"):
        assert regex.compile(bounded_whitespace(source)).search(done).start() == done.index(">") + 1


def test_bare_json_calls_stream_call_by_call():
    """``{"name", "parameters"}; {…}`` with no marker (Llama 3.x): each call opens on its head and closes on
    the object's ``}`` after its arguments; the whole object checked balanced before it opened held it back
    whole (``_bare_json_calls``)."""
    calls = [{"name": f"f{i % 3}", "parameters": _args(i)} for i in range(40)]
    # a long argument first, code whose brackets end before text: ``]}\n``, ``]})``, ``]} else``
    calls[0]["parameters"]["code"] = "def f():\n    print({'a': [1, 2]})\n    return {'a': [1, 2]} if x else {'b': {}}\n" * 60
    text = "; ".join(json.dumps(c) for c in calls) + " Done."
    msg, held = _stream("json-bare", text)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == \
        [(c["name"], c["parameters"]) for c in calls]
    assert msg["content"].strip() == "Done."
    assert held < HEAD, held


def test_a_later_pythonic_call_decides_without_the_section_start():
    """``<|python_start|>[f(…), g(…)]``: a later call opens where the previous call's close left the parser,
    not by looking back to the section's start (which re-read the section for every call)."""
    src = (MODELS / "pythonic-python-start.jinja").read_text(encoding="utf-8")
    field = autoparser.infer_result(src).template["fields"]["tool_calls"]
    opener = regex.compile(field["open_pattern"])
    calls = ", ".join(f'f{i}(query="select {i}", n={i})' for i in range(50))
    text = f"<|python_start|>[{calls}]<|python_end|>"
    at = text.index("f49(")
    cut = at - 40  # the same decision on the text from 40 characters before the call
    whole = opener.search(text, at - 2)
    assert whole is None or whole.start() != at - 2  # no call opens inside a separator without a close before it
    m = opener.search(text, at)  # where the previous call's close (which takes the separator) leaves the parser
    local = opener.search(text[cut:], at - cut)
    assert m is not None and m.group("name") == "f49"
    assert local is not None and local.span() == (m.start() - cut, m.end() - cut)


def test_prose_never_opens_a_later_pythonic_call():
    """In prose, ``max(a, b), min(c, d)`` streamed a character at a time stays content: the parser never stops
    between ``), `` and a name, where a later call may open."""
    text = "Use max(a, b), min(c, d) and sorted(x), reversed(y) here."
    msg, _ = _stream("pythonic-python-start", text, delta=1)
    assert msg["content"] == text and not msg.get("tool_calls")


def test_a_nested_call_array_streams_call_by_call():
    """``[{"id", "type", "function": {"name", "arguments"}}, …]`` with no marker (OpenAI's message shape, wild
    009): each call opens on its head, the arguments streamed as a region; the whole array's shape checked
    before it opened held it back whole and re-read it on every delta (``_json_nested``)."""
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": f"f{i % 3}", "arguments": _args(i)}} for i in range(40)]
    calls[0]["function"]["arguments"]["code"] = "x = {'a': [1, 2]}\n" * 400  # a long argument first
    calls[1] = {"type": "function", "function": {"arguments": _args(1), "name": "g"}, "id": "late"}  # keys in another order
    msg, held = _stream("json-after-reasoning", json.dumps(calls) + "<[assistant_end]>")
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == \
        [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls]
    assert held < HEAD, held
    # Not a call: an array of something else stays content, as does a call's head in prose.
    assert _stream("json-after-reasoning", "[1, 2]<[assistant_end]>")[0]["content"] == "[1, 2]"
    prose = 'See }, {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}] here.'
    assert _stream("json-after-reasoning", prose + "<[assistant_end]>", delta=1)[0] == {"role": "assistant", "content": prose}


def test_a_python_dict_call_streams_and_never_raises():
    """``<tool_call>{"arguments": {'k': 'v'}, "name": "f"}</tool_call>`` (a Python dict read with ``string_delims``,
    the name after the arguments: wild 063): the object is read whole (the engines' older parser drops a close's
    captures, so the name cannot be one), decided within ``CALL_WINDOW``; the whole-value check held it back
    whole. The json parser raises on a region holding its sentinels ``\\x01``/``\\x02`` (before
    ``allow_non_json``), so the region ends before one: nothing raised, nothing lost."""
    code = "x = [1, 2]; y = {3: 4}; " * 800  # (Python escapes come back escaped: not covered, §5)
    text = '<tool_call>\n{"arguments": ' + repr({"code": code, "n": 2}) + ', "name": "run"}\n</tool_call><end_of_utterance>'
    msg, held = _stream("json-repr-args", text)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("run", {"code": code, "n": 2})]
    assert held < CALL_WINDOW + 64, held
    short = '<tool_call>\n{"arguments": {\'a\': \'x\x01y\x02\'}, "name": "f"}\n</tool_call>'
    msg, _ = _stream("json-repr-args", short + "<end_of_utterance>", delta=1)
    assert msg == {"role": "assistant", "content": short}
    # A string holding both quote kinds (``'it\\'s "so"'``), which ``string_delims`` cannot read, in a long call's
    # window: content, as the whole-value check left it, not a call whose ``function`` is text (the engines drop it).
    both = '<tool_call>\n{"arguments": ' + repr({"q": 'it\'s "so" ' * 100}) + ', "name": "run"}\n</tool_call>'
    msg, held = _stream("json-repr-args", both + "<end_of_utterance>")
    assert msg == {"role": "assistant", "content": both} and held < CALL_WINDOW + 64, held
    cut = text.index("y = {3") + 2000
    msg, _ = _stream("json-repr-args", text[:cut] + "\x01" + text[cut:], delta=3)
    assert msg["tool_calls"][0]["function"] == text[len("<tool_call>\n"):cut].strip()  # its text, as a malformed call
    assert msg["content"].startswith("\x01")


def test_a_reply_of_calls_is_not_held_by_the_lone_close_window():
    """Thinking on, a model may reason without writing the opener (text before a lone close within 512
    characters is reasoning): a reply that starts with a call's marker gives that look up as soon as the marker
    is whole, so a run of calls is not held back by the window (wild 091: 512 characters). The tolerance is
    kept: opener-less reasoning, its close and a call."""
    calls = "".join(f'<tool_call>\n{{"name": "f", "arguments": {{"i": {i}}}}}\n</tool_call>' for i in range(40))
    msg, held = _stream("forced-closed-calls", calls + "<|/turn|>", enable_thinking=True)
    assert [c["function"]["arguments"] for c in msg["tool_calls"]] == [{"i": i} for i in range(40)]
    assert held < 100, held
    msg, _ = _stream("forced-closed-calls", "Plan it.<|/think|>" + calls[:80] + "<|/turn|>", enable_thinking=True)
    assert msg["thinking"] == "Plan it." and len(msg["tool_calls"]) == 1


def test_a_later_call_of_a_marker_less_json_run_decides_without_the_reply_start():
    """``{…}{…}`` / one call per line with no marker (Llama 4's JSON template): a later call opens where the
    previous call's close (which takes the separator) left the parser, not by looking back over every earlier
    call to the reply's start (which re-read the run for every call: quadratic)."""
    src = (MODELS / "json-glued.jinja").read_text(encoding="utf-8")
    field = autoparser.infer_result(src).template["fields"]["tool_calls"]
    opener = regex.compile(field["open_pattern"])
    calls = [{"name": f"f{i}", "parameters": _args(i)} for i in range(50)]
    text = "\n".join(json.dumps(c) for c in calls)
    at = text.index('{"name": "f49"')
    cut = at - 40  # the same decision on the text from 40 characters before the call
    m = opener.search(text, at)
    local = opener.search(text[cut:], at - cut)
    assert m is not None and m.group("name") == "f49"
    assert local is not None and local.span() == (m.start() - cut, m.end() - cut)
    msg, held = _stream("json-glued", text)
    assert [c["function"]["name"] for c in msg["tool_calls"]] == [c["name"] for c in calls]
    assert held < HEAD, held


def test_prose_never_opens_a_later_json_run_call():
    """After an object in prose, the next object opens a call only by its own head (a call object describes
    itself, docs/FORMATS.md §7b), never because a ``}`` and a separator came before it."""
    text = 'See {"a": 1}\n{"b": 2} here.'
    msg, _ = _stream("json-glued", text, delta=1)
    assert msg["content"] == text and not msg.get("tool_calls")
    msg, _ = _stream("json-glued", 'See {"a": 1}\n{"name": "f", "parameters": {}} Here.', delta=1)
    assert msg["content"] == 'See {"a": 1}\n\nHere.' and [c["function"]["name"] for c in msg["tool_calls"]] == ["f"], msg


def test_a_long_tagged_value_streams_without_being_held_back():
    """A 16 KB parameter value in models/function-in-wrapper.jinja (the Qwen3-Coder shape) streams with only a marker's
    length held back. A close alternative that began with a look back (the wrapper's end tag closing a call whose
    element close is left out) made the regex module's partial search hold the whole value: 99.5% of it."""
    value = "".join(f"line {i}: x = {{'k': [{i}]}} < y\n" for i in range(600))[:16000]
    text = f"<tool_call>\n<function=write>\n<parameter=text>\n{value}\n</parameter>\n</function>\n</tool_call>"
    msg, held = _stream("function-in-wrapper", text)
    assert msg["tool_calls"][0]["function"]["arguments"] == {"text": value.strip()}
    assert held < HEAD, held
