"""Calls in a spelling the template does not render, which the family's own parsers accept (issue 26), on
the team's examples in models/: each text is parsed with transformers' ``parse_response`` one-shot and
streamed through ``ResponseParser`` (both must agree). docs/FORMATS.md §7b, call spellings.
"""

from __future__ import annotations

import json

from pathlib import Path

import pytest
import transformers
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.cli.parse import generation_prompt

MODELS = Path(__file__).resolve().parents[1] / "models"


def _parse(name: str, text: str, tools: list | None = None, streamed=None) -> dict:
    """One-shot; streamed in chunks of 1, 3 and 7 characters, each must give the same message (or
    ``streamed(message, one_shot)`` must hold)."""
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, template, prefix=prefix, tools=tools)
    for size in (1, 3, 7):
        p = ResponseParser(template, prefix=prefix, tools=tools)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        got = p.finalize()[0]
        assert (streamed or (lambda a, b: a == b))(got, one), (name, text, size, got)
    return one


TRANSFORMERS_523 = transformers.__version__.startswith("5.23")


def _calls(msg: dict) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]


@pytest.mark.parametrize("text", [
    '[CALLS]get_weather[ID]call00001[ARGS]{"city": "Paris"}[END]',  # as rendered
    '[CALLS]get_weather[ARGS]{"city": "Paris"}[END]',  # the id marker left out with its id
    '[CALLS]get_weather{"city": "Paris"}[END]',  # every marker after the name left out
    '[CALLS]get_weather [ARGS] {"city": "Paris"}',
])
def test_bracket_markers_after_the_name_may_be_left_out(text):
    assert _calls(_parse("wrapped-bracket", text)) == [("get_weather", {"city": "Paris"})]


def test_a_bracket_name_without_arguments_is_no_call():
    """Without its arguments marker a name is a call only when the arguments' ``{`` follows it."""
    assert not _parse("wrapped-bracket", "[CALLS]get_weather and more[END]").get("tool_calls")


@pytest.mark.parametrize("text, calls", [
    ('R</think>\n<call name="get_time"/><|turn_end|>', [("get_time", {})]),
    ('R</think>\n<call name="get_time" />', [("get_time", {})]),
    ('R</think>\n<call name="get_weather">\n<arg name="city">Paris</arg></call>\n<call name="get_time"/>',
     [("get_weather", {"city": "Paris"}), ("get_time", {})]),
])
def test_a_call_without_arguments_may_be_a_self_closing_element(text, calls):
    assert _calls(_parse("forced-open-tagged", text)) == calls


@pytest.mark.parametrize("text, calls, content", [
    ('R</think>\n<call name="get_time"/>\nThe time is coming.<|turn_end|>', [("get_time", {})], "The time is coming."),
    ('R</think>\n<call name="get_time"/><call name="get_weather">\n<arg name="city">Paris</arg></call>',
     [("get_time", {}), ("get_weather", {"city": "Paris"})], ""),
])
def test_a_self_closed_call_ends_where_it_opened(text, calls, content):
    """What follows a self-closed call (text, the next call) is not its arguments: it closes right after ``/>``."""
    msg = _parse("forced-open-tagged", text)
    assert _calls(msg) == calls and msg.get("content", "").replace("R</think>", "").strip() == content, msg


def _typed(value_tags: str, ns: str = "｜TX｜") -> dict:
    text = f'<{ns}calls>\n<{ns}invoke name="f">\n{value_tags}\n</{ns}invoke>\n</{ns}calls><|turn_end|>'
    (call,) = _calls(_parse("typed-attribute", text.replace("<param", f"<{ns}param").replace("</param", f"</{ns}param")))
    return call[1]


@pytest.mark.parametrize("tags, arguments", [
    ('<param name="n" string="false">10</param>', {"n": 10}),
    ('<param name="xs" string="false">[1, 2]</param><param name="o" string="false">{"a": null}</param>', {"xs": [1, 2], "o": {"a": None}}),
    ('<param name="z" string="false">null</param><param name="b" string="false">true</param>', {"z": None, "b": True}),
    ('<param name="s" string="true">42</param>', {"s": "42"}),  # the tag says string: never typed
    ('<param name="s" string="true">[1, 2]</param>', {"s": "[1, 2]"}),
    ('<param name="s" string="true">\n  two spaces kept  \n</param>', {"s": "  two spaces kept  "}),  # one newline each side is the tag's
    ('<param name="s" string="true">a > b</param>', {"s": "a > b"}),
    ('<param name="n" string="false">not json</param>', {"n": "not json"}),  # no JSON: the text
])
@pytest.mark.parametrize("ns", ["｜TX｜", ""], ids=["as rendered", "token prefix left out"])
def test_a_tag_that_says_string_or_json_types_the_value(tags, arguments, ns):
    """DSML's ``string="false"`` says the value is JSON: typed with no schema; ``string="true"`` keeps the
    text. Models also leave out the token prefix of the tag names (``<invoke``, ``</parameter>``)."""
    assert _typed(tags, ns) == arguments


def test_a_typed_tag_cut_off_keeps_what_arrived():
    msg = _parse("typed-attribute", '<｜TX｜calls>\n<｜TX｜invoke name="f">\n<｜TX｜param name="s" string="true">half a val')
    assert _calls(msg) == [("f", {"s": "half a val"})], msg


def test_a_section_tag_without_a_call_stays_content():
    """The section tag without its token prefix and with no call after it is text."""
    msg = _parse("typed-attribute", "Use the calls tag: <calls> is how it starts.<|turn_end|>")
    assert not msg.get("tool_calls") and msg["content"] == "Use the calls tag: <calls> is how it starts.", msg


CALL = "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"


@pytest.mark.parametrize("text, content", [
    (f"<tool_call>\n{CALL}\n</tool_call><|im_end|>", ""),  # as rendered
    (f"{CALL}<|im_end|>", ""),  # no wrapper at all
    (f"Let me check.\n{CALL}\n</tool_call><|im_end|>", "Let me check."),  # the opening wrapper lost
    (f"<tool_call>\n{CALL}\n<tool_call>\n{CALL}\n</tool_call>", ""),  # the first call's end tag lost
])
def test_the_wrapper_around_a_function_element_may_be_left_out(text, content):
    msg = _parse("function-in-wrapper", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] * text.count("<function=") and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text, content", [
    ('```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```<|/turn|>', ""),
    ('```\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```', ""),
])
def test_a_bare_json_call_may_stand_in_a_markdown_fence(text, content):
    """transformers 5.23 commits a call's close at its value's end while a stream's next characters are still
    to come, so streamed there the fence's end arrives in content (kept: nothing came before the call);
    5.24 waits for it."""
    def streamed(got, one):
        if TRANSFORMERS_523:
            return got["tool_calls"] == one["tool_calls"] and (got.get("content") or "").replace("```", "").strip() == content
        return got == one

    msg = _parse("json-bare", text, streamed=streamed)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}</tool_call><tool_call>{"name": "get_time", "parameters": {}}</tool_call>',
    '<call>{"name": "get_weather", "parameters": {"city": "Paris"}}</call> <call>{"name": "get_time", "parameters": {}}</call><|/turn|>',
])
def test_bare_json_calls_in_wrappers_of_their_own_on_one_line_are_two_calls(text):
    """Calls a model wraps in a tag the template never writes (Hermes' ``<tool_call>`` around Llama 3's bare JSON), the
    second right after the first's end tag on the same line: the end tag closes the first call where an opening tag and
    an object's first key follow, a quote no JSON string holds unescaped. Before, the first call's arguments ran on
    through the second call, one call whose arguments were their text."""
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"}), ("get_time", {})], msg
    assert not (msg.get("content") or "").strip(), msg


def test_an_end_tag_and_a_tag_inside_a_string_argument_close_nothing():
    html = '<p>{x}</p><b>{"y": 1}</b>'  # inside a JSON string its quotes are escaped: no object's first key
    text = json.dumps({"name": "write", "parameters": {"html": html}})
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("write", {"html": html})], msg


def test_a_fenced_call_after_text_is_a_call():
    """The call object describes itself: after text too, fenced or not, it is a call and the text content
    (FORMATS.md §7b, a JSON call recognised by its shape)."""
    text = 'Let me check.\n```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```'
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and msg["content"] == "Let me check.", msg


def test_a_fence_holding_other_json_stays_content():
    text = 'Here:\n```json\n{"city": "Paris"}\n```'
    msg = _parse("json-bare", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


WEATHER = ("get_weather", {"city": "Paris"})


@pytest.mark.parametrize("text, calls, content", [
    ('{"name": "get_weather", "parameters": {"city": "Paris"}}<|/turn|>', [WEATHER], ""),  # as rendered
    ('{"name": "get_weather", "arguments": {"city": "Paris"}}', [WEATHER], ""),  # the other key
    ('{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "arguments": {}}', [WEATHER, ("get_time", {})], ""),
    ('{"name": "get_weather", "parameters": {"city": "Paris"}}\n{"name": "get_time", "parameters": {}}', [WEATHER, ("get_time", {})], ""),
    ('{"name": "get_weather", "parameters": {"city": "Paris"}} Done.', [WEATHER], "Done."),  # text after the call
    ('{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}', [WEATHER], ""),  # a key before the name
    ('{"name": "run", "parameters": {"code": "if x { y } else { z }", "n": {"a": [1, {"b": 2}]}}}',
     [("run", {"code": "if x { y } else { z }", "n": {"a": [1, {"b": 2}]}})], ""),  # braces in strings, nesting
])
def test_bare_json_calls_under_either_arguments_key(text, calls, content):
    """The arguments of a bare JSON call come under ``parameters`` or ``arguments`` whichever the template
    writes; several calls come separated by ``;`` or a newline (vLLM's and SGLang's Llama 3 parsers)."""
    msg = _parse("json-bare", text)
    assert _calls(msg) == calls and (msg.get("content") or "").strip() == content, msg


LONG = "x" * 600  # longer than the window a call is decided in (``CALL_WINDOW``): decided from its head


@pytest.mark.parametrize("text, calls, content", [
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', [WEATHER], ""),  # as rendered
    ('<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>', [WEATHER], ""),  # the other key
    ('Sure.\n<tool_call>{"parameters": {"city": "Paris"}, "name": "get_weather"}</tool_call>', [WEATHER], "Sure."),  # name last
    ('<tool_call>{"id": 3, "name": "get_weather", "parameters": {"city": "Paris"}, "type": "function"}</tool_call>', [WEATHER], ""),
    ('<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}}', [WEATHER], ""),  # the close stripped
    ('<tool_call>{"name": "run", "parameters": {"code": "} { y }, \\"k\\": 1}", "n": {"a": [1, {"b": 2}]}}}</tool_call>'
     '<tool_call>{"name": "get_time", "parameters": {}}</tool_call>',
     [("run", {"code": '} { y }, "k": 1}', "n": {"a": [1, {"b": 2}]}}), ("get_time", {})], ""),  # braces in strings, nesting
    (f'<tool_call>{{"name": "write", "parameters": {{"text": "{LONG}"}}}}</tool_call>', [("write", {"text": LONG})], ""),
])
def test_a_json_call_under_a_marker_under_either_arguments_key(text, calls, content):
    """A JSON call object after its own marker has its arguments under ``parameters`` or ``arguments``,
    whichever the template writes (SGLang's JSON call parsers read both for every such format; vLLM's
    InternLM2 parser too), its name before or after them, other short keys beside them."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == calls and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text, calls, content", [
    ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}}</tool_call>', [WEATHER], ""),
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}}}}}\n</tool_call><|im_end|>', [WEATHER], ""),
    ('<tool_call>{"name": "f", "arguments": {"a": {"b": {"c": 1}}}}}</tool_call>', [("f", {"a": {"b": {"c": 1}}})], ""),
    ('Sure.\n<tool_call>{"name": "f", "arguments": {"s": "}}} {"}}}</tool_call>\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
     [("f", {"s": "}}} {"}), ("get_time", {})], "Sure."),  # braces in a string
    (f'<tool_call>{{"name": "write", "parameters": {{"text": "{LONG}"}}}}}}</tool_call>', [("write", {"text": LONG})], ""),
])
def test_closing_braces_after_a_call_object_before_its_close_are_no_text(text, calls, content):
    """``{…}}}</tool_call>``: closing braces a model writes after the call's object (Granite 4; mlx-lm's parsers drop
    them) close the call where everything since the opener is one whole object, never at a nested ``}``."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == calls and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text, calls", [
    ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|im_end|>', [WEATHER]),  # as rendered
    ('<tool_calls>[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "parameters": {}}]',
     [WEATHER, ("get_time", {})]),
    ('<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"parameters": {}, "name": "get_time"}]<|im_end|>',
     [WEATHER, ("get_time", {})]),  # the keys mixed in one list, the name after the arguments
])
def test_a_json_call_array_under_a_marker_under_either_arguments_key(text, calls):
    """An array of call objects of a name and arguments after its marker (Nemotron's ``<TOOLCALL>[…]``) takes the
    arguments under either key, as a single call object does (SGLang's JSON call parsers read both)."""
    assert _calls(_parse("json-array-stop", text)) == calls


