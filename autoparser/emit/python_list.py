"""The ``tool_calls`` field for a bare pythonic list (``[f(a='x', n=True), g()]``, no marker of its own) read
whole by transformers' ``python-call-list`` parser: Python's literals typed as Python reads them (``True``,
``None``, ``'it\\'s'``). Part of the emitter, beside ``pythonic``.

The parser raises on anything outside its grammar, so a list opens only where a lookahead has read the whole
list in that grammar (``LIST``), and closes where that list's brackets balance (``\\G`` is where its body
began, ``\\K`` leaves the list in it). What the lookahead refuses is no call: its text stays in content, as
the families' parsers (an ``ast`` parse of the whole list) leave it."""

from __future__ import annotations

import regex as re

from ..analysis.diff import SPECIAL_TOKEN
from ..analysis.model import Tools
from .markers import _call_transform

# The parser's grammar, each token taken whole as its own regexes take it (atomic: no shorter reading).
_W = r"[ \t\n\r]*+"
_NAME = r"(?>[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*)"
# Strings: only the escapes it decodes; no surrogate, raw or escaped (it refuses a lone one; a pair is rare).
_CHAR = r"[^{q}\\\n\r\ud800-\udfff]++|\\[\\'\"/bfnrt]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{{4}}"
_STRING = "(?>'(?:{})*+'|\"(?:{})*+\")".format(_CHAR.format(q="'"), _CHAR.format(q='"'))
# Integers within 2^53 - 1, floats that stay finite (its limits): fifteen digits, a two-digit exponent.
_NUMBER = r"(?>-?(?:0|[1-9][0-9]{0,14})(?![0-9])(?:\.[0-9]++)?+(?:[eE][+-]?[0-9]{1,2}(?![0-9]))?+)"
_CONSTANT = r"(?>(?:True|False|None|true|false|null)(?![A-Za-z0-9_]|[-.][A-Za-z0-9_]))"
# A dict key: a string with no escape and no quote, so that equal keys are equal texts (it refuses a repeat).
_KEY = r"""(?:'(?P<dk>[^'"\\\n\r\ud800-\udfff]*+)'|"(?P<dk>[^'"\\\n\r\ud800-\udfff]*+)")"""
# Any string, as a scan steps over it (never into it).
_SKIP_STRING = r"""(?>'(?:[^'\\\n\r]++|\\[\s\S])*+'|"(?:[^"\\\n\r]++|\\[\s\S])*+")"""
DEPTH = 4  # lists and dicts nested in an argument; deeper ones are no call


def _balanced(depth: int) -> str:
    """Brackets nested to ``depth`` levels, strings stepped over: what a scan for a repeated key skips, and where
    the close finds the list's end. Any closer ends any opener: both run only over text the grammar read, where
    they pair."""
    if depth == 0:
        return "(?!)"
    return rf"""[\[{{](?:{_SKIP_STRING}|[^'"{{}}\[\]]++|{_balanced(depth - 1)})*+[\]}}]"""


def _items(item: str, close: str) -> str:
    """``item``s separated by commas up to ``close``, no trailing comma, ``item`` written once."""
    return rf"{_W}(?:{item}{_W}(?:,{_W}(?!{close})|(?={close})))*+{close}"


def _value(depth: int) -> str:
    """A value the parser reads, lists and dicts nested ``depth`` levels."""
    scalar = f"{_STRING}|{_NUMBER}|{_CONSTANT}"
    if depth == 0:
        return f"(?:{scalar})"
    inner = _value(depth - 1)
    # A key with no later equal key in its dict: the scan steps over strings and nested brackets, stops at ``}``.
    unique = rf"""(?!(?:{_SKIP_STRING}|{_balanced(depth - 1)}|[^'"{{}}\[\],]++|,)*?,{_W}['"](?P=dk)['"]{_W}:)"""
    pair = rf"{_KEY}{unique}{_W}:{_W}{inner}"
    lst, dct = _items(inner, r"\]"), _items(pair, r"\}")
    return rf"(?:{scalar}|\[{lst}|\{{{dct})"


def _call() -> str:
    """``name(k=v, …)``: keyword arguments only, each name once (the scan stops at the call's ``)``)."""
    unique = rf"""(?!(?:{_SKIP_STRING}|{_balanced(DEPTH)}|[^'"(){{}}\[\],]++|,)*?,{_W}(?P=kw){_W}=)"""
    argument = rf"(?P<kw>{_NAME}){unique}{_W}={_W}{_value(DEPTH)}"
    args = _items(argument, r"\)")
    return rf"{_NAME}{_W}\({args}"


# The whole list: at least one call (an empty list is no call), as the parser reads it from its ``[``.
LIST = rf"\[(?!{_W}\])" + _items(_call(), r"\]")


def list_field(t: Tools) -> tuple[dict, list[str]]:
    r"""The field: a list opens where the lookahead reads it whole (a special token before it, Llama 4's
    ``<|python_start|>``, is the open's), not glued to a word or a bracket (``a[f(x)]`` in code), and only
    while no list has closed before it (``)`` then ``]``: the region is one value, so a second list would
    replace the first; it stays content). It closes at the list's end; a special token after it
    (``<|python_end|>``) is the content's to drop (``token_after_list``)."""
    token = rf"(?:(?:{SPECIAL_TOKEN})[ \t\n\r]*+)?"
    first = r"(?<!\)[ \t\n\r]*\][\s\S]*)"
    open_pattern = rf"{token}(?<![\w\])])(?=\[{_W}{_NAME}{_W}\(){first}(?={LIST})"
    # The open read the list whole, so its end is where its brackets balance (strings stepped over): the close
    # need not read the grammar again (a second copy of it, compiled and run). Streamed, the parser may have
    # taken the list into the region up to its end before the close was final (a match at the buffer's edge
    # waits): then ``\G`` stands right after the list's ``)`` and ``]``, which only its end can be (the open
    # refused a list after another one's).
    close_pattern = rf"\G{_balanced(DEPTH + 1)}\K|\G(?<=\)[ \t\n\r]*+\])"
    field = {
        "open_pattern": open_pattern,
        "close_pattern": close_pattern,
        "content": "python-call-list",
        "transform_each": True,
        "transform": _call_transform("{name}", "{arguments}", None),
    }
    warnings = ["pythonic calls are read as one Python list; a list the parser's grammar does not read "
                "(positional arguments, a trailing comma, a value that is no literal) stays in content"]
    return field, warnings
