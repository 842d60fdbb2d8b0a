"""The ``tool_calls`` field for pythonic calls (``[f(a="x", n=3), g(b='y')]``): the Python-literal argument
grammar and its value parsers, the list's open and close. Part of the emitter, beside ``tools``."""

from __future__ import annotations

import regex as re

from ..analysis.diff import markers
from ..analysis.model import Tools
from .markers import SPECIAL_TOKEN, ARGS_KEYS, NAME, _call_transform, _flex, not_before


# Python literals for the pythonic argument grammar: quoted strings, bracketed lists/dicts matched
# recursively, and bare atoms (numbers, True, None).
_Q1 = r"'(?:[^'\\]|\\.)*'"
_Q2 = r'"(?:[^"\\]|\\.)*"'
_NEST = rf"(?P<nest>\[(?:[^\[\]{{}}'\"]|{_Q1}|{_Q2}|(?&nest))*\]|\{{(?:[^\[\]{{}}'\"]|{_Q1}|{_Q2}|(?&nest))*\}})"
_NEST2 = _NEST.replace("(?P<nest>", "(?P<n2>").replace("(?&nest)", "(?&n2)")  # beside a value group of its own


# Each value whole, quotes included, for values a template writes as JSON (``tojson``): the json parser
# reads strings with their escapes, lists and dicts; True/None and other bare words come back as text,
# which ``tools=`` casts by the schema.
_PY_LITERAL = rf"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|{_NEST2}|[^,\s()\[\]{{}}'\"]+" + rf"|{_Q1[:-1]}\Z|{_Q2[:-1]}\Z"  # a string cut off, as above
PY_VALUE_PARSER = {"name": "json", "args": {"allow_non_json": True}}
# ... but a single-quoted string (models write Python's quotes whatever the template prints: ``city='Paris'``)
# is no JSON, and came back with its quotes: where its text is no JSON value either (not a number, literal,
# list, object or string, and holds no quote or backslash), its text alone is handed over, which the json
# parser gives back as that text. Others (``'42'``, ``'true'``, ``'[x]'``) stay whole, quotes and all, never a number.
_SQ_TEXT = r"""'(?P<value>(?![\[{"\s]|(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')[^'\\"]+)'"""

# Values spelled as Python writes them (a template that prints ``{{ v }}``, or none the diffs saw): the
# spelling carries the type. Every value goes through one json parser that reads ' as a string delimiter;
# what is handed to it decides what comes back:
# - a quoted string whose text JSON reads as Python does, whole, quotes included: a string, always (``"42"``
#   stays "42", ``'a "b"'`` is a "b"). Single-quoted with no backslash; double-quoted with no control
#   character, at most one apostrophe (two would pair up as the ' delimiter), and only the escapes both
#   languages read alike (``\\ \" \n \r \t \b \f \uXXXX``): ``"say \"hi\""`` is say "hi", ``"a\nb"`` a line break,
#   as vLLM's, SGLang's and Ollama's parsers (Python's own reading) give them;
# - any other quoted string: the text between its quotes, as written (``'it\'s'`` keeps its escape,
#   ``"\d+"`` its backslash), which no json decoder reads, so it stays text;
# - a bracketed list or dict whole: JSON or Python quoting read as a list/dict (``['a','b']``); one
#   holding True/None is no JSON and comes back as its text;
# - a bare atom: ``42``, ``0.95``, ``true``, ``null`` typed; ``True``/``None``/``celsius`` as text
#   (``tools=`` casts True/None by the schema).
# ``strip`` off: a value that is not JSON keeps its spaces.
_SQ_EXACT = r"'[^'\\]*'"


def _string_run(escapes: str) -> str:
    """The inside of a double-quoted string with no apostrophe, no control character and only these escapes
    (a character class) or ``\\uXXXX``: the text a json parser handed it reads as meant."""
    return rf'(?:[^"\\\'\x00-\x1f]|\\{escapes}|\\u[0-9a-fA-F]{{4}})*'