@pytest.mark.parametrize("text, calls", [
    ('<|calls|>[{"id": "a1", "name": "get_weather", "arguments": {"city": "Paris"}}]<|eot|>', [WEATHER]),  # as rendered
    ('<|calls|>[{"id": "a1", "name": "get_weather", "parameters": {"city": "Paris"}}, {"parameters": {}, "name": "get_time"}]',
     [WEATHER, ("get_time", {})]),
])
def test_keyed_json_calls_under_either_arguments_key(text, calls):
    """Call objects with keys beyond name and arguments (ids), in an array after a marker, take their
    arguments under either key too (SGLang's Mistral detector reads both)."""
    assert _calls(_parse("json-array-ids", text)) == calls


@pytest.mark.parametrize("text, content", [
    ('<|calls|>[{"get_weather": {"city": "Paris"}}]<|/calls|><|eot|>', ""),  # as rendered
    ('<|calls|>[{"get_weather": {"city": "Paris"}}]', ""),  # the section end left out, the turn's end stripped
    ('Sure.<|calls|>[{"get_weather": {"city": "Paris", "at": [{"h": 9}]}}]<|eot|>', "Sure."),
])
def test_a_name_keyed_call_list_may_leave_out_its_section_end(text, content):
    """``<|calls|>[{"f": {…}}]`` with no ``<|/calls|>`` (Apertus' parsers read ``<|tools_prefix|>[…]`` without
    its suffix): the list's ``]`` before the turn's end or the text's end closes the last call."""
    msg = _parse("json-name-key", text)
    assert [name for name, _ in _calls(msg)] == ["get_weather"] and (msg.get("content") or "") == content, msg
    assert isinstance(_calls(msg)[0][1], dict), msg


@pytest.mark.parametrize("text, args", [
    ('<call>{"arguments": {"city": "Paris"}, "name": "get_weather"}</call><|end|>', {"city": "Paris"}),  # as rendered
    ('<call>{"arguments": {"city": "Paris"}, "name": "get_weather"}', {"city": "Paris"}),  # the close never comes
    ('<call>{"arguments": {"city": "Paris"}, "name": "get_weather"}\n', {"city": "Paris"}),
    ('<call>{"name": "get_weather", "arguments": {"city": "Paris", "at": {"h": 9}}}', {"city": "Paris", "at": {"h": 9}}),
    ('<call>{"arguments": {"city": "Par', '{"city": "Par'),  # cut inside the arguments: what arrived, as text
])
def test_a_keyed_call_object_whose_close_never_comes_ends_with_its_object(text, args):
    """``<call>{"arguments": {…}, "name": "f"}`` and the text ends (vLLM's Hermes template writes the arguments first;
    a model that stops before ``</call>``, or an engine that strips it): the call ends at its object's ``}`` where
    everything since the opener is that whole object. Before, the arguments came back as their text with the object's
    own ``}`` (``{"city": "Paris"}}``), a call that looked parsed but held no arguments."""
    msg = _parse("json-args-first", text)
    assert _calls(msg) == [("get_weather", args)] if not isinstance(args, str) else [c[1] for c in _calls(msg)] == [args], msg
    assert not msg.get("content"), msg


@pytest.mark.parametrize("text, calls, content", [
    ('The data is [{"a": 1}, {"b": 2}] in JSON.', [], 'The data is [{"a": 1}, {"b": 2}] in JSON.'),
    ('Use {"x": {"y": 1}}, {"z": {"w": 2}} here.', [], 'Use {"x": {"y": 1}}, {"z": {"w": 2}} here.'),
    ('<|calls|>[{"get_weather": {"city": "Paris"}}, {"get_time": null}]<|/calls|>', [WEATHER, ("get_time", None)], ""),
    ('<|calls|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/calls|>', [], None),
])
def test_a_name_keyed_call_opens_only_in_its_list_and_on_an_object(text, calls, content):
    """A later name-keyed call opens only where the previous call's close left the parser, and a call's value is its
    arguments object (or ``null``): ``, {"b": 2}`` in an answer's JSON made a call ``b`` whose text was its
    arguments (Apertus: every answer holding a list of JSON objects), and a JSON call object written in the list made
    a call named ``name``. Both are text now, where the user sees them."""
    msg = _parse("json-name-key", text)
    assert _calls(msg) == calls, msg
    if content is not None:
        assert (msg.get("content") or "") == content, msg
    else:
        assert "get_weather" in json.dumps(msg), msg  # kept where the user sees it


@pytest.mark.parametrize("text, calls", [
    ('<|calls|>{"get_weather": {"city": "Paris"}}<|/calls|><|eot|>', [WEATHER]),
    ('<|calls|>{"get_time": {}}<|/calls|>', [("get_time", {})]),
    ('<|calls|> {"get_weather": {"city": "Paris", "at": {"h": {"m": 9}}}} <|/calls|>', [("get_weather", {"city": "Paris", "at": {"h": {"m": 9}}})]),
    ('<|calls|>{"get_weather": {"city": "Paris"}}, {"get_time": {}}<|/calls|>', [WEATHER, ("get_time", {})]),
])
def test_a_name_keyed_call_list_of_one_may_be_the_call_alone(text, calls):
    """``<|calls|>{"f": {…}}<|/calls|>``: the list's brackets left out between the section's markers (mlx-lm's
    Apertus parser reads ``<|tools_prefix|>{"get_time": {}}<|tools_suffix|>``)."""
    msg = _parse("json-name-key", text)
    assert _calls(msg) == calls and not msg.get("content"), msg


@pytest.mark.parametrize("name, text, calls, content", [
    ("json-array-ids", '<|calls|>{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}', [WEATHER], ""),
    ("json-array-ids", 'Sure.<|calls|>{"name": "get_weather", "arguments": {"city": "Paris", "at": {"h": {"m": 9}}}}',
     [("get_weather", {"city": "Paris", "at": {"h": {"m": 9}}})], "Sure."),
    ("json-array-ids", '<|calls|>{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": {"a": 1}}}<|eot|>',
     [WEATHER, ("get_time", {"tz": {"a": 1}})], ""),
    ("action-fence-json", 'Action: ```json\n{\n    "tool_name": "get_weather",\n    "parameters": {"city": "Paris"}\n}\n```', [WEATHER], ""),
    ("wrapped-unless-calls", 'Sure.<calls>{"name": "get_weather", "arguments": {"city": "Paris"}}</calls>', [WEATHER], "Sure."),
    ("wrapped-unless-calls", '<calls>{"name": "get_weather", "arguments": {"city": "Paris", "at": {"h": [9]}}}', [("get_weather", {"city": "Paris", "at": {"h": [9]}})], ""),
])
def test_a_json_call_list_of_one_may_be_the_call_alone(name, text, calls, content):
    """``[TOOL_CALLS]{"name": …}``, ``Action: ```json {…} ``` ``: a list of one call written as the call alone after the
    list's opener (SGLang's JSON call parsers take an object where a list stands; Ollama's Cohere parser reads it). Its
    object closes before the section's end or the turn's end, or where the text ends when everything since the opener is one whole object."""
    msg = _parse(name, text)
    assert [(n, a) for n, a in _calls(msg)] == calls and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text", [
    '<function name="get_weather"><param name="city">Paris</param></function>',  # as rendered
    "<function name='get_weather'><param name='city'>Paris</param></function>",
    "<function name='get_weather'><param name=\"city\">Paris</param></function>",
    "Sure.\n<function name='get_weather'>\n<param name='city'>Paris</param>\n</function><|im_end|>",
    "<function name='get_weather'><param name='city'>Paris</param><param name='days'>3</param></function>",
    "<function name='get_weather'><param name='city'>Paris\n<param name='days'>3</param></function>",  # a value's end tag left out
])
def test_an_xml_attributes_value_may_be_single_quoted(text):
    """XML quotes an attribute's value with ``'`` or ``"``: MiniCPM 5 models write ``<function name='f'>`` (mlx-lm's
    parser reads both), whatever quote the template writes."""
    msg = _parse("xml-cdata", text)
    expected = [("get_weather", {"city": "Paris", "days": "3"} if "days" in text else {"city": "Paris"})]
    assert _calls(msg) == expected and (msg.get("content") or "").strip() in ("", "Sure."), msg


def test_a_single_quoted_call_whose_tags_type_its_values_stays_content():
    """Where a tag's tail is a typed string's delimiter (DSML's ``string="true">``), a call written with ``'`` opens
    nothing: opened, its values would match no argument and be lost; as content they stay visible."""
    text = "<｜TX｜calls>\n<｜TX｜invoke name='f'>\n<｜TX｜param name='s' string='true'>keep me</｜TX｜param>\n</｜TX｜invoke>\n</｜TX｜calls><|turn_end|>"
    msg = _parse("typed-attribute", text)
    assert not msg.get("tool_calls") and "keep me" in (msg.get("content") or ""), msg


def test_a_quote_inside_an_xml_attributes_value_stays_content():
    """A name with a quote is no name (``name="a'b"`` opens no call), as before."""
    msg = _parse("xml-cdata", "<function name=\"get'weather\"><param name='city'>Paris</param></function>")
    assert not msg.get("tool_calls") and "get'weather" in msg.get("content", ""), msg


