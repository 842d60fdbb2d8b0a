"""What models write around the markers of a tool call (issue 17), on the team's own examples in models/.

Each text is what a model or a serving engine writes where the template renders otherwise; it is parsed with
transformers' ``parse_response`` one-shot and streamed through ``ResponseParser`` (both must agree):
whitespace added or removed at every marker boundary, a call whose close never comes, a call cut off inside
its JSON arguments (its text stays visible), a headed message with no channel. docs/FORMATS.md §7b.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.cli.parse import generation_prompt

MODELS = Path(__file__).resolve().parents[1] / "models"


def _parse(name: str, text: str) -> dict:
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, template, prefix=prefix)
    for size in (1, 3, 7):
        p = ResponseParser(template, prefix=prefix)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        assert p.finalize()[0] == one, (name, text, size)
    return one


def _calls(msg: dict) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]


PARIS = ("get_weather", {"city": "Paris", "days": "3"})


@pytest.mark.parametrize("text", [
    "<call>get_weather<k>city</k><v>Paris</v><k>days</k><v>3</v></call><|im_end|>",  # as rendered
    "<call>get_weather\n<k>city</k>\n<v>Paris</v>\n<k>days</k>\n<v>3</v>\n</call><|im_end|>",  # a newline at every marker
    "<call>  get_weather <k>city</k> <v>Paris</v><k>days</k>\n<v>3</v></call>",  # spaces, the end marker stripped
])
def test_tagged_call_with_whitespace_at_its_markers(text):
    assert _calls(_parse("kv-tagged", text)) == [PARIS]


def test_tagged_call_whose_close_never_comes_parses_at_the_end():
    """A call the model ended without its close (the stream stops) still parses (Ollama's and vLLM's
    parsers take it); the content before it stays. (tinker-cookbook leaves such a call in content: the
    choice and why are in docs/FORMATS.md §7b.)"""
    msg = _parse("kv-tagged", "Let me check.<call>get_weather<k>city</k><v>Paris</v><|im_end|>")
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and msg["content"] == "Let me check.", msg


def test_json_call_after_a_header_with_whitespace_at_its_markers():
    msg = _parse("tag-json", '<invoke:get_weather>\n{"city": "Paris"}\n</invoke>\n<|end|>')
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]


def test_json_call_cut_mid_arguments_keeps_its_text():
    """Cut within the window (FORMATS §9, a call cut off): no call, the text as it arrived in content."""
    msg = _parse("tag-json", 'Let me check.<invoke:get_weather>{"city": "Par')
    assert msg["content"] == 'Let me check.<invoke:get_weather>{"city": "Par' and not _calls(msg), msg


def test_headed_message_without_channel_is_content():
    assert _parse("channels", "<|body|>Hello there<|stop|>")["content"] == "Hello there"
    msg = _parse("channels", "<|ch|>think<|body|>Hmm.<|stop|><|begin|>assistant<|body|>Answer<|stop|>")
    assert (msg.get("thinking"), msg["content"]) == ("Hmm.", "Answer"), msg


@pytest.mark.parametrize("text, thinking, content", [
    ("<|ch|>summary<|body|>Hello there<|done|>", None, "Hello there"),  # a channel the template never names
    ("<|ch|> junk answer<|body|>Hello there<|done|>", None, "Hello there"),  # junk in the header
    ("<|ch|>think<|body|>Hmm.<|stop|><|begin|>assistant<|ch|>notes<|body|>Answer<|done|>", "Hmm.", "Answer"),
])
def test_a_message_on_a_channel_the_template_never_names_is_content(text, thinking, content):
    """Every field opens on a header naming its channel or a recipient: a message on another channel was outside
    every field and its text lost (the message came back empty). It is content now, its header discarded as every
    header is; the named channels and calls open as before. Fails on the commit before."""
    msg = _parse("channels", text)
    assert (msg.get("thinking"), msg.get("content")) == (thinking, content) and not _calls(msg), msg
    call = "<|begin|>assistant send=tools.get_weather<|ch|>act<|body|>{\"city\": \"Paris\"}<|invoke|>"
    assert _calls(_parse("channels", call)) == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("text, thinking, content, calls", [
    # text with no header, then a call's header: the text ends at the channel marker (before, it ran over the call)
    ('Sure. <|ch|>act send=tools.get_weather<|body|>{"city": "Paris"}<|invoke|>', None, "Sure.", [("get_weather", {"city": "Paris"})]),
    ("<|ch|>think<|body|>Hmm.<|ch|>answer<|body|>Answer<|done|>", "Hmm.", "Answer", []),  # the role marker left out too
    # a recipient written before the channel marker begins the header (before: the call's arguments were lost)
    ('Sure. send=tools.get_weather<|ch|>act<|body|>{"city": "Paris"}<|invoke|>', None, "Sure.", [("get_weather", {"city": "Paris"})]),
    ("I will send=it later.<|done|>", None, "I will send=it later.", []),  # no channel marker after it: text
    # text after a message's end with no header (before: lost)
    ("<|ch|>think<|body|>Hmm.<|stop|>\nMore text.", "Hmm.", "More text.", []),
    ("<|ch|>answer<|body|>Answer<|done|>\nAnd more.", None, "Answer\n\nAnd more.", []),
])
def test_a_headed_message_ends_at_a_channel_marker_and_text_after_it_is_kept(text, thinking, content, calls):
    msg = _parse("channels", text)
    assert (msg.get("thinking"), msg.get("content"), _calls(msg)) == (thinking, content, calls), msg


def test_headed_message_ends_at_the_next_header():
    msg = _parse("channels", "<|ch|>think<|body|>Hmm.<|begin|>assistant<|ch|>answer<|body|>Answer")
    assert (msg.get("thinking"), msg["content"]) == ("Hmm.", "Answer"), msg


@pytest.mark.parametrize("text", [
    'Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```<|end|>',  # as rendered
    'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```<|end|>',  # a space for the newline
    'Action:```json[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]```',  # none, the end marker stripped
])
def test_json_calls_after_an_opener_with_whitespace_inside(text):
    """The whitespace a template writes inside a call's opener (``Action:\\n```json``) is any whitespace or
    none, as between markers (Command R+ writes ``Action: ```json``, Ollama's tests)."""
    msg = _parse("action-fence-json", text)
    assert _calls(msg) == [("get_weather", {"city": "Paris"})] and not (msg.get("content") or "").strip(), msg


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "templates"


def test_llama3_python_tag_before_a_custom_call():
    """workarounds/llama3-python-tag.json: the lead is taken, the call parses, text after it is content."""
    path = CORPUS / "meta-llama-Llama-3.1-8B-Instruct.jinja"
    if not path.is_file():
        pytest.skip(f"corpus not found at {CORPUS} (../shared is absent)")
    src = path.read_text(encoding="utf-8")
    tokens = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    res = autoparser.infer_result(src, tokens)
    assert "llama3-python-tag-before-json-calls" in res.analysis.workarounds
    prefix = generation_prompt(src, tokens)
    for text in ('<|python_tag|>{"name": "f", "parameters": {"x": 1}}', '{"name": "f", "parameters": {"x": 1}}<|eot_id|>',
                 '<|python_tag|>{"name": "f", "parameters": {"x": 1}} Done.'):
        msg = parse_response(text, res.template, prefix=prefix)
        assert _calls(msg) == [("f", {"x": 1})], (text, msg)
        assert (msg.get("content") or "") == ("Done." if text.endswith("Done.") else ""), (text, msg)


@pytest.mark.parametrize("text, content, calls", [
    ('Sure.<|act|>\n{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}</s>', "Sure.", ["get_weather"]),
    ("Paris is sunny.</s>", "Paris is sunny.", []),
    # another token the model stops on (generation_config.json's), and padding after the reply
    ("Paris is sunny.<|eom|>", "Paris is sunny.", []),
    ("Paris is sunny.<|eot|><pad><pad><pad>", "Paris is sunny.", []),
])
def test_the_tokenizers_eos_left_in_the_text_ends_the_reply(text, content, calls):
    """A template that ends its turns with its own marker (``<|eot|>``) and a model that stops on the
    tokenizer's end-of-sequence token (``</s>``, GigaChat), or on another its generation_config.json lists
    (``<|eom|>``): an engine that keeps special tokens leaves it after the answer or the last call. It ends the
    reply: the call still parses and no ``</s>`` is content. Padding after the reply (a batch decoded whole) is
    no text either."""
    src = (Path(__file__).resolve().parents[1] / "models" / "json-per-call.jinja").read_text(encoding="utf-8")
    tokens = {"eos_token": "</s>", "stop_tokens": "<|eom|>", "pad_token": "<pad>"}
    msg = parse_response(text, autoparser.infer_result(src, tokens).template, prefix=generation_prompt(src, tokens))
    assert msg.get("content") == content
    assert [c["function"]["name"] for c in msg.get("tool_calls") or []] == calls



@pytest.mark.parametrize("text, message", [
    ("Hello there.<|user|>", {"content": "Hello there."}),
    ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call><|observation|>",
     {"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
])
def test_a_stop_token_ends_a_turn_the_template_ends_with_no_marker_of_its_own(text, message):
    """GLM's turns end where the next one's ``<|user|>`` (or a tool's ``<|observation|>``) begins, so its template
    writes no end marker; its generation_config.json lists both as tokens the model stops on, and a generation
    decoded with its special tokens ends with one. Fails on the commit before: the token came back as content."""
    from conftest import corpus_template

    src = corpus_template("GLM-4.6")
    tokens = {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "stop_tokens": "<|user|>\n<|observation|>"}
    msg = parse_response(text, autoparser.infer_result(src, tokens).template, prefix=generation_prompt(src, tokens))
    assert msg == {"role": "assistant", **message}


@pytest.mark.parametrize("text, message", [
    ("Hello there.<|human|>", {"content": "Hello there."}),
    ("Hello there.<|human|>\n", {"content": "Hello there."}),
    ('<call>{"name": "get_weather", "arguments": {"city": "Paris"}}</call><|result|>',
     {"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
])
def test_the_next_turns_header_ends_a_turn_with_no_end_marker(text, message):
    """A template whose turns end where the next one's header token begins (models/next-turn-ends.jinja, as GLM):
    a model that goes on writes that header, its stop token, and a bare .jinja brings no generation_config.json
    to name it. The header tokens the next message adds after a reply and after calls end the turn. Fails on the
    commit before: the token came back as content."""
    src = (Path(__file__).resolve().parents[1] / "models" / "next-turn-ends.jinja").read_text(encoding="utf-8")
    msg = parse_response(text, autoparser.infer_result(src).template, prefix=generation_prompt(src))
    assert msg == {"role": "assistant", **message}


@pytest.mark.parametrize("name, text", [
    ("chatml-think", "<think>\nLet me think<|im_end|>"),
    ("chatml-think", "<think>\nLet me think<|im_end|>\n"),
    ("wrapped-with-reasoning", "<reasoning>Let me think<end_of_turn>"),
    ("json-after-reasoning", "<[reasoning]>Let me think<[assistant_end]>"),
])
def test_the_turn_ending_inside_reasoning_ends_the_reasoning(name, text):
    """A model that stops before writing the reasoning's close (``<think>…<|im_end|>``): the reasoning ends where
    the turn does, and the end marker is no reasoning text. Fails on the commit before: it kept the marker."""
    msg = _parse(name, text)
    assert msg.get("thinking") == "Let me think" and not msg.get("content"), msg


@pytest.mark.parametrize("body", [" city=Paris days=3", " please check Paris", "\n{city: Paris}"])
def test_a_tagged_call_whose_body_no_argument_tag_holds_stays_content(body):
    """A tagged call's body that is text, not its argument tags (``<tool_call>multiply a=1 b=2</tool_call>``,
    an object that is no JSON after the name's line): no argument this field reads, so no call (FORMATS §7b);
    before, a call with no arguments, the text silently gone. Markup before the first argument tag is no text: it
    still opens. (A JSON object there is the arguments: ``test_call_spellings.py::test_a_tagged_calls_arguments_may_be_a_json_object``.)"""
    text = f"Let me check.<call>get_weather{body}</call><|im_end|>"
    msg = _parse("kv-tagged", text)
    assert not _calls(msg) and "get_weather" + body in msg["content"], msg
    assert _calls(_parse("kv-tagged", "<call>get_weather\n<args><k>city</k><v>Paris</v></call><|im_end|>")) == [("get_weather", {"city": "Paris"})]
    assert _calls(_parse("kv-tagged", "<call>get_time</call><|im_end|>")) == [("get_time", {})]


WITH_CALLS = sorted(p.stem for p in MODELS.glob("*.jinja") if "tool_calls" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", WITH_CALLS)
def test_a_stream_reads_what_one_shot_reads_with_whitespace_at_any_marker(name):
    """The template's own call turns (verify's renderings), each with a newline before or after one of its markers
    or a space before it: a character-at-a-time stream must give the one-shot message. A look that decides on a new
    line's first character took the start of a section's end tag (``}]\\n</calls>``) for text, and only a stream,
    which sees ``\\n<`` before the tag is whole, closed the list there (``json-array-section``)."""
    from autoparser.analysis.diff import MARKER
    from autoparser.pipeline import verify

    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    report = verify(src, res.template)
    texts = {c.generated: c.prompt for c in report.cases if c.generated and not c.history and (c.expected or {}).get("tool_calls")}
    for g, prompt in sorted(texts.items(), key=lambda kv: (len(kv[0]), kv[0]))[:4]:  # (the shortest few)
        for m in list(MARKER.finditer(g))[:12]:
            for text in (g[:m.start()] + "\n" + g[m.start():], g[:m.end()] + "\n" + g[m.end():], g[:m.start()] + " " + g[m.start():]):
                one = parse_response(text, res.template, prefix=prompt)
                p = ResponseParser(res.template, prefix=prompt)
                for ch in text:
                    p.feed(ch)
                assert p.finalize()[0] == one, (text, one)


@pytest.mark.parametrize("model, text, args", [
    ("typed-attribute", '<｜TX｜calls>\n<｜TX｜invoke name="get_weather">\n<｜TX｜param name="city" string="true">Paris</｜TX｜param>\n'
                        '</｜TX｜calls>\nDone, checking.', {"city": "Paris"}),
    ("tag-two-word-opener", '<｜T｜ calls>\n<｜T｜ invoke name="get_weather">\n<｜T｜ parameter name="city">Paris</｜T｜ parameter>\n'
                            '</｜T｜ calls>\nDone, checking.', {"city": "Paris"}),
])
def test_a_calls_section_end_right_after_a_value_ends_the_call_whose_close_was_left_out(model, text, args):
    """The call's own close left out, the section's end right after its last value's close ends the call too; the
    text after the section is content. Fails on the commit before: the call ran to the text's end, and the text
    after the section was read as its arguments and lost."""
    msg = _parse(model, text)
    assert _calls(msg) == [("get_weather", args)] and msg.get("content") == "Done, checking.", msg
