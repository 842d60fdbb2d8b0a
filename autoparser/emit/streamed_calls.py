"""JSON call fields whose every delimiter decides from a bounded look (docs/FORMATS.md §9): a call's head, or a
window of ``CALL_WINDOW`` characters, never a whole value. Part of the emitter, beside ``tools``."""

from __future__ import annotations

import dataclasses

import regex as re

from ..analysis.model import Analysis, Tools
from .guard import _BALANCED_TOKENS, _W, _Dialect, nested_value, never_raises
from .markers import CALL_WINDOW, SPECIAL, _call_transform, _flex, cut_marker, each_branch, esc, literals, then_space, without_groups
from .tools import ARGS_BEGIN, ARGS_KEYS, END_TAG, FENCE_OPEN, FUNCTION_TAG, FUNCTION_TAG_CLOSE, NAME, NEW_LINE_TEXT, NOT_DATA, SCALAR, _call_head, _openers, _repr_args, args_keys, tool_field

_BRACKET_MARKER = re.compile(r"\[[A-Z][A-Z_]*\]")  # a bracket opener, ``[TOOL_CALLS]``


def no_end_in_window(stops: str) -> str:
    r"""A look: no call-ending marker (``stops``) right after a ``}`` or ``]`` in the next ``CALL_WINDOW`` characters,
    where a call's JSON ends; so a call longer than the window is decided by its head. A stop quoted inside a
    string (``</tool_call>`` or ``</s>`` in code) follows no bracket: it neither holds a long call back nor, where
    the call is decided once, leaves it in content. Written as a run of characters, not a repeat of a looked-ahead
    one (which made every subroutine call of a short branch save 512 iterations' state)."""
    return rf"(?![\s\S]{{0,{CALL_WINDOW - 1}}}?[}}\]]\s*(?:{stops}))" if stops else ""


def _loose(literal: str) -> str:
    """``literal`` with a space where a marker meets other text (``<tool_call>\\n``): ``_flex`` then allows any
    whitespace there, as between two markers."""
    return re.sub(r"(?<=[>\]])(?=[^\s<\[])|(?<=[^\s>\]])(?=[<\[])", " ", literal)


def _plain_json(t: Tools) -> bool:
    """Standard JSON (a dialect's calls: ``_quoted_dialect``)."""
    return not t.name_is_key and not t.shared_start and not t.arguments.string_delims and not t.arguments.unquoted_keys


def _quoted_dialect(t: Tools) -> bool:
    """A call object in standard JSON whose arguments are written in a dialect's strings (``string_delims``: a
    Python dict, wild 063's ``{"arguments": {'k': 'v'}, "name": "f"}``; HTML-escaped quotes): read by
    ``_json_whole`` (a name and arguments between markers) or ``_json_keyed`` (more keys), the region ending before
    the json parser's sentinels (``_sentinel_stop``)."""
    return (not t.name_is_key and not t.shared_start and bool(t.arguments.string_delims) and not t.arguments.unquoted_keys
            and _Dialect(t.arguments.string_delims).sound())


SENTINEL_STOP = r"(?=[\x01\x02])"  # the json parser's string_delims sentinels, which it refuses (raises) in a region


def _sentinel_stop(field: dict) -> dict:
    r"""A region read with ``string_delims`` ends before ``\x01``/``\x02``: the json parser refuses a region
    holding one of its sentinels (it raises, before ``allow_non_json`` is consulted), so the arguments end
    there and the rest of the call is content (kept, visible). A whole-value shape check before the open
    excluded them instead, holding the call back until its end and re-reading it on every delta."""
    if (field.get("content_args") or {}).get("string_delims"):
        field = {**field, "close_pattern": field["close_pattern"] + "|" + SENTINEL_STOP}
    return field


def _json_array_whole(t: Tools, start: str, end: str, ends: list[str]) -> tuple[dict, list[str]]:
    r"""A JSON array of call objects of exactly ``name`` and ``arguments`` (or ``parameters``, either spelling) after
    an opener (``<TOOLCALL>[{…}, {…}]</TOOLCALL>``): one region per object's arguments, the name a capture (as
    ``_json_whole``: nothing indexed, nothing raises). The first call opens after the opener and ``[``, a later
    one right after the previous object's ``}`` and a comma; whether it is a call is decided as in
    ``_json_whole``: within ``CALL_WINDOW`` characters, a whole object of both keys followed by ``,`` or ``]``,
    or a long call's head. A call closes at its ``}`` before ``, {"name"`` (the next call) or before ``]`` and
    the section's end (or the turn's end, or the end of the text).

    The array read as one region, checked whole before it opened, held every call back until the array
    ended and re-read it on every delta. The price: an argument holding ``}, {"name": "f", "arguments":`` splits its
    call there (the call's text is kept), the array's own ``[``/``]`` are consumed by the calls, not read, and a name
    with a JSON escape is no call."""
    if not start:  # no opener of its own (xLAM): the list is recognised by its first call's head (``_list_anywhere``)
        return _list_anywhere(t, ends)
    openers = sorted(_openers(t, start), key=len, reverse=True)
    # A list of one call may be written as the call alone after the opener (``<tool_calls>{"name": …}</tool_calls>``;
    # SGLang's JSON call parsers take an object where a list stands, ``parse_base_json``): the ``[`` is optional.
    marker = "(?:" + "|".join(_flex(_loose(o)) for o in openers) + ")"
    opener = marker + r"\s*(?:\[\s*)?"
    finals = ([_flex(_loose(end))] if end else []) + literals(ends)
    stops = "|".join(finals) if finals else ""
    dialect = _Dialect()
    # The arguments under either key, ``arguments`` or ``parameters`` (as ``_json_whole``: the family's parsers
    # read both whatever the template writes).
    # (the object JSON's tokens between balanced brackets, ``_BALANCED_TOKENS``, as ``_json_whole`` checks it)
    short = rf"(?={_BALANCED_TOKENS}\s*(?:[,\]]{'|' + stops if stops else ''}|\Z))(?={dialect.object_with(['name', ARGS_KEYS], whole=False)})"
    args_key = args_keys(t)
    long = rf"(?={_call_head(t, capture=False, args=args_key)[1]}{no_end_in_window(stops)}[\s\S]{{{CALL_WINDOW}}})"
    # As ``_json_whole``: once decided, the head is consumed (the name a capture) and the region is the
    # arguments; a short object with its arguments first has its name captured by a look past them.
    name_key, named = _call_head(t, args=args_key)
    args_first = (rf'(?=\{{\s*"{args_key}"\s*:(?&jv),\s*"{name_key}"\s*:\s*"(?P<name>{NAME})"\s*\}})'
                  rf'\{{\s*"{args_key}"\s*:\s*')
    # (the short check runs once: a call still arriving fails it on every delta)
    decide = f"(?:{long}{named}|{short}(?:{named}|{args_first}))"
    # A later call opens only after a whole object that stands in the list (after ``[`` or ``,``): a first object that
    # lost a brace stays undecided (its short check reads to the list's end), and the regex module's partial search
    # prefers a later whole match to that pending one, so a stream opened the second call and left the first in
    # content, where one-shot, seeing the whole list, read both. (Not ``\G``: in content the parser's position moves
    # with what it flushes, to wherever a pending match starts.)
    # (the look back runs once the next call's head is whole: a stream reaches it at a head once, not at every delta)
    # (the next call's whole head, or its arguments key first: an argument holding a list of objects with a name,
    # ``"users": [{"name": "a", "age": 1}, …]``, closes nothing; a bare ``{"name"`` split the call there)
    next_head = rf"(?={without_groups(named)}|\{{\s*\"{args_key}\"\s*:)"
    later = rf"(?<=\}}\s*,\s*){next_head}(?<=[\[,]\s*{nested_value()}\s*,\s*)"
    field: dict = {"open_pattern": f"(?:{opener}|{later}){decide}{dialect.define()}"}
    # The array ends at its section end, or with none written before the turn's end, the text's end, or text
    # on a new line (a raw newline never stands inside a JSON string; nor could anything but ``,``, ``}`` or
    # ``]`` continue a value). A section end may be left out: one that holds the turn's end marker
    # (HyperCLOVAX's ``]<|im_end|><|stop|>``) is never written whole, as the model stops at that marker.
    # The new line's first character may not begin the section's end or an end marker: a partial search prefers the
    # whole look to the section end still arriving (``}]\n</TOOLCALL>``), and a stream closed the list before it.
    marks = "".join(sorted({re.escape(m.strip()[0]) for m in [end, *ends] if m.strip()}))
    bare = r"(?:\s*(?=" + "|".join([*literals(ends), r"\Z"]) + rf")|(?=[ \t]*\n\s*[^\s,}}\]{marks}]))"
    tail = rf"\s*\]{bare}" if not end else rf"\s*\](?:\s*{then_space(_flex(_loose(end)))}|{bare})"
    obj_end = rf"(?:{_name_after(t)})?\}}"
    close = rf"{obj_end}\s*,\s*{next_head}|{obj_end}{tail}"
    if ends:
        close += rf"|{obj_end}\s*(?={'|'.join(literals(ends))})"
    # (a call alone: its ``}`` before the section's end, or where the text ends behind whole objects since the opener)
    if end:
        close += rf"|{obj_end}\s*{then_space(_flex(_loose(end)))}"
    close += rf"|{obj_end}\Z{whole_since(marker, near=True)}"
    field["close_pattern"] = close
    field.update({"repeats": True, "content": "json", "content_args": {"allow_non_json": True},
                  "transform": _call_transform("{name}", "{content}", None)})
    return field, []


