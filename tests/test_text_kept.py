"""No text the model wrote vanishes (issue 26): the text fields of the library template keep every region
(``repeats`` + ``join``), so the text before a call survives the text after it, and interleaved reasoning
blocks keep both their reasoning and the content between them; the served form (``emit.served``) passes
the engines' startup rules; a template that still loses such text is not verified ``full``.
Parsed with transformers' own ``parse_response`` and ``ResponseParser`` (a character at a time)."""

import json
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.emit import library, served
from autoparser.cli.parse import generation_prompt

MODELS = Path(__file__).resolve().parents[1] / "models"
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def inferred(name: str) -> tuple[dict, str, dict]:
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    return res.template, generation_prompt(src, {}), res.verdict


def both(spec: dict, text: str, prefix: str = "") -> list[dict]:
    p = ResponseParser(spec, prefix=prefix)
    for ch in text:
        p.feed(ch)
    return [parse_response(text, spec, prefix=prefix), p.finalize()[0]]


@pytest.mark.parametrize("text", [
    f"Sure, let me check.\n{CALL}\nDone.<|im_end|>",
    f"Sure, let me check.{CALL}Done.",
    f"Sure, let me check.\n{CALL}\nAnd one more:\n{CALL}\nDone.<|im_end|>",
])
def test_text_before_and_after_calls_is_kept(text):
    """Before, the implicit content overwrote itself when it reopened after the call: ``Done.`` only."""
    spec, prompt, _ = inferred("chatml-think")
    for msg in both(spec, text, prompt):
        assert msg["content"].startswith("Sure, let me check.") and msg["content"].endswith("Done.")
        assert ("And one more:" in msg["content"]) == ("And one more:" in text)
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"] * text.count("<tool_call>")


@pytest.mark.parametrize("text, thinking, content", [
    ("<think>step 1</think>partial answer<think>step 2</think>final answer<|im_end|>", "step 1\n\nstep 2", "partial answer\n\nfinal answer"),
    ("answer<think>R</think>more", "R", "answer\n\nmore"),
    ("<think>a</think>x<think>b</think>y<think>c</think>z", "a\n\nb\n\nc", "x\n\ny\n\nz"),
])
def test_interleaved_reasoning_blocks_keep_every_region(text, thinking, content):
    """Several reasoning blocks between content (interleaved thinking): every block is reasoning and every
    piece of content is content, as tinker's, llama.cpp's and Ollama's Mistral parsers split them."""
    spec, prompt, _ = inferred("chatml-think")
    for msg in both(spec, text, prompt):
        assert msg["thinking"] == thinking
        assert msg["content"] == content


def test_a_repeated_opener_still_opens_once():
    """The prompt opened ``<think>`` and the model writes it again: still one block of reasoning (the first,
    empty, block closes where the second opener starts; joining it adds only a leading newline)."""
    spec, prompt, _ = inferred("forced-open-tagged")
    assert prompt.rstrip().endswith("<think>")
    for msg in both(spec, "<think>\nPlan it.\n</think>\n\nAnswer.", prompt):
        assert msg["thinking"].strip() == "Plan it."
        assert msg["content"] == "Answer."


def test_the_served_form_passes_the_engines_rules():
    """vLLM 0.33 and SGLang 0.5.23 refuse ``join`` (and ``transform``, non-text content) on ``content`` and
    ``thinking`` at startup; ``served`` drops ``repeats``/``join`` there and nothing else."""
    for path in sorted(MODELS.glob("*.jinja")):
        spec = autoparser.infer(path.read_text(encoding="utf-8"))
        form = served(spec)
        for name in ("content", "thinking"):
            field = form["fields"].get(name)
            if field is not None:
                assert "join" not in field and "repeats" not in field and "transform" not in field, path.stem
                assert field.get("content", "text") == "text", path.stem
        assert library(form) == spec, path.stem  # the two forms differ in exactly that
        assert form["fields"].get("tool_calls") == spec["fields"].get("tool_calls")


def test_the_served_form_loses_what_the_library_form_keeps_in_transformers():
    """Why two forms: transformers' parse_response with the served form keeps only the text after the call
    (what --serve says); the engines join each region's chunks themselves."""
    spec, prompt, _ = inferred("chatml-think")
    text = f"Sure, let me check.\n{CALL}\nDone."
    assert parse_response(text, served(spec), prefix=prompt)["content"] == "Done."
    assert parse_response(text, spec, prefix=prompt)["content"] == "Sure, let me check.\n\nDone."