@pytest.mark.parametrize("text, calls", [
    ('<calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</calls><|im_end|>', [WEATHER]),  # as rendered
    ('<calls>\n{"name": "get_weather", "arguments": {"city": "Paris", "at": {"h": [9]}}}', [("get_weather", {"city": "Paris", "at": {"h": [9]}})]),
    ('<calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n{"name": "get_time", "arguments": {}}<|im_end|>',
     [WEATHER, ("get_time", {})]),
])
def test_a_json_call_run_may_leave_out_its_closer_at_the_end(text, calls):
    """``<calls>\n{…}\n{…}`` with no ``</calls>`` where the reply ends (MiniMax-M1's parsers read it): the last
    call ends before the turn's end or the text's end."""
    msg = _parse("json-run-closed", text)
    assert _calls(msg) == calls and not msg.get("content"), msg


def test_a_json_call_run_reads_the_arguments_under_either_key():
    """A run of call objects after one opener (MiniMax-M1's ``<tool_calls>``) whose objects are just a name and
    arguments: ``parameters`` as well as ``arguments``, as in every such JSON format. Fails on the commit
    before: the call stayed in content."""
    text = '<calls>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n{"name": "get_time", "arguments": {}}\n</calls><|im_end|>'
    msg = _parse("json-run-closed", text)
    assert _calls(msg) == [WEATHER, ("get_time", {})] and not msg.get("content"), msg


def test_a_run_of_bare_json_calls_reads_the_arguments_under_either_key():
    """Calls with no marker glued one after another (``{…}{…}``, Llama 4's JSON template) whose objects are just a
    name and arguments: ``arguments`` as well as the ``parameters`` the template writes, the first call and a later
    one. Fails on the commit before: the whole run stayed in content."""
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}{"name": "get_time", "parameters": {}}'
    msg = _parse("json-glued", text)
    assert _calls(msg) == [WEATHER, ("get_time", {})] and not msg.get("content"), msg


@pytest.mark.parametrize("name, text, calls", [
    ("json-bare", '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>', [WEATHER]),
    ("json-bare", '{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "arguments": {}}<|eom_id|>',
     [WEATHER, ("get_time", {})]),
    ("json-bare", '[{"name": "get_weather", "parameters": {"city": "Paris"}}] <|end|>', [WEATHER]),
    ("json-glued", '{"name": "get_weather", "parameters": {"city": "Paris"}}{"name": "get_time", "parameters": {}}<|eom_id|>',
     [WEATHER, ("get_time", {})]),
])
def test_a_special_token_the_template_does_not_write_after_a_bare_call_ends_it(name, text, calls):
    """A special token right after a markerless call's last ``}`` (``<|eom_id|>``, which Llama 3.x models end a turn
    with calls with and Llama 3.2's template never writes; another family's end of turn) ends the call: no JSON
    value goes on with ``<|``. The token is text after the call, in content. Fails on the commit before: the
    arguments ran on through the token and came back as their text."""
    msg = _parse(name, text)
    token = text[text.rindex("<|"):]
    assert _calls(msg) == calls and (msg.get("content") or "").strip() == token, msg


def test_a_special_token_inside_a_bare_calls_string_argument_stays_the_argument():
    """Only a token right after the object's ``}`` ends the call: inside a string argument it is the argument."""
    args = {"code": "x = {'a': 1}<|eom_id|> done", "n": 2}
    text = json.dumps({"name": "run", "parameters": args})
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("run", args)] and not msg.get("content"), msg


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "get_weather", "parameters": {city: Paris}}</tool_call>',  # not JSON
    '<tool_call>{"name": "get_weather", "options": {"city": "Paris"}}</tool_call>',  # no arguments key
    '<tool_call>{"parameters": {"city": "Paris"}}</tool_call>',  # no name
])
def test_a_json_object_under_a_call_marker_that_is_no_call_stays_content(text):
    msg = _parse("chatml-think", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


def test_a_bare_json_call_cut_off_keeps_its_text():
    """A bare call decides from its head (docs/FORMATS.md §9): cut off, it is a call whose arguments are the
    text that arrived, as a cut call of any other format (§7b), never lost."""
    text = '{"name": "get_weather", "arguments": {"city": "Par'
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("get_weather", '{"city": "Par')] and not msg.get("content"), msg