WRAPPER = r"(?:(?:<[\w|:.\-]{1,32}>|\[[A-Z][A-Z_]{0,31}\])\s*)?"  # one markup token before a call list: ``<tool_call>``, ``[TOOL_CALLS]``
WRAPPER_END = r"(?:```|</[\w|:.\-]{1,32}>|\[/[A-Z][A-Z_]{0,31}\])"  # a fence's end, an end tag after the list


def _name_after(t: Tools) -> str:
    """The name key and its value after a call object's arguments (``, "name": "f"``), before its ``}``."""
    return rf'\s*,\s*"{re.escape(t.name_path[0])}"\s*:\s*"[^"\\]{{0,256}}"\s*'


def _list_anywhere(t: Tools, ends: list[str]) -> tuple[dict, list[str]]:
    r"""A JSON list of call objects of a name and arguments with no opener of its own (xLAM's ``[{"name": "f",
    "arguments": {…}}]``), recognised by its shape wherever the model writes it, as vLLM's xLAM parser reads it:
    at the reply's start, after text or a reasoning block the template does not know (``<think>…</think>[…]``),
    in a markdown fence, after one markup token another family writes before its calls (``[TOOL_CALLS][…]``,
    ``<tool_call>[…]</tool_call>``: consumed, with the end tag or fence's end after the list's ``]``). The first
    call opens on ``[`` and its head, name first, then ``arguments`` or ``parameters`` (a bounded look: a list that
    merely holds objects with a name is no call); a later one right after the previous object's ``}`` and a comma;
    text before and after stays content. Before, the list was checked whole before it opened, at the reply's start
    only, holding every call back until the list ended and re-reading it on every delta. The price, as bare JSON
    calls (``_bare_json_calls``): a list whose head is a call's but whose rest is malformed is a call whose
    arguments are its text; an argument holding ``}, {"name": "f", "arguments":`` (a whole head) splits its call there."""
    head = _call_head(t, args=args_keys(t))[1]
    later = r"(?<=\}\s*,\s*)"
    # The head in each branch, not after an alternation of the two: under partial matching (every delta) the regex
    # module tried the shared head from every ``[`` of a bracket run again (quadratic: 40k ``[`` took 0.3 s a search).
    field: dict = {"open_pattern": rf"(?:{NOT_DATA}{WRAPPER}{FENCE_OPEN}\[\s*{head}{ARGS_BEGIN}|{later}{head})"}
    # After the list's ``]``: a fence's end or an end tag, then anything; else the turn's end, the text's end, text on
    # a new line, or a tail on the same line with no quote in its next 20 characters (``}]"`` is inside a string).
    after = (r"(?:\s*(?=" + "|".join([*literals(ends), r"\Z"]) + rf")|{NEW_LINE_TEXT}"
             r'|(?=[ \t]*[^\s,}\]"<\[`](?:[^"]{19}|[^"\x00]{0,18}\Z)))')
    obj_end = rf"(?:{_name_after(t)})?\}}"
    # (the next call's whole head: an argument holding a list of objects with a name closes nothing)
    close = rf"{obj_end}\s*,\s*(?={without_groups(head)})|{obj_end}\s*\](?:\s*{WRAPPER_END}[ \t]*|{after})"
    if ends:
        close += rf"|{obj_end}\s*(?={'|'.join(literals(ends))})"
    field.update({"close_pattern": close, "repeats": True, "content": "json", "content_args": {"allow_non_json": True},
                  "transform": _call_transform("{name}", "{content}", None)})
    return field, []


def _head_decides(t: Tools) -> bool:
    """Whether a call opens on its head (``_json_head``): one call object per region, of exactly a name and an
    arguments key in that order, in standard JSON (a dialect's strings would need the whole value checked)."""
    return (not t.array_wrapped and not t.name_is_key and not t.shared_start and not t.id_path and not t.arguments.string_delims
            and not t.arguments.unquoted_keys and len(t.name_path) == len(t.args_path) == 1
            and t.call_keys == (t.name_path[0], t.args_path[0]))