_DQ_RUN = _string_run(r'[\\"nrtbf]')  # (Python keeps ``\/``; JSON reads it as ``/``: not handed over)
_DQ_EXACT = rf'"{_DQ_RUN}(?:\'{_DQ_RUN})?"'
_PY_TYPED = (rf"(?P<value>{_SQ_EXACT}|{_DQ_EXACT}|{_NEST2}|[^,\s()\[\]{{}}'\"]+)"
             rf"|'(?P<value>(?:[^'\\]|\\.)*)'|\"(?P<value>(?:[^\"\\]|\\.)*)\""
             # a string cut off where the call's text ends (a token limit) keeps what arrived
             r"|'(?P<value>(?:[^'\\]|\\.)*)\Z|\"(?P<value>(?:[^\"\\]|\\.)*)\Z")
PY_TYPED_PARSER = {"name": "json", "args": {"string_delims": [["'", "'"]], "allow_non_json": True, "strip": False}}


# A member of a JSON object, for the arguments of a call written as JSON in a pythonic section (``_json_calls``):
# its key after the object's ``{`` or a ``,``, and its value as ``_PY_TYPED`` spells it for the one json parser
# both kinds of call share: a double-quoted string whole when it holds at most one apostrophe (two would pair
# up as the ' delimiter) and only JSON's escapes, else the text between its quotes; a bracketed value whole; a bare atom; a string cut off where the text ends.
_JSON_RUN = _string_run(r'["\\/bfnrt]')
_JSON_MEMBER = (r'(?<=[{,]\s*)"(?P<key>[^"\\\n]{1,256})"\s*:\s*'
                rf"""(?:(?P<value>"{_JSON_RUN}(?:'{_JSON_RUN})?"|(?&n2)|[^,\s()\[\]{{}}'"]+)"""
                r'|"(?P<value>(?:[^"\\]|\\.)*)"|"(?P<value>(?:[^"\\]|\\.)*)\Z)')


def _pythonic_args(t: Tools, json_calls: bool = False) -> dict:
    """The xml-inline arguments of a pythonic call. Values a template writes as JSON (``tojson``) are
    matched whole and read by the json parser (escapes, nesting); others are typed by their spelling
    (``_PY_TYPED``), which holds whatever the template printed: models write Python and JSON literals
    alike (``count=42, enabled=true, items=['a','b']``) whether or not their template does.
    ``json_calls``: the members of a JSON arguments object too (``_json_calls``): one field has one parser."""
    key = rf"(?<![\w.])(?P<key>[A-Za-z_]\w*){_flex(t.arguments.key_suffix) or '='}"
    member = f"|{_JSON_MEMBER}" if json_calls else ""
    if t.arguments.json_values:
        return {"tag_pattern": rf"{key}(?:{_SQ_TEXT}|(?P<value>{_PY_LITERAL})){member}", "value_parser": PY_VALUE_PARSER}
    return {"tag_pattern": rf"{key}(?:{_PY_TYPED}){member}", "value_parser": PY_TYPED_PARSER}


