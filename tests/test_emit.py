"""What the emitter's delimiters promise, checked with transformers' own parser on hand-written model
output (one-shot and streamed a character at a time): whitespace between regions never wipes the
content, and the content's bound at the next call never fires on text that is not a call."""

import json
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import ResponseParser, parse_response

from autoparser.emit.reasoning import LONE_CLOSE_WINDOW
from autoparser.emit.template import _literal_prefix
from autoparser.emit.streamed_calls import CALL_WINDOW

MODELS = Path(__file__).resolve().parents[1] / "models"


def template(name: str) -> dict:
    return json.loads((MODELS / f"{name}.response.json").read_text(encoding="utf-8"))


def inferred(name: str, tokens: dict | None = None):
    """What ``infer`` hands out for a team example (its verdict and warnings with it)."""
    import autoparser

    return autoparser.infer_result((MODELS / f"{name}.jinja").read_text(encoding="utf-8"), tokens)


def both(spec: dict, text: str, prefix: str = "") -> list[dict]:
    """The message parsed in one shot and streamed one character at a time."""
    p = ResponseParser(spec, prefix=prefix)
    for ch in text:
        p.feed(ch)
    return [parse_response(text, spec, prefix=prefix), p.finalize()[0]]


CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize("gap", ["", "\n", "\n\n\n", " \n \t\n"])
@pytest.mark.parametrize("end", ["<|im_end|>", "<|im_end|>\n", ""])
def test_whitespace_between_regions_never_wipes_content(gap, end):
    text = f"<think>\nPlan.\n</think>\n\nLet me check.\n\n{CALL}{gap}{CALL}{gap}{end}"
    for msg in both(template("chatml-think"), text):
        assert msg["content"] == "Let me check."
        assert msg["thinking"] == "Plan."
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather", "get_weather"]


def test_a_reasoning_block_after_content_is_reasoning():
    """Reasoning opens at every opener (interleaved thinking): a block written after content is reasoning,
    and the content before it is kept (the text fields join their regions); the call after it still parses."""
    text = f"Let me check.<think>Which city?</think>\n\n{CALL}<|im_end|>"
    for msg in both(template("chatml-think"), text):
        assert msg["content"] == "Let me check."
        assert msg["thinking"] == "Which city?"
        assert len(msg["tool_calls"]) == 1


@pytest.mark.parametrize("text, content", [
    ("Plain answer.[END]", "Plain answer."),  # the wrapper left out: content from the reply's start
    ("  \nPlain answer.", "Plain answer."),
    ("[ANSWER]Wrapped.[/ANSWER][END]", "Wrapped."),
    ("[CALLS]get_weather[ID]call1[ARGS]{\"city\": \"Paris\"}[ANSWER]Done.[/ANSWER][END]", "Done."),
])
def test_a_wrapper_left_out_keeps_the_text(text, content):
    """Content the template always wraps (``[ANSWER]…[/ANSWER]``) and a reply that leaves the wrapper out:
    the bare text would be outside every field and lost. It opens content at the reply's start when its
    first character begins no marker that may come there, so a stream decides on one character and a
    reply that starts with a marker (a call, the wrapper) is read as before."""
    for msg in both(template("wrapped-bracket"), text):
        assert msg["content"] == content


@pytest.mark.parametrize("text, content", [
    ("<answer>\nParis is sunny.\n</answer><|stop|>", "<answer>\nParis is sunny.\n</answer>"),  # a tag the template never writes
    ("<b>Sunny</b> in Paris.", "<b>Sunny</b> in Paris."),
    ('<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</calls><p>Done.</p>', "<p>Done.</p>"),
    ("助手：Wrapped.<|stop|>", "Wrapped."),
    ("<|eot|>", None),  # a special token the analysis never saw is no text, as before
])
def test_bare_text_that_begins_with_a_tag_keeps_it(text, content):
    """A reply that leaves the content wrapper out and begins with ``<`` (Hunyuan-A13B's ``<answer>``, HTML)
    was outside every field and lost, since any ``<`` might have begun a marker. Text opens content once it
    has parted from every marker that may come there, character by character, so a stream still never
    takes a marker's first half for text."""
    for msg in both(template("wrapped-unless-calls"), text):
        assert msg.get("content") == content


@pytest.mark.parametrize("text, content", [
    ('[CALLS]get_weather[ID]call1[ARGS]{"city": "Paris"}[/ANSWER][END]', None),  # the wrapper's close written alone
    ('[CALLS]get_weather[ID]call1[ARGS]{"city": "Paris"}[/ANSWER]Done.[END]', "Done."),
])
def test_a_wrappers_stray_close_is_no_text(text, content):
    """The content wrapper's close written with no opener (after calls) is the wrapper's marker, not content
    text: it was read as bare text (``[/ANSWER]`` in content). Bare text after it still opens content."""
    for msg in both(template("wrapped-bracket"), text):
        assert msg.get("content") == content
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"]


@pytest.mark.parametrize("text, content", [
    ("<answer>\nParis is sunny.\n</answer><|stop|>", "Paris is sunny."),
    ("<answer>\nParis is sunny.", "Paris is sunny."),  # the close left out
    ("Paris is sunny.\n</answer>", "Paris is sunny."),  # the open left out
    ("Well. <answer>Sunny.</answer><|stop|>", "Well.\n\nSunny."),  # text before it is kept
    ("助手：Wrapped.<|stop|>", "Wrapped."),  # the template's own wrapper, as before
    ('<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</calls>\n</answer>', None),
    ("<b>Sunny</b> in Paris.", "<b>Sunny</b> in Paris."),  # another tag is text
])
def test_another_wrapper_a_workaround_names_is_stripped(tmp_path, text, content):
    """A wrapper the template never renders (Hunyuan-A13B's ``<answer>…</answer>``, named by a workaround as
    ``content.wrapper``): each of its markers optional, neither ever content text, no word around it lost."""
    import autoparser
    from autoparser.analysis import workarounds

    (tmp_path / "answer.json").write_text(json.dumps({
        "name": "answer", "why": "models write <answer> the template never renders",
        "match": ["助手："], "set": {"content.wrapper": ["<answer>", "</answer>"]}}), encoding="utf-8")
    workarounds.load_dir.cache_clear()
    try:
        res = autoparser.infer_result((MODELS / "wrapped-unless-calls.jinja").read_text(encoding="utf-8"), workarounds_dir=str(tmp_path))
    finally:
        workarounds.load_dir.cache_clear()
    assert res.verdict["status"] == "full" and res.analysis.workarounds == ("answer",)
    for msg in both(res.template, text):
        assert msg.get("content") == content