def _name_and_args(t: Tools) -> bool:
    """A call object of exactly a name and an arguments key, in either order (wild 063 writes
    ``{"arguments": {'k': 'v'}, "name": "f"}``: the name after a value of any length)."""
    return (not t.array_wrapped and not t.id_path and len(t.name_path) == len(t.args_path) == 1
            and sorted(t.call_keys) == sorted((t.name_path[0], t.args_path[0])))


def _either_key(t: Tools) -> bool:
    """A call object ``{"name": …, "arguments"|"parameters": …}``: the two spellings of its arguments key."""
    return t.name_path == ("name",) and len(t.args_path) == 1 and t.args_path[0] in ARGS_KEYS


# The most closing braces after a call's object that still close it (``{…}}}}}</tool_call>``).
EXTRA_BRACES = 8


def whole_since(opener: str, near: bool = False, value: str = "") -> str:
    r"""A look back: everything since ``opener`` is one whole JSON value (nested at most ``VALUE_DEPTH`` deep), or
    ``value`` where given. ``near``: the opener within ``2 * CALL_WINDOW`` characters first, for a look behind ``\Z``: a
    stream's text ends at every delta, and one that ends right after a ``}`` inside a string (code: ``print({'a':
    1})``) ran the look back over the whole call each time (quadratic in a long argument). A call alone longer than
    that which ends the text keeps its object's ``}`` in its arguments' text."""
    bound = rf"(?<=(?:{opener})[\s\S]{{0,{2 * CALL_WINDOW}}})" if near else ""
    return rf"{bound}(?<=(?:{opener})\s*(?:{value or nested_value()}))"


def list_cut(opener: str) -> str:
    r"""``whole_since(near=True)`` over a list whose ``]`` has not come: ``[`` and whole JSON values (``[TOOL_CALLS][{…},
    {…}`` where the text ends: a token limit between two calls, or a list the model never closed). Each value whole,
    so a ``}`` inside the last call's arguments is never its end."""
    v = nested_value()
    return whole_since(opener, near=True, value=rf"\[\s*(?:(?:{v})\s*,\s*)*(?:{v})")


def _window(t: Tools, start: str, end: str, ends: list[str]) -> tuple[str, str, str, str]:
    """(the call's opener, its close marker, the close or a turn's end, the look that decides a short call) for
    a call object between an opener and a close marker, decided within ``CALL_WINDOW`` characters: the first
    close (or the end) within the window, right after a ``}`` (no close inside a string), where a balanced
    value ends."""
    openers = sorted(_openers(t, start), key=len, reverse=True)
    opener = "(?:" + "|".join(_flex(_loose(o)) for o in openers) + ")"
    close = _flex(_loose(end))
    stops = "|".join([close, *literals(ends)])
    first = rf"(?=[\s\S]{{0,{CALL_WINDOW}}}?\}}\s*(?:{stops}|\Z))"
    return opener, close, stops, first


def _json_whole(t: Tools, start: str, end: str, ends: list[str]) -> tuple[dict, list[str]]:
    r"""A JSON call object of a name and arguments between an opener and a close marker
    (``<tool_call>{"name": "f", "arguments": {…}}</tool_call>``: Qwen 2.5/3, Hermes, Granite 4, MiMo, InternLM2).
    Models write the arguments under either key, ``arguments`` or ``parameters``, whatever the template
    writes (SGLang's JSON call parsers read ``act.get("parameters") or act.get("arguments")`` for every such
    format; vLLM's InternLM2 parser reads both), so the region is the arguments and the name a capture: one
    transform reads both spellings, and nothing is indexed into the parsed value, so no text raises
    (arguments that do not parse come back as their text, ``allow_non_json``).

    Whether the text after the opener is a call is decided within ``CALL_WINDOW`` characters: a call whose
    object ends within them is one when it is a JSON object with a name and either key, followed by the
    close (or the turn's end, or the end of the text), and text that is not stays in content, visible; a
    call longer than the window is one when its head is ``{"name": "…", "arguments"|"parameters":`` and no
    close came. So a stream holds back at most the window and re-reads no more than it per delta, and a
    long argument streams as it arrives (checking the whole value first was quadratic). A short call's name
    is read by a lookahead inside the object, so it may stand after the arguments (``{"arguments": {…},
    "name": "f"}``); other keys with a short scalar value may stand before or after them. The price: a name
    with JSON escapes, or other keys holding containers before the arguments, is no call (content); a close
    marker inside a string argument ends the call there (its arguments come back as their text)."""
    opener, close, stops, first = _window(t, start, end, ends)
    dialect = _Dialect()
    keys = args_keys(t)
    # The object has a name and an arguments key (either spelling), found by skipping pairs as ``object_with``.
    skip = rf'(?:{dialect.skip_string}){_W}:(?:[^{{}}\[\],\"]++|{dialect.skip_string}|(?&jb))*+,{_W}'
    name = rf'(?={_W}(?:{skip})*?"name"{_W}:{_W}"(?P<name>{NAME})"{_W}[,}}])'
    shape = rf"(?={_W}\{{{name}(?={_W}(?:{skip})*?\"{keys}\"{_W}:))"
    # (closing braces a model writes after the call's object, before its close: ``{…}}}</tool_call>``, below; the
    # object JSON's tokens between balanced brackets, ``_BALANCED_TOKENS``: the grammar's subroutines cost 4x)
    short = rf"{first}(?=\s*+{_BALANCED_TOKENS}(?:\s*\}}){{0,{EXTRA_BRACES}}}\s*(?:{stops}|\Z)){shape}"
    head = rf'\{{\s*"name"\s*:\s*"(?P<name>{NAME})"\s*,\s*"{keys}"\s*:\s*'
    long = rf"(?=\s*{head}{no_end_in_window(stops)}[\s\S]{{{CALL_WINDOW}}})"
    pair = rf'"[^"\\\n]{{1,64}}"\s*:\s*(?:{SCALAR})'
    # Up to the arguments: the object's ``{`` and the keys before them (the name among them, or not).
    to_args = rf'\s*\{{\s*(?:{pair}\s*,\s*){{0,4}}?"{keys}"\s*:\s*'
    # After the arguments: the keys after them (the name, when it stands there), the object's ``}``, the close.
    tail = rf"(?:\s*,\s*{pair}){{0,4}}\s*\}}"
    shaped_open, shaped_close = _self_described(opener, close, head, tail)
    # Several calls as a JSON list between the markers (``<tool_call>[{…}, {…}]</tool_call>``; SGLang's JSON call
    # parsers read an array of call objects in every JSON format, ``parse_base_json``): each call opens on its
    # head, the first after the opener and the list's ``[``, a later one where the previous call's close left the
    # parser (``\G``); a call closes on its object's ``}`` right after its arguments, then the list's ``,`` and a
    # whole next head, or the list's ``]`` and the close marker (or the turn's end, or the text's end).
    # (one head after both: the ``\G`` branch matches only where the search starts, so no run of ``[`` retries it)
    listed = rf"(?:{opener}\s*\[\s*|\G(?<=\}}\s*,\s*)){head}"
    field: dict = {"open_pattern": f"(?P<name>)(?:{opener}(?:{long}|{short}){to_args}|{listed}|{shaped_open}){dialect.define()}"}
    # (or the turn's end, or the end of the text: engines strip the stop marker)
    finals = "|".join([*literals(ends), r"\Z"])
    # (after the list's ``]``: the close, the turn's or text's end, text on a new line, or an end tag the template does
    # not write, ``<|tool_call|>[…]<|/tool_call|>``)
    in_list = rf"\s*(?:,\s*(?={without_groups(head)})|\](?:\s*(?:{then_space(close)}|(?={finals}))|{NEW_LINE_TEXT}|{END_TAG}))"
    # Every close after the object's ``}`` right after the arguments shares that look and the keys after them, written
    # once (the pattern is compiled and scanned on every delta: its length is time): the list's next call or end,
    # the self-described call's closes, the turn's end or the text's end.
    # Closing braces after the call's object, before its close marker or the turn's end (``{…}}}</tool_call>``: Granite 4
    # writes them; mlx-lm's parsers drop them): where everything since the opener is one whole object (a look back,
    # run only after a ``}`` that follows a ``}`` or ``]``), they close the call, never a nested ``}``.
    marks = "|".join([then_space(close), *(rf"(?={e})" for e in literals(ends))])
    # (the look back only where a ``}`` follows, which has arrived: a look ahead that reaches the buffer's edge fails
    # rather than pends; also at the text's end: a partial search prefers the whole match a later ``}`` makes with the
    # text's end to a pending one here, so without it the object's ``}`` was streamed into the arguments before the
    # next arrived)
    extra = rf"(?=\s*\}}){whole_since(opener)}(?:\s*\}}){{1,{EXTRA_BRACES}}}\s*(?:{marks}|\Z)"
    after = "|".join([in_list, *shaped_close, rf"\s*(?={finals})", extra])
    field["close_pattern"] = rf"{tail}\s*{then_space(close)}|(?<=[}}\]]){tail}(?:{after})|{FUNCTION_TAG_CLOSE}"
    field.update({"repeats": True, "content": "json", "content_args": {"allow_non_json": True},
                  "transform": _call_transform("{name}", "{content}", None)})
    return field, []