@pytest.mark.parametrize("text", [
    'See {"name": "get_weather"} and {"city": "Paris"}',  # a name, but no arguments key
    'See {"name": 3, "parameters": {"city": "Paris"}}',  # the name no string
    'See {"parameters": {"city": "Paris"}, "name": "get_weather"}',  # bare, a call's head is its name first
])
def test_a_bare_json_object_that_is_no_call_stays_content(text):
    msg = _parse("json-bare", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


def test_a_bare_calls_arguments_written_as_a_json_string_are_that_strings_text():
    """``"parameters": "{\\"city\\": \\"Paris\\"}"`` (arguments JSON-encoded): the call closes after the string, whose
    text is the arguments (the OpenAI form of arguments); before, the call never closed and its arguments were the
    rest of the reply, the next call in them."""
    text = '{"name": "get_weather", "parameters": "{\\"city\\": \\"Paris\\"}"}; {"name": "get_time", "parameters": {}}'
    msg = _parse("json-bare", text)
    assert _calls(msg) == [("get_weather", '{"city": "Paris"}'), ("get_time", {})] and not msg.get("content"), msg


@pytest.mark.parametrize("text", [
    '{"name": "get_weather", "parameters": {invalid json}',  # vLLM's Llama 3 JSON parser: content
    '{"name": "get_weather", "parameters": {city: "Paris"}}',  # a key unquoted
    "{\"name\": \"get_weather\", \"parameters\": {'city': 'Paris'}}",  # a Python dict
    'Sure. {"name": "get_weather", "arguments": {invalid}} Done.',  # after text
])
def test_a_bare_call_whose_arguments_begin_as_no_json_stays_content(text):
    """A call's arguments begin as JSON begins them (``ARGS_BEGIN``, FORMATS §7b): after a call's head, an object
    whose first key is no string is no call, and its text stays content (before: a call whose arguments were it)."""
    msg = _parse("json-bare", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


@pytest.mark.parametrize("text, calls, content", [
    ('See {"name": "get_weather", "arguments": {"city": "Paris"}}', [WEATHER], "See"),  # after prose
    ('<function=get_weather>{"city": "Paris"}', [WEATHER], ""),  # Llama 3.1's documented custom-tool spelling
    ('<function=get_weather>{"city": "Paris", "at": {"h": [9]}}</function>\nDone.',
     [("get_weather", {"city": "Paris", "at": {"h": [9]}})], "Done."),
])
def test_a_bare_json_call_is_recognised_by_its_head_wherever_it_stands(text, calls, content):
    msg = _parse("json-bare", text)
    assert _calls(msg) == calls and (msg.get("content") or "") == content, msg


@pytest.mark.parametrize("model", ["json-bare", "chatml-think", "json-run-lines", "json-list-bare", "bracket-marker-list", "json-glued"])
@pytest.mark.parametrize("text", [
    'The result was {"data": {"name": "get_weather", "arguments": {"city": "Paris"}}} as expected.',
    'The JSON is {"items": [{"name": "get_weather", "arguments": {"city": "Paris"}}]} ok.',
    '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',  # OpenAI's wrapper
    'Use {"call": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}',
])
def test_a_call_shaped_object_inside_other_json_is_its_data(model, text):
    """A call object that is a member's value in other JSON is that JSON's data (``NOT_DATA``, FORMATS §7b), as
    vLLM's and SGLang's JSON call parsers leave it: the whole stays content. Fails on the commit before on every
    model here but for two texts of two: a call opened inside, its arguments ran through the outer ``}`` as text."""
    msg = _parse(model, text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


@pytest.mark.parametrize("model, text", [
    *[(m, 'Write `{"name": "get_weather", "arguments": {"city": "Paris"}}` to call it.')
      for m in ("json-bare", "chatml-think", "json-run-lines", "json-glued")],
    ('json-list-bare', 'Write `[{"name": "get_weather", "arguments": {"city": "Paris"}}]` to call it.'),
    ("pythonic-bare", "In Python, write `[get_weather(city='Paris')]` to call it."),
])
def test_a_call_in_inline_code_is_text(model, text):
    """A call's shape right after a single backtick is inline code, not a call (``NOT_DATA``; a pythonic list's
    ``glued``): the whole stays content. Fails on the commit before: a call, and the content cut around it."""
    msg = _parse(model, text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


def test_a_fenced_call_is_still_a_call():
    """Three backticks are a fence, around a call as models write it; only a single one is inline code."""
    for model, text in (("json-bare", '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'),
                        ("pythonic-bare", "```python\n[get_weather(city='Paris')]\n```")):
        assert _calls(_parse(model, text)) == [WEATHER], (model, text)


@pytest.mark.parametrize("model, text", [
    *[(m, 'Result: {"name": "Bob", "arguments": "none"}') for m in ("json-bare", "chatml-think", "json-run-lines", "json-glued")],
    ("json-list-bare", 'Result: [{"name": "Bob", "arguments": "none"}]'),
])
def test_an_object_whose_arguments_are_a_plain_string_is_no_call(model, text):
    """Where a call opens on its shape alone, its arguments begin as JSON arguments do (``ARGS_BEGIN``): an object,
    a list, or a string that encodes one (or is empty). Fails on the commit before: a call ``Bob`` whose
    arguments were ``"none"}``, the text before it cut."""
    msg = _parse(model, text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


@pytest.mark.parametrize("model", ["json-bare", "chatml-think"])
def test_arguments_written_as_a_json_encoded_string_still_make_a_call(model):
    msg = _parse(model, 'Sure: {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}')
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"], msg


def test_a_call_after_prose_with_a_colon_is_still_a_call():
    """Only a JSON key's ``":`` makes an object a member: prose ending in a colon still introduces a call."""
    msg = _parse("json-bare", 'Checking: {"name": "get_weather", "arguments": {"city": "Paris"}}')
    assert _calls(msg) == [WEATHER] and msg["content"] == "Checking:", msg


@pytest.mark.parametrize("text, content", [
    ('Sure:\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n{"name": "get_time", "arguments": {}}\nDone.',
     "Sure:\n\nDone."),  # one a line
    ('{"name": "get_weather", "arguments": {"city": "Paris"}} {"name": "get_time", "arguments": {}}', ""),
    ('[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]', ""),  # a list
])
def test_bare_json_calls_one_after_another_are_each_a_call(text, content):
    """Call objects written bare, one after another (a line each, or a JSON list with no marker): each object
    describes itself, so the next one's whole head ends the call before it. Fails on the commit before: the
    first call's arguments ran to the last object's end (its text), and a list's ``[`` was left in content."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == [WEATHER, ("get_time", {})] and (msg.get("content") or "") == content, msg


@pytest.mark.parametrize("text, n", [
    ('<|python_tag|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|eot_id|>', 1),
    ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}', 2),
    ('Let me check. <|python_tag|>{"name": "get_weather", "arguments": {"city": "Paris"}}', 1),  # after text: the lead marks it
])
def test_llama32_python_tag_before_json_calls(text, n):
    """workarounds/llama3-python-tag.json: Llama 3.2 writes ``<|python_tag|>`` before a JSON call (and
    between calls) though its template never does. The lead is a special token, so it marks a call after
    text too (SGLang's Llama 3.2 parser), as a bare call does by its head
    (``test_a_bare_json_call_is_recognised_by_its_head_wherever_it_stands``)."""
    from conftest import corpus_template

    src = corpus_template("meta-llama-Llama-3.2-3B-Instruct")
    tokens = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    template = autoparser.infer_result(src, tokens).template
    prefix = generation_prompt(src, tokens)
    one = parse_response(text, template, prefix=prefix)
    p = ResponseParser(template, prefix=prefix)
    for i in range(0, len(text), 3):
        p.feed(text[i : i + 3])
    assert p.finalize()[0] == one
    assert _calls(one) == [WEATHER] * n, one
    assert one.get("content") == (text.partition("<|python_tag|>")[0].strip() or None), one


PHI4_MINI = Path(__file__).parents[1].parent / "shared" / "corpus" / "wild2" / "templates" / "vllm-phi4-mini-functools.jinja"


@pytest.mark.parametrize("text, calls, content", [
    ('{"name": "get_weather", "arguments": {"city": "Paris"}}', [WEATHER], None),  # as the template renders history
    ('functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', [WEATHER], None),
    ('functools[\n  {"name": "get_weather", "arguments": {"city": "Paris"}},\n  {"name": "get_time", "arguments": {}}\n]<|end|>',
     [WEATHER, ("get_time", {})], None),
    # after text too (before: the lead and its "[" were left in the content, "Sure. functools[")
    ('Sure. functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', [WEATHER], "Sure."),
    # the arguments under the other key (vLLM's phi-4-mini parser reads both; before: the list stayed content)
    ('functools[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]',
     [WEATHER, ("get_time", {})], None),
    # the lead's word and its list's "[" apart, or the list alone (before: "functools [" or "[" left in the content)
    ('functools [{"name": "get_weather", "arguments": {"city": "Paris"}}]', [WEATHER], None),
    ('[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]', [WEATHER, ("get_time", {})], None),
])
def test_phi4_mini_functools_list(text, calls, content):
    """workarounds/phi4-mini-functools.json: phi-4-mini writes its calls as ``functools[{…}, …]``, which its
    template asks for in the system prompt but never renders (history has the objects alone): the lead is
    optional before the run of calls, at the reply's start or after text, and the list it opens ends with
    ``]`` after the last call."""
    if not PHI4_MINI.is_file():
        pytest.skip(f"wild2 template {PHI4_MINI} not available")
    src = PHI4_MINI.read_text(encoding="utf-8")
    tokens = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
    res = autoparser.infer_result(src, tokens)
    assert "phi4-mini-functools" in res.analysis.workarounds and res.verdict["fields"]["tool_calls"] in ("pass", "limit")
    prefix = generation_prompt(src, tokens)
    one = parse_response(text, res.template, prefix=prefix)
    for size in (1, 3, 7):
        p = ResponseParser(res.template, prefix=prefix)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        assert p.finalize()[0] == one, (text, size)
    assert _calls(one) == calls and one.get("content") == content, one


GRANITE = Path(__file__).parents[1].parent / "shared" / "corpus" / "wild2" / "templates" / "vllm-granite-3.0-tool.jinja"


@pytest.mark.parametrize("text, content", [
    ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', ""),  # the template's token
    ('<tool_call> [{"name": "get_weather", "arguments": {"city": "Paris"}}]', ""),  # the tag spelling
    ('Sure. <tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|end_of_text|>', "Sure."),
])
def test_granite_tool_call_tag_opens_its_call_list(text, content):
    """workarounds/granite-tool-call-tag.json: Granite writes ``<tool_call>`` for its ``<|tool_call|>`` token
    (vLLM's granite parser, granite-io); ``call_start_variants`` opens a call with either."""
    if not GRANITE.is_file():
        pytest.skip(f"wild2 template {GRANITE} not available")
    src = GRANITE.read_text(encoding="utf-8")
    tokens = {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"}
    res = autoparser.infer_result(src, tokens)
    assert "granite-tool-call-tag" in res.analysis.workarounds and res.verdict["fields"]["tool_calls"] == "pass"
    prefix = generation_prompt(src, tokens)
    one = parse_response(text, res.template, prefix=prefix)
    p = ResponseParser(res.template, prefix=prefix)
    for i in range(0, len(text), 3):
        p.feed(text[i : i + 3])
    assert p.finalize()[0] == one
    assert _calls(one) == [WEATHER] and (one.get("content") or "") == content, one


def test_a_tool_call_tag_in_granite_prose_stays_content():
    if not GRANITE.is_file():
        pytest.skip(f"wild2 template {GRANITE} not available")
    src = GRANITE.read_text(encoding="utf-8")
    res = autoparser.infer_result(src, {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"})
    text = "Wrap calls in <tool_call> tags."
    assert parse_response(text, res.template, prefix=generation_prompt(src)) == {"role": "assistant", "content": text}


@pytest.mark.parametrize("header", ["tools.get_weather:0", "get_weather:0"])
def test_the_namespace_before_a_call_name_may_be_left_out(header):
    """``tools.f:0`` where models also write ``f:0`` (Kimi K2's ``functions.`` prefix, which vLLM's parser
    does without)."""
    msg = _parse("prefixed-indexed", f'<|calls|><|call|>{header}<|args|>{{"city": "Paris"}}<|/call|><|/calls|>')
    assert _calls(msg) == [WEATHER], msg


@pytest.mark.parametrize("value", ['string="true">a <br/> b', 'string="false">{"<br/>": [1, "x/>"]}'])
def test_a_self_closing_mark_inside_an_argument_ends_no_call(value):
    """Only the self-closed call element ends a call where it opened: a ``/>`` inside an argument is text,
    also where a stream resumes right after it (the fuzz round trip found ``"<br/>"`` in a key)."""
    text = f'<｜TX｜calls>\n<｜TX｜invoke name="f">\n<｜TX｜param name="k" {value}</｜TX｜param>\n</｜TX｜invoke>\n</｜TX｜calls>'
    expected = {"k": "a <br/> b"} if "true" in value else {"k": {"<br/>": [1, "x/>"]}}
    assert _calls(_parse("typed-attribute", text)) == [("f", expected)]


@pytest.mark.parametrize("text, value", [
    ('<function name="write"><param name="body"><![CDATA[a < b && c\n  d\n]]></param></function>', "a < b && c\n  d\n"),
    ('<function name="write"><param name="body">\n<![CDATA[x</param>y]]>\n</param></function>', "x</param>y"),  # an end tag inside the section is text
    ('<function name="write"><param name="body">plain</param></function>', "plain"),
    ('<function name="write"><param name="body"><![CDATA[ left open</param></function>', "<![CDATA[ left open"),  # no ]]>: as written
])
def test_an_xml_value_in_a_cdata_section_is_its_text(text, value):
    """A value written as an XML CDATA section is the section's text, byte for byte (MiniCPM 5's template
    writes one for a value holding <, & or a newline; vLLM's and SGLang's MiniCPM 5 parsers unwrap it)."""
    assert _calls(_parse("xml-cdata", text)) == [("write", {"body": value})]


def test_a_template_writing_cdata_values_round_trips_them():
    """The template's own CDATA sections read back as the values it was given: no lossy-history limit."""
    verdict = autoparser.infer_result((MODELS / "xml-cdata.jinja").read_text(encoding="utf-8")).verdict
    assert verdict["fields"]["tool_calls"] == "pass" and not verdict["limits"], verdict


@pytest.mark.parametrize("text, content", [
    ('<|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|/tool_call|>', None),
    ('<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|><|im_end|>', None),
    ('Let me check. <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]', "Let me check."),
])
def test_a_special_token_around_a_self_described_call_is_no_text(text, content):
    """A call object that describes itself, wrapped in a special token the template does not write there
    (Granite 3's ``<|tool_call|>[{…}]``, written to a template that wraps calls in ``<tool_call>`` as Granite 4's
    does): the object decides, so the token before it opens the call and its closing token after it ends it.
    Before, the token was left in content, and a closing token after the object made the arguments their text."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and msg.get("content") == content, msg


@pytest.mark.parametrize("text, content", [
    ('<|python_start|>[get_weather(city="Paris")]<|python_end|>', None),
    ("<|python_start|>[get_weather(city=\"Paris\")]", None),
    ("[get_weather(city=\"Paris\")]<|python_end|>", None),
    ("Let me check. <|python_start|>[get_weather(city=\"Paris\")]<|python_end|> Done.", "Let me check.\n\nDone."),
])
def test_special_tokens_around_a_bare_call_list_are_no_text(text, content):
    """A pythonic call list with no marker of its own wrapped in special tokens the template never writes
    (Llama 4's <|python_start|>…<|python_end|>; vLLM's and SGLang's pythonic parsers read it): the token
    before the list opens the calls, the one after it is consumed, one-shot and streamed alike."""
    msg = _parse("pythonic-bare", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]
    assert msg.get("content") == content


@pytest.mark.parametrize("text, calls", [
    ("Use [int(x) for x in parts] here.", []),  # a positional argument: Python in prose, not a call
    ("`[str(i) for i in range(3)]`", []),
    ('[get_weather(city="Paris"), get_time()]', [("get_weather", {"city": "Paris"}), ("get_time", {})]),
    ("[get_weather( city='Paris')]", [("get_weather", {"city": "Paris"})]),
])
def test_a_pythonic_call_passes_its_arguments_by_keyword(text, calls):
    """The format passes arguments by keyword: a bracketed ``name(`` followed by anything but ``)`` or a keyword is
    Python a model quotes (a list comprehension), which stays content whole. Before, it opened a call whose text,
    read for ``key=value`` pairs, reached no field: ``x) for x in parts] here.`` was lost."""
    msg = _parse("pythonic-bare", text)
    assert _calls(msg) == calls, msg
    if not calls:
        assert msg.get("content") == text, msg


@pytest.mark.parametrize("text, content", [
    ('```python\n[get_weather(city="Paris")]\n```', None),
    ('Let me check.\n```tool_code\n[get_weather(city="Paris")]\n```\nDone.', "Let me check.\n\nDone."),
    ('```\n[get_weather(city="Paris")]\n```<|im_end|>', None),
])
def test_a_fence_around_a_bare_call_list_is_no_text(text, content):
    """A pythonic call list with no marker of its own in a markdown fence (as JSON calls are fenced): the
    fence's opening line is the list's open, its end the close's; the close waits until a character shows
    whether a fence's end follows (one-shot and streamed alike). Fails on the commit before: the fence came
    back as content (``"```python\n\n```"``)."""
    msg = _parse("pythonic-bare", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]
    assert msg.get("content") == content


@pytest.mark.parametrize("value, expected", [
    ("Paris", "Paris"),  # as rendered: no newline inside the value's tags
    ("\nParis\n", "Paris"),  # a newline on each side: the separator models add (Seed-OSS)
    ("  x = 1\n", "  x = 1\n"),  # the value's own trailing newline (code), kept
    ("\n    def f():\n        return 1\n\n", "    def f():\n        return 1\n"),  # a pair around code ending with one
    ("<![CDATA[a < b]]>\n", "a < b"),
])
def test_a_newline_inside_value_tags_the_template_leaves_out_is_a_separator_only_in_pairs(value, expected):
    """Where the template writes no newline inside a value's tags, a newline on one side only is the value's
    own (vLLM's Poolside parser keeps ``  x = 1\\n``); one on each side is the separator models add."""
    text = f"<call>write_file\n<k>content</k><v>{value}</v>\n</call><|im_end|>"
    assert _calls(_parse("kv-tagged", text)) == [("write_file", {"content": expected})]


@pytest.mark.parametrize("value, expected", [
    ("\nDallas\n", "Dallas"),  # as rendered
    ("\n      Dallas\n    ", "Dallas"),  # the tags indented: the indentation is layout
    ("\n    ", ""),  # an empty value, its close tag indented on the next line
    ("\nline1\n\tindented line\n    spaces\n    ", "line1\n\tindented line\n    spaces"),  # the value's own inner indentation kept
    ("\n    def f():\n        return 1\n", "    def f():\n        return 1"),  # the close tag not indented: code keeps its indentation
    ("  Dallas  ", "  Dallas  "),  # on the open tag's line: the value's own spaces
])
def test_the_indentation_of_a_value_laid_out_on_lines_of_its_own_is_layout(value, expected):
    """Models indent tags they lay out on lines of their own (``<parameter=k>\\n      v\\n    </parameter>``,
    llama.cpp's Qwen3-Coder cases): the newline and indentation before the close tag, and the first line's
    indentation where the close tag is indented, are no part of the value; a value on the open tag's line keeps
    its spaces (vLLM's and SGLang's GLM cases)."""
    text = ("<tool_call>\n  <function=get_weather>\n    <parameter=city>" + value + "</parameter>\n"
            "    <parameter=state>\nTX\n</parameter>\n  </function>\n</tool_call><|im_end|>")
    assert _calls(_parse("function-in-wrapper", text)) == [("get_weather", {"city": expected, "state": "TX"})]


@pytest.mark.parametrize("value, expected", [
    ("\n      x = 1\n    ", "x = 1"),  # a pair of newlines, the tags indented
    ("    x = 1    ", "    x = 1    "),  # no newline: the value's own spaces
])
def test_indentation_inside_value_tags_the_template_writes_on_one_line(value, expected):
    text = f"<call>write_file\n<k>content</k><v>{value}</v>\n</call><|im_end|>"
    assert _calls(_parse("kv-tagged", text)) == [("write_file", {"content": expected})]


@pytest.mark.parametrize("name, text", [
    ("function-in-wrapper", "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n"
                            "</parameter>\n</function>\n</tool_call><|im_end|>"),
    ("kv-tagged", "<call>get_weather\n<k>city</k><v>Dallas\n<k>state</k><v>TX</v>\n</call><|im_end|>"),
])
def test_a_value_whose_end_tag_is_left_out_ends_at_the_next_argument(name, text):
    """vLLM's Qwen3-Coder and Step 3.5 parsers read a value with no end tag up to the next argument's tag."""
    assert _calls(_parse(name, text)) == [("get_weather", {"city": "Dallas", "state": "TX"})]


@pytest.mark.parametrize("text", [
    '<calls>\n{"name": "f", "arguments": {"a": {"b": [1, {"c": 2}]}}}\n{"name": "g", "arguments": {}}\n</calls><|im_end|>',  # as rendered
    '<calls>\n{"name": "f", "arguments": {"a": {"b": [1, {"c": 2}]}}}\n{"name": "g", "arguments": {}}',  # the closer left out
    '<calls>\n{"name": "f", "arguments": {"a": {"b": [1, {"c": 2}]}}}\n{"name": "g", "arguments": {}}\n',
])
def test_a_run_of_json_calls_whose_closer_is_left_out_ends_with_the_text(text):
    """vLLM's MiniMax-M1 parser reads calls whose ``</tool_calls>`` never came; the last call's ``}`` was read
    into its arguments, which came back as text."""
    assert _calls(_parse("json-run-closed", text)) == [("f", {"a": {"b": [1, {"c": 2}]}}), ("g", {})]


@pytest.mark.parametrize("line", ["{invalid json here}", "{ name: 1 }"])
def test_a_line_in_a_run_of_json_calls_that_is_no_call_ends_the_call_before_it(line):
    """``<calls>\n{…}\n{invalid json}\n{…}\n</calls>`` (vLLM's MiniMax-M1 tests): the call before the line ends at its
    whole object's ``}``; the line is content, visible, and the next call is read. Fails on the commit before: the
    first call's arguments ran on to the next call's head and came back as text, the line inside them."""
    text = f'<calls>\n{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}\n{line}\n{{"name": "get_time", "arguments": {{}}}}\n</calls><|im_end|>'
    msg = _parse("json-run-closed", text)
    assert _calls(msg) == [WEATHER, ("get_time", {})] and msg.get("content") == line, msg
    # a line of text: the run has ended there (a later call opens only after a call), the rest stays content
    msg = _parse("json-run-closed", text.replace(line, "Now the time:"))
    assert _calls(msg) == [WEATHER] and msg["content"].startswith('Now the time:\n{"name": "get_time"'), msg


def test_pretty_printed_arguments_in_a_run_of_json_calls_close_at_the_objects_end():
    args = {"city": "Paris", "at": {"h": [9, {"m": 30}]}}
    text = '<calls>\n{"name": "get_weather", "arguments": ' + json.dumps(args, indent=2) + '}\n</calls><|im_end|>'
    assert _calls(_parse("json-run-closed", text)) == [("get_weather", args)]


def test_a_run_of_json_calls_cut_inside_the_arguments_keeps_their_text():
    """A value still arriving is no complete call: nothing closes at a stream's edge inside the arguments."""
    msg = _parse("json-run-closed", '<calls>\n{"name": "f", "arguments": {"a": {"b": 1}')
    assert _calls(msg) == [("f", '{"a": {"b": 1}')]


@pytest.mark.parametrize("text", [
    'R</think>\n<call name="get_weather">\n<arg name="city">Paris</arg>\n</call>',  # as rendered
    'R</think>\n<callname="get_weather">\n<argname="city">Paris</arg>\n</call>',  # the space after each tag's name dropped
])
def test_the_space_between_a_tags_name_and_its_attribute_may_be_left_out(text):
    """vLLM's MiniCPM 5 parser reads ``<functionname="f"><paramname="k">``: a detokenizer dropped the space."""
    assert _calls(_parse("forced-open-tagged", text)) == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("name, text, content", [
    ("prefixed-indexed", "Checking. <|calls|><|/calls|>", "Checking."),  # an empty section
    ("kv-tagged", "Checking. <call>   </call> Done.<|im_end|>", "Checking.\n\nDone."),  # an empty call element (text regions join with a blank line)
])
def test_an_empty_call_section_is_neither_a_call_nor_text(name, text, content):
    """vLLM's Kimi K2 and GLM 4.5 parsers return neither for ``<|tool_calls_section_begin|><|tool_calls_section_end|>``
    or ``<tool_call>   </tool_call>``; their markers were left in content."""
    msg = _parse(name, text)
    assert msg.get("content") == content and not msg.get("tool_calls")


@pytest.mark.parametrize("body, arguments", [
    ('{"city": "San Francisco", "days": 3}', {"city": "San Francisco", "days": 3}),
    ('{\n    "q": "a \\"b\\": c, d",\n    "opts": {"n": [1, {"k": null}]},\n    "on": true\n}',
     {"q": 'a "b": c, d', "opts": {"n": [1, {"k": None}]}, "on": True}),
])
def test_a_json_object_as_a_typed_calls_body_is_its_arguments(body, arguments):
    """SGLang's DeepSeek V3.2 parser reads ``<invoke name="f">{json}</invoke>`` where the format writes
    parameter tags; before, the body was read as no argument and its text was lost."""
    assert _typed(body) == arguments


@pytest.mark.parametrize("name, text", [
    ("function-in-wrapper", "<tool_call>\n<function=get current temperature>\n<parameter=location with spaces>\nParis\n</parameter>\n"
                            "</function>\n</tool_call><|im_end|>"),
    ("forced-open-tagged", 'R</think>\n<call name="get current temperature">\n<arg name="location with spaces">Paris</arg>\n</call>'),
])
def test_a_name_an_element_quotes_whole_may_hold_spaces(name, text):
    """Ollama's Qwen3-Coder parser reads ``<function=get current temperature>``; the call stayed in content."""
    assert _calls(_parse(name, text)) == [("get current temperature", {"location with spaces": "Paris"})]


@pytest.mark.parametrize("text, calls", [
    ('<|tool_call>call:glob{"pattern": "README*.md"}<tool_call|><|tool_call>call:glob{"pattern": "docs/*"}<tool_call|><turn|>',
     [("glob", {"pattern": "README*.md"}), ("glob", {"pattern": "docs/*"})]),  # as rendered
    ('<|tool_call>call:glob{"pattern": "README*.md"}call:glob{"pattern": "docs/*"}<tool_call|><turn|>',
     [("glob", {"pattern": "README*.md"}), ("glob", {"pattern": "docs/*"})]),  # the second call in the first one's block
    ('<|tool_call>call:search{"q": "x", "o": {"n": [1]}}call:configure{"s": {"on": true}}<tool_call|>',
     [("search", {"q": "x", "o": {"n": [1]}}), ("configure", {"s": {"on": True}})]),
])
def test_a_later_call_inside_the_previous_calls_block_is_a_call(text, calls):
    """mlx-lm's Gemma 4 parser reads ``<|tool_call>call:f{…}call:g{…}<tool_call|>``; the second call was read into
    the first one's arguments."""
    assert _calls(_parse("call-word-block", text)) == calls


def test_the_call_word_after_a_brace_in_prose_opens_no_call():
    """Only inside an open block: ``}call:x{`` in plain text stays text."""
    msg = _parse("call-word-block", 'Use {a}call:x{b} here.<turn|>')
    assert not msg.get("tool_calls") and msg["content"] == "Use {a}call:x{b} here."


SHAPED = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize("text, calls, content", [
    (f"{SHAPED}<|im_end|>", [WEATHER], ""),  # bare at the reply's start, no <tool_call>
    ('{\n  "name": "get_weather", "parameters": {"city": "Paris"}\n}', [WEATHER], ""),
    (f"This is a call:\n{SHAPED}", [WEATHER], "This is a call:"),  # after text
    (f"Let me check.\n```json\n{SHAPED}\n```\nDone.", [WEATHER], "Let me check.\n\nDone."),  # in a fence
    ('<function=get_weather>{"city": "Paris"}</function>', [WEATHER], ""),  # a function tag around the arguments
    ('Sure. <function name="get_weather">\n{"city": "Paris"}\n</function>\n<function=get_time>{}</function>',
     [WEATHER, ("get_time", {})], "Sure."),
    (f"<tool_call>\n{SHAPED}\n</tool_call>\n{SHAPED}", [WEATHER, WEATHER], ""),  # one with its opener, one bare
])
def test_a_json_call_object_is_a_call_without_its_opener(text, calls, content):
    """A Hermes/Qwen ``<tool_call>{…}</tool_call>`` template: the call object describes itself, so it is a call
    wherever the model writes it and whatever it wraps it in (llama.cpp's Hermes 2 Pro parser reads each of
    these); the text around it stays content."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == calls and (msg.get("content") or "").strip() == content, msg


@pytest.mark.parametrize("text", [
    'See {"name": "get_weather"} and {"city": "Paris"}',  # a name, no arguments
    'Use {"arguments": {"city": "Paris"}, "name": "get_weather"} there',  # bare: the head is the name first
    '<function=get_weather> and then {"city": "Paris"}',  # the tag's object must follow it
])
def test_a_json_object_that_is_no_call_stays_content_without_the_opener(text):
    msg = _parse("chatml-think", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


def test_a_call_shaped_object_inside_a_call_being_decided_is_its_argument():
    """While the template's own call is still being decided (a short call before its close, a long one before
    ``CALL_WINDOW`` characters), a call-shaped object in its arguments opens nothing: the regex module's partial
    search prefers a whole match further on to the pending one, so without the look back the inner object
    would open a call of its own in the middle of the outer call's arguments."""
    steps = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    for pad in ("", "x" * 400):
        arguments = {"steps": steps, "pad": pad}
        text = '<tool_call>\n{"name": "plan", "arguments": ' + json.dumps(arguments) + "}\n</tool_call>"
        msg = _parse("chatml-think", text)
        assert _calls(msg) == [("plan", arguments)] and not msg.get("content"), msg


LIST = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'


@pytest.mark.parametrize("text, calls, content", [
    (f"{LIST}<|/turn|>", [WEATHER], ""),  # as rendered
    (f"<think>Paris, then.</think>{LIST}", [WEATHER], "<think>Paris, then.</think>"),  # after a block the template never writes
    (f"Sure.\n```json\n{LIST}\n```", [WEATHER], "Sure."),  # in a fence after text
    (f"Sure.[TOOL_CALLS]{LIST}", [WEATHER], "Sure."),  # after a markup token another family writes
    ('Sure.<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "parameters": {}}]</tool_call>',
     [WEATHER, ("get_time", {})], "Sure."),
    (f"{LIST} Done.", [WEATHER], "Done."),
    ('[{"name": "get_weather", "arguments": {"city": "Par', [("get_weather", '{"city": "Par')], ""),  # cut off: its text kept
])
def test_a_json_call_list_with_no_opener_is_recognised_wherever_it_stands(text, calls, content):
    """xLAM's shape, ``[{"name": …, "arguments": …}]`` with no marker (vLLM's xLAM parser reads each of these)."""
    msg = _parse("json-list-bare", text)
    assert _calls(msg) == calls and (msg.get("content") or "") == content, msg


@pytest.mark.parametrize("text", [
    'See [1, 2] and [{"city": "Paris"}] and <b>bold</b>',
    'See [{"name": "get_weather"}]',  # a name, no arguments
])
def test_a_json_list_that_holds_no_call_stays_content(text):
    msg = _parse("json-list-bare", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg


@pytest.mark.parametrize("text, content", [
    ('Sure.\n[{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1"}]', "Sure."),  # no <|calls|> opener
    ('Sure.\n```json\n[{"name": "get_weather", "parameters": {"city": "Paris"}}]', "Sure."),
])
def test_a_keyed_json_call_list_is_a_call_list_without_its_opener(text, content):
    """Call objects with ids in a list after a marker (Mistral Nemo's ``[TOOL_CALLS][…]``): the list written
    without the marker, after text, is recognised by its first call's head, the name first (Ollama's Mistral
    parser reads it)."""
    msg = _parse("json-array-ids", text)
    assert _calls(msg) == [WEATHER] and msg.get("content") == content, msg


@pytest.mark.parametrize("text, calls, content", [
    # the section's own markers around a list of JSON call objects, under either arguments key
    ('<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]<|tool_call_end|>',
     [("get_weather", {"city": "Paris", "days": 3})], None),
    ('<|tool_call_start|>[{"name": "get_weather", "parameters": {"city": "Madrid"}}]<|tool_call_end|>',
     [("get_weather", {"city": "Madrid"})], None),
    # several calls, nested values, JSON literals and escapes, text around the section
    ('Let me check. <|tool_call_start|>[{"name": "a", "arguments": {"o": {"x": [1, {"y": null}]}, "ok": true}}, '
     '{"name": "b", "arguments": {"q": "say \\"hi\\", {\\"k\\": 1}"}}]<|tool_call_end|> Done.',
     [("a", {"o": {"x": [1, {"y": None}]}, "ok": True}), ("b", {"q": 'say "hi", {"k": 1}'})], "Let me check.\n\nDone."),
    # a string holding an apostrophe and escapes is decoded (before: its backslashes kept)
    ('<|tool_call_start|>[{"name": "b", "arguments": {"q": "it\'s \\"hi\\"\\n"}}]<|tool_call_end|>',
     [("b", {"q": 'it\'s "hi"\n'})], None),
    # an array of objects inside the arguments, one with a name, does not end the call
    ('<|tool_call_start|>[{"name": "f", "arguments": {"people": [{"x": {}}, {"name": "Bob"}]}}]<|tool_call_end|>',
     [("f", {"people": [{"x": {}}, {"name": "Bob"}]})], None),
    # the template's own pythonic calls are read as before, a dict argument shaped like a call object too
    ('<|tool_call_start|>[get_weather(city=\'Paris\', d={"name": "x", "arguments": {}})]<|tool_call_end|>',
     [("get_weather", {"city": "Paris", "d": {"name": "x", "arguments": {}}})], None),
])
def test_a_pythonic_sections_calls_may_be_json_objects(text, calls, content):
    """FORMATS §7b, call spellings: a call object describes itself, also between a pythonic list's markers."""
    msg = _parse("pythonic-literals", text)
    assert _calls(msg) == calls
    assert msg.get("content") == content


@pytest.mark.parametrize("text", [
    'See [{"name": "get_weather", "arguments": {"city": "Paris"}}] in prose.',  # no section marker: prose
    '<|tool_call_start|>[{"name": "get_weather"}]<|tool_call_end|>',  # no arguments: no call
])
def test_json_call_objects_outside_a_pythonic_section_or_without_arguments_stay_content(text):
    msg = _parse("pythonic-literals", text)
    assert not msg.get("tool_calls")
    assert "get_weather" in msg.get("content", "")


def test_a_json_call_cut_off_in_a_pythonic_section_keeps_what_arrived():
    msg = _parse("pythonic-literals", '<|tool_call_start|>[{"name": "f", "arguments": {"city": "Ber')
    assert _calls(msg) == [("f", {"city": "Ber"})]


@pytest.mark.parametrize("text, calls, ids, content", [
    # the list spelling after the template's bracket opener, ids after the arguments (Mistral's pre-v11 format)
    ('[CALL][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]</s>',
     [("get_weather", {"city": "Paris"})], None, None),
    ('Let me check. [CALL] [{"name": "a", "arguments": {"o": {"x": [1, {"y": null}]}}}, '
     '{"name": "b", "parameters": {"q": "x"}}]\nDone.',
     [("a", {"o": {"x": [1, {"y": None}]}}), ("b", {"q": "x"})], None, "Let me check.\n\nDone."),
    ('[CALL][{"arguments": {"city": "Paris"}, "name": "get_weather"}]', [("get_weather", {"city": "Paris"})], None, None),
    # the template's own spelling, beside it, as before
    ('[CALL]get_weather[ARGS]{"city": "Paris"}[CALL]get_time[ARGS]{}</s>',
     [("get_weather", {"city": "Paris"}), ("get_time", {})], None, None),
])
def test_a_bracket_openers_calls_may_be_a_list_of_call_objects(text, calls, ids, content):
    """FORMATS §7b, call spellings: after a bracket opener with no close (``[TOOL_CALLS]f[ARGS]{…}``) the calls
    may be a list of objects that describe themselves (``[TOOL_CALLS][{"name": …, "arguments": …}]``)."""
    msg = _parse("bracket-no-close", text)
    assert _calls(msg) == calls
    assert msg.get("content") == content


def test_a_call_objects_id_is_the_calls_id_where_the_template_writes_ids():
    msg = _parse("wrapped-bracket", '[CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
                                    '{"name": "f", "arguments": {}, "id": "a1b2c3d4e"}][ANSWER]ok[/ANSWER][END]')
    assert _calls(msg) == [WEATHER, ("f", {})]
    assert [c["id"] for c in msg["tool_calls"]] == ["", "a1b2c3d4e"] and msg["content"] == "ok"


@pytest.mark.parametrize("text, arguments", [
    # objects inside the template's own spelling's arguments close nothing, one shaped like a call's head neither
    ('[CALL]f[ARGS]{"people": [{"name": "a"}, {"name": "b", "arguments": 1}]}</s>',
     {"people": [{"name": "a"}, {"name": "b", "arguments": 1}]}),
    ('[CALL]f[ARGS]{"x": [{"b": {"c": 1}}]}</s>', {"x": [{"b": {"c": 1}}]}),
    ('[CALL]f[ARGS]{"x": [{"b": 1}], "y": {"z": []}}', {"x": [{"b": 1}], "y": {"z": []}}),
])
def test_a_bracket_calls_arguments_are_not_read_as_a_list_of_calls(text, arguments):
    assert _calls(_parse("bracket-no-close", text)) == [("f", arguments)]


def test_a_call_list_without_the_bracket_opener_stays_content():
    text = 'Here is JSON: [{"name": "x", "arguments": {}}] ok'
    msg = _parse("bracket-no-close", text)
    assert not msg.get("tool_calls") and msg["content"] == text


@pytest.mark.parametrize("text, calls, content", [
    ('[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]',
     [WEATHER, ("get_time", {})], None),
    ('Sure.\n```json\n[{"name": "get_weather", "parameters": {"city": "Paris"}}]\n```\nDone.', [WEATHER], "Sure.\n\nDone."),
    ('Sure.\n```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```\nDone.', [WEATHER], "Sure.\n\nDone."),
    # objects named like calls inside the arguments stay arguments
    ('[{"name": "f", "parameters": {"q": [{"name": "n"}, {"name": "m"}]}}]', [("f", {"q": [{"name": "n"}, {"name": "m"}]})], None),
])
def test_bare_json_calls_may_be_a_list_of_call_objects(text, calls, content):
    """FORMATS §7b: several bare calls as a JSON list (SGLang's JSON call parsers read an array of call objects)."""
    msg = _parse("json-bare", text)
    assert _calls(msg) == calls
    assert msg.get("content") == content


def test_a_list_that_holds_no_call_object_stays_content_beside_bare_calls():
    text = "[1, 2, 3] are numbers"
    assert _parse("json-bare", text) == {"role": "assistant", "content": text}


@pytest.mark.parametrize("text, calls, content", [
    ('<tool_call>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "parameters": {}}]\n</tool_call>',
     [WEATHER, ("get_time", {})], None),
    ('Sure.<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>Done.', [WEATHER], "Sure.\n\nDone."),
    ('<tool_call>\n[\n  {"name": "a", "arguments": {"o": {"x": [1, {"y": {}}]}}},\n  {"name": "b", "arguments": {}}\n]\n</tool_call>',
     [("a", {"o": {"x": [1, {"y": {}}]}}), ("b", {})], None),
])
def test_json_calls_between_markers_may_be_a_list(text, calls, content):
    """FORMATS §7b: a list of call objects between one call's markers (SGLang's JSON call parsers, vLLM's xLAM
    parser read ``<tool_call>[{…}, {…}]</tool_call>``)."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == calls
    assert msg.get("content") == content


def test_a_list_between_call_markers_that_holds_no_call_stays_content():
    text = "<tool_call>\n[1, 2]\n</tool_call>"
    assert _parse("chatml-think", text).get("content") == text


@pytest.mark.parametrize("name, text, calls, thinking", [
    # whitespace after a marker glued to the word or name after it: a detokenizer's spaces around added tokens
    ("call-word-block", '<|tool_call> call:get_weather{"city": "Paris"} <tool_call|>', [WEATHER], None),
    ("call-word-block", '<|tool_call>\ncall:get_weather{"city": "Paris"}\n<tool_call|>', [WEATHER], None),
    ("prefixed-indexed", '<|calls|> <|call|> tools.get_weather:0 <|args|> {"city": "Paris"} <|/call|> <|/calls|>', [WEATHER], None),
    ("prefixed-indexed", '<|calls|>\n<|call|>\ntools.get_weather:0<|args|>{"city": "Paris"}<|/call|>\n<|/calls|>', [WEATHER], None),
])
def test_whitespace_after_a_marker_glued_to_a_word(name, text, calls, thinking):
    """FORMATS §7b, whitespace at marker boundaries: between a marker and the word after it as well."""
    msg = _parse(name, text)
    assert _calls(msg) == calls
    assert msg.get("thinking") == thinking


@pytest.mark.parametrize("text, name", [
    ('<|call|>to=muse.bash<|message|><invoke name="muse.bash">\n<parameter name="cmd">ls</parameter>\n</invoke>', "muse.bash"),  # as rendered
    ('<|call|><|message|><invoke name="muse.bash">\n<parameter name="cmd">ls</parameter>\n</invoke>', "muse.bash"),  # no recipient
    ('<|call|>to=muse<|message|><invoke name="muse.bash">\n<parameter name="cmd">ls</parameter>\n</invoke>', "muse.bash"),  # namespace only
    ('<|call|>to=bash<|message|><invoke name="muse.bash">\n<parameter name="cmd">ls</parameter>\n</invoke>', "muse.bash"),  # differs: the element names it
])
def test_a_name_written_twice_is_the_elements(text, name):
    """The header names the call as a recipient and again in the call's element: the element is the call's
    name, and a recipient left out or cut to the namespace still opens the call (before, only two equal names
    did; the others' text was dropped or left as content)."""
    assert _calls(_parse("name-twice", text)) == [(name, {"cmd": "ls"})]


def test_a_name_written_twice_keeps_its_marker():
    """The recipient is optional, the marker before it is not: an element alone opens no call."""
    msg = _parse("name-twice", 'See <|message|><invoke name="f"> here.')
    assert not msg.get("tool_calls") and "invoke" in msg.get("content", ""), msg


@pytest.mark.parametrize("name, text, calls", [
    # the model ended its turn inside the call: the end token is no part of the value
    ("function-in-wrapper", "Let me look.\n<tool_call>\n<function=search>\n<parameter=query>\nweather in NYC<|im_end|>",
     [("search", {"query": "weather in NYC"})]),
    # the call's end left out before the section's own end token
    ("prefixed-indexed", '<|calls|><|call|>tools.search:0<|args|>{"q": 1}<|/calls|>', [("search", {"q": 1})]),
])
def test_a_call_left_open_ends_at_the_turns_or_sections_token(name, text, calls):
    """A call whose close never came ends where the turn's end token ends the text, or where its section's
    end token comes: before, the token came back inside the last argument (``weather in NYC<|im_end|>``) or
    made the arguments no JSON (``{…}<|/calls|>``)."""
    assert _calls(_parse(name, text)) == calls


def test_a_turn_end_token_inside_a_value_stays_the_values():
    """Only where it ends the text: a token quoted inside a value, more of the value after it, stays there."""
    text = "<tool_call>\n<function=echo>\n<parameter=text>\nsay <|im_end|> twice\n</parameter>\n</function>\n</tool_call>"
    assert _calls(_parse("function-in-wrapper", text)) == [("echo", {"text": "say <|im_end|> twice"})]


@pytest.mark.parametrize("value", [
    "def f():\n    # see <parameter=path>...</parameter> in the docs\n    return '<parameter=path>x</parameter>'",
    '{"hint": "use <parameter=name>val</parameter>"}',
])
def test_a_value_that_writes_the_formats_own_tags_keeps_them(value):
    """A value (code, a hint) holding ``<parameter=…>…</parameter>`` itself: a close tag followed by more of the
    value is the value's own, only one the next key's tag, a closing tag or the call's end follows closes it."""
    text = f"<tool_call>\n<function=edit>\n<parameter=text>\n{value}\n</parameter>\n<parameter=path>\na.py\n</parameter>\n</function>\n</tool_call>"
    assert _calls(_parse("function-in-wrapper", text)) == [("edit", {"text": value, "path": "a.py"})]


@pytest.mark.parametrize("text, args", [
    ("<tool_call>\n<function=f>\n<parameter=a>\n1\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>", {"a": "1", "b": "2"}),  # a close left out
    ("<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</tool_call>", {"a": "x"}),  # the call's close left out
])
def test_a_value_close_left_out_still_ends_the_value(text, args):
    assert _calls(_parse("function-in-wrapper", text)) == [("f", args)]


@pytest.mark.parametrize("name, text, calls", [
    ("kv-tagged", "<call>f\n<k>a</k><v>1</v>\n<call>g\n<k>b</k><v>2</v>\n</call>",
     [("f", {"a": "1"}), ("g", {"b": "2"})]),
    # the format's own tags inside a value stay the value's: only after a value's close does a header end a call
    ("kv-tagged", "<call>f\n<k>a</k><v>see <call>g here</v>\n</call>",
     [("f", {"a": "see <call>g here"})]),
])
def test_a_tagged_call_whose_close_is_left_out_ends_where_the_next_header_follows_a_value(name, text, calls):
    """GLM's ``…</arg_value>\n<tool_call>g`` (DSML's and MiniMax's ``…</parameter>\n<invoke name="g">`` likewise): the
    next call's header right after a value's close ends a call whose close the model left out. Fails on the commit
    before: the first call ran on into the next and took its arguments under its own name."""
    msg = _parse(name, text)
    assert _calls(msg) == calls and not (msg.get("content") or "").strip(), msg


@pytest.mark.parametrize("first", [
    "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</tool_call>\n",  # the element's close left out
    "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n",  # the wrapper's end tag left out
])
def test_a_call_whose_close_is_left_out_ends_before_the_next_call(first):
    """The element's close left out, the wrapper's end tag closes the call where the next call's wrapper (or the turn's
    or text's end) follows it. Fails on the commit before: the first call ran on into the second, whose argument it
    took under its own name (``f`` with ``{"a": "1", "b": "2"}``), the second call gone."""
    second = "<tool_call>\n<function=g>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>"
    msg = _parse("function-in-wrapper", first + second)
    assert _calls(msg) == [("f", {"a": "1"}), ("g", {"b": "2"})] and not (msg.get("content") or "").strip(), msg


def test_the_wrappers_tags_quoted_inside_a_value_stay_the_values():
    """The wrapper's end tag alone closes a call only right after a value's close or the element: quoted inside a
    value, with the next call's wrapper after it, it is the value's (the first version of the rule above closed
    the call there)."""
    value = "The format is </tool_call>\n<tool_call> between calls."
    text = f"<tool_call>\n<function=edit>\n<parameter=text>\n{value}\n</parameter>\n<parameter=path>\na.py\n</parameter>\n</function>\n</tool_call>"
    msg = _parse("function-in-wrapper", text)
    assert _calls(msg) == [("edit", {"text": value, "path": "a.py"})] and not msg.get("content"), msg


@pytest.mark.parametrize("text, calls, content", [
    ('[CALL]a[ARGS]{"x": 1}b[ARGS]{"y": {"z": [2]}}', [("a", {"x": 1}), ("b", {"y": {"z": [2]}})], ""),  # the second opener left out
    ('[CALL]a[ARGS]{"x": 1}[CALL]b[ARGS]{"y": 2}', [("a", {"x": 1}), ("b", {"y": 2})], ""),  # as rendered
    ('[CALL]a[ARGS]{"note": "x}b[ARGS]{"}', [("a", {"note": "x}b[ARGS]{"})], ""),  # inside a string: no call
    ('[CALL]a[ARGS]{"x": 1}\nDone.', [("a", {"x": 1})], "Done."),
])
def test_a_later_call_may_leave_out_its_opener(text, calls, content):
    """Each call opens with the opener then ``NAME[ARGS]``; a model writing several calls may write the opener once
    (mlx-lm's Mistral parser reads ``[TOOL_CALLS]a[ARGS]{…}b[ARGS]{…}`` as two calls): a name and the marker right
    after a call's ``}`` open the next one. Before, the second call came back inside the first one's arguments."""
    msg = _parse("bracket-no-close", text)
    assert _calls(msg) == calls and (msg.get("content") or "") == content, msg


@pytest.mark.parametrize("text, calls, ids", [
    ('[CALL]a[ID]call00001[ARGS]{"x": 1}b[ARGS]{"y": 2}', [("a", {"x": 1}), ("b", {"y": 2})], ["call00001", ""]),
    ('[CALL]a[ID]call00001[ARGS]{"x": 1}b[ID]call00002[ARGS]{"y": 2}', [("a", {"x": 1}), ("b", {"y": 2})], ["call00001", "call00002"]),
    ('[CALL]a[ARGS]{"x": 1}b[ARGS]{"y": 2}', [("a", {"x": 1}), ("b", {"y": 2})], ["", ""]),  # no ids at all
    ('[CALL]a[ID]call00001[ARGS]{"note": "x}b[ID]c[ARGS]{"}', [("a", {"note": "x}b[ID]c[ARGS]{"})], ["call00001"]),
])
def test_a_later_call_may_leave_out_its_opener_where_an_id_comes_before_the_arguments(text, calls, ids):
    """As above where the template writes an id between the name and ``[ARGS]`` (Mistral Small 3.2's
    ``[TOOL_CALLS]a[CALL_ID]id[ARGS]{…}``): the later call's id may come or not, and a call without one has an
    empty id (the transform's ``{id}`` is always defined: no raise). Fails on the commit before: the second call
    came back inside the first one's arguments."""
    msg = _parse("bracket-id-no-close", text)
    assert _calls(msg) == calls and not msg.get("content"), msg
    assert [c.get("id", "") for c in msg["tool_calls"]] == ids, msg


@pytest.mark.parametrize("text, content", [
    ('<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tools>', ""),
    ('<tool>\n  {"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool><|im_end|>', ""),
    ('<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} </function_call>', ""),
    ('```xml\n<response>\n    {"name": "get_weather", "arguments": {"city": "Paris"}}\n</response>\n```', ""),
    ('```json\n\n  <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}} \n  </function_call> \n``` ', ""),
    ('Let me check.\n<tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools>\nDone.', "Let me check.\n\nDone."),
    ('<tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools>\n`inline` code', "`inline` code"),
])
def test_a_call_object_in_a_wrapper_the_template_does_not_write_is_read_with_its_wrapper(text, content):
    """A bare call object inside another wrapper (``<tools>``, ``<tool>``, ``<function_call>``, a fenced ``<response>``:
    llama.cpp's Hermes 2 Pro cases): the object describes itself, so the tag around it (and a fence around that) is the
    call's markup, consumed by the call's open and close, never content (llama.cpp drops it too). Before, the call was
    read but the tags stayed in content; before that, the arguments ran to the end of the text."""
    msg = _parse("chatml-think", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and (msg.get("content") or "") == content, msg


def test_a_markerless_call_object_in_a_wrapper_is_read_with_its_wrapper():
    """The same where the template's calls have no marker at all (a JSON run, Llama 3.x style): a model that wraps
    its call in ``<tool_call>`` anyway gets the call with clean arguments, and no wrapper left in content."""
    msg = _parse("json-bare", '<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tool_call>')
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and not msg.get("content"), msg


VUE = '<div>{{name}}</div>\n<p>{{ n }}</p> and <b>{{ x }}</b> more'


@pytest.mark.parametrize("name, text", [
    ("chatml-think", '<tool_call>\n{"name": "write", "arguments": {"path": "a.vue", "content": ' + json.dumps(VUE) + '}}\n</tool_call>'),
    ("json-bare", '{"name": "write", "parameters": {"path": "a.vue", "content": ' + json.dumps(VUE) + '}}'),
])
def test_an_end_tag_inside_a_string_argument_does_not_end_the_call(name, text):
    """A string argument holding ``}}`` then an end tag (a Vue or Jinja file a coding agent writes) is no wrapper's
    close: a wrapper's end tag ends its line, the text or stands before a special token, and a raw newline never
    stands inside a JSON string. Before, the call split there: its arguments came back as the text up to ``{{name}``
    and the rest of the string as content."""
    msg = _parse(name, text)
    assert _calls(msg) == [("write", {"path": "a.vue", "content": VUE})] and not msg.get("content"), msg


USERS = {"users": [{"name": "a", "age": 1}, {"name": "b", "id": "x"}]}


@pytest.mark.parametrize("name, text", [
    ("json-array-ids", '<|calls|>[{"id": "c1", "name": "add_users", "arguments": ' + json.dumps(USERS) + '}]'),
    ("json-list-bare", '[{"name": "add_users", "arguments": ' + json.dumps(USERS) + '}]'),
    ("json-array-stop", '<tool_calls>[{"name": "add_users", "arguments": ' + json.dumps(USERS) + '}]<|im_end|>'),
    ("json-after-reasoning", '[{"id": "c1", "type": "function", "function": {"name": "add_users", "arguments": '
     + json.dumps({"users": [{"id": "u1", "type": "x", "function": {"name": "a"}}, {"id": "u2", "type": "x"}]}) + '}}]'),
])
def test_objects_with_a_calls_keys_inside_the_arguments_end_no_call(name, text):
    """An argument holding a list of objects that use a call's keys (``"users": [{"name": "a"}, {"name": "b"}]``,
    common in real tools) is no second call: a call closes before another only where the next object's whole head
    follows (its call keys up to the arguments). Before, a bare ``{"name":`` after ``},`` closed the call there:
    its arguments came back as text cut at the first object and the rest as content (Mistral Nemo, Cohere)."""
    msg = _parse(name, text)
    calls = _calls(msg)
    assert len(calls) == 1 and calls[0][0] == "add_users" and isinstance(calls[0][1], dict) and not msg.get("content"), msg


def test_a_comma_left_out_between_two_keyed_calls_still_parts_them():
    """``[{"id": …, "name": "a", "arguments": {}}{"id": …, "name": "b", …}]``: the next call's whole head after a
    call's ``}`` opens it with or without the list's comma (Ollama's Cohere parser reads both calls). Before, the
    second call came back inside the first one's arguments."""
    msg = _parse("json-array-ids", '<|calls|>[{"id": "c1", "name": "a", "arguments": {}}{"id": "c2", "name": "b", "arguments": {"x": "{not json}"}}]')
    assert _calls(msg) == [("a", {}), ("b", {"x": "{not json}"})] and not msg.get("content"), msg


SHORT_ARGS_CALLS = [
    ("tag-json", "<invoke:get_weather>@@</invoke>"),
    ("bracket-no-close", "[CALL]get_weather[ARGS]@@"),
    ("prefixed-indexed", "<|calls|><|call|>tools.get_weather:0<|args|>@@<|/call|><|/calls|>"),
    ("wrapped-bracket", "[CALLS]get_weather[ID]call00001[ARGS]@@[END]"),
]


@pytest.mark.parametrize("name, call", SHORT_ARGS_CALLS, ids=[n for n, _ in SHORT_ARGS_CALLS])
@pytest.mark.parametrize("args, cut", [
    ('{"city": "Pa', True),  # a token limit inside the arguments
    ('{"city": "Paris", "days": ', True),
    ("{invalid json}", False),
    ('{"city": Paris}', False),
    ("{'city': 'Paris'}", False),  # a Python dict where JSON stands
    ('{"city": "Paris", "days": three}', False),
])
def test_a_call_whose_short_arguments_are_no_json_stays_content(name, call, args, cut):
    """A call is one only when its arguments are (FORMATS §9, malformed calls): within the window, a whole JSON
    object; a cut or malformed one stays in content, as written, not a call whose arguments are its text."""
    text = "Let me check. " + (call[: call.index("@@")] + args if cut else call.replace("@@", args))
    msg = _parse(name, text)
    assert not msg.get("tool_calls"), msg
    assert "get_weather" in msg["content"] and args.rstrip() in msg["content"], msg


@pytest.mark.parametrize("name, call", SHORT_ARGS_CALLS, ids=[n for n, _ in SHORT_ARGS_CALLS])
@pytest.mark.parametrize("args, arguments", [
    ('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}),
    ('{"a": [1, {"b": null}], "s": "\\u00e9 } ]"}', {"a": [1, {"b": None}], "s": "é } ]"}),
    # a raw line break inside a string (code written with its lines): JSON as a lenient reader takes it, so a call;
    # its arguments come back as their text, which the json parser cannot read
    ('{"code": "a = 1\nb = 2"}', '{"code": "a = 1\nb = 2"}'),
])
def test_a_call_whose_arguments_are_json_is_a_call(name, call, args, arguments):
    msg = _parse(name, "Let me check. " + call.replace("@@", args))
    assert _calls(msg) == [("get_weather", arguments)]
    assert msg["content"] == "Let me check."


@pytest.mark.parametrize("cut", ["<", "</", "</inv", "</invoke"])
def test_a_text_cut_inside_a_calls_close_ends_the_call(cut):
    """A token limit inside a close marker several tokens long (``</function>``): what arrived of the close
    ends the call, its arguments read without it (FORMATS §9); before, they came back as text, ``{…}</inv``."""
    msg = _parse("tag-json", 'Let me check.<invoke:get_weather>{"city": "Paris"}' + cut)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and msg["content"] == "Let me check.", msg


@pytest.mark.parametrize("text", [
    'Sure.<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</calls>',  # as rendered
    'Sure.<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n</calls>',  # a newline before the section's end
    'Sure.<calls>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n</calls>\n<|end|>',
])
def test_a_call_list_whose_section_end_stands_on_a_line_of_its_own(text):
    """Text on a new line after the list's ``]`` closes the list (it is content): the look took the section's
    own end tag for such text, and a stream, which sees ``\\n<`` before the tag is whole, closed the list there
    and left ``</calls>`` in content (Nemotron Super's ``<TOOLCALL>``); one-shot read it whole."""
    msg = _parse("json-array-section", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and msg.get("content") == "Sure."


def test_a_call_list_whose_first_object_lost_its_brace_streams_as_it_parses():
    """The first object still undecided (its short check reads to the list's end) was pending while the second
    call's open completed, and the regex module's partial search prefers a later whole match: a stream opened
    the second call and left the first in content, where one-shot read both (8 templates: Nemotron, Apriel,
    Granite 3.0, Hunyuan-A13B, …; ``benchmarks/mutations.py``, brace removed). A later call opens only after a
    whole object standing in the list now: the broken call comes back with its arguments as text, the rest of
    the list as content, one-shot and streamed alike; no text is lost."""
    text = ('Sure.<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}, '
            '{"name": "get_time", "arguments": {"tz": "UTC"}}]</calls>')
    msg = _parse("json-array-section", text)
    assert _calls(msg) == [("get_weather", '{"city": "Paris"')]
    assert msg["content"] == 'Sure.\n\n{"name": "get_time", "arguments": {"tz": "UTC"}}]</calls>'


TYPES = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "opts": {"type": "object"}}}}}]


@pytest.mark.parametrize("text, content", [
    ('<call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</call><|im_end|>', None),  # a Hermes call in the tags
    ('Sure.\n<call>\n{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}\n</call>\nDone.', "Sure.\n\nDone."),
    ('<call>get_weather\n{"city": "Paris", "days": 3}</call>', None),  # the name's line, then the arguments as JSON
    ('<call>get_weather\n<k>city</k><v>Paris</v>\n<k>days</k><v>3</v>\n</call>', None),  # as rendered
])
def test_a_tagged_calls_arguments_may_be_a_json_object(text, content):
    """FORMATS §7b: a call object describes itself, inside the wrapper tag a tagged template puts around each call
    too (mlx-lm's GLM 4.7 and Ollama's Laguna parsers read it); and a JSON object after the name's line is the
    arguments. Values come back as tagged values do: as text the schema types (``tools=``)."""
    msg = _parse("kv-tagged", text, tools=TYPES)
    assert _calls(msg) == [("get_weather", {"city": "Paris", "days": 3})] and msg.get("content") == content, msg


def test_a_json_object_in_a_tagged_call_keeps_nesting_and_stays_content_when_no_json():
    msg = _parse("kv-tagged", '<call>{"name": "get_weather", "arguments": {"city": "Paris", "opts": {"a": [1, {"b": 2}]}}}</call>', tools=TYPES)
    assert _calls(msg) == [("get_weather", {"city": "Paris", "opts": {"a": [1, {"b": 2}]}})], msg
    text = '<call>{"name": "get_weather", "arguments": {city: Paris}}</call>'
    assert _parse("kv-tagged", text) == {"role": "assistant", "content": text}


@pytest.mark.parametrize("text", [
    '<call>{"name": "get_weather", "arguments": {"city": "Par\\nis"}}</call>',  # an escape: its strings would come back as written
    '<call>get_weather\n{"city": "say \\"hi\\""}</call>',
    '<call>{"name": "get_weather", "arguments": {"city": "Paris"}',  # its close never came (cut within the window)
])
def test_a_json_object_in_a_tagged_call_that_a_text_reader_would_misread_stays_content(text):
    """Tagged arguments are text (no value parser), so a JSON object's escapes would come back as two characters
    (``\\n``): such an object is no call, its text visible (``tagged_calls.no_escape_until``)."""
    msg = _parse("kv-tagged", text)
    assert not msg.get("tool_calls") and msg["content"] == text, msg
