"""The behaviours of transformers' response parser that the emitted templates rest on, each stated once and
checked with transformers' own ``parse_response`` / ``ResponseParser`` on a small spec written here.

The emitter's guarantees (never raise, never lose text, one-shot and streamed agree) are properties of
these behaviours, not of one transformers release: when a release changes one, the test that names it
fails here, before the corpus tests fail somewhere less legible. CI runs this file (with the never-raise
and round-trip tests) against the newest transformers and the oldest the project declares.

Known changes, 5.23 -> 5.24: a close pattern's named captures join the transform's scope (5.23 drops them):
the keyed JSON calls (``emit/streamed_calls.py::_json_keyed``) capture an id or a name written after the
arguments there, so the project requires 5.24. And a regex match that does not end at the buffer's edge is final in 5.23; 5.24
re-matches it at its reported start with one more character after the buffer and holds it while the span
or the captures change. A close whose reported start is not where its match began (``\\K``) therefore
never commits before the end of the stream; the emitted closes end a value with a lookbehind alternative
that re-matches where it stands (``test_value_end_close_*``).
"""

from __future__ import annotations

from importlib.metadata import version

import pytest
from transformers.utils.chat_parsing import ResponseParser, parse_response

TRANSFORMERS = version("transformers")


def streamed(spec: dict, text: str, size: int = 1, prefix: str = "") -> dict:
    p = ResponseParser(spec, prefix=prefix)
    for i in range(0, len(text), size):
        p.feed(text[i : i + size])
    return p.finalize()[0]


def both(spec: dict, text: str, prefix: str = "") -> list[dict]:
    """One shot, then streamed a character and three characters at a time."""
    return [parse_response(text, spec, prefix=prefix), streamed(spec, text, 1, prefix), streamed(spec, text, 3, prefix)]


THINK = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
        "content": {"content": "text", "close": "<|end|>"},
    },
}


def test_prefix_is_cut_after_the_anchor_and_parsed_first():
    """A generation prompt that opens the reasoning makes the text before the close reasoning."""
    msg = parse_response("plan</think>answer", THINK, prefix="<|user|>hi<|assistant|><think>")
    assert (msg.get("thinking"), msg.get("content")) == ("plan", "answer")


def test_the_implicit_field_overwrites_on_each_close():
    """Without ``repeats`` the implicit field keeps the text of its last region only: why the emitted
    content bound swallows whitespace between regions (``\\s*``), and why text on both sides of a call
    cannot both be kept by a plain content field."""
    spec = {"start_anchor": "A:", "fields": {"content": {"content": "text"},
                                             "thinking": {"open": "<t>", "close": "</t>", "content": "text"}}}
    for msg in both(spec, "first<t>x</t>second"):
        assert msg["content"] == "second"


def test_literal_delimiters_stream_with_no_hold_back():
    p = ResponseParser(THINK, prefix="<|assistant|>")
    events = p.feed("<think>abc")
    assert [e["text"] for e in events if e["type"] == "region_chunk"] == ["abc"]


def test_a_partial_marker_is_held_then_released():
    p = ResponseParser(THINK, prefix="<|assistant|>")
    p.feed("<think>abc</thi")
    events = p.feed("s is not it")
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk") == "</this is not it"


def test_a_regex_match_at_the_buffer_edge_waits():
    """A regex delimiter that more text could extend is not committed at the edge of the buffer."""
    spec = {"start_anchor": "A:", "fields": {"content": {"content": "text"},
                                             "thinking": {"open_pattern": r"<t\s*>", "close": "</t>", "content": "text"}}}
    p = ResponseParser(spec, prefix="A:")
    assert not [e for e in p.feed("x<t") if e["type"] == "region_open" and e["field"] == "thinking"]
    assert [e for e in p.feed(" >y") if e["type"] == "region_open" and e["field"] == "thinking"]


def test_named_groups_reach_the_transform_and_an_empty_default_capture_stands():
    """``(?P<id>)`` before the real group: the regex module keeps a name's last capture, so a call without
    an id parses with ``"id": ""`` instead of raising (a placeholder of a group that took no part raises)."""
    spec = {"start_anchor": "A:", "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open_pattern": r"(?P<id>)<call(?: id=(?P<id>\w+))?>(?P<name>\w+):", "close": "</call>",
                       "content": "json", "repeats": True,
                       "transform": {"type": "function", "id": "{id}", "function": {"name": "{name}", "arguments": "{content}"}}},
    }}
    for msg in both(spec, '<call id=c1>f:{"a": 1}</call><call>g:{}</call>'):
        assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
            ("c1", "f", {"a": 1}), ("", "g", {})]


def test_allow_non_json_returns_the_text():
    spec = {"start_anchor": "A:", "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open_pattern": r"<call>(?P<name>\w+):", "close": "</call>", "content": "json",
                       "content_args": {"allow_non_json": True}, "repeats": True,
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
    }}
    for msg in both(spec, "<call>f:{not json</call>"):
        assert msg["tool_calls"][0]["function"]["arguments"] == "{not json"