def _self_described(opener: str, close: str, head: str, tail: str) -> tuple[str, list[str]]:
    r"""(an open alternative, close alternatives) for a call the model writes without the template's opener.
    A call object ``{"name": "f", "arguments": {…}}`` describes itself: llama.cpp's Hermes 2 Pro parser reads it
    bare at the reply's start, after text, or in a markdown fence, and as ``<function=f>{…}</function>`` (the
    custom-tool spelling Meta's Llama 3.1 model card documents, also ``<function name="f">``). So the call also
    opens on its head alone, name first then ``arguments`` or ``parameters`` (the shape decides, from a bounded
    look: an object that merely has a name is no call), with a fence before it; or on the function tag, whose
    region is the JSON object after it. Never inside a call the template's own opener began and has not
    closed within ``2 * CALL_WINDOW`` characters (a bounded look back, run once a head is whole): the regex
    module's partial search prefers a whole match further on to a partial one, so a call-shaped object in the
    arguments of a call still being decided would open there. Text around stays content.

    The closes: the object's ``}`` with a fence's end after it; or followed by text on a new line (a raw
    newline never stands inside a JSON string, and after a value's ``}`` only ``,``, ``}`` or ``]`` continue
    it); a function tag's ``</function>`` right after its object's ``}``."""
    inside = rf"(?<!{opener}(?:(?!{close})[\s\S]){{0,{2 * CALL_WINDOW}}}?)"
    # (a list's ``[`` before the first head is the list's: its later calls open after a ``,`` as in the list
    # between markers, and its ``]`` closes the last)
    shaped_open = rf"(?:{NOT_DATA}{FENCE_OPEN}(?:\[\s*)?{head}{ARGS_BEGIN}|{FUNCTION_TAG}){inside}"
    # (what may follow the object's ``}`` right after the arguments, and the keys after them: the caller writes
    # that look once before all of them; the function tag's close is ``FUNCTION_TAG_CLOSE``; another call's whole
    # head after it, ``{…}\n{"name": …}``, which then opens as this one did)
    shaped_close = [r"\s*```[ \t]*", NEW_LINE_TEXT, rf"\s*(?={opener})", END_TAG, rf"\s*(?={without_groups(head)})"]
    return shaped_open, shaped_close


def _json_dialect_whole(t: Tools, start: str, end: str, ends: list[str]) -> tuple[dict, list[str]]:
    r"""A call object whose arguments are written in a dialect's strings (``string_delims``: a Python dict) and
    whose name follows them (wild 063's ``{"arguments": {'k': 'v'}, "name": "f"}``), between an opener and a
    close marker: the region is the object, read whole as the message's ``function`` (``{content}``), decided
    within ``CALL_WINDOW`` characters as ``_json_whole`` decides. Not the name a capture: a name after the
    arguments would be a close's capture, which the engines' older ``chat_parsing`` drops (the call's name
    empty there); and a lookahead past dialect strings for it would have to read the dialect. The price: a
    malformed call longer than the window is a call whose ``function`` is its text (§9, through the engines),
    and a close marker inside a string argument of a long call ends it there."""
    opener, close, stops, first = _window(t, start, end, ends)
    dialect = _Dialect(t.arguments.string_delims)
    short = rf"{first}(?=\s*+(?&jb)\s*(?:{stops}|\Z))(?={_W}{dialect.object_with(['name', 'arguments'])})"
    _, head = _call_head(t, capture=False)
    if t.call_keys[0] != t.name_path[0]:  # the arguments first (wild 063): the head is their key, the name follows them
        head = rf'\{{\s*"{re.escape(t.args_path[0])}"\s*:'
    # A dialect's string closed by a delimiter escaped with a backslash (a Python repr's ``'…\'…"…'``, both quote
    # kinds in one string) is one its parser cannot read (``open(.*?)close`` ends it there): a long call whose window
    # holds one stays content, as the whole-value check left it, rather than a call whose ``function`` is text.
    escaped = "".join(rf"|\\{esc(c)}" for _, c in t.arguments.string_delims)
    long = rf"(?=\s*{head}(?:(?!{stops}{escaped})[\s\S]){{{CALL_WINDOW}}})"
    field: dict = {"open_pattern": f"{opener}(?:{long}|{short}){dialect.define()}"}
    # The object's ``}`` then the close: a close marker inside a string argument is text.
    field["close_pattern"] = rf"(?<=\}})\s*{then_space(close)}" + (rf"|(?<=\}})\s*(?={'|'.join(literals(ends))})" if ends else "")
    if t.arguments.string_delims:
        field = _sentinel_stop(_repr_args(t, {**field, "content": "json"}))
    # ``allow_non_json`` here: ``never_raises`` leaves a field whose open already checks a value alone.
    field.update({"repeats": True, "content": "json",
                  "content_args": {"allow_non_json": True, **field.get("content_args", {})},
                  "transform": {"type": "function", "function": "{content}"}})
    return field, []