def _json_calls(sec: str, sec_end: str) -> tuple[str, str]:
    r"""(open alternatives, close alternatives) for calls written as JSON objects in a pythonic section with
    markers of its own (``<|tool_call_start|>[{"name": "f", "arguments": {…}}]<|tool_call_end|>``). A call
    object describes itself (FORMATS §7b, call spellings): models of pythonic families write the list as JSON when their
    system prompt asks for it (LFM2's model card documents it), and SGLang's LFM2 parser reads both. Only
    inside the section's own markers, never in prose; the arguments object is the region, read by the
    pythonic arguments' xml-inline (``_JSON_MEMBER``). A later call opens where the previous one's close
    (``}`` of the arguments, ``}`` of the object, ``,``) left the parser (``\G``), as pythonic calls do; the
    close before it needs a whole call head after the comma, so an array of objects inside the arguments
    does not end the call."""
    head = rf'\{{\s*"name"\s*:\s*"(?P<name>{NAME})"\s*,\s*"(?:{"|".join(ARGS_KEYS)})"\s*:\s*(?=\{{)'
    loose = rf'\{{\s*"name"\s*:\s*"{NAME}"\s*,\s*"(?:{"|".join(ARGS_KEYS)})"\s*:'
    opens = rf"{_flex(sec)}\s*{head}|\G(?<=\}}\s*,\s*){head}|\}}\s*,\s*{loose}(?!)"
    closes = rf"(?<=\}})\s*\}}\s*,\s*(?={loose})|(?<=\}})\s*\}}\s*{_flex(sec_end)}\s*"
    return opens, closes


def _bare_pythonic_open(t: Tools, name: str, close: str) -> tuple[str, str]:
    """(open pattern, separator pattern) for pythonic calls with no section marker, written one after
    another (``f(a=1); g(b=2)``, one per line): the first at the very start of the reply, a later one
    after the previous call's ``)`` and the separator, and only when everything before it is calls
    (a lookbehind to the start, run last), so ``see f(x); g(y)`` in prose stays content."""
    raw = t.call_separator
    sep = _flex(raw) if raw.strip() else (r"\s+" if raw else r"\s*,\s*")
    bare = r"[A-Za-z_][\w.\-]*" + re.escape(t.name_suffix)
    paren = rf"(?P<pc>\((?:[^()'\"]|{_Q1}|{_Q2}|(?&pc))*\))"
    call = r"[A-Za-z_][\w.\-]*" + paren if t.name_suffix == "(" and t.call_end == ")" else None
    if call is None:
        return r"\A\s*" + name, sep
    run = rf"(?<=\A\s*(?:{call}{sep})+{bare})"
    return rf"(?:\A\s*{name}|(?<={close}){sep}{name}{run})", sep