def test_a_transform_over_json_that_does_not_parse_raises():
    """Why an emitted opener must see a whole value of its shape before it opens (``emit/guard.py::never_raises``)."""
    spec = {"start_anchor": "A:", "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open": "<call>", "close": "</call>", "content": "json", "repeats": True,
                       "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}},
    }}
    with pytest.raises(ValueError):
        parse_response("<call>{broken</call>", spec, prefix="")


def test_tools_cast_string_arguments_by_schema():
    spec = {"start_anchor": "A:", "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open_pattern": r"<call=(?P<name>\w+)>", "close": "</call>", "content": "xml-inline",
                       "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}, "repeats": True,
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
    }}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"}}}}}]
    msg = parse_response('<call=f><n>42</n><s>42</s><o>{"k": [1]}</o></call>', spec, prefix="", tools=tools)
    assert msg["tool_calls"][0]["function"]["arguments"] == {"n": 42, "s": "42", "o": {"k": [1]}}


# A value that ends its region where the value ends, with no close marker (``[CALLS][...]`` then text):
# the shape the emitter writes for such formats, reduced to its parts. ``value`` finds the end of the
# balanced value from where the body began (``\G``) and reports it there (``\K``); ``after_value`` is the
# same end found standing on it (a ``]`` just before it, not the opener's own): the one that re-matches.
_JB = r"(?(DEFINE)(?P<jb>\[(?:[^\[\]\"]++|\"(?:[^\"\\]++|\\.)*+\"|(?&jb))*+\]|\{(?:[^{}\"]++|\"(?:[^\"\\]++|\\.)*+\"|(?&jb))*+\}))"
_FOLLOWS = r"(?:\s*+[\s\S]{8}|\s*+\S[\s\S]{0,7}\Z)"
VALUE_END = {"start_anchor": "A:", "fields": {
    "content": {"content": "text"},
    "tool_calls": {
        "open_pattern": r"\[CALLS\](?=\s*+(?&jb)(?:" + _FOLLOWS[3:-1] + r"|\s*\Z))" + _JB,
        "close_pattern": r"\G(?:(?<![}\]])|(?<=\[CALLS\]))(?=\s*+(?&jb)" + _FOLLOWS + r")\s*+(?&jb)\K"
                         + r"|\G(?<=[}\]])(?<!\[CALLS\])(?=" + _FOLLOWS + ")" + _JB,
        "content": "json", "transform_each": True,
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
    },
}}
CALLS = '[CALLS][{"name": "f", "arguments": {"q": "a ] } b"}}]'


@pytest.mark.parametrize("after", ["", " then more text", "</s>", "\n\nok"])
def test_value_end_close_keeps_the_text_after_the_value(after):
    for msg in both(VALUE_END, CALLS + after):
        assert msg["tool_calls"][0]["function"] == {"name": "f", "arguments": {"q": "a ] } b"}}
        assert (msg.get("content") or "") == after.strip()


def test_a_close_reported_after_its_start_is_final_only_in_5_23():
    """The ``\\K`` alternative alone: 5.23 commits it mid-stream; 5.24 holds it to the end of the text, where
    the region's body has already taken the text up to the value's end and only a close standing there
    can end it. If this changes again, ``emit/guard.py::never_raises`` may drop or keep its lookbehind."""
    spec = {**VALUE_END, "fields": {**VALUE_END["fields"], "tool_calls": {
        **VALUE_END["fields"]["tool_calls"],
        "close_pattern": VALUE_END["fields"]["tool_calls"]["close_pattern"].split("|\\G(?<=")[0] + _JB}}}
    text = CALLS + " then more text"
    try:
        msg = parse_response(text, spec, prefix="")
        committed = msg.get("content") == "then more text"
    except ValueError:  # the trailing text joined the JSON body
        committed = False
    assert committed == (TRANSFORMERS.startswith("5.23.")), TRANSFORMERS


def test_a_close_s_captures_reach_the_transform():
    """An id written after the arguments (Mistral Nemo's ``{"name", "arguments", "id"}``) is captured by the
    call's close; 5.24 passes the close's captures to the transform, 5.23 kept only the open's (the id came
    back empty). The keyed JSON calls rest on it: pyproject requires transformers 5.24."""
    spec = {"start_anchor": "A:", "fields": {"content": {"content": "text"},
        "tool_calls": {"open_pattern": r"(?P<id>)<call>", "close_pattern": r"(?:\|(?P<id>\w+))?</call>", "content": "json",
                       "repeats": True, "transform": {"type": "function", "id": "{id}", "function": {"name": "f", "arguments": "{content}"}}}}}
    for msg in both(spec, '<call>{"a": 1}|c1</call><call>{}</call>'):
        assert [(c["id"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("c1", {"a": 1}), ("", {})]