def _json_head(t: Tools, start: str, end: str, ends: list[str]) -> tuple[dict, list[str]]:
    r"""A JSON call that opens on its head, ``<|function_call|>{"name": "<name>", "parameters": `` (the name a
    capture), and whose region is the arguments: committable from a bounded look (the head), and the
    arguments stream into the region as they arrive. Nothing is indexed into the parsed value (``{name}``
    and ``{content}``), so no region can make the parser raise: arguments that do not parse (cut, malformed)
    come back as their text (``allow_non_json``, added by ``never_raises``). The region closes at the call
    object's ``}`` right before the close marker, the turn's end, the next call or the end of the text, or
    (with no close marker) before text on a new line.

    As ``_json_whole``, this replaces a lookahead for a whole value that held the call back; the price: the
    name is read as written (no JSON escapes), keys in another order are no call (content), and an argument
    string holding ``}`` and the close marker ends the call there."""
    _, head = _call_head(t)
    if _either_key(t):  # the arguments under either key (``_json_whole``)
        head = head.replace(rf'\"{re.escape(t.args_path[0])}\"', rf'\"{args_keys(t)}\"')
    openers = sorted(_openers(t, start), key=len, reverse=True)
    open_pattern = "(?:" + "|".join(_flex(_loose(o)) for o in openers) + rf")\s*{head}"
    finals = literals(ends) + [r"\Z"]
    close = (rf"\}}\s*{then_space(_flex(_loose(end)))}|" if end else "") + rf"\}}\s*(?={'|'.join(finals)})"
    if not end:
        close += rf"|\}}\s*(?={'|'.join(literals(_openers(t, start)))})"  # no close marker: the next call's opener
        # Text after a call with no close marker, on a new line: a raw newline never stands inside a JSON
        # string, and after the object's ``}`` only ``,``, ``}`` or ``]`` could continue a value (nor a marker
        # that ends or opens a call there).
        marks = {m.strip()[0] for m in [*ends, *_openers(t, start)] if m.strip()}
        close += r"|\}(?=[ \t]*\n\s*[^\s,}\]" + "".join(re.escape(c) for c in sorted(marks)) + "])"
    field = {"open_pattern": open_pattern, "close_pattern": close, "repeats": True, "content": "json",
             "transform": _call_transform("{name}", "{content}", None)}
    return field, []


def _keyed_pair(key: str, name_key: str, id_key: str) -> str:
    """``"key": value`` for a call object's key that is not its arguments: the name and the id captured."""
    if key == name_key:
        value = f'"(?P<name>{NAME})"'
    elif key == id_key:
        value = r'(?:"(?P<id>[^"\\\n]{0,256})"|(?P<id>[-+.\w]{1,64}))'
    else:
        value = f"(?:{SCALAR})"
    return rf'"{re.escape(key)}"\s*:\s*{value}'


def _keyed_decides(t: Tools) -> bool:
    """Whether a call opens on a keyed head (``_json_keyed``): a call object, alone or in an array, whose name,
    id and arguments are top-level keys, in standard JSON."""
    keys = t.call_keys
    return (len(t.name_path) == len(t.args_path) == 1 and len(t.id_path) <= 1 and t.name_path[0] in keys
            and t.args_path[0] in keys and (not t.id_path or t.id_path[0] in keys) and not t.arguments.unquoted_keys)


