"""How models spell argument values, and what the emitted templates make of them (issue 17; docs/FORMATS.md
§7b, argument values). Parsed with transformers' ``parse_response`` one-shot and streamed in chunks (both agree).

Pythonic values carry their type in their spelling (a string is always quoted), so they come back typed
whatever the template printed; a quoted string stays a string. Tagged values carry no spelling of their
type: only the tool schema (``tools=``) types them, and a string-typed value keeps its text.
"""

from __future__ import annotations

from pathlib import Path

from transformers.utils.chat_parsing import ResponseParser, parse_response

import autoparser
from autoparser.cli.parse import generation_prompt

MODELS = Path(__file__).resolve().parents[1] / "models"


def _args(name: str, text: str, tools=None) -> list[dict]:
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, template, prefix=prefix, tools=tools)
    for size in (1, 4):
        p = ResponseParser(template, prefix=prefix, tools=tools)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        assert p.finalize()[0] == one, (name, text, size)
    return [c["function"]["arguments"] for c in one.get("tool_calls") or []]


def _tool(name: str, **types) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in types.items()}}}}


def test_pythonic_values_are_typed_by_their_spelling():
    """The template prints strings in single quotes and True/None; models also write JSON literals and
    double quotes. Numbers, true/null, lists and dicts in either quoting come back typed, without tools=."""
    text = ("<|tool_call_start|>[f(count=42, ratio=0.95, on=true, nothing=null, items=['a','b c'], "
            'nums=[1, 2], obj={"k": "v"}, py={\'k\': \'v\'}, word=celsius)]<|tool_call_end|><|im_end|>')
    assert _args("pythonic-literals", text) == [{
        "count": 42, "ratio": 0.95, "on": True, "nothing": None, "items": ["a", "b c"],
        "nums": [1, 2], "obj": {"k": "v"}, "py": {"k": "v"}, "word": "celsius"}]


def test_pythonic_quoted_strings_stay_strings_as_written():
    """A quoted value is a string whatever it reads as: "42", 'true', "[1]" are not retyped; text JSON
    cannot read as Python does is kept as written between its quotes (a single-quoted escape, apostrophes,
    spaces)."""
    text = ('<|tool_call_start|>[f(a="42", b=\'true\', c="[1]", d=\'say "hi"\', f=\'it\\\'s\', '
            'g="don\'t \'x\'", h=" padded ", i=\'line\nbreak\')]<|tool_call_end|><|im_end|>')
    assert _args("pythonic-literals", text) == [{
        "a": "42", "b": "true", "c": "[1]", "d": 'say "hi"', "f": "it\\'s",
        "g": "don't 'x'", "h": " padded ", "i": "line\nbreak"}]


def test_pythonic_escapes_mean_what_python_reads():
    """A double-quoted string is a Python literal: its escapes that JSON reads alike come back decoded (a
    quote, a line break, a backslash, a code point), as Python's own reading gives them (vLLM's, SGLang's
    and Ollama's parsers); an escape JSON does not know (``\\d``) keeps its backslash, as Python keeps it.
    Fails on the commit before: every escaped string came back with its backslashes."""
    text = ('<|tool_call_start|>[f(q="say \\"hello\\"", code="import os\\nprint(1)", p="C:\\\\tmp", '
            'u="caf\\u00e9", r="\\d+", one="it\'s \\"x\\"")]<|tool_call_end|><|im_end|>')
    assert _args("pythonic-literals", text) == [{
        "q": 'say "hello"', "code": "import os\nprint(1)", "p": "C:\\tmp", "u": "caf\u00e9", "r": "\\d+",
        "one": 'it\'s "x"'}]


def test_a_single_quoted_string_is_its_text_where_the_template_prints_json_values():
    """pythonic-bare prints values as JSON (``tojson``), so its values are read by the json parser whole; models
    write Python's single quotes anyway (``city='Paris'``). A single-quoted string whose text is no JSON value is
    that text; one whose text JSON would read as a number or literal (``'42'``) keeps its quotes rather than
    become a number. Fails on the commit before: ``'Paris'`` came back with its quotes."""
    text = "[get_weather(city='Paris', area='San Francisco, CA', note='true story', n='42', q=\"x\", k=3)]"
    assert _args("pythonic-bare", text) == [{
        "city": "Paris", "area": "San Francisco, CA", "note": "true story", "n": "'42'", "q": "x", "k": 3}]