@pytest.mark.parametrize("text, content, calls", [
    ("Plain answer.<|done|>", "Plain answer.", []),  # no header at all: content, not lost
    ("sent it.<|done|>", "sent it.", []),  # parts from the recipient word (send=) after its first letters
    ("<div>Hi</div><|done|>", "<div>Hi</div>", []),  # a tag of its own parts from <|ch|> at its second character
    ("<3 you<|done|>", "<3 you", []),
    ("<|chart|> is text<|done|>", "<|chart|> is text", []),  # parts from <|ch|> at its fourth
    ("<|ch|>answer<|body|>Fine.<|done|>", "Fine.", []),
    (' send=tools.get_weather<|ch|>act<|body|>{"city": "Paris"}<|invoke|>', None, ["get_weather"]),
])
def test_a_headed_reply_with_no_header_keeps_the_text(text, content, calls):
    """Headed messages (harmony-like): a reply written with no header would be text outside every message.
    Right after the prompt's role header, text that has already parted from every header part opens
    content; streamed one character at a time, a cut inside ``send=`` or a marker opens nothing yet."""
    spec, prefix = template("channels"), "<|begin|>user<|body|>Hi<|stop|><|begin|>assistant"
    p = ResponseParser(spec, prefix=prefix)
    for ch in text:
        p.feed(ch)
    for msg in (parse_response(text, spec, prefix=prefix), p.finalize()[0]):
        assert msg.get("content") == content
        assert [c["function"]["name"] for c in msg.get("tool_calls") or []] == calls


@pytest.mark.parametrize("prefix", ["<think>\n", "<think>"])
@pytest.mark.parametrize("repeat", ["<think>\n", "<think>", "\n<think>\n\n"])
def test_a_repeated_opener_opens_once(prefix, repeat):
    """The prompt opened the block and the model writes the opener again: it is not reasoning text, and the
    reasoning is one region, exactly what the model wrote (before, the first, empty, block closed where the
    second opened and the field's join put its separator first: reasoning "\n\nPlan.")."""
    spec = template("forced-open-tagged")
    text = f"{repeat}Plan.\n</think>\n\nDone.<|turn_end|>"
    for msg in both(spec, text, prefix="<|turn_start|>assistant\n" + prefix):
        assert (msg["thinking"], msg["content"]) == ("Plan.", "Done.")


@pytest.mark.parametrize("text, thinking", [
    ("<|think|>Plan.<|/think|>Done.<|/turn|>", "Plan."),  # the model thinks although the prompt switched it off
    ("<|think|><|/think|>Done.<|/turn|>", None),  # or writes an empty block again
    ("Done.<|/turn|>", None),
])
def test_a_prefilled_empty_block_is_no_region(text, thinking):
    """A thinking-off prompt prefills an empty block: it holds no reasoning, so it adds no region for the
    field's join to put before what the model writes (before: reasoning "\n\nPlan.", or "\n\n" alone)."""
    spec = template("forced-closed")
    for msg in both(spec, text, prefix="<|turn|>assistant\n<|think|><|/think|>"):
        assert (msg.get("thinking"), msg["content"]) == (thinking, "Done.")


@pytest.mark.parametrize("text, content", [
    ("Some content</think>More content<|im_end|>", "Some content</think>More content"),
    ("Answer.</think>\nMore.", "Answer.</think>\nMore."),
    ("Answer.</think><|im_end|>", "Answer."),  # a stray close at the very end holds nothing
    ("Answer.<think>\n\n</think>\n<|im_end|>", "Answer."),  # nor does an empty block there
])
def test_a_stray_reasoning_close_never_loses_content(text, content):
    for msg in both(template("chatml-think"), text):
        assert msg["content"] == content


@pytest.mark.parametrize("text, content", [
    ("<think>\nR\n</think></think>The answer.<|im_end|>", "The answer."),
    ("<think>\nR\n</think>\n</think>\n\nThe answer.<|im_end|>", "The answer."),
    ("<think>\nR\n</think>\n\nThe answer.</think> More.<|im_end|>", "The answer.</think> More."),  # after text: the content's
])
def test_a_reasoning_close_written_twice_closes_once(text, content):
    """A close written again right after itself is one close, as an opener written twice opens once: the repeat
    is no content text (before: content "</think>The answer.")."""
    for msg in both(template("chatml-think"), text):
        assert (msg.get("thinking"), msg["content"]) == ("R", content)


def test_the_turns_end_right_after_a_call_list_is_no_part_of_its_close():
    """json-array-turn-end.jinja writes ``[CALLS][{…, "id": …}]</s>``: the end is the turn's, so a reply whose end an
    engine stripped (and whose calls leave their ids out) still reads its calls (before: the list's close was ``]</s>``, and without it the arguments ran to the
    text's end as text, ``{"city": "Paris"}}]``)."""
    res = inferred("json-array-turn-end", {"eos_token": "</s>"})
    assert res.verdict["status"] == "full" and res.verdict["realistic"]["end_marker_stripped"] == "pass"
    for end in ("", "</s>"):
        for msg in both(res.template, '[CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]' + end, "[INST]Hi[/INST]"):
            assert not msg.get("content")
            assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("get_weather", {"city": "Paris"})]


def test_a_switch_that_adds_an_opening_tag_opens_the_block():
    """switch-opens-think.jinja: the user's turn writes the assistant header and the thinking switch adds ``<think>``;
    an opening tag is the block's opener, not a close of the header (before: reasoning read as ``<|assistant|>`` ..
    ``<think>``, and the template refused), and its end is its closing form."""
    res = inferred("switch-opens-think")
    assert res.verdict["status"] == "full" and res.verdict["fields"]["reasoning"] == "pass"
    for msg in both(res.template, "Plan.\n</think>\n\nHello.<|end|>", "<|user|>Hi<|assistant|><think>\n"):
        assert (msg.get("thinking"), msg["content"]) == ("Plan.", "Hello.")
    for msg in both(res.template, "Hello.<|end|>", "<|user|>Hi<|assistant|>"):
        assert "thinking" not in msg and msg["content"] == "Hello."