def _json_keyed(t: Tools, start: str, end: str, ends: list[str], only_after_opener: bool = False) -> tuple[dict, list[str]]:
    r"""A JSON call object with keys beyond ``name`` and ``arguments`` (an id, a type, other spellings), alone
    after its opener or in an array of them: ``[TOOL_CALLS][{"name": "f", "arguments": {…}, "id": "a1"}]``
    (Mistral Nemo), ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {…}}]``
    (Command R7B), ``Action: ```json [{"tool_name": …, "parameters": …}] ``` `` (Command R+),
    ``<|act|>{"id": …, "type": "function", "name": …, "arguments": …}``. Each call opens on its head: the
    keys before the arguments, in any order and each optional but the name (the name and the id captures,
    another key a short scalar), up to the arguments key, or the arguments key first; the region is the
    arguments, streamed as they arrive (``{content}``, ``allow_non_json``: nothing is indexed, so nothing
    raises); it closes on the keys after the arguments (a name or an id there captured: close captures join
    the transform's scope) and the object's ``}``, followed by the next call (``, {"<a key>"``), or by the
    array's ``]`` and the section's end (or the turn's end, the text's end, a tail, a second list). A later
    call in an array opens right after the previous object's ``}`` and comma.

    The array read whole (``transform_each``), checked by a lookahead for a whole value before it opened,
    held every call back until the array ended and re-read it on every delta. The price: the name and id
    are read as written (no JSON escapes); an object with no name before its arguments nor after them is a
    call with an empty name; an argument string holding the object's end and the next call's head
    (``}}, {"name"``) ends the call there, its text kept; a malformed call is a call whose arguments are its
    text, where the whole-array check left the whole array in content.

    ``only_after_opener``: the list is another spelling beside the template's own calls (``_call_list_too``),
    so it opens only after the opener, a later call only where the previous call's close left the parser
    (``\G``), and a call closes before a later one only on that call's whole head: a list of objects inside
    the other spelling's arguments (``[{"name": "a"}, {"name": "b"}]``) closes nothing."""
    keys = list(t.call_keys)
    name_key, args_key = t.name_path[0], t.args_path[0]
    id_key = t.id_path[0] if t.id_path else ""
    # The other keys, in any order and each optional, before the arguments (the head) and after them (the close):
    # models reorder them (``{"arguments": {…}, "name": "f"}``, Mistral's parsers read both). The name, wherever
    # it stands, is a capture (the close's wins); a call with none has an empty name.
    pair = "(?:" + "|".join(_keyed_pair(k, name_key, id_key) for k in keys if k != args_key) + ")"
    others = len(keys) - 1
    # Before the arguments: keys that hold the name, or none at all (the name then follows them); an object whose
    # keys before the arguments hold no name is no call (content).
    named = rf"(?:(?:{pair}\s*,\s*){{0,{others}}}?{_keyed_pair(name_key, name_key, id_key)}\s*,\s*(?:{pair}\s*,\s*){{0,{others}}})?"
    # The arguments under either key where the object names its call ``name`` (as ``_json_whole``).
    arguments = args_keys(t) if _either_key(t) else re.escape(args_key)
    head = rf"\{{\s*{named}\"{arguments}\"\s*:\s*"
    tail = rf"(?:\s*,\s*{pair}){{0,{others}}}"
    openers = sorted(_openers(t, start), key=len, reverse=True)
    opener = "(?:" + "|".join(_flex(_loose(o)) for o in openers) + ")"
    section_end = _flex(_loose(end)) if end else ""
    turn_ends = literals(ends)
    # With no section end, the calls end before the turn's end, the text's end, or text (nothing but ``,``, ``}``
    # or ``]`` could continue a value; a stray ``</s>``, words after the array are content) with no quote in its
    # next 20 characters (``}]</s>"`` is inside a string; ``\x00`` is what transformers appends to see whether a
    # match at the buffer's edge is final: a shorter tail decides only at the text's end), or a second list.
    def ends_after(text_not: str = "", second_list: str = r"(?=\s*\[)") -> str:
        """``text_not``: more first characters no text may begin with; ``second_list``: the look for a second list."""
        return (rf"\s*(?=" + "|".join([*turn_ends, r"\Z"]) + rf")|(?=[ \t]*(?:\n\s*)?[^\s,}}\]\"{text_not}]"
                rf"(?:[^\"]{{19}}|[^\"\x00]{{0,18}}\Z))|{second_list}")

    open_ends = ends_after()
    # (beside another spelling the object ends right after its arguments' last bracket or a key after them, never
    # after a string: ``{"name": "a"}`` inside the other spelling's arguments ends no call)
    obj_end = (r"(?<=[}\]])" if only_after_opener else "") + rf"{tail}\s*\}}"
    if t.array_wrapped:
        # A list of calls that name their call ``name`` is one without its opener too (Mistral's ``[{"name": …,
        # "arguments": …}]`` after text), where no section end must close it: recognised by its first call's head,
        # the name first (``_list_anywhere``).
        anywhere = (rf"|{NOT_DATA}{FENCE_OPEN}\[\s*(?=\{{\s*\"{re.escape(name_key)}\"\s*:\s*\"{NAME}\"\s*,\s*\"{args_keys(t)}\"\s*:\s*{ARGS_BEGIN})"
                    if _either_key(t) and not end and not only_after_opener else "")
        # (a comma left out between two calls, ``}{"tool_call_id": …``: the next call's whole head decides, which no JSON
        # string holds unescaped; Ollama's Cohere parser reads both calls)
        later = r"\G(?<=\}\s*,\s*)" if only_after_opener else r"(?<=\}\s*,?\s*)"
        # (the head in each branch: shared after the alternation it was quadratic under partial matching, above)
        # A list of one call may be written as the call alone after the opener (``[TOOL_CALLS]{"name": …}``, ``Action:
        # ```json {…} ``` ``; SGLang's JSON call parsers take an object where a list stands, ``parse_base_json``; Ollama's
        # Cohere parser reads it): the list's ``[`` is optional there, not beside another spelling (whose own object
        # stands after the opener).
        bracket = r"\[\s*" if only_after_opener else r"(?:\[\s*)?"
        field: dict = {"open_pattern": "(?:" + "|".join(rf"{x}{head}" for x in (rf"{opener}\s*{bracket}", later, anywhere[1:]) if x) + ")"}
        # With no section end, a bracket opener's end tag (``[TOOL_CALLS][…][/TOOL_CALLS]``: the ``[X]…[/X]`` pairs the
        # family's own markup writes, ``[INST]…[/INST]``) right after the list is consumed with it, never content.
        # Every other ``[`` after the list decides from the characters after it (a partial search prefers a whole match
        # to a pending one at the same place: text that may begin with ``[`` would close the list before ``/`` came).
        # Each alternative holds the character that decides it (a negative look at the text's edge is satisfied).
        mirrors = {o[1:] for o in _openers(t, start) if _BRACKET_MARKER.fullmatch(o)}
        if len(mirrors) == 1 and not end:
            word = mirrors.pop()  # ``TOOL_CALLS]``: another end tag parts from it at some character
            # (no class holds ``\x00``: transformers appends it to see whether a match at the edge still grows)
            other = "|".join(re.escape(word[:i]) + "[^" + re.escape(word[i]) + r"\x00]" for i in range(len(word)))
            # (no alternative for a ``[`` cut off where the text ends: a look at ``\Z`` decides at a stream's edge, and the
            # engines' older parsers commit such a match at once; there the last call's arguments come back as their text)
            after = ends_after(r"\[", r"(?=\s*\[[^/\x00])") + rf"|(?=\s*\[/(?:{other}))"
            last = rf"\s*\](?:\s*\[/{re.escape(word)}[ \t]*|{after})"
        else:
            last = rf"\s*\]\s*{then_space(section_end)}" if end else rf"\s*\](?:{open_ends})"
        # (or the turn's end right after the object: an array never closed)
        # (the next call's head with its name: ``named`` without the ``?`` that makes it optional)
        # (a whole head, the call's own keys up to its arguments: an argument holding a list of objects with a ``name``
        # key, ``"users": [{"name": "a", "age": 1}, {"name": "b"}]``, closes nothing; a bare key closed the call there)
        next_call = without_groups(rf"\{{\s*{named[:-1] if only_after_opener else named}\"{arguments}\"\s*:")
        # (or the turn's end right after the object: an array never closed; not beside another spelling, whose
        # arguments' own ``}`` stands there)
        cut = rf"|\s*(?={'|'.join(turn_ends)})" if turn_ends and not only_after_opener else ""
        # (a call alone: its object's ``}`` also closes before the section's end, or where the text ends when everything
        # since the opener, near it, is one whole object)
        alone = "" if only_after_opener else ((rf"|\s*{then_space(section_end)}" if end else "")
                                              + rf"|\Z{whole_since(opener, near=True)}")
        # (or where the text ends before the list's ``]``, every call whole: beside another spelling too, whose
        # calls never stand in a ``[`` right after the opener)
        alone += rf"|\Z{list_cut(opener)}" if not end else ""
        close = rf"{obj_end}(?:\s*{',' if only_after_opener else ',?'}\s*(?={next_call})|{last}{cut}{alone})"
    else:
        field = {"open_pattern": rf"{opener}\s*{head}"}
        nxt = "|".join(literals(_openers(t, start)))
        marks = "".join(re.escape(m.strip()[0]) for m in sorted({*ends, *_openers(t, start)}) if m.strip())
        # The next call's opener first; text on a new line is content only when it is no marker's start.
        open_ends = rf"\s*(?={nxt})|\s*(?=" + "|".join([*turn_ends, r"\Z"]) + rf")|(?=[ \t]*\n\s*[^\s,}}\]{marks}])"
        # (a call whose close marker never comes: its object's ``}`` where only whitespace follows to the text's end,
        # when everything since the opener is that one whole object, as ``_json_whole`` reads a call left open)
        left_open = rf"|{obj_end}(?=\s*\Z){whole_since(opener, near=True)}" if not only_after_opener else ""
        close = rf"{obj_end}\s*{then_space(section_end)}{left_open}" if end else rf"{obj_end}(?:{open_ends})"
    if turn_ends and not only_after_opener:
        close += rf"|(?<=[}}\]])\s*(?={'|'.join(turn_ends)})"  # a call cut before its object's end
    # Empty defaults before the patterns' own captures (the ``regex`` module keeps a name's last capture).
    field["open_pattern"] = "(?P<name>)" + ("(?P<id>)" if id_key else "") + field["open_pattern"]
    field["close_pattern"] = close
    field.update({"repeats": True, "content": "json", "content_args": {"allow_non_json": True},
                  "transform": _call_transform("{name}", "{content}", "{id}" if id_key else None)})
    return _repr_args(t, field), []