def test_pythonic_python_words_are_cast_by_the_schema():
    """True/None are no JSON: without tools= they come back as text, with tools= the schema casts them.
    A dict holding True is no JSON either and no parser of the format reads it: it comes back as its text."""
    text = "<|tool_call_start|>[f(on=True, off=None, cfg={'on': True})]<|tool_call_end|><|im_end|>"
    assert _args("pythonic-literals", text) == [{"on": "True", "off": "None", "cfg": "{'on': True}"}]
    tools = [_tool("f", on="boolean", off="null", cfg="object")]
    assert _args("pythonic-literals", text, tools) == [{"on": True, "off": None, "cfg": "{'on': True}"}]


def test_tagged_values_are_typed_by_the_schema_only():
    """Without tools= every tagged value is text; with tools= the schema decides: a string keeps its text,
    quotes included (a value may legitimately be quoted), numbers and JSON objects/arrays are read. A
    Python-quoted list typed array is no JSON and stays text (the format has no Python-literal reader)."""
    text = ('<call>f<k>city</k><v>"London"</v><k>zip</k><v>02134</v><k>n</k><v>3</v>'
            '<k>tags</k><v>["a"]</v><k>py</k><v>[\'a\']</v></call><|im_end|>')
    raw = {"city": '"London"', "zip": "02134", "n": "3", "tags": '["a"]', "py": "['a']"}
    assert _args("kv-tagged", text) == [raw]
    tools = [_tool("f", city="string", zip="string", n="integer", tags="array", py="array")]
    assert _args("kv-tagged", text, tools) == [{**raw, "n": 3, "tags": ["a"]}]


def _message(name: str, text: str) -> dict:
    src = (MODELS / f"{name}.jinja").read_text(encoding="utf-8")
    template = autoparser.infer_result(src).template
    prefix = generation_prompt(src)
    one = parse_response(text, template, prefix=prefix)
    for size in (1, 3):
        p = ResponseParser(template, prefix=prefix)
        for i in range(0, len(text), size):
            p.feed(text[i : i + size])
        assert p.finalize()[0] == one, (name, text, size)
    return one


def _xtml(*args: tuple[str, str, str]) -> str:
    body = "".join(f'<|sep|><|open|>argument key="{k}" type="{t}"<|sep|>{v}<|close|>argument' for k, t, v in args)
    return ('<|open|>response<|sep|>Sure.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="f"'
            + body + "<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|end_of_msg|>")


def test_a_tag_that_names_its_values_type_types_the_value():
    """The argument's tag says the value's type (``type="number"``; Kimi K3's XTML): the diffs saw only a
    string's tag (A3 reads a list's), and every other type word reads the value as JSON with no schema; a
    ``type="string"`` value stays the text it is, even where it reads as JSON. Every argument arrives: one
    ``<|sep|>`` stands between two tags (the value's close and the next key share it), and the section's
    worded end (``<|close|>tools<|sep|>``) is no content."""
    msg = _message("typed-tags", _xtml(("a", "number", "12"), ("b", "string", '{"x": 1}'), ("c", "array", "[1, 2]"),
                                       ("d", "boolean", "true"), ("e", "null", "null"), ("f", "string", "42")))
    assert msg.get("content") == "Sure."
    assert [c["function"]["arguments"] for c in msg["tool_calls"]] == [
        {"a": 12, "b": '{"x": 1}', "c": [1, 2], "d": True, "e": None, "f": "42"}]


def test_a_typed_tag_cut_off_keeps_what_arrived():
    """A string value cut where the text ends keeps its text; a typed one that is no JSON yet, its text."""
    msg = _message("typed-tags", _xtml(("a", "number", "12")).split("<|close|>argument")[0]
                   .replace("number", "string") + "partial text")
    assert msg["tool_calls"][0]["function"]["arguments"] == {"a": "12partial text"}


def _dsml(value: str) -> str:
    return ('<｜TX｜calls>\n<｜TX｜invoke name="f">\n<｜TX｜param name="html" string="true">' + value
            + '</｜TX｜param>\n<｜TX｜param name="n" string="false">2</｜TX｜param>\n</｜TX｜invoke>\n</｜TX｜calls><|turn_end|>')


def test_a_string_value_holding_a_tag_and_a_newline_stays_the_string():
    """A string value (``string="true"``) that holds ``>`` then a newline (HTML, a Vue file) comes back as
    written: the string's opening delimiter is the tag's whole tail (``">``), which such a value does not
    hold. Before, the delimiter was ``>`` alone, met again with its newline inside the value
    (``</div>\\n<p>``), and the value came back as its raw text, delimiters and end tag included."""
    html = "<div>{{name}}</div>\n<p>{{ n }}</p>"
    assert _args("typed-attribute", _dsml(html)) == [{"html": html, "n": 2}]
    assert _args("typed-attribute", _dsml("\n" + html + "\n")) == [{"html": html, "n": 2}]  # newlines around it absorbed