def test_the_word_in_a_prefilled_empty_block_is_the_openers():
    """prefilled-channel.jinja prefills ``<|channel>thought\n<channel|>`` (thinking off) and renders no reasoning in
    history: the opener is ``<|channel>thought``, so a reply after that prompt has no reasoning (before: ``thought``,
    the channel's name, on every reply, and the template refused); with thinking on, the block is read."""
    res = inferred("prefilled-channel")
    assert res.verdict["status"] == "full"
    for msg in both(res.template, "Hello.<turn|>", "<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"):
        assert "thinking" not in msg and msg["content"] == "Hello."
    for msg in both(res.template, "<|channel>thought\nPlan.<channel|>Hello.<turn|>", "<|turn>user\nHi<turn|>\n<|turn>model\n"):
        assert (msg.get("thinking"), msg["content"]) == ("Plan.", "Hello.")


def test_a_last_user_turn_closed_by_another_tag_is_no_reply_text():
    """last-user-close.jinja closes the last user message with ``[/LAST]`` and an earlier one with ``[/INST]``: the
    history's close is the user turn's, so the reply is what follows it (before: refused, the conversation read as
    not continuing the prompt)."""
    res = inferred("last-user-close")
    assert res.verdict["status"] == "full" and res.verdict["fields"]["content"] == "pass"
    for msg in both(res.template, "Hello.</s>", "[LAST]Hi[/LAST]"):
        assert msg["content"] == "Hello."


def test_calls_the_template_writes_right_after_the_reasoning_end_it():
    """reasoning-then-calls.jinja writes ``<|think|>R\n<|act|>{…}``: no end before calls, ``<|out|>`` before content. The
    calls' opener ends the block (``Reasoning.calls_end``); before, the call stayed in the reasoning and the template
    was refused (its content opener read only as the reasoning's end)."""
    res = inferred("reasoning-then-calls")
    assert res.verdict["status"] == "full" and res.verdict["fields"]["tool_calls"] == "pass" and res.verdict["fields"]["reasoning"] == "pass"
    prefix = "<|usr|>Hi<|eot|>\n<|model|>"
    text = '<|think|>I need the weather.\n<|act|>{"name": "get_weather", "arguments": {"city": "Paris"}}\n<|eot|>'
    for msg in both(res.template, text, prefix):
        assert msg.get("thinking") == "I need the weather." and not msg.get("content")
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("get_weather", {"city": "Paris"})]
    for msg in both(res.template, "<|think|>Easy.\n<|out|>Hello.\n<|eot|>", prefix):
        assert (msg.get("thinking"), msg.get("content")) == ("Easy.", "Hello.")


def test_a_close_without_opener_is_reasoning_where_a_switch_leaves_the_block_to_the_model():
    """forced-closed.jinja closes the block in the prompt in one mode and leaves it to the model in the
    other, the thinking one (``Reasoning.lone_close``): text before a lone close is reasoning. chatml-think
    has no switch, and reasoning-switch's other mode opens the block (its free mode is the non-thinking
    one): there it stays content, close included."""
    for msg in both(template("forced-closed"), "Let me reason.<|/think|>\n\nThe answer.<|/turn|>"):
        assert (msg.get("thinking"), msg["content"]) == ("Let me reason.", "The answer.")
    text = "Let me reason.</think>\n\nThe answer.<|im_end|>"
    for name in ("chatml-think", "reasoning-switch"):
        for msg in both(template(name), text):
            assert "thinking" not in msg and msg["content"] == "Let me reason.</think>\n\nThe answer."


def test_a_prompt_opened_block_whose_end_no_rendering_shows_ends_at_its_closing_form():
    """spaced-forced-open.jinja: the prompt opens ``<think>``; history writes the header after spaces the
    template's line leaves and drops the reasoning, cutting content at no end. The header aligns the two (the
    prefill is the prompt's ``<think>``, not the whole header), and the block ends at the opener's closing form,
    said by a warning; before, the template was refused (the header read as a reasoning opener)."""
    res = inferred("spaced-forced-open")
    assert res.verdict["status"] == "full" and res.verdict["fields"]["reasoning"] == "pass"
    assert [w for w in res.warnings if "closing form" in w and "'</think>'" in w]
    prefix = "<|user|>Hi<|assistant|><think>\n"
    for msg in both(res.template, "Let me think.\n</think>\n\nHello there.<|end|>", prefix):
        assert (msg.get("thinking"), msg.get("content")) == ("Let me think.", "Hello there.")


@pytest.mark.parametrize("name, text", [
    # a thinking budget of 0 prefills a closed block; other budgets leave the reply's start to the model (Seed-OSS)
    ("budget-closes", "Let me reason.</think>\n\nThe answer.<|/turn|>"),
    # reasoning rendered only before calls, a switch that prefills an empty block (Gemma 4)
    ("tools-only-switch", "Let me reason.<channel|>\n\nThe answer.<turn|>"),
])
def test_a_close_without_opener_is_reasoning_where_a_budget_or_a_tool_only_block_is_switched(name, text):
    """The lone-close rule holds where the switch is a thinking budget whose 0 closes the block in the prompt
    (``probes.reasoning_budgets``), and for reasoning only tool turns render (TOOLS_ONLY) whose switch closes
    the block in one mode: before, both left ``Let me reason.`` and the close in content."""
    for msg in both(template(name), text):
        assert (msg.get("thinking"), msg["content"]) == ("Let me reason.", "The answer.")
    for msg in both(template("tools-only-switch"), "<|channel>Plan.<channel|>Done.<turn|>"):  # the token alone still opens
        assert (msg.get("thinking"), msg["content"]) == ("Plan.", "Done.")


def held_back(spec: dict, text: str, prefix: str = "") -> tuple[int, dict]:
    """(the most characters the streaming parser held back after any character, the message)."""
    p = ResponseParser(spec, prefix=prefix)
    held = 0
    for ch in text:
        p.feed(ch)
        held = max(held, len(p._buffer) - p._pos)
    return held, p.finalize()[0]