def _nested_decides(t: Tools) -> bool:
    """Whether a call opens on a nested head (``_json_nested``): an array of call objects whose name and
    arguments sit under one wrapper key (``{"id", "type", "function": {"name", "arguments"}}``), the id (if
    any) a top-level key, in standard JSON."""
    return (t.array_wrapped and len(t.name_path) == len(t.args_path) == 2 and t.name_path[0] == t.args_path[0]
            and t.name_path[0] in t.call_keys and len(t.id_path) <= 1 and (not t.id_path or t.id_path[0] in t.call_keys)
            and not t.arguments.unquoted_keys)


def _json_nested(t: Tools, start: str, end: str, ends: list[str], reasoning_end: str) -> tuple[dict, list[str]]:
    r"""An array of call objects whose name and arguments sit under a wrapper key, as OpenAI's messages write
    them: ``[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {…}}}]`` (wild 009, bare
    at the reply's start; or after an opener). As ``_json_keyed``, each call opens on its head: the outer keys
    before the wrapper in any order, each optional (the id a capture, another key a short scalar), the
    wrapper's ``{``, then the name (a capture; optional, it may follow the arguments) up to the arguments key;
    the region is the arguments, streamed as they arrive (``{content}``, ``allow_non_json``: nothing is
    indexed, so nothing raises). It closes on the keys after the arguments (a name there captured), the
    wrapper's ``}``, the outer keys after it (an id there captured), the object's ``}``, then the next call's
    ``, {"<a key>"``, or the array's ``]`` and the section's end (with none: a fence's end, the turn's end, the
    text's end, a tail with no quote in its next 20 characters, a second list). A later call opens where
    that close left the parser (``\G``, after ``},``); an open alternative that never matches is pending from
    a ``}`` through the comma and a head, so in prose the parser never stops between them.

    Checking the whole array's shape before it opened held every call back until the array ended and re-read
    it on every delta. The price, as ``_json_keyed``: the name and id are read as written (no JSON escapes);
    an argument string holding the objects' ends and the next call's head ends the call there, its text
    kept; a malformed or cut call is a call whose arguments are its text, where the whole-array check left
    the array in content."""
    wrap, name_key, args_key = t.name_path[0], t.name_path[1], t.args_path[1]
    id_key = t.id_path[0] if t.id_path else ""
    outer = [k for k in t.call_keys if k != wrap]
    opair = "(?:" + "|".join(_keyed_pair(k, "", id_key) for k in outer) + ")" if outer else ""
    n = len(outer)
    before = rf"(?:{opair}\s*,\s*){{0,{n}}}" if outer else ""
    after = rf"(?:\s*,\s*{opair}){{0,{n}}}" if outer else ""
    name = _keyed_pair(name_key, name_key, "")
    head = (rf"\{{\s*{before}\"{re.escape(wrap)}\"\s*:\s*\{{\s*(?:{name}\s*,\s*)?\"{re.escape(args_key)}\"\s*:\s*")
    loose = rf"\{{\s*{before}\"{re.escape(wrap)}\"\s*:\s*\{{\s*(?:{name}\s*,\s*)?\"{re.escape(args_key)}\"\s*:"
    loose = without_groups(loose)
    obj_end = rf"(?:\s*,\s*{name})?\s*\}}{after}\s*\}}"
    turn_ends = literals(ends)
    if start:
        openers = sorted(_openers(t, start), key=len, reverse=True)
        first = "(?:" + "|".join(_flex(_loose(o)) for o in openers) + r")\s*\[\s*"
    else:
        starts = [r"\A"] + ([rf"(?<={esc(reasoning_end)}\s*)"] if reasoning_end else [])
        first = "(?:" + "|".join(starts) + r")\s*" + FENCE_OPEN + r"\[\s*"
    # (the next call's whole head, as ``_json_keyed``: a list of objects in the arguments closes nothing)
    nxt = rf"\s*,\s*(?={loose})"
    if end:
        last = rf"\s*\]\s*{then_space(_flex(_loose(end)))}"
    else:
        # As ``_json_keyed``'s open ends, with a markdown fence's end taken (a bare array fenced as JSON).
        last = (rf"\s*\]\s*(?:```\s*)?(?:\s*(?=" + "|".join([*turn_ends, r"\Z"])
                + r")|(?=[ \t]*(?:\n\s*)?[^\s,}\]\"`](?:[^\"]{19}|[^\"\x00]{0,18}\Z))|(?=\s*\[))")
    close = rf"{obj_end}(?:{nxt}|{last}" + (rf"|\s*(?={'|'.join(turn_ends)})" if turn_ends else "") + ")"
    if turn_ends:
        close += rf"|(?<=[}}\]])\s*(?={'|'.join(turn_ends)})"  # a call cut before its object's end
    opener = f"(?:{first}{head}|\\G(?<=\\}}\\s*,\\s*){head}|\\}}\\s*,\\s*{loose}(?!))"
    field: dict = {"open_pattern": ("(?P<id>)" if id_key else "") + "(?P<name>)" + opener, "close_pattern": close,
                   "repeats": True, "content": "json", "content_args": {"allow_non_json": True},
                   "transform": _call_transform("{name}", "{content}", "{id}" if id_key else None)}
    warnings = [] if start else ["tool calls have no marker: a call is recognised only at the very start of the reply"
                                 + (" or right after the reasoning" if reasoning_end else "")]
    return field, warnings


