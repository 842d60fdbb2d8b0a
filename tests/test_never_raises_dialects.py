"""A JSON call object read in a dialect never raises either (docs/FORMATS.md §7b, never raise).

The json content parser reads a dialect by rewriting the region (each ``string_delims`` pair's strings, then
bare keys) and raises when the result is no JSON and nothing allows that, or when the region holds its
sentinels ``\x01``/``\x02``. So the open's shape check speaks the dialect: a short call that is not a value of
that shape (cut, malformed, Python's ``True``, a quote inside a string the rewrite would split) is no call, and
its text stays in content; a call longer than ``CALL_WINDOW`` is read whole as ``function`` with
``allow_non_json``, its region ending before a sentinel (docs/FORMATS.md §9). Checked on the team's HTML-escaped and Python-dict
argument examples, parsed with transformers' own ``parse_response`` and streamed through ``ResponseParser``.
"""

from __future__ import annotations

from pathlib import Path

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.emit.streamed_calls import SENTINEL_STOP

ROOT = Path(__file__).resolve().parents[1]
DIALECTS = {"json-html-args": "&#34;", "json-repr-args": "'"}
# What a call's arguments are made of in these dialects, the characters the json parser refuses included.
PIECES = ["&#34;", "&#3", "'", '"', "{", "}", "[", "]", ":", ",", " ", "\n", "\t", "a", "0", "1", "-", ".", "e",
          "\\", "\\u00e9", "\x01", "\u00a0", "true", "True", "None", "</tool_call>", "<tool_call>"]


def _template(name: str) -> dict:
    return autoparser.infer((ROOT / "models" / f"{name}.jinja").read_text(encoding="utf-8"))


def _parse(template: dict, text: str, size: int) -> tuple[dict, dict]:
    prefix = template["start_anchor"]
    one = parse_response(text, template, prefix=prefix)
    p = ResponseParser(template, prefix=prefix)
    for i in range(0, len(text), size):
        p.feed(text[i : i + size])
    streamed, _ = p.finalize()
    return one, streamed


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_dialect_template_keeps_its_shape_check(name):
    """Within ``CALL_WINDOW`` the open checks a call's shape in the dialect (a short call that is no value of that
    shape stays content); a longer one opens on its head and is read whole as ``function`` (nothing indexed, so
    ``allow_non_json``), its region ending before the parser's sentinels (docs/FORMATS.md §9)."""
    field = _template(name)["fields"]["tool_calls"]
    assert field["content_args"]["string_delims"] == [[DIALECTS[name], DIALECTS[name]]]
    assert "(?&jb)" in field["open_pattern"] and field["content_args"].get("allow_non_json")
    assert field["transform"]["function"] == "{content}" and field["close_pattern"].endswith(SENTINEL_STOP)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_dialect_call_parses_and_a_cut_one_stays_content(name):
    q = DIALECTS[name]
    t = _template(name)
    call = '<tool_call>{"name": "get_weather", "arguments": {' + f"{q}city{q}: {q}Pa{{ris, }}x{q}, {q}n{q}: [1, 2.5]" + "}}</tool_call>"
    for size in (1, 3, 7, len(call) + 10):
        one, streamed = _parse(t, "Sure." + call, size)
        assert one == streamed
        assert one["content"] == "Sure."
        assert one["tool_calls"] == [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Pa{ris, }x", "n": [1, 2.5]}}}]
    for cut in range(len("Sure.<tool_call>") + 1, len("Sure." + call) - len("}</tool_call>")):
        text = ("Sure." + call)[:cut]
        one, streamed = _parse(t, text, 4)
        assert one == streamed and "tool_calls" not in one
        assert one["content"] == text.strip(), "a cut call's text stays visible"


def _words(text: str) -> str:
    return re.sub(r"</?tool_call>|\s", "", text)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_dialect_arguments_of_any_text_never_raise(name):
    t = _template(name)

    @settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(["}</tool_call>", "}", "</tool_call>", "", "}}</tool_call> ok"]),
           st.integers(1, 9))
    def run(pieces, tail, size):
        text = 'Hi<tool_call>{"name": "f", "arguments": {' + "".join(pieces) + tail
        try:
            one, streamed = _parse(t, text, size)
        except Exception as e:  # noqa: BLE001 - the assertion is that nothing raises
            pytest.fail(f"{name}: {type(e).__name__}: {str(e)[:200]}\ntext: {text!r}")
        assert one == streamed
        if "tool_calls" not in one:
            # every word stays; the call's markers alone may go (an empty call element, a close written twice: §7b)
            assert _words(one["content"]) == _words(text), "text no call reads stays in content"

    run()


def test_standard_json_the_json_module_refuses_comes_back_as_text():
    """Standard JSON too: what ``json.loads`` refuses (a raw tab in a string, an escape JSON lacks, a leading
    zero, a space JSON does not know, a cut exponent) never raises. A call with keys beyond its name and
    arguments opens on its keyed head (docs/FORMATS.md §9): refused arguments come back as their text."""
    t = _template("json-per-call")
    for value, ok in [('"a b"', True), ('"\\u00e9"', True), ("-0.5e3", True), ('"a\tb"', False), ('"\\x"', False),
                      ("01", False), ('"x"\u00a0', False), ("1e", False)]:
        text = 'Hi\n<|act|>\n{"name": "f", "arguments": {"a": ' + value + '}, "id": "c1"}\n<|eot|>'
        one, streamed = _parse(t, text, 3)
        assert one == streamed
        call = one["tool_calls"][0]
        assert (call["id"], call["function"]["name"]) == ("c1", "f"), (value, one)
        args = call["function"]["arguments"]
        assert isinstance(args, dict) == ok, (value, one)
        if not ok:
            assert value in args, "the refused arguments' text is kept"