def test_infer_serve_prints_the_served_form(capsys):
    from autoparser.cli.main import main

    assert main(["infer", str(MODELS / "chatml-think.jinja"), "--serve", "vllm"]) == 0
    out, err = capsys.readouterr()
    spec = json.loads(out)
    assert "join" not in spec["fields"]["content"] and "join" not in spec["fields"]["thinking"]
    assert "served form" in err
    assert main(["infer", str(MODELS / "chatml-think.jinja")]) == 0
    assert json.loads(capsys.readouterr().out)["fields"]["content"]["join"] == "\n\n"


def test_text_that_vanishes_is_never_a_full_verdict():
    """A template that keeps every field but loses the text on one side of a call (here the served form,
    judged as transformers runs it: the content after the call replaces the content before) is degraded,
    and the one warning says which text is lost. The library form of the same template is full."""
    from autoparser.verify.verdict import describe, settle

    src = (MODELS / "chatml-think.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    assert res.verdict["status"] == "full" and res.verdict["text_lost"] == []
    _, _, v = settle(src, {}, res.analysis, served(res.template), "thinking")
    assert v["status"] == "degraded" and not v["dropped"] and v["text_lost"] == ["text_around_calls"]
    assert v["fields"]["tool_calls"] == "pass"
    line = describe(v)
    assert line.startswith("degraded: text lost where real outputs write text both before and after tool calls")
    assert v["realistic_failures"]["text_around_calls"] in line and "(in no field)" in line


def test_text_read_into_another_field_is_reported_not_lost():
    """Text after JSON arguments with no close of their own (``[ARGS]{…}text``) is read into the arguments:
    visible, so the variant fails and says where the text went, but nothing vanished (the verdict stays)."""
    res = autoparser.infer_result((MODELS / "wrapped-bracket.jinja").read_text(encoding="utf-8"))
    v = res.verdict
    assert v["realistic"]["text_around_calls"] == "fail" and "read into another field" in v["realistic_failures"]["text_around_calls"]
    assert v["text_lost"] == []


def test_pythonic_runs_lose_text_after_calls_and_say_so():
    """A run of pythonic calls with no marker: text after the calls is in no field; the degraded warning
    says so alongside what the calls do not cover."""
    res = autoparser.infer_result((MODELS / "pythonic-semicolon.jinja").read_text(encoding="utf-8"))
    v = res.verdict
    assert v["status"] == "degraded" and v["text_lost"] == ["text_around_calls"]
    assert sum(w.startswith("degraded: ") for w in res.warnings) == 1
    assert any("text lost" in w for w in res.warnings if w.startswith("degraded: "))


@pytest.mark.parametrize("text, thinking, content", [
    ("<|channel>thought\nPlan it.<channel|>Answer.<turn|>", "Plan it.", "Answer."),  # as the template writes it
    ("<|channel>Plan it.<channel|>Answer.<turn|>", "Plan it.", "Answer."),  # the token alone (Gemma 4's own parsers)
    ("<|channel>thousand reasons<channel|>Done", "thousand reasons", "Done"),  # a word that only starts like the name
    ("<|channel>first<channel|><|channel>second<channel|>Final.", "first\n\nsecond", "Final."),
    ("<|channel>just thinking", "just thinking", None),
])
def test_an_opener_token_alone_opens_reasoning_without_its_word(text, thinking, content):
    """An opener made of a token and a word (``<|channel>thought``): models write the token alone; the word,
    when written, is the channel's name, not reasoning text. Before, the token alone stayed in content."""
    spec, prompt, _ = inferred("channel-thought")
    for msg in both(spec, text, prompt):
        assert msg.get("thinking") == thinking
        assert msg.get("content") == content


@pytest.mark.parametrize("text", [
    '<think>I need the weather.\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>',
    '<think>I need the weather.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>',
])
def test_calls_that_end_the_reply_end_the_reasoning_left_open(text):
    """Reasoning never closed before the reply's calls (vLLM's Qwen3 and Ollama's parsers end it at the call):
    where from a call's opener to the turn's end there are only whole calls, the opener ends the reasoning.
    Before, the calls were reasoning text."""
    spec, prompt, _ = inferred("chatml-think")
    for msg in both(spec, text, prompt):
        assert msg["thinking"] == "I need the weather."
        assert [c["function"]["arguments"]["city"] for c in msg["tool_calls"]] == ["Paris", "Rome"][:text.count("<tool_call>")]
        assert not msg.get("content")


@pytest.mark.parametrize("text, thinking, calls", [
    ('I need it.<|calls|><|call|>f<|args|>{"a": 1}<|/call|><|/calls|><|done|>', "I need it.", 1),
    ('I need it.<|calls|><|call|>f<|args|>{"a": 1}<|/call|><|done|>', "I need it.", 1),  # the section's end left out
    ('I need it.<|calls|><|call|>f<|args|>{"a": 1}<|/call|>', "I need it.", 1),
    ('I need it.<|calls|><|call|>f<|args|>{"a": 1}<|/call|> and so on</think>Hi', 'I need it.<|calls|><|call|>f<|args|>{"a": 1}<|/call|> and so on', 0),
])
def test_calls_whose_section_end_is_left_out_end_the_reasoning_left_open(text, thinking, calls):
    """The prompt opened reasoning and the reply's calls end it, the section's end marker left out (the last call's
    close, then the turn's end): the calls' opener ends the reasoning as where the section's end is written.
    Before, they were reasoning text. Reasoning that goes on after the calls keeps them as its text."""
    spec, prompt, _ = inferred("think-call-section")
    for msg in both(spec, text, prompt):
        assert msg["thinking"] == thinking and len(msg.get("tool_calls") or []) == calls, msg


@pytest.mark.parametrize("text, content", [
    ("Sure.<|calls|><|/calls|>", "Sure."),
    ("Sure. <|calls|> <|/calls|> Done.", "Sure.\n\nDone."),
])
def test_an_empty_call_section_is_no_text(text, content):
    """A call section opened and closed with no call in it (vLLM's Kimi K2 ``test_empty_tool_section``): its
    opener was left in content; both markers are consumed, the text on either side kept."""
    spec, prompt, _ = inferred("prefixed-indexed")
    for msg in both(spec, text, prompt):
        assert msg["content"] == content and not msg.get("tool_calls")


BROKEN = "<|calls|><|call|>tools.f:0<|args|>{oops}<|/call|><|/calls|>"
GOOD = '<|calls|><|call|>tools.f:0<|args|>{"a": 1}<|/call|><|/calls|>'


@pytest.mark.parametrize("text, content, calls", [
    (f"Sure.{BROKEN}", f"Sure.{BROKEN}", 0),  # a call no field reads: its section, end and all, is text
    (f"{BROKEN}<|done|>", BROKEN, 0),
    (f"Sure.{GOOD}", "Sure.", 1),  # a call that is read takes its section's end with it
    (f"{GOOD} Done.<|done|>", "Done.", 1),
    ('<|calls|><|call|>tools.f:0<|args|>{"a": 1}<|/call|><|call|>tools.g:1<|args|>{}<|/call|> <|/calls|>', None, 2),
    ('<|calls|><|call|>tools.f:0<|args|>{"a": 1}<|/calls|>', None, 1),  # the call's own end left out
])
def test_a_call_sections_end_is_the_calls_or_text(text, content, calls):
    """The section's end marker was consumed by content's close wherever it stood, so a section whose call
    was not read (broken JSON, a spelling the template never renders) stayed in content without its end
    (vLLM's DeepSeek and SGLang's Kimi K2 keep the whole section as text); the calls' close takes it now."""
    spec, prompt, _ = inferred("prefixed-indexed")
    for msg in both(spec, text, prompt):
        assert msg.get("content") == content
        assert len(msg.get("tool_calls") or []) == calls

@pytest.mark.parametrize("text, content", [
    ("<tool_call>   </tool_call>", None),
    ("Sure. <tool_call>\n</tool_call> Done.", "Sure.\n\nDone."),
])
def test_an_empty_call_element_is_no_text(text, content):
    """A call opened and closed with nothing in it (vLLM's GLM 4.5 ``<tool_call>   </tool_call>``) was left in
    content, markers and all; it holds no text and is consumed whole."""
    spec, prompt, _ = inferred("chatml-think")
    for msg in both(spec, text, prompt):
        assert msg.get("content") == content
        assert len(msg.get("tool_calls") or []) == text.count('"name"')


def test_a_call_written_inside_unclosed_reasoning_stays_reasoning():
    """Reasoning that spells a call and goes on (quoting the format) stays reasoning: no call is made up from
    it, and no word is lost (docs/FORMATS.md §7b)."""
    spec, prompt, _ = inferred("chatml-think")
    text = '<think>The format is <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>. Then wait.</think>Done.'
    for msg in both(spec, text, prompt):
        assert "tool_calls" not in msg
        assert msg["thinking"].startswith("The format is <tool_call>") and msg["thinking"].endswith("Then wait.")
        assert msg["content"] == "Done."


def test_a_call_that_ends_the_text_without_its_close_is_closed_there():
    """A call with no close marker of its own (``[CALLS]f[ARGS]{…}`` then the turn's ``[END]``, which engines
    strip as a stop token) that ends the text: SGLang keeps a tool region closed at the end of the text only
    when the close pattern matches there (``_is_unusable_tool_end``), so it must match after a complete value,
    and never after a nested ``}`` while the arguments still arrive (where a stream would close the call)."""
    from transformers.utils.chat_parsing.response_templates import load_response_template

    spec, prompt, _ = inferred("wrapped-bracket")
    for form in (spec, served(spec)):
        close = load_response_template(form).fields["tool_calls"].close_re
        whole = '[CALLS]get_weather[ID]a1[ARGS]{"city": "Pa}ris", "opts": {"deep": [1, {"x": 2}]}}'
        assert close.match(whole, len(whole)) is not None
        for cut in (whole[:-1], whole[:-2], whole[: whole.index("2}") + 2]):  # a nested value's end, not the call's
            assert close.match(cut, len(cut)) is None, cut
        for text in (whole, whole + "[END]"):
            parser = ResponseParser(form, prefix=prompt)
            for ch in text:
                parser.feed(ch)
            streamed, _ = parser.finalize()
            assert streamed == parse_response(text, form, prefix=prompt)
            assert streamed["tool_calls"][0]["function"]["arguments"] == {"city": "Pa}ris", "opts": {"deep": [1, {"x": 2}]}}


@pytest.mark.parametrize("text, arguments, content", [
    ('[CALL]get_weather[ARGS]{"city": "Paris"}\nDone, checking.</s>', {"city": "Paris"}, "Done, checking."),
    ('Sure.[CALL]get_weather[ARGS]{\n  "city": "Paris",\n  "o": {\n    "a": [1]\n  }\n}\nThanks.', {"city": "Paris", "o": {"a": [1]}}, "Sure.\n\nThanks."),
    # a raw newline inside a string after a brace is no value's end: the arguments stay whole (their text)
    ('[CALL]run[ARGS]{"code": "x = {}\nprint(x)"}</s>', '{"code": "x = {}\nprint(x)"}', None),
    ('[CALL]run[ARGS]{"code": "x = {}\nprint(x)"}\nDone.', '{"code": "x = {}\nprint(x)"}', "Done."),
    # on the same line: a word glued to the value, or a sentence after a space (Ollama's Ministral parser)
    ('[CALL]test[ARGS]{"a": 1}some content after', {"a": 1}, "some content after"),
    ('Sure.[CALL]test[ARGS]{"a": {"b": [1, 2]}} Done.', {"a": {"b": [1, 2]}}, "Sure.\n\nDone."),
    # ... behind the whole value only: a brace inside a string, with a word or a sentence after it, goes on
    ('[CALL]run[ARGS]{"code": "if (x) {A}B else {C} Done"} Thanks.', {"code": "if (x) {A}B else {C} Done"}, "Thanks."),
    ('[CALL]run[ARGS]{"q": "x"} and more', '{"q": "x"} and more', None),  # not a sentence: the arguments' text
])
def test_text_after_a_call_with_no_close_of_its_own_is_content(text, arguments, content):
    """A call that only the next call or the turn's end closes (``[TOOL_CALLS]f[ARGS]{…}``) also ends where text
    follows its arguments on a new line, or on the same line as a word glued to them or a sentence after a space,
    behind a complete JSON value: before, ``Done.`` made the arguments no JSON and was read into them."""
    spec, prompt, verdict = inferred("bracket-no-close")
    assert verdict["status"] == "full" and verdict["realistic"]["text_around_calls"] == "pass", verdict
    for msg in both(spec, text, prompt):
        assert [c["function"]["arguments"] for c in msg["tool_calls"]] == [arguments]
        assert msg.get("content") == content


@pytest.mark.parametrize("text, kept", [
    ('<calls>[{"name": "get_weather", "arguments": {"city": "Par', 'Par'),  # a token limit inside the call
    ('<calls>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3]</calls>', '"days": 3'),  # broken JSON
    ('<calls>not a call at all', 'not a call at all'),
])
def test_a_call_marker_that_opens_no_call_keeps_its_text_where_content_is_wrapped(text, kept):
    """Content always wrapped (no implicit field: Hunyuan-A13B's layout, Command R7B): a call's marker whose
    call never opens (cut off within the window, or broken) left its text outside every field, and the verdict
    said ``full``. The marker now opens content when no call does (the call's open wins where it matches)."""
    spec, prompt, verdict = inferred("wrapped-unless-calls")
    assert verdict["realistic"]["call_truncated"] == verdict["realistic"]["malformed_call"] == "pass"
    for msg in both(spec, text, prompt):
        assert kept in (msg.get("content") or ""), msg
        assert not msg.get("tool_calls"), msg
    call = '<calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</calls>'
    for msg in both(spec, "Let me check." + call, prompt):  # a call still opens as before, the text before it kept
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"] and msg["content"] == "Let me check."


@pytest.mark.parametrize("text, kept, calls, content", [
    ('<|call|>c1<|fn|>get_weather<|args|>{"city": "Par', "Par", [], None),  # cut off, the section's token left out
    ('<|call|>c1<|fn|>get_weather<|args|>not json<|call_end|>', "not json", [], None),  # broken, likewise
    ('<|call|>c1<|fn|>get_weather<|args|>{"city": "Paris"}<|call_end|>', "", ["get_weather"], None),  # a whole call
    ('Sure.<|call|>c1<|fn|>get_weather<|args|>{"city": "Paris"}<|call_end|>', "Sure.", ["get_weather"], "Sure."),  # bare text before
])
def test_a_calls_own_marker_without_its_sections_keeps_its_text_where_content_is_wrapped(text, kept, calls, content):
    """models/wrapped-call-tokens.jinja (Solar Open's layout): content always wrapped, calls a section token then
    each call's own token. A model that leaves the section's token out and is cut off (or writes broken JSON) left
    the whole reply outside every field, and bare text before such a call swallowed it. The call's own marker now
    opens content where no call opens, and closes bare content before it, as the section's marker does."""
    spec, prompt, verdict = inferred("wrapped-call-tokens")
    assert verdict["status"] == "full" and verdict["realistic"]["call_truncated"] == "pass", verdict
    for msg in both(spec, text, prompt):
        assert kept in (msg.get("content") or ""), msg
        assert [c["function"]["name"] for c in msg.get("tool_calls") or []] == calls, msg
        if content is not None or calls:
            assert msg.get("content") == content, msg


@pytest.mark.parametrize("text", [
    ' to=get_weather<|msg|>garbage<|finish|>',  # a recipient header whose body is no call
    ' to=get_weather<|msg|><invoke name="get<|msg|>"><arg name="city">Paris</arg></invoke><|finish|>',  # a marker in the name
    ' to=get_weather<|msg|><invoke name="get_weather"><arg name="city">Par',  # cut before the call's element is whole
])
def test_a_recipient_header_that_opens_no_call_keeps_its_text_where_content_is_wrapped(text):
    """models/recipient-wrapped.jinja (muse-glimmer's layout): every part is a recipient header, none is bare text,
    and a call's opener is no marker (``to=``). A header whose body opens no call left the whole reply outside every
    field: the message came back empty (Ollama's glimmer tests, a ``<|msg|>`` written into the invoke name). The
    header now opens content, zero-width, where no call opens; the call's own open wins where it matches."""
    spec, prompt, verdict = inferred("recipient-wrapped")
    assert verdict["status"] == "full" and verdict["realistic"]["malformed_call"] == "pass", verdict
    for msg in both(spec, text, prompt):
        got = " ".join(str(v) for v in (msg.get("content"), msg.get("tool_calls")) if v)
        assert "get" in got and ("garbage" in text) <= ("garbage" in got), msg
        assert msg.get("content") or msg.get("tool_calls"), msg
    call = ' to=get_weather<|msg|><invoke name="get_weather"><arg name="city">Paris</arg></invoke><|finish|>'
    for msg in both(spec, call, prompt):  # a call still opens as before
        assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather"] and not msg.get("content"), msg


@pytest.mark.parametrize("text, content", [
    ("R<|close|>think<|sep|><|begin_answer|>Hello there<|end_answer|>", "<|begin_answer|>Hello there<|end_answer|>"),  # another wrapper's tokens
    ("R<|close|>think<|sep|>\n<|begin_answer|> <|x|>Hello", "<|begin_answer|> <|x|>Hello"),  # whitespace, two tokens
    ("R<|close|>think<|sep|><|open|>response<|sep|>Hi<|close|>response<|sep|><|eos|>", "Hi"),  # a token with no text after it
    ("R<|close|>think<|sep|><|open|>response<|sep|>Hi<|close|>response<|sep|><|close|>message<|sep|>", "Hi"),  # tokens the template writes
])
def test_unseen_tokens_then_text_open_wrapped_content(text, content):
    """Where content is a wrapped field, text after special tokens the analysis never saw (a family's older
    wrapper, ``<|START_RESPONSE|>`` for ``<|START_TEXT|>``) was outside every field and lost: it opens content,
    the tokens kept as written. Tokens alone, or ones the template writes, still open nothing."""
    spec, _, verdict = inferred("worded-tags")
    assert verdict["status"] == "full"
    for msg in both(spec, text, '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'):
        assert msg.get("content") == content, msg


@pytest.mark.parametrize("name", ["pythonic-bare", "pythonic-unquoted"])
@pytest.mark.parametrize("text, content", [
    ("The list is [1, 2] ok.", "The list is [1, 2] ok."),
    ("Use `a[0]` and see [the docs](https://example.com).", "Use `a[0]` and see [the docs](https://example.com)."),
    ("[get_weather(city='Paris')]\nSee [1].", "See [1]."),
])
def test_a_bracket_in_prose_is_kept_where_a_pythonic_list_has_no_marker(name, text, content):
    """A pythonic list with no marker of its own ends with a bare ``]``, which prose and code write too (an index,
    a markdown link): it is no marker content consumes. Before, every ``]`` in content was taken as the list's end
    and dropped, splitting the text there (``The list is [1, 2\\n\\nok.``)."""
    spec, prompt, _ = inferred(name)
    for msg in both(spec, text, prompt):
        assert msg.get("content") == content, (name, text, msg)


@pytest.mark.parametrize("text, message", [
    ("Hello there.<|im_end|>", {"content": "Hello there."}),  # no recipient at all
    (" user:Hi<|im_end|>", {"content": "user:Hi"}),  # a space before it: no recipient's name
    (':{"city": "Paris"}<|im_end|>', {"content": ':{"city": "Paris"}'}),  # the name left out
    ("user:Hi<|im_end|>", {"content": "Hi"}),
    ('get_weather:{"city": "Paris"}<|im_end|>',
     {"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
])
def test_a_message_with_no_recipient_after_its_header_is_content(text, message):
    """Messages under a recipient header (``>>user:`` the answer, ``>>NAME:`` a call; Functionary v3.2's
    ``>>>all``): the prompt ends with the header's marker, and a model that writes its answer without a
    recipient wrote text no field took, lost whole. It is content, from where the text parts from a recipient's
    name. Fails on the commit before: the first three came back as an empty message."""
    template, prefix, _ = inferred("recipient")
    assert both(template, text, prefix) == [{"role": "assistant", **message}] * 2


@pytest.mark.parametrize("text, content", [
    ('["apple", "banana"]', '["apple", "banana"]'),  # parts from the wrapper "[N] " at its second character
    ("[x] done", "[x] done"),
    ("[3] Hello.", "Hello."),  # the wrapper, any number
    ("Hello.", "Hello."),
])
def test_a_reply_that_begins_like_a_numbered_wrapper_is_kept(text, content):
    """A numbered wrapper's start is what comes before its number, then a digit: a reply that begins with its
    first character and no digit is text. Fails on the commit before for the first two: the reply was lost whole."""
    spec, prefix, _ = inferred("turn-counter")
    for msg in both(spec, text, prefix):
        assert msg.get("content") == content, msg