def _call_list_too(t: Tools) -> bool:
    """Whether a bracket opener's calls may also be written as a list of call objects (``_with_call_list``): a
    ``[X]`` opener before each call's name and JSON arguments, with no close of the call's or the section's."""
    return (t.format == "TAG_WITH_JSON" and t.arguments.kind == "json" and not t.arguments.string_delims
            and not t.arguments.unquoted_keys and not t.call_end.strip() and not t.section_end.strip()
            and not t.section_start.strip() and bool(_BRACKET_MARKER.fullmatch(t.call_start.strip())))


def _with_call_list(field: dict, t: Tools, ends: list[str]) -> dict:
    r"""The bracket family's other spelling of the same calls: ``[TOOL_CALLS][{"name": "f", "arguments": {…},
    "id": "a1"}, …]`` where the template writes ``[TOOL_CALLS]f[ARGS]{…}`` (the call object describes itself:
    a name and arguments under their keys). Built as Mistral Nemo's keyed list after the same opener
    (``_json_keyed``, only there) and joined to the field as alternatives: both spellings' regions are the
    arguments, read by the one json parser, and both name the call and its id by the same captures. Each
    spelling's closes look for what only follows its own arguments (the object's ``}`` and the list's ``,`` or
    ``]``; the next ``[TOOL_CALLS]`` or a look back to the name's opener), so neither closes the other's call."""
    listed = dataclasses.replace(
        t, format="JSON_NATIVE", family="json", call_keys=("name", "arguments", "id"), name_path=("name",),
        args_path=("arguments",), id_path=("id",), array_wrapped=True, name_is_key=False, shared_start=False,
        header_pattern="", call_separator=", ")
    keyed, _ = _json_keyed(listed, t.call_start.strip(), "", ends, only_after_opener=True)
    # (each spelling's open keeps its own empty default captures: the transform's placeholders need them in each
    # branch; and the template's own spelling stays a branch of its own, so the content's close is still bounded
    # at its opener, ``template._implicit_close``)
    return {**field, "open_pattern": f"{field['open_pattern']}|{keyed['open_pattern']}",
            "close_pattern": f"(?:{field['close_pattern']})|(?:{keyed['close_pattern']})"}


def _args_decided(field: dict | None, t: Tools, ends: list[str]) -> dict | None:
    r"""A call whose JSON arguments follow a header of markers (``<｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}``,
    ``[TOOL_CALLS]f[ARGS]{…}``, ``<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}``,
    ``<function=f>{…}</function>``) is one only when its arguments are: within ``CALL_WINDOW`` characters, a JSON
    value (``_BALANCED_TOKENS``: JSON's tokens between balanced brackets, or a scalar); past them, the header decides,
    as ``_json_whole`` decides a call object. A call cut off inside its short arguments (a token limit) or whose
    arguments are no JSON (``{invalid}``, a string missing its closing quote) stays in content, visible, as the
    families' parsers leave it (llama.cpp, SGLang's detectors, vLLM's Mistral and DeepSeek parsers, Ollama);
    before, it was a call whose ``arguments`` were its text, which no tool can run. Not for JSON call objects and
    lists with no header of markers (Llama 3, Apertus): delayed so, their open let an object inside pending
    arguments open a call first in a stream (tried, reverted). What follows the arguments is the close's business, as before. The window's stops are the
    markers that end a call (its close, the next call's opener, the section's end, the turn's end): a window
    that holds one is decided by the arguments, read at most up to where they end."""
    a = t.arguments
    if (field is None or field.get("content") != "json" or a.kind != "json" or a.string_delims or a.unquoted_keys
            or t.format not in ("TAG_WITH_JSON", "TAG_WITH_TAGGED") or "(?(DEFINE)" in field.get("open_pattern", "")
            or not t.header_pattern):
        return field
    marks = [t.call_end.strip(), t.call_start.strip(), t.section_end.strip(), *(e.strip() for e in ends)]
    stops = "|".join(_flex(_loose(m)) for m in dict.fromkeys(m for m in marks if m))
    long = rf"(?=[\s\S]{{{CALL_WINDOW}}}){no_end_in_window(stops)}"
    short = rf"(?=\s*+{_BALANCED_TOKENS})"
    out = {**field, "open_pattern": each_branch(field["open_pattern"], f"(?:{short}|{long})"),
           "content_args": {**(field.get("content_args") or {}), "allow_non_json": True}}
    # A text cut inside the call's close (a token limit inside ``</function>``, a marker several tokens long): after
    # the arguments' ``}`` or ``]``, what arrived of the close ends the call where the text ends (a stream holds it,
    # as any match at its edge), so the arguments are read without it.
    ce = t.call_end.strip()
    if ce and "close_pattern" in out and not SPECIAL.fullmatch(ce):
        out["close_pattern"] += rf"|(?<=[}}\]])\s*(?:{cut_marker(ce)})\Z"
    return out


def streamed_tool_field(a: Analysis) -> tuple[dict | None, list[str]]:
    """``tools.tool_field``, with the JSON call formats this module bounds built here (docs/FORMATS.md §9)."""
    t = a.tools
    if _call_list_too(t):
        field, w = tool_field(a)
        field = _args_decided(field, t, list(a.turn.end_markers))
        return (_with_call_list(field, t, list(a.turn.end_markers)) if field else field), w
    if t.format != "JSON_NATIVE" or t.family in ("unknown", "nameless") or not (_plain_json(t) or _quoted_dialect(t)):
        field, w = tool_field(a)
        return _args_decided(field, t, list(a.turn.end_markers)), w
    start, end = t.call_start.strip(), t.call_end.strip()
    if t.content_opener:  # the content with the calls comes first; the calls open after it
        start = start[len(t.content_opener):].strip()
    ends = list(a.turn.end_markers)
    warnings = [f"not covered: {u}" for u in t.uncovered]
    if not _plain_json(t):  # a dialect's strings (a Python dict): one call object per opener, its keys in JSON
        if start and end and _name_and_args(t):
            # The name after the arguments: a keyed call would capture it in its close, which the engines'
            # older chat_parsing drops (the call's name empty); the object read whole keeps it.
            field, w = _json_dialect_whole(t, start, end, ends)
        elif start and _keyed_decides(t):
            field, w = _sentinel_stop(_json_keyed(t, start, end, ends)[0]), []
        else:
            return tool_field(a)
    elif t.array_wrapped and t.call_keys == ("name", "arguments") and t.name_path == ("name",) and t.args_path == ("arguments",):
        field, w = _json_array_whole(t, start, end, ends)
    elif start and _head_decides(t):
        field, w = _json_whole(t, start, end, ends) if end and _either_key(t) else _json_head(t, start, end, ends)
    elif start and _keyed_decides(t):
        field, w = _json_keyed(t, start, end, ends)
    elif _nested_decides(t):
        field, w = _json_nested(t, start, end, ends, a.reasoning.end if a.reasoning.mode != "NONE" else "")
    else:
        return tool_field(a)
    return never_raises(field), warnings + w