@pytest.mark.parametrize("name, close, end", [("forced-closed", "<|/think|>", "<|/turn|>"), ("delimiter-only", "<|/thought|>", "<|end|>")])
def test_a_close_with_no_opener_decides_within_a_window(name, close, end):
    """Text before a close with no opener is reasoning where the close comes within LONE_CLOSE_WINDOW
    characters of the reply's start: a reply that writes no close streams once past that window (it was
    held back whole, re-read on every delta), and longer reasoning written without its opener stays
    content, the close with it (nothing lost)."""
    spec = template(name)
    for msg in both(spec, f"Let me reason.{close}\n\nThe answer.{end}"):
        assert (msg.get("thinking"), msg["content"]) == ("Let me reason.", "The answer.")
    reply = "An answer that goes on. " * 400
    held, msg = held_back(spec, reply + end)
    assert held <= LONE_CLOSE_WINDOW + len(close) and msg["content"] == reply.strip() and "thinking" not in msg
    long = "Reasoning that goes on. " * 40 + close + "The answer."
    for msg in both(spec, long + end):
        assert "thinking" not in msg and msg["content"] == long


def test_a_long_json_argument_streams_as_it_arrives():
    """A call decides whether it is one within CALL_WINDOW characters (its head, or a whole short object), so
    a long argument streams into the region instead of being held back to the call's end and re-read on
    every delta; the message is the same one-shot and streamed."""
    spec = template("chatml-think")
    code = "def f(x):\n    return {'a': [x, \"</b>\"]}\n" * 400
    call = json.dumps({"name": "write_file", "arguments": {"path": "a.py", "content": code}})
    text = f"<think>\nPlan.\n</think>\n\n<tool_call>\n{call}\n</tool_call><|im_end|>"
    held, msg = held_back(spec, text)
    assert held <= CALL_WINDOW + 64, held
    assert msg == parse_response(text, spec, prefix="")
    assert msg["tool_calls"][0]["function"] == {"name": "write_file", "arguments": {"path": "a.py", "content": code}}


@pytest.mark.parametrize("tail", ["", "<|im_end|>", "\n</tool_call>\nMore.<|im_end|>"])
def test_a_long_call_that_breaks_is_kept_as_text(tail):
    """Past the window a call with a call's head is one: cut or malformed later, it is a call named as written
    whose arguments are their text (never raised, nothing lost), never a ``function`` that is a string, which
    servers drop (vLLM) or reject (``transformers serve``); a short one that is not JSON stays content."""
    spec = template("chatml-think")
    text = '<tool_call>\n{"name": "write_file", "arguments": {"content": "' + "x" * 2000 + tail
    for msg in both(spec, text):
        function = msg["tool_calls"][0]["function"]
        assert function["name"] == "write_file" and "x" * 2000 in function["arguments"]


