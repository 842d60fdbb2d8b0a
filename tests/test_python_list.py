"""A pythonic call list with no marker of its own (``[f(a='x', n=True)]``: Llama 3.2/4, Gemma 3, ToolACE) is
a Python literal, read whole by transformers' ``python-call-list`` parser (docs/FORMATS.md §7b, a bare
pythonic list): values typed as Python reads them; a list outside that parser's grammar is no call and
stays in content whole, and nothing raises (``emit/python_list.py``)."""

from __future__ import annotations

import random

import pytest
import regex
from transformers.utils.chat_parsing.content_parsers import parse_content

from autoparser.emit.python_list import DEPTH, LIST
from test_call_spellings import _calls, _parse


@pytest.mark.parametrize("model", ["pythonic-bare", "pythonic-unquoted"])
@pytest.mark.parametrize("text, calls", [
    ("[register_user(name='Doe', age=9, address={'city': 'LA'}, role=None, passed_test=True, aliases=['J', 'Jo'])]",
     [("register_user", {"name": "Doe", "age": 9, "address": {"city": "LA"}, "role": None, "passed_test": True, "aliases": ["J", "Jo"]})]),
    ("[get_weather(city='Martha\\'s Vineyard', metric='\\\"cool units\\\"')]",
     [("get_weather", {"city": "Martha's Vineyard", "metric": '"cool units"'})]),
    ('[run(code="print(\\"hi\\")\\nx = a[f(1)]", flag=false, n=-1.5e3, none=null)]',
     [("run", {"code": 'print("hi")\nx = a[f(1)]', "flag": False, "n": -1500.0, "none": None})]),
    ("[f(a={'x': [{'y': [1]}]}), g()]", [("f", {"a": {"x": [{"y": [1]}]}}), ("g", {})]),
    ("[f(a='x)] y')]", [("f", {"a": "x)] y"})]),  # the list's end written inside a string
])
def test_a_bare_list_reads_its_values_as_python_does(model, text, calls):
    """True/False/None, escapes in either quote, JSON's literals and nesting come back typed, one-shot and
    streamed, with no tool schema (before, ``True``/``None`` came back as text and escapes as written)."""
    msg = _parse(model, text)
    assert _calls(msg) == calls
    assert not msg.get("content")


@pytest.mark.parametrize("text", [
    "[f(a=1,)]",  # a trailing comma
    "[f(1, b=2)]",  # a positional argument
    "[f(a=1, a=2)]",  # a repeated argument
    "[f(a={'k': 1, 'k': 2})]",  # a repeated key
    '[search(query="\\d+")]',  # an escape the parser does not decode
    "[f(a=12345678901234567)]",  # an integer past 2^53
    "[f(a=" + "[" * (DEPTH + 1) + "1" + "]" * (DEPTH + 1) + ")]",  # nested deeper than the check reads
    "[f(a=Paris)]",  # a value that is no literal
    "[get_weather(city='Paris'",  # cut off
])
def test_a_list_the_parser_does_not_read_stays_in_content_whole(text):
    """The families' parsers (an ``ast`` parse of the whole list) leave such a list as text: no call, and
    every character of it in content, where the parser would have raised on the region."""
    msg = _parse("pythonic-bare", text)
    assert not msg.get("tool_calls")
    assert msg.get("content") == text


def test_text_around_one_list_is_content_and_a_second_list_stays_content():
    """The list is one region, one value: a second one would replace the first, so it stays text."""
    msg = _parse("pythonic-bare", "Let me check. [f(a=1)] Then [g(b=2)]")
    assert _calls(msg) == [("f", {"a": 1})]
    assert msg.get("content") == "Let me check.\n\nThen [g(b=2)]"


def _lists(seed: int, n: int):
    rnd = random.Random(seed)
    atoms = ["0", "-1", "1.5", "1e3", "True", "None", "null", "'a'", '"b"', "'it\\'s'", '"q\\"x"', "'\\n'",
             "'\\u00e9'", "'x)] y'", "''", "'\\ud800'", "'\\d'", "01", "1e999", "9" * 17]

    def value(d):
        r = rnd.random()
        if d and r < 0.2:
            return "[" + ", ".join(value(d - 1) for _ in range(rnd.randint(0, 3))) + "]"
        if d and r < 0.4:
            return "{" + ", ".join(f"{rnd.choice(['a', 'b', 'a'])!r}: {value(d - 1)}" for _ in range(rnd.randint(0, 3))) + "}"
        return rnd.choice(atoms)

    def call():
        keys = [rnd.choice(["a", "b", "c_d", "e.f"]) for _ in range(rnd.randint(0, 3))]
        return rnd.choice(["f", "a.b", "x-y"]) + "(" + ", ".join(f"{k}={value(rnd.randint(0, DEPTH + 1))}" for k in keys) + ")"

    chars = list("[](){},:='\"\\ \n.-_aT019eNu")
    for _ in range(n):
        s = list("[" + ", ".join(call() for _ in range(rnd.randint(1, 3))) + "]")
        for _ in range(rnd.randint(0, 3)):
            i = rnd.randrange(len(s) + 1)
            op = rnd.random()
            if op < 0.4 and s:
                del s[min(i, len(s) - 1)]
            elif op < 0.8:
                s.insert(i, rnd.choice(chars))
            elif s:
                s[min(i, len(s) - 1)] = rnd.choice(chars)
        yield "".join(s)


def test_what_the_open_reads_as_a_list_the_parser_reads():
    """The open's check and transformers' parser agree: a list the check reads never makes the parser raise
    (the never-raise guarantee rests on it), and the check reads nearly every list the parser does (the
    rest nest deeper than ``DEPTH``)."""
    check = regex.compile(LIST)
    read = agreed = 0
    for text in _lists(7, 4000):
        try:
            parse_content(text, "python-call-list", {})
            ok = True
        except ValueError:
            ok = False
        if check.fullmatch(text):
            assert ok, text
        read += ok
        agreed += ok and bool(check.fullmatch(text))
    assert read > 300 and agreed > 0.9 * read, (read, agreed)
