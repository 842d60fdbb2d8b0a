"""Calls in a spelling the template does not render, which the family's own parsers accept (issue 26), on
the team's examples in models/: each text is parsed with transformers' ``parse_response`` one-shot and
streamed through ``ResponseParser`` (both must agree). docs/FORMATS.md §7b, call spellings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.cli.parse import generation_prompt

MODELS = Path(__file__).resolve().parents[1] / "models"


def _parse(name: str, text: str, tools: list | None = None) -> dict:
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, template, prefix=prefix, tools=tools)
    for size in (1, 3, 7):
        p = ResponseParser(template, prefix=prefix, tools=tools)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        assert p.finalize()[0] == one, (name, text, size)
    return one


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