def test_a_long_call_in_a_json_array_streams_and_the_next_one_opens_after_it():
    """An array of calls is one region per object, each decided within CALL_WINDOW characters: a long
    argument streams, the call after it opens at its head, and ``[CALLS][garbage]`` stays content."""
    spec = template("tools-only")
    code = "x = {'k': [1, 2]}  # </b>\n" * 300
    calls = [{"name": "write_file", "arguments": {"content": code}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]
    text = "[CALLS]" + json.dumps(calls) + "[/CALLS][END]"
    held, msg = held_back(spec, text)
    assert held <= CALL_WINDOW + 64, held
    assert msg == parse_response(text, spec, prefix="")
    assert [c["function"] for c in msg["tool_calls"]] == calls
    for msg in both(spec, "Hi.[CALLS][garbage][/CALLS][END]"):
        assert "tool_calls" not in msg and "[CALLS][garbage]" in msg["content"]


@pytest.mark.parametrize("tail", ["", "[END]", "}, {\"name\": \"f\", \"arguments\": {}}][/CALLS][END]"])
def test_a_long_call_in_a_json_array_that_breaks_is_a_call_with_text_arguments(tail):
    """Past the window a call in an array is one on its head: cut or malformed later, it is named as written
    and its arguments are their text, never a ``function`` that is a string (servers drop or reject one);
    arguments written before the name are read in a short call."""
    spec = template("tools-only")
    text = '[CALLS][{"name": "write_file", "arguments": {"content": "' + "x" * 2000 + tail
    for msg in both(spec, text):
        function = msg["tool_calls"][0]["function"]
        assert function["name"] == "write_file" and "x" * 2000 in function["arguments"], msg
    calls = [{"arguments": {"city": "Paris"}, "name": "get_weather"}, {"name": "get_time", "arguments": {}}]
    for msg in both(spec, "[CALLS]" + json.dumps(calls) + "[/CALLS][END]"):
        assert [c["function"] for c in msg["tool_calls"]] == [{"name": "get_weather", "arguments": {"city": "Paris"}},
                                                              {"name": "get_time", "arguments": {}}], msg


def test_a_call_array_ends_at_the_turn_end_its_section_end_holds():
    """A section end that holds the turn's end marker (``]<|im_end|><|stop|>``, HyperCLOVAX's) is never
    written whole: the model stops at ``<|im_end|>``. The array's last call closes at ``]`` before the turn's
    end or the text's end (or text after it on a new line); it was left unclosed, and read whole with
    ``]<|im_end|>`` as its text."""
    spec = template("json-array-stop")
    calls = [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]
    for text in ("<tool_calls>" + json.dumps(calls) + "<|im_end|>", "<tool_calls>" + json.dumps(calls)):
        for msg in both(spec, text):
            assert [c["function"] for c in msg["tool_calls"]] == calls, (text, msg)
            assert not msg.get("content"), (text, msg)
    for msg in both(spec, "<tool_calls>" + json.dumps(calls) + "\nDone.<|im_end|>"):  # text after it, on a new line
        assert [c["function"] for c in msg["tool_calls"]] == calls and msg["content"].strip() == "Done.", msg


def test_an_unclosed_headed_message_ends_where_the_next_begins():
    """A channel message left without its end (``…<|begin|>assistant…`` right after it) ends there."""
    spec = template("channels")
    text = "<|ch|>think<|body|>Plan.<|begin|>assistant<|ch|>answer<|body|>Done.<|done|>"
    for msg in both(spec, text):
        assert (msg.get("thinking"), msg["content"]) == ("Plan.", "Done.")


@pytest.mark.parametrize("header, name, arguments", [
    ("<|begin|>assistant send=tools.get_weather<|ch|>act<|body|>", "get_weather", {"city": "Paris"}),  # as rendered
    ("<|begin|>assistant<|ch|>think send=browser.search<|body|>", "browser.search", {"city": "Paris"}),
    ("<|begin|>assistant send=python<|ch|>think code<|body|>", "python", 'print({"city": "Paris"})'),
])
def test_a_header_addressed_to_any_recipient_is_a_call(header, name, arguments):
    """Headed messages: a header addressed to anyone but the assistant is a call, on any channel, the template's
    own namespace left out of the name and another kept whole (harmony's built-in tools, ``to=browser.search``
    and ``to=python`` on the analysis channel). Before, such a message was no field: its text was lost."""
    spec = template("channels")
    body = json.dumps(arguments) if isinstance(arguments, dict) else arguments
    text = f"<|ch|>think<|body|>Plan.<|stop|>{header}{body}<|invoke|>"
    for msg in both(spec, text):
        assert msg["thinking"] == "Plan."
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [(name, arguments)]


@pytest.mark.parametrize("opener", ["<invoke:bad name>", "<invoke:>", "<invoke:x"])
def test_the_bound_at_the_next_call_never_fires_on_a_non_call(opener):
    """The content's close matches where a call opens so its search stops there; on text that only
    looks like the start of a call it must not match at all, or it would cut the content."""
    spec = template("tag-json")
    assert "invoke:(?=" in spec["fields"]["content"]["close_pattern"]
    text = f"Before {opener} after.<|end|>"
    for msg in both(spec, text):
        assert msg["content"] == f"Before {opener} after."
        assert "tool_calls" not in msg


def test_a_call_right_after_content_opens_at_its_marker():
    spec = template("tag-json")
    text = 'Sure.<invoke:get_weather>{"city": "Paris"}</invoke>\n<|end|>'
    for msg in both(spec, text):
        assert msg["content"] == "Sure."
        assert msg["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}


@pytest.mark.parametrize(
    "pattern, literal, rest",
    [
        (r"<\|tool_call>call:(?P<name>[\w.\-/]+)", "<|tool_call>call:", r"(?P<name>[\w.\-/]+)"),
        ("<tool_call>\\\n<function=(?P<name>x)>", "<tool_call>\n<function=", "(?P<name>x)>"),
        (r"<x>?y", "<x", r">?y"),  # a quantified character is not common to every match
        (r"a|b", "", r"a|b"),  # top-level alternatives share no prefix
        (r"(?:<s>\s*)?<c>", "", r"(?:<s>\s*)?<c>"),
        (r"[ab]c", "", r"[ab]c"),
        (r"\[A\](?:x|y)", "[A]", r"(?:x|y)"),
    ],
)
def test_literal_prefix(pattern, literal, rest):
    assert _literal_prefix(pattern) == (literal, rest)


CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "templates"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS} (../shared is absent)")
def test_json_after_the_turn_is_no_end_marker():
    """Without its eos_token, Mistral Nemo's template writes tool results' JSON right after the last
    turn; the first word there (``[{"type":``) is data, and content must not close on it."""
    import autoparser

    src = (CORPUS / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text(encoding="utf-8")
    close = autoparser.infer(src)["fields"]["content"]["close_pattern"]
    assert "{" not in close.replace("{0,64}", "")
    text = 'Use [{"type": "x"}] like this.'
    assert parse_response(text, autoparser.infer(src), prefix="")["content"] == text


# ---------------------------------------------------------------------------------------------------------------
# Never raise (issue 17): what a model writes that its template never renders still parses, or stays in content
# ---------------------------------------------------------------------------------------------------------------

ARRAY = '<|calls|>[{"id": "c1", "name": "f", "arguments": {"a": "x"}}, {"name": "g", "arguments": {"b": "}]</s>"}}]<|eot|>'


def test_array_calls_without_ids_and_with_markers_in_strings():
    """An item without its id parses with an empty id (no KeyError); a close marker inside a string is text."""
    for msg in both(template("json-array-ids"), "Hi." + ARRAY):
        assert msg["content"] == "Hi."
        assert [(c.get("id"), c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
            ("c1", "f", {"a": "x"}), ("", "g", {"b": "}]</s>"})]


@pytest.mark.parametrize("bad, args", [
    ('<|calls|>[{"id": "c1", "name": "f", "arguments": {"a": "x"}', {"a": "x"}),  # cut at a token limit
    ('<|calls|>[{"id": "c1", "name": "f", "arguments": {"a": "x"', '{"a": "x"'),  # cut inside the arguments
    ('<|calls|>[{"id": "c1", "name": "f", "arguments": {"a": "x"}}<|eot|>', {"a": "x"}),  # a bracket left out
])
def test_a_call_cut_or_unclosed_keeps_what_arrived(bad, args):
    """A call decides from its keyed head (docs/FORMATS.md §9): cut off, or its array never closed, it is a call
    whose arguments are what arrived (parsed when they are whole, their text when not), never lost."""
    for msg in both(template("json-array-ids"), "Hi." + bad):
        assert msg["content"] == "Hi." and [(c["id"], c["function"]["name"], c["function"]["arguments"])
                                            for c in msg["tool_calls"]] == [("c1", "f", args)], msg


@pytest.mark.parametrize("bad", [
    '<|calls|>[{"id": "c1", "arguments": {"a": "x"}}]<|eot|>',  # no name: the transform could not read it
    "<|calls|>[{'name': 'f'}]<|eot|>",  # not JSON
])
def test_a_call_that_is_not_one_stays_in_content(bad):
    for msg in both(template("json-array-ids"), "Hi." + bad):
        assert "tool_calls" not in msg and msg["content"].startswith("Hi.<|calls|>[{"), msg


def test_arguments_read_whole_come_back_as_text_when_they_are_not_json():
    spec = template("tag-json")
    field = spec["fields"]["tool_calls"]
    assert field["content_args"]["allow_non_json"] is True


def test_text_after_a_complete_value_is_content_streamed_or_not():
    """A JSON call that ends the text, its close stripped, followed by a stray tail. A bare call closes on its
    object's ``}`` from a bounded look (docs/FORMATS.md §9), which cannot tell a stray ``}`` from the object's:
    the arguments come back as their text, nothing lost; a tail of text is content."""
    spec = template("json-bare")
    for msg in both(spec, '{"name": "get_weather", "parameters": {"city": "Paris"}}}'):
        assert msg["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}}'
    for msg in both(spec, '{"name": "get_weather", "parameters": {"city": "Paris"}}\nThanks.'):
        assert msg["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"} and msg["content"] == "Thanks."


LLAMA31 = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja"


@pytest.mark.parametrize("text, calls, content", [
    ('<call>{"name": "get_weather", "arguments": {"city": "Paris"}}</call><|pause|>', ["get_weather"], None),
    ('<call>{"name": "a", "arguments": {}}</call><call>{"name": "b", "arguments": {}}</call><|pause|>\n', ["a", "b"], None),
    ('<call>{"name": "get_weather", "arguments": {"city": "Paris"}}</call><|end|>', ["get_weather"], None),
    ("The answer.<|end|>", [], "The answer."),
])
def test_an_end_of_message_marker_after_calls_is_no_content(text, calls, content):
    """A turn that calls tools may end with its own marker (end of message: the model waits for the
    results), which the template writes only once the caller defines a context name (``executor``,
    Llama 3.1's ``builtin_tools``): found by diff (``Tools.end_markers``), it ends the turn like the
    usual end and never arrives as content. Before, ``<|pause|>`` after the call was the content."""
    for msg in both(template("end-of-message"), text):
        assert [c["function"]["name"] for c in msg.get("tool_calls") or []] == calls
        assert msg.get("content") == content


@pytest.mark.skipif(not LLAMA31.exists(), reason="needs ../shared/corpus")
@pytest.mark.parametrize("lead", ["<|python_tag|>", ""])
def test_llama31_eom_after_a_json_call_is_no_content(lead):
    """Llama 3.1 ends a tool-call turn with ``<|eom_id|>`` (its template writes it when ``builtin_tools``
    is defined; the model card's JSON tool-call example ends so): the call parses and content stays empty
    (it was ``<|eom_id|>``)."""
    import autoparser

    spec = autoparser.infer(LLAMA31.read_text(encoding="utf-8"), bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    text = lead + '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>'
    for msg in both(spec, text):
        assert msg["tool_calls"] == [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
        assert not msg.get("content")


@pytest.mark.parametrize("after", ["", "</s>", " and then I answer.", "\n\nDone</s>"])
def test_a_call_list_after_a_bracketed_marker_ends_with_its_value(after):
    """``[CALLS][...]`` then a stray end of sequence or text (Mistral's ``[TOOL_CALLS][...]`` shape, whose
    opener ends with the bracket a value ends with): the calls parse and the tail is content, one-shot and
    streamed, on every transformers release the project supports (5.24 holds a close reported after its
    start: the region's close also stands on the value's end)."""
    calls = '[CALLS] [{"name": "get_weather", "arguments": {"city": "Paris ]"}, "id": "c1"}, {"name": "f", "arguments": {}, "id": "c2"}]'
    for msg in both(template("bracket-marker-list"), calls + after):
        assert [(c["id"], c["function"]["name"]) for c in msg["tool_calls"]] == [("c1", "get_weather"), ("c2", "f")]
        assert msg["tool_calls"][0]["function"]["arguments"] == {"city": "Paris ]"}
        assert (msg.get("content") or "") == after.strip()


@pytest.mark.parametrize("after, content", [
    ("[/CALLS]", None), (" [/CALLS]</s>", "</s>"), ("[/CALLS]\nDone.", "Done."),
    ("[/INST] more", "[/INST] more"), ("[1, 2]", "[1, 2]"),  # another end tag, a list: text, as before
    ("[/CALL", None), ("[", None),  # cut off where the text ends: the last call's arguments keep it, as their text
])
def test_a_bracket_openers_end_tag_after_its_list_is_consumed(after, content):
    """``[CALLS][…][/CALLS]``: the ``[X]…[/X]`` pair of bracket markup (Mistral's ``[TOOL_CALLS][…][/TOOL_CALLS]``,
    which Ollama's parser reads) ends the list and is no content, one-shot and one character at a time."""
    calls = '[CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}]'
    for msg in both(template("bracket-marker-list"), calls + after):
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"], msg
        assert msg.get("content") == content
        if content is None and after.strip() not in ("[/CALLS]", ""):
            assert after in msg["tool_calls"][0]["function"]["arguments"]  # kept, where the user sees it


@pytest.mark.parametrize("text, args", [
    ('[CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}', [{"city": "Paris"}]),
    ('[CALLS] [{"name": "f", "arguments": {}, "id": "c1"}, {"name": "g", "arguments": {"q": [{"a": 1}, {"b": "}"}]}, "id": "c2"}',
     [{}, {"q": [{"a": 1}, {"b": "}"}]}]),
    # the last call cut inside its arguments: a whole object nested in them is no call's end; its text is kept
    ('[CALLS][{"name": "f", "arguments": {}, "id": "c1"}, {"name": "g", "arguments": {"q": [{"a": 1}, {"b": 2}', [{}, '{"q": [{"a": 1}, {"b": 2}']),
])
def test_a_call_list_cut_before_its_bracket_keeps_its_whole_calls(text, args):
    """``[CALLS][{…}, {…}`` where the text ends (a token limit between two calls, or a list the model never
    closed): each whole call parses, one-shot and one character at a time. Before, the last call's arguments
    came back as their text with the object's own ``}`` (``{"city": "Paris"}}``): a call that looked parsed but
    held no arguments. A call cut inside its arguments keeps what arrived, as its text."""
    for msg in both(template("bracket-marker-list"), text):
        assert [c["function"]["arguments"] for c in msg["tool_calls"]] == args, msg
        assert not msg.get("content")


def test_a_second_list_glued_to_the_first_is_not_the_first_ones():
    """A list glued to the call list is never read into the last call's region: a JSON value is content, a list of
    call objects (a call's head, the name first) a list of calls of its own (docs/FORMATS.md §7b, a JSON call
    recognised by its shape)."""
    text = '[CALLS][{"name": "f", "arguments": {}, "id": "c1"}][1, {"a": 2}]'
    for msg in both(template("bracket-marker-list"), text):
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["f"] and msg["tool_calls"][0]["function"]["arguments"] == {}
        assert msg["content"] == '[1, {"a": 2}]'
    text = '[CALLS][{"name": "f", "arguments": {}, "id": "c1"}][{"name": "g", "arguments": {}, "id": "c2"}]'
    for msg in both(template("bracket-marker-list"), text):
        assert [(c["id"], c["function"]["name"]) for c in msg["tool_calls"]] == [("c1", "f"), ("c2", "g")] and not msg.get("content")


def _subroutine_grammar(dialect) -> str:
    """The JSON grammar as it was written before pairs were written out in objects: one subroutine call per
    value and per pair (the reference the inlined form must match exactly)."""
    from autoparser.emit.guard import _BARE, _NUMBER, _W

    S, W = dialect.string, _W
    pair = rf"{W}{S}{W}:(?&jv)" + (rf"|{_BARE}:(?&jv)" if dialect.unquoted else "")
    rules = (rf"(?P<jv>(?>{W}(?:(?&jo)|\[{W}(?:(?&jv)(?:,(?&jv))*+)?+\]|{S}|{_NUMBER}|true|false|null){W}))"
             rf"(?P<jp>(?>{pair}))(?P<jo>(?>\{{(?:(?&jp)(?:,(?&jp))*+)?+{W}\}}))")
    return rf"(?(DEFINE){rules})"


@pytest.mark.parametrize("delims,unquoted", [((), False), ((("'", "'"),), False), ((("&#34;", "&#34;"),), False), ((), True)],
                         ids=["json", "python-quotes", "html-quotes", "bare-keys"])
def test_the_json_grammar_matches_as_its_subroutine_form(delims, unquoted):
    """``_Dialect.define`` writes a pair out in its object (one subroutine call per value, not two per pair):
    every text, cut or mutated, matches (and matches partially) exactly as under the one-call-per-token form,
    for a value, an object, and an object with given keys (``object_with``)."""
    import random

    import regex

    from autoparser.emit.guard import _Dialect

    d = _Dialect(delims, unquoted)
    new, old = d.define(), _subroutine_grammar(d)
    need = d.object_with(["name", "arguments"])
    need = need[len("(?=\\{"):need.rindex(")(?&jo)")]  # the keys' lookaheads after the brace
    from autoparser.emit.guard import _W
    old_with = rf"\{{{need}(?>(?:(?&jp)(?:,(?&jp))*+)?+{_W}\}})"
    seeds = [json.dumps({"name": "f", "arguments": {"a": [1, -2.5e3, {"b": None, "c": [True, False]}], "s": 'x"y\\z\u00e9'}}),
             json.dumps({"sql": "SELECT 1", "params": {"limit": 10, "filters": [{"k": "a", "v": [1, 2]}, {}], "e": []}}, indent=2),
             '{"k": "v", "n": 01, "u": "\\u12", "t": tru}']
    if delims:
        o, c = delims[0]
        seeds.append("{" + f"{o}name{c}: {o}f{c}, {o}arguments{c}: {{{o}a{c}: [{o}x\"y{c}, 1]}}" + "}")
    if unquoted:
        seeds.append('{name: "f", arguments: {a: [1, {b: null}], c_1: "x"}}')
    alphabet = list('{}[]",: \n\t\\/ab0123456789.-+eE\'&#;') + ["true", "null", '"k"', "\\u00e9", "01", "\x01", *(o for o, _ in delims)]
    rng = random.Random(26)
    texts = list(seeds)
    for s in seeds:
        texts += [s[:i] for i in range(0, len(s), 3)]  # cut anywhere: the partial matches a stream sees
        for _ in range(400):
            t = list(s)
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(len(t))
                op = rng.random()
                if op < 0.4:
                    t[i] = rng.choice(alphabet)
                elif op < 0.7:
                    del t[i]
                else:
                    t.insert(i, rng.choice(alphabet))
            texts.append("".join(t))
    pairs = [("(?&jv)", "(?&jv)"), ("(?&jo)", "(?&jo)"), (d.object_with(["name", "arguments"]), old_with)]
    for a, b in pairs:
        a, b = regex.compile(a + new), regex.compile(b + old + d.define(grammar=False))
        for t in texts:
            for partial in (False, True):
                ma, mb = a.match(t, partial=partial), b.match(t, partial=partial)
                assert (ma and (ma.span(), ma.partial)) == (mb and (mb.span(), mb.partial)), (a.pattern[:40], partial, t)


def test_the_compiled_template_is_kept_by_its_exact_text():
    """Verify parses with the form emit compiled (``loaded``): the same JSON text gives the same object, one
    that differs only in its fields' order (the parser's order) its own, and a refused one raises every time."""
    from transformers.utils.chat_parsing.response_templates import load_response_template

    from autoparser.emit.template import loaded

    spec = {"start_anchor": "<|assistant|>", "fields": {"thinking": {"open_pattern": "<think>", "close_pattern": "</think>"}, "content": {}}}
    swapped = {**spec, "fields": dict(reversed(list(spec["fields"].items())))}
    load_response_template(spec)  # transformers accepts it
    a = loaded(spec)
    assert loaded(json.loads(json.dumps(spec))) is a
    assert loaded(swapped) is not a and list(loaded(swapped).fields) == ["content", "thinking"]
    bad = {**spec, "fields": {"content": {"open_pattern": "("}}}
    for _ in range(2):
        with pytest.raises(Exception):
            loaded(bad)


@pytest.mark.parametrize("text, message", [
    ("/think\nPlan.<|e|>\n<|m|>bot\nSure.<|e|>\n", {"thinking": "Plan.", "content": "Sure."}),
    ("/think\nPlan.<|e|>\n", {"thinking": "Plan."}),
    ("\nHello.<|e|>\n", {"content": "Hello."}),
    ('/think\nPlan.<|e|>\n<|m|>bot\nSure.<|e|>\n<|m|>bot -> call\n[{"name": "f", "arguments": {"a": 1}}]<|e|>\n',
     {"thinking": "Plan.", "content": "Sure.", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}),
    (' -> call\n[{"name": "f", "arguments": {}}]<|e|>', {"tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}),
])
def test_a_reply_of_messages_under_the_header_the_prompt_begins(text, message):
    """R1b and T9 (docs/FORMATS.md): the prompt ends ``<|m|>bot``; the model continues it with the message's
    suffix (``/think``, ``\\n``, `` -> call``) and writes the whole header again for each later message."""
    src = (MODELS / "header-messages.jinja").read_text(encoding="utf-8")
    from autoparser.cli.parse import generation_prompt
    import autoparser
    spec = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    assert prefix.endswith("<|m|>bot")
    one = parse_response(text, spec, prefix=prefix)
    p = ResponseParser(spec, prefix=prefix)
    for ch in text:
        p.feed(ch)
    assert p.finalize()[0] == one == {"role": "assistant", **message}


@pytest.mark.parametrize("name, text, calls, content", [
    ("chatml-think", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call></tool_call>\nDone.',
     [("get_weather", {"city": "Paris"})], "Done."),
    ("call-word-block", '<|tool_call>call:get_weather{"city": "Paris"}<tool_call|><tool_call|>Done.', [("get_weather", {"city": "Paris"})], "Done."),
    # the marker written anywhere else is text, as before
    ("chatml-think", "I write </tool_call> here", [], "I write </tool_call> here"),
    ("chatml-think", "Sure. </tool_call> ok", [], "Sure. </tool_call> ok"),
])
def test_a_calls_close_written_twice_is_no_text(name, text, calls, content):
    """docs/FORMATS.md §7b: a call's closing marker repeated right after itself is consumed (Ollama's Gemma 4 parser)."""
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    from autoparser.cli.parse import generation_prompt
    import autoparser
    spec = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, spec, prefix=prefix)
    p = ResponseParser(spec, prefix=prefix)
    for ch in text:
        p.feed(ch)
    assert p.finalize()[0] == one
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in one.get("tool_calls") or []] == calls
    assert one.get("content") == content


def test_a_turn_end_seen_only_between_turns_is_found_whole():
    """The turn's end is rendered only before the next user turn, whose opener (``<|user_start|>``) follows a
    system close that also ends ``>``: the tail shared with that opener (``><|user_start|>``) began inside the
    assistant's end marker and cut it in half, so no end was found and ``<|assistant_end|>`` came back as content."""
    import autoparser

    res = autoparser.infer_result((MODELS / "end-between-turns.jinja").read_text(encoding="utf-8"))
    assert "<|assistant_end|>" in res.analysis.turn.end_markers
    for msg in both(res.template, "Hello there.<|assistant_end|>"):
        assert msg.get("content") == "Hello there.", msg


def test_reasoning_that_calls_end_resumes_after_them_where_its_close_follows():
    """TOOLS_ONLY reasoning (calls written inside it end it, Kimi K2 Thinking's) resumes after the call section
    when its close follows (FORMATS §3): the text between is reasoning, not content with the close marker in it."""
    spec = template("tools-only-section")
    call = '<|calls|><|call|>get_weather<|args|>{"city": "Paris"}<|/call|><|/calls|>'
    for msg in both(spec, f"<think>First.{call}Then more.</think>Done.<|done|>"):
        assert (msg.get("thinking"), msg.get("content")) == ("First.\n\nThen more.", "Done."), msg
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"]
    for msg in both(spec, f"<think>First.{call}Answer with no close.<|done|>"):  # no close after: content, as before
        assert (msg.get("thinking"), msg.get("content")) == ("First.", "Answer with no close."), msg
    for msg in both(spec, f"<think>First.</think>{call}Done.<|done|>"):  # closed before the calls: as before
        assert (msg.get("thinking"), msg.get("content")) == ("First.", "Done."), msg


HEADER_QUOTE = "see </invoke> and [CALL]x[ARGS] here " + "y" * 3000
CLOSE_QUOTE = "echo '</tool_call>' and '<|im_end|>' > x.txt\n" + "x = 1\n" * 500


@pytest.mark.parametrize("name, call, quoted", [
    ("tag-json", "<invoke:write>@@</invoke><|end|>", HEADER_QUOTE),
    ("bracket-no-close", "[CALL]write[ARGS]@@</s>", HEADER_QUOTE),
    ("chatml-think", '<tool_call>\n{"name": "write", "arguments": @@}\n</tool_call><|im_end|>', CLOSE_QUOTE),
    ("json-array-stop", '<tool_calls>[{"name": "write", "arguments": @@}]<|im_end|>', CLOSE_QUOTE),
])
def test_a_long_call_quoting_a_marker_that_ends_calls_early_is_decided_by_its_head(name, call, quoted):
    """A call longer than the window (FORMATS §9) is one on its header, or its call object's head, where no marker
    that ends a call follows a ``}`` or ``]`` in the window. One quoted inside a string (``</invoke>``, ``[CALL]``,
    ``echo '</tool_call>'``) does not hold a header-decided call back until its arguments end (read again on each
    delta: 8 KB took 4.6 s), nor leave a call object in content (decided once as no call)."""
    spec = template(name)
    text = call.replace("@@", json.dumps({"content": quoted}))
    held, msg = held_back(spec, text)
    assert held <= CALL_WINDOW + 64, held
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("write", {"content": quoted})]
    for one in both(spec, text):
        assert [c["function"]["arguments"] for c in one["tool_calls"]] == [{"content": quoted}]


@pytest.mark.parametrize("text, thinking, content, calls", [
    ("<reflect>\nPlan.\n</reflect>\n\nHello.", "Plan.", "Hello.", []),
    ('<reflect>Need the weather.</reflect>\n<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</calls>',
     "Need the weather.", None, ["get_weather"]),
    ("Hello.", None, "Hello.", []),
])
def test_reasoning_that_history_cuts_out_of_content_is_reasoning(text, thinking, content, calls):
    """models/think-split.jinja renders no reasoning field and has no switch, but cuts an earlier assistant turn's
    content at ``</reflect>`` (as Nemotron Super's, LFM2.5's and DeepSeek-R1's tool templates cut at ``</think>``):
    the text before that tag is no answer, so ``<reflect>…</reflect>`` is the reasoning block (R4; a tag named by
    no model). Fails on the commit before: the block and its tags came back as content."""
    for msg in both(template("think-split"), text, prefix="<|turn|>assistant\n"):
        assert msg.get("thinking") == thinking and msg.get("content") == content, msg
        assert [c["function"]["name"] for c in msg.get("tool_calls") or []] == calls, msg