def _pythonic(t: Tools, ends: list[str]) -> tuple[dict, list[str]]:
    """``[f(a='x'), g(b=1)]``: one region per call. A later call opens at the separator only inside
    an open section (a variable-length lookbehind to the section start), so ``f(x), g(y)`` in plain
    content stays content; a call closes at ``)`` followed by the next call or the section end.

    The lookbehind scans back to the section start, so it runs last: after the previous call's ``)``
    and the next ``name(`` matched (a call closes only there). Run at every separator, it made
    parsing quadratic in prose (0.01 MB/s on 25 KB with commas)."""
    warnings = ["pythonic True/False/None come back as strings unless tools= is passed to the parser (then they are cast by the tool schema)"]
    name = r"(?P<name>[A-Za-z_][\w.\-]*)" + re.escape(t.name_suffix)
    if t.name_suffix == "(" and t.call_end == ")":
        # The format passes its arguments by keyword: a call's parenthesis is closed at once or opens a keyword
        # (``f()``, ``f(a=``). A positional argument is Python in prose or code (``[int(x) for x in s]``), not a
        # call: before, it opened one whose text, read for ``key=value`` pairs, reached no field of the message.
        name += r"(?=\s*(?:\)|[A-Za-z_]\w*\s*=))"
    sec, sec_end = t.section_start.strip(), t.section_end.strip()
    # Calls one per line (the template's separator is whitespace: OLMo 3, MiniCPM 3) are written so by
    # models too, or as a Python list with commas; a comma alone is what a list literal allows.
    raw = t.call_separator
    sep = _flex(raw) if raw.strip() else (r"(?:\s*,\s*|\s+)" if raw else r"\s*,\s*")
    close = re.escape(t.call_end)
    if sec:
        # A bare bracket opens calls only as a list of its own, not glued to a word (``hello world[A(``,
        # an index in code ``a[f(x)]``), as the families' parsers read only a whole list; after a sentence
        # (``you.[f(…)]``, Llama 4's content beside calls) or a marker it opens them; after a single backtick it is
        # inline code (``write `[f(a=1)]` to call it``), as a JSON call there is (``tools.py::NOT_DATA``).
        glued = "" if markers(sec) else rf"(?<![\w\]\)]{re.escape(sec)})(?<!(?<!`)`{re.escape(sec)})"
        # A list with no marker of its own may be wrapped in special tokens the template never writes
        # (Llama 4's ``<|python_start|>[…]<|python_end|>``; vLLM's and SGLang's parsers read both): one
        # before the list is the open's, one after it the close's, so neither is left in content.
        # Likewise a markdown fence around it (```` ```python\n[f(a=1)]\n``` ````, as JSON calls are fenced, §7b): its
        # opening line is the open's and its end the close's.
        token = "" if markers(sec) else rf"(?:(?:{SPECIAL_TOKEN})\s*|```[\w\-]*[ \t]*\n\s*)?"
        # A later call opens right where the previous call's close (which takes the separator) left the parser
        # (``\G``): a bounded look, where a lookbehind to the section's start re-read the section for every
        # call (quadratic in the calls). In prose, the parser never stops between ``), `` and a name: the
        # last alternative, which never matches, is pending from the ``)`` until the name's ``(`` arrives.
        bare = r"[A-Za-z_][\w.\-]*" + re.escape(t.name_suffix)
        open_pattern = rf"(?:{token}{_flex(sec)}{glued}\s*{name}|\G(?<={close}{sep}){name}|{close}{sep}{bare}(?!))"
        json_calls = bool(markers(sec)) and bool(sec_end)
        if json_calls:
            json_open, json_close = _json_calls(sec, sec_end)
            open_pattern = open_pattern[:-1] + f"|{json_open})"
    else:
        json_calls = False
        open_pattern, sep = _bare_pythonic_open(t, name, close)
        warnings.append("pythonic tool calls have no section marker: calls are recognised only as a run at the very start of the reply")
    # (a fence's end, or a character that shows none is arriving: ``not_before``, as the regex module's partial
    # search prefers the complete match without it to the fence still arriving)
    fence_end = rf"(?:```[ \t]*|{not_before('```')})" if sec and not markers(sec) else ""
    tail = rf"\s*{_flex(sec_end)}\s*{fence_end}" if sec_end else r"\s*(?=" + "|".join([re.escape(e) for e in ends] + [r"\Z"]) + ")"
    field = {
        "open_pattern": open_pattern,
        "close_pattern": (rf"{close}{sep}(?=[A-Za-z_][\w.\-]*{re.escape(t.name_suffix)})" if sec
                          else rf"{close}(?={sep}[A-Za-z_][\w.\-]*{re.escape(t.name_suffix)})") + rf"|{close}{tail}"
                         + (f"|{json_close}" if json_calls else ""),
        "repeats": True,
        "content": "xml-inline",
        "content_args": _pythonic_args(t, json_calls),
        "transform": _call_transform("{name}", "{content}", None),
    }
    return field, warnings


def token_after_list(t: Tools) -> str | None:
    r"""For pythonic calls in a list with no marker of its own (``[f(a=1)]``): a special token right after the
    list's ``]`` (Llama 4's ``<|python_end|>``), as a pattern the implicit content consumes without opening
    (``emit/template.py``): the call's close has ended, and whenever the token arrives (streamed as one
    token after ``]`` was committed, or in the same text) it is no text."""
    sec, sec_end = t.section_start.strip(), t.section_end.strip()
    if t.arguments.kind != "pythonic" or not sec or not sec_end or markers(sec) or markers(sec_end):
        return None
    return rf"(?:{SPECIAL_TOKEN})(?<={re.escape(sec_end[-1])}\s{{0,64}}(?:{SPECIAL_TOKEN}))"
