"""The ``tool_calls`` field: one builder per tool format, JSON calls here, tagged calls in ``tagged_calls``, pythonic
ones in ``pythonic``. Part of the emitter; the regex text of markers is in ``markers``, the never-raise
construction every field goes through in ``guard``."""

from __future__ import annotations

import regex as re

from ..analysis.model import Analysis, Tools
from ..analysis.diff import MARKER, markers
from ..analysis.tagged import ID as ID_SLOT
from .guard import closer_left_out, nested_value, never_raises, value_ends_text
from .markers import ARGS_KEYS, CALL_WINDOW, NAME, OBJECT_BEGIN, SPECIAL, SPECIAL_TOKEN, _call_transform, _flex, closing_marker, esc, literals, then_space, without_groups
from .pythonic import _pythonic
from .tagged_calls import _tagged


def one(values: list[str]) -> str | list[str]:
    """A literal list of one is written as the literal itself."""
    return values[0] if len(values) == 1 else values


def _openers(t: Tools, start: str) -> list[str]:
    """The call's opener, also with the non-whitespace lead written before every call but the first; and the
    other spellings of the opener a workaround names (``call_start_variants``)."""
    starts = [start, *(v.strip() for v in t.call_start_variants if v.strip() and v.strip() != start)] if start else [start]
    return [t.call_lead + s for s in starts] + starts if t.call_lead else starts


def _json_native(t: Tools, ends: list[str], reasoning_end: str = "") -> tuple[dict, list[str]]:
    warnings: list[str] = []
    start, end = t.call_start.strip(), t.call_end.strip()
    if t.content_opener:  # the content with the calls comes first; the calls open after it
        start = start[len(t.content_opener) :].strip()
    if t.name_is_key:
        sec = _flex(start)
        close_tail = _flex(end)
        # The list's section end may be left out where the reply ends after the list (Apertus' parsers read
        # ``<|tools_prefix|>[{…}]`` with no ``<|tools_suffix|>``), as for any JSON call list (§9).
        finals = "|".join([*literals(ends), r"\Z"])
        # A list of one call may be written as the call alone, between the section's markers (mlx-lm's Apertus
        # parser reads ``<|tools_prefix|>{"f": {}}<|tools_suffix|>``): the list's brackets are optional there.
        bracket, alone = (r"\[?", rf"|\s*{close_tail}\s*") if sec and close_tail else (r"\[", "")
        field = {
            # A later call opens only where the previous one's close left the parser (``\G``, before its comma), and
            # every call's value is its arguments object (or ``null``, none): ``, {"b": 2}`` in an answer's JSON opened
            # a call ``b``.
            # (In prose the parser never resumes between a ``}`` and its comma: the last alternative, which never matches,
            # is pending from the ``}`` until the key's colon, as ``pythonic`` holds from a call's ``)``.)
            "open_pattern": rf"(?:{sec}\s*{bracket}\s*|\G,\s*)\{{\s*\"(?P<name>[^\"]+)\"\s*:\s*(?=\{{|null\b)|\}}\s*,\s*\{{\s*\"[^\"]*\"\s*:\s*(?!)",
            # The next call is ``, {"name": {`` : an object inside the arguments rarely looks like that.
            "close_pattern": rf"\}}\s*(?:\]\s*{close_tail}\s*|\]\s*(?={finals}){alone}|(?=,\s*\{{\s*\"[^\"]+\"\s*:\s*(?:\{{|null\b)))",
            "repeats": True,
            "content": "json",
            "transform": _call_transform("{name}", "{content}", None),
        }
        warnings.append("function name is the JSON key: calls are split where '}, {\"key\": {' follows, which an argument value shaped like a call can also trigger")
        return field, warnings
    prefix = "" if t.array_wrapped else "content."
    dotted = lambda path: "{" + prefix + ".".join(path) + "}"  # noqa: E731
    transform = _call_transform(dotted(t.name_path), dotted(t.args_path), dotted(t.id_path) if t.id_path else None)
    if t.shared_start and not start:
        return _bare_json_run(t, ends, reasoning_end)
    if not start and not t.shared_start and not t.array_wrapped and _any_args_key(t):
        return _bare_json_calls(t, reasoning_end, ends)
    if t.shared_start:
        return _json_run(t, start, ends)
    field: dict = {}
    key = re.escape(t.first_key)
    obj = rf"\{{\s*\"{key}\""  # a call object's start
    if start and any(c.isspace() for c in start):
        # Whitespace inside the opener (``Action:\n```json``) is any whitespace or none, as between markers.
        field["open_pattern"] = "|".join(_flex(o) for o in sorted(_openers(t, start), key=len, reverse=True))
    elif start:
        field["open"] = one(_openers(t, start))
    else:
        # No marker of its own: the call stands at the start of the reply, or right after the reasoning.
        starts = [r"\A"] + ([rf"(?<={esc(reasoning_end)}\s*)"] if reasoning_end else [])
        first = "(?:" + "|".join(starts) + ")" if len(starts) > 1 else starts[0]
        # A lead the model may write before such a call (``call_lead``: set by a workaround, e.g. Llama 3.1's
        # ``<|python_tag|>``, which its template writes only before built-in tool calls) is taken by the open.
        lead = rf"(?:{esc(t.call_lead)}\s*)?" if t.call_lead else ""
        # Models wrap a bare JSON call in a markdown fence (```` ```json ````), as they do any JSON; the
        # families' parsers read it (vLLM's xLAM parser): the open takes the fence, the close its end.
        # Only at the reply's start, as the bare call: after content, transformers 5.23 streamed would close
        # the call before the fence's end arrives, and that end, reopening content, would replace the text
        # before the call.
        shape = rf"(?={obj})" if not t.array_wrapped else rf"(?=\[\s*{obj})"
        field["open_pattern"] = first + r"\s*" + lead + FENCE_OPEN + shape
        warnings.append("tool calls have no marker: a call is recognised only at the very start of the reply" + (" or right after the reasoning" if reasoning_end else ""))
    closes = [end] if end else ends + (["```"] if not start else [])
    if closes:
        field["close_pattern"] = then_space(*literals(closes))
    if not end and start and not t.array_wrapped:
        # No close marker: a call ends where the next one's opener begins.
        nxt = f"(?={'|'.join(literals(_openers(t, start)))})"
        field["close_pattern"] = "|".join([nxt] + ([field["close_pattern"]] if closes else []))
    if not t.array_wrapped:
        field["repeats"] = True
    field["content"] = "json"
    if t.array_wrapped:
        field["transform_each"] = True
    field["transform"] = transform
    return field, warnings  # made safe by ``tool_field`` (``never_raises``), after a dialect's delimiters are known


# A markdown fence before a bare JSON call, then an element the model wraps the call object in where the template
# writes none (``<tools>``, ``<tool>``, ``<response>``, ``<function_call>``, a fenced ```` ```xml ````): the object
# describes itself, so the tag around it is the call's markup, not text (llama.cpp's Hermes 2 Pro parser drops
# these wrappers). A tag name holds no ``=`` or space, so ``<function=f>``/``<function name="f">`` are none of them
# (``FUNCTION_TAG``: there the name is the call's own). Likewise a special token the template does not write there
# (``<|tool_call|>[{…}]``, Granite 3's marker, written to Granite 4's ``<tool_call>`` template): the object decides.
FENCE_OPEN = rf"(?:```(?:json|xml)?[ \t]*\n?\s*)?(?:(?:<[A-Za-z][\w:.\-]{{0,64}}>|{SPECIAL_TOKEN})\s*)?"

# A call's shape that stands in data is data. A call-shaped object that is a member's value in other JSON (``{"data":
# {"name": "f", "arguments": {…}}}``, ``"items": [{"name": …}]``, OpenAI's ``{"type": "function", "function": {"name": …}}``)
# is that JSON's; one right after a backtick is inline code (``write `{"name": …}` to call it``; a fence is three).
# Where a call opens on its shape alone (after text, in a fence), a JSON key's ``":`` right before the head (or before
# a list's ``[`` there) or a single backtick opens nothing, and the whole stays content, as vLLM's and SGLang's JSON call
# parsers leave it. Before, a call opened inside, its arguments ran through the outer ``}`` as their text, and the text
# before it was cut at the key.
NOT_DATA = r'(?<!"\s{0,64}:\s{0,64}(?:\[\s{0,64})?)(?<!(?<!`)`)'

# A JSON call written as a function tag around its arguments: ``<function=f>{…}</function>`` (the custom-tool spelling
# Meta's Llama 3.1 model card documents), ``<function name="f">{…}</function>`` (llama.cpp's Hermes 2 Pro parser reads
# both). The region is the object after the tag; the close is the end tag right after that object's last bracket.
FUNCTION_TAG = r'<function(?:=|\s+name=")(?P<name>[\w.\-/:]{1,256})"?>\s*(?=\{)'
FUNCTION_TAG_CLOSE = r"(?<=[}\]])\s*</function>\s*"
# Text on a new line after a call's ``}`` or list's ``]``: a raw newline never stands inside a JSON string, and only
# ``,``, ``}`` or ``]`` continue a value. Decided by the line's first character, which may not begin a closer another
# alternative consumes (an end tag, a fence's end, ``[/TOOL_CALLS]``): transformers before 5.24 commits a match that
# does not end at the buffer's edge at once, so a look that waits for more text (``\Z`` or 20 characters) would close
# the call before ``</tool_call>`` arrives, and the regex module's partial search prefers a whole match to a partial
# one at the same place. A line that starts with ``<``, ``[`` or a backtick after such a call is no close (the text's
# end or a closer ends it); nor one that starts with ``{`` (the next call of a run, which another close takes).
NEW_LINE_TEXT = r"(?=[ \t]*\n\s*[^\s,{}\]<\[`])"
# Text on the same line right after a value that ends a call with no close of its own: a word glued to it
# (``{"a": 1}some text``) or a sentence after a space (``{"a": 1} Done.``), as bare calls' text is. Inside a string
# either makes the look back over the arguments run, so only these two shapes, rare inside arguments (code writes
# ``} else``, ``});``), try it.
SAME_LINE_TEXT = r"(?=[A-Za-z]|[ \t]+[A-Z])"


# A special token right after a call's last ``}`` where the template writes none (``<|eom_id|>``, the end of a
# message with calls that Llama 3.2's template never writes, kept by an engine that keeps special tokens; another
# family's end of turn): no JSON value goes on with ``<|``, so the call ends there and the token is text after it,
# where before the arguments ran on through it as their text. Not a token the template writes before every call
# (``<|python_tag|>``): there the separator's alternative reads the next call.
def token_after(lead: str = "") -> str:
    not_lead = rf"(?!{esc(lead.strip())})" if lead.strip() and SPECIAL.fullmatch(lead.strip()) else ""
    return rf"(?=\s*{not_lead}(?:{SPECIAL_TOKEN}))"


# A whole end tag after a call object's ``}`` (``</tools>``, ``</tool_call>`` around a bare call where the template writes
# no such wrapper): the wrapper's close, consumed with a fence's end after it (``FENCE_OPEN``). Only where the tag ends
# its line or the text, or stands before a special token: a raw newline never stands inside a JSON string, so
# ``"<div>{{name}}</div>\n"`` in a string argument (a Vue file a coding agent writes) is no close, where a tag alone
# was (the call split inside its string). Each alternative decides on characters that arrived, or ends at the text's
# end: the engines' vendored parser (transformers before 5.24) commits at once a match that does not end at the
# buffer's edge, so a look that waited for a line's end with no quote on it would close inside a string still
# arriving there. A stream waits for the next line's first character (a fence's end there is the wrapper's). Not
# ``</function>``: a function tag's object is the arguments themselves (``FUNCTION_TAG``), whose last ``}`` is no call
# object's. The template's own close, earlier in the alternation at the same place, wins. A closing special token
# (``<|/tool_call|>``, the close of a token the model opened the call with, ``FENCE_OPEN``) is such an end tag too.
# The next call's wrapper may follow on the same line (``</tool_call><tool_call>{"name": …``): an opening tag then an
# object's first key, whose quote no JSON string holds unescaped, so no string argument closes there.
END_TAG = (r"\s*(?:</(?!function>)[A-Za-z][\w:.\-]{0,64}>|<\|/[^<>|\s]{1,64}\|>)"
           rf"(?:\s*```[ \t]*(?=\s*(?:\n|\Z|{SPECIAL_TOKEN}))|[ \t]*(?=\n\s*(?:[^\s`]|`(?:[^`]|`[^`])))|\s*\Z"
           rf"|(?=[ \t]*(?:{SPECIAL_TOKEN}))|[ \t]*(?=<[A-Za-z][\w:.\-]{{0,64}}>\s*(?:\[\s*)?\{{\s*\"))")


def _call_head(t: Tools, capture: bool = True, args: str | None = None) -> tuple[str, str]:
    """(the name key, escaped; the head of a call object up to its arguments, ``{"name": "<name>", "arguments": ``,
    the name a capture, or with ``capture`` off a plain look that decides whether a head is there). ``args``: the
    arguments key as a pattern (``args_keys``: either spelling), instead of the template's own."""
    name_key, args_key = re.escape(t.name_path[0]), args or re.escape(t.args_path[0])
    name = f"(?P<name>{NAME})" if capture else NAME
    return name_key, rf"\{{\s*\"{name_key}\"\s*:\s*\"{name}\"\s*,\s*\"{args_key}\"\s*:\s*"


def args_keys(t: Tools) -> str:
    """The call object's arguments key, as an alternation with its other spelling (``arguments``|``parameters``):
    models write either whatever the template writes (the family's parsers read both)."""
    return "(?:" + "|".join(re.escape(k) for k in dict.fromkeys([t.args_path[0], *ARGS_KEYS])) + ")"


SCALAR = r'"(?:[^"\\\n]|\\.){0,256}"|[-+.\w]{1,64}'  # a key's value that is no container: a short string, number or word
# Where a call's arguments begin, as JSON begins them: an object's first key (a double-quoted string) or its end,
# a list, or a string that encodes an object or a list (OpenAI's JSON-encoded arguments, ``"{\"city\": …}"``) or is
# empty. A bounded look at a few characters: ``{invalid json}``, ``{'k': 'v'}``, ``{k: v}`` after a bare call's head are
# no call (vLLM's and SGLang's Llama 3 JSON parsers leave them in content), where the head alone made a call whose
# arguments were that text; nor is a string that encodes neither (``{"name": "Bob", "arguments": "none"}`` in an
# answer, which came back as a call ``Bob`` whose arguments were ``"none"}``).
ARGS_BEGIN = rf'(?={OBJECT_BEGIN}|\[|"\s{{0,16}}[{{\[]|"")'


def _json_run(t: Tools, start: str, ends: list[str]) -> tuple[dict, list[str]]:
    r"""Calls written back to back after one opener (``<|python_start|>{"name": …, "parameters": {…}}{…}``).
    A call region cannot end at the ``}`` that closes its object and begin the next at the ``{`` after it:
    the next region would see that same boundary at its own start. So each call opens on its object's
    head up to the arguments, ``{"name": "<name>", "parameters": `` (after the opener, or right after the
    previous call), its body is the arguments, and it closes on the object's ``}`` followed by the next
    head, the opener's end marker or the end of the turn."""
    # (the arguments under either key where the object is just a name and its arguments: models write both)
    name_key, head = _call_head(t, args=args_keys(t) if _name_and_args(t) else None)
    sep = (_flex(t.call_separator) if t.call_separator.strip() else "") + r"\s*"
    opener = "|".join(literals(_openers(t, start)))
    end = t.call_end.strip()
    # The run's closer (``</tool_calls>`` after the last call, MiniMax-M1) is the calls', consumed with them;
    # without one the call ends before the turn's end.
    last = rf"\}}\s*{_flex(end)}\s*" if end else r"\}\s*(?=" + "|".join([esc(e) for e in ends] + [r"\Z"]) + ")"
    field = {
        "open_pattern": rf"(?:(?:{opener})\s*|(?<=\}}{sep})){head}",
        "close_pattern": rf"\}}(?={sep}\{{\s*\"{name_key}\"\s*:)|" + last,
        "repeats": True,
        "content": "json",
        "transform": _call_transform("{name}", "{content}", None),
    }
    warnings = [f"calls share one opener; each is read as {{\"{t.name_path[0]}\": …, \"{t.args_path[0]}\": …}} in that key order"]
    if "," in t.call_separator:
        warnings.append(f"calls are split where '}}{t.call_separator}{{\"{t.name_path[0]}\":' follows, which an argument array of objects can also hold")
    return field, warnings


def _name_and_args(t: Tools) -> bool:
    """A call object of just ``{"name": …, "parameters"|"arguments": …}``, name first and no id: models write the
    arguments under either key whatever the template writes (vLLM's Llama 3 JSON and phi-4-mini parsers read both),
    however the arguments themselves are spelt."""
    return (t.name_path == ("name",) and t.first_key == "name" and len(t.args_path) == 1 and t.args_path[0] in ARGS_KEYS
            and not t.id_path and not t.name_is_key)


def _any_args_key(t: Tools) -> bool:
    """A bare call object written ``{"name": …, "parameters"|"arguments": …}``: name first, no id, no dialect."""
    return _name_and_args(t) and not t.arguments.string_delims and not t.arguments.unquoted_keys


def _bare_json_calls(t: Tools, reasoning_end: str = "", ends: list[str] | None = None) -> tuple[dict, list[str]]:
    r"""A bare JSON call object with no marker (``{"name": "f", "parameters": {…}}``), read as the family's
    parsers read it (vLLM's and SGLang's Llama 3 JSON parsers): the arguments under either key,
    ``parameters`` or ``arguments`` (the template writes one; models write both), and several calls one
    after another separated by ``;`` or whitespace. The transform can name only one key, so each call
    opens on its object's head up to the arguments (``{"name": "<name>", "parameters": ``), its body is the
    arguments, and it closes on the object's ``}`` right after the arguments' ``}``/``]``, followed by the next
    call (the separator taken), the turn's end, the end of the text, a fence's end, or text (docs/FORMATS.md
    §9: every decision from a bounded look). The first call stands at the reply's start (or
    after the reasoning, or after a markdown fence); a later one where the previous call's close left the
    parser (``\G``), and prose never stops between ``}``, a separator and a head (the last open alternative,
    which never matches, is pending there until the head is whole or fails).

    Checking the whole object balanced before it opened held a call back whole and re-read it on every
    delta. The price: a call cut off before its end is a call whose arguments are its text (not content);
    text after a call on the same line is content only when it starts with a capital letter (``} Done.``;
    code in a string argument writes ``]})`` or ``}} else``, which must not end the call), otherwise it is
    the arguments' text; an argument string holding ``}}``, a space and a capital ends the call there, the
    rest of its text kept in content. A raw new line is never inside a JSON string: text on a new line
    that no JSON value continues with ends the call."""
    name_key = re.escape(t.name_path[0])
    keys = args_keys(t)
    # Other keys with a short scalar value may come before the name (``{"type": "function", "name": …}``, the
    # call Llama 3.1's model card shows; vLLM's Llama 3 JSON parser reads the name and arguments whatever else
    # the object holds).
    other = rf"(?:\"(?!{name_key}\"|{keys}\")[^\"\\\n]{{1,64}}\"\s*:\s*(?:{SCALAR})\s*,\s*){{0,3}}"
    # (the arguments begin as JSON does, ``ARGS_BEGIN``: ``{invalid json}`` after a call's head stays content)
    head = rf"\{{\s*{other}\"{name_key}\"\s*:\s*\"(?P<name>{NAME})\"\s*,\s*\"{keys}\"\s*:\s*{ARGS_BEGIN}"
    loose_head = rf"\{{\s*{other}\"{name_key}\"\s*:\s*\"{NAME}\"\s*,\s*\"{keys}\"\s*:"
    # between calls: ``;``, whitespace, or the lead a model writes before every call (``<|python_tag|>``); or ``,``
    # in a JSON list of them
    sep = r"\s*(?:[;,]|" + esc(t.call_lead) + r")?\s*" if t.call_lead else r"\s*[;,]?\s*"
    # Several calls as a JSON list of call objects (``[{…}, {…}]``; SGLang reads any JSON call format's array,
    # ``parse_base_json``): the ``[`` before the first head is the call's, and the ``]`` after the last object.
    arr, arr_end = r"(?:\[\s*)?", r"(?:\s*\])?"
    starts = [r"\A"] + ([rf"(?<={esc(reasoning_end)})"] if reasoning_end else [])
    first = ("(?:" + "|".join(starts) + ")" if len(starts) > 1 else starts[0]) + r"\s*"
    lead = rf"(?:{esc(t.call_lead)}\s*)?" if t.call_lead else ""
    # The object's ``}`` stands right after the arguments' last bracket, or after arguments written as one JSON string
    # (``"parameters": "{\"city\": \"Paris\"}"``, JSON-encoded), which then come back as that string's text (a look
    # back over at most ``CALL_WINDOW`` characters of it); before, such a call never closed and its arguments were
    # the rest of the reply.
    obj_end = rf'(?:(?<=[}}\]])|(?<="(?<="{keys}"\s*:\s*"(?:[^"\\\n]|\\.){{0,{CALL_WINDOW}}}")))\s*\}}'
    # Text after a call is what no JSON value, separator, lead or fence starts with: while one of those is
    # arriving the close stays pending (a stream cut inside the lead or a fence's end waits for the rest).
    lead_first = re.escape(t.call_lead[0]) if t.call_lead else ""
    finals = "|".join([*literals(ends or []), r"\Z"])
    # A lead that is a special token (``<|python_tag|>``) marks a call wherever it stands: after text too
    # (SGLang's Llama 3.2 parser reads ``Let me check. <|python_tag|>{…}``), as any marker-opened call.
    anywhere = rf"|{esc(t.call_lead)}\s*{arr}{head}" if t.call_lead and SPECIAL.fullmatch(t.call_lead.strip()) else ""
    # The call object describes itself: after text too, or in a fence there, or as a function tag around its
    # arguments (``<function=f>{…}</function>``, Llama 3.1's documented custom-tool spelling), the head decides.
    shaped = rf"|{NOT_DATA}{FENCE_OPEN}{arr}{head}|{FUNCTION_TAG}"
    field = {
        "open_pattern": rf"(?:{first}{lead}{FENCE_OPEN}{arr}{head}|\G(?<=\}}{sep}){head}{anywhere}{shaped}|\}}{sep}{loose_head}(?!))",
        "close_pattern": (rf"{obj_end}{sep}(?={loose_head})|{obj_end}{arr_end}\s*(?:```\s*)?(?={finals})"
                          rf"|{obj_end}{arr_end}[ \t]*(?:```[ \t]*)?(?=\n\s*[^\s,}}\]{{\"`;<{lead_first}])|{obj_end}{arr_end}(?=[ \t]+[A-Z])"
                          rf"|{obj_end}{arr_end}\s*(?:```\s*)?{token_after(t.call_lead)}"
                          # (a fence's end after the call, on its own line, then text: the fence is the call's)
                          rf"|{obj_end}{arr_end}\s*```[ \t]*"
                          # (a whole end tag after the object: a wrapper the template does not write, ``</tool_call>``)
                          rf"|{obj_end}{arr_end}{END_TAG}"
                          rf"|{FUNCTION_TAG_CLOSE}"),
        "repeats": True,
        "content": "json",
        "content_args": {"allow_non_json": True},
        "transform": _call_transform("{name}", "{content}", None),
    }
    other = " or ".join(repr(k) for k in ARGS_KEYS if k != t.args_path[0])
    warnings = [f"tool calls have no marker: calls {{\"name\": …, \"{t.args_path[0]}\": …}} (or {other}) are recognised by that head wherever"
                " they stand, one after another separated by ';' or whitespace"]
    return field, warnings


def _bare_json_run(t: Tools, ends: list[str], reasoning_end: str = "") -> tuple[dict, list[str]]:
    r"""Calls with no marker written one after another with a separator (``{…};{…}``, one per line):
    as ``_json_run``, each call opens on its object's head, the first at the very start of the reply
    (or right after the reasoning), a later one only where the previous call's close left the parser
    (``\G``, after the object and the separator the close consumed), so a JSON object in prose stays
    content; as in ``_bare_json_calls``, an open alternative that never matches is pending from a ``}``
    through a separator and a head, so the parser never stops there in prose. A lookbehind to the reply's
    start over every earlier call decided the same, re-reading the run for each call (quadratic).

    A lead the model writes before the run (``call_lead``, set by a workaround: phi-4-mini's ``functools[``,
    which its template asks for in the system prompt and never renders) is optional before the first call;
    a lead that opens a JSON list is closed by the list's ``]`` after the last call."""
    # (the arguments under either key where the object is just a name and its arguments: models write both)
    keys = args_keys(t) if _name_and_args(t) else None
    name_key, head = _call_head(t, args=keys)
    loose = _call_head(t, capture=False, args=keys)[1]
    raw = t.call_separator
    # Calls the template glues (``{…}{…}``) a model writes glued or one per line.
    sep = rf"\s*{_flex(raw.strip())}\s*" if raw.strip() else (r"\s+" if raw else r"\s*")
    starts = [r"\A"] + ([rf"(?<={esc(reasoning_end)})"] if reasoning_end else [])
    lead = rf"(?:{esc(t.call_lead.strip())}\s*)?" if t.call_lead.strip() else ""
    if t.call_lead.strip().endswith("[") and t.call_lead.strip() != "[":
        # A lead that opens a JSON list (``functools[``) is a word and the list's ``[``: written with a space between
        # them (``functools [``), or the list alone (``[{…}]``, as a JSON call list is written anywhere), the ``[`` is
        # still the calls', as its ``]`` is (before, it stayed in content while the close took the ``]``).
        lead = rf"(?:(?:{esc(t.call_lead.strip()[:-1].strip())})?\s*\[\s*)?"
    first = ("(?:" + "|".join(starts) + r")\s*" if len(starts) > 1 else r"\A\s*") + lead
    list_end = r"(?:\]\s*)?" if t.call_lead.strip().endswith("[") else ""
    finals = [esc(e) for e in ends] + [r"\Z"]
    field = {
        # (and, the call object describing itself, its head wherever it stands: after text too)
        # (the lead too, after text: ``Sure. functools[{…}]``, whose ``]`` the last call's close takes)
        "open_pattern": rf"(?:{first}|\G(?<=\}}{sep})){head}|\}}{sep}{loose}(?!)|{NOT_DATA}{lead}{head}{ARGS_BEGIN}",
        # (a call after text may have text after it too: on a new line, or a capital after a space, as bare calls)
        "close_pattern": (rf"\}}{sep}(?=\{{\s*\"{name_key}\"\s*:)|\}}\s*{list_end}(?=" + "|".join(finals) + ")"
                          + rf"|(?<=[}}\]])\s*\}}\s*{list_end}(?:{NEW_LINE_TEXT}|(?=[ \t]+[A-Z])|{token_after(t.call_lead)})"),
        "repeats": True,
        "content": "json",
        "transform": _call_transform("{name}", "{content}", None),
    }
    warnings = [f"tool calls have no marker: a run of calls {{\"{t.name_path[0]}\": …, \"{t.args_path[0]}\": …}} is recognised by that head wherever it stands"]
    return field, warnings


def _call_again_after_arguments(t: Tools) -> tuple[str, str] | None:
    r"""A later call written right after the previous call's JSON arguments without the opener the template writes
    before each call, as its name and the marker after the name: Mistral's ``[TOOL_CALLS]a[ARGS]{…}b[ARGS]{…}``
    (mlx-lm's Mistral parser reads both calls). (an open alternative, a close alternative) where each call is an
    opener marker, the name, then a marker before JSON arguments, with no close of the call's or a section's:
    the call closes, zero-width, after a ``}`` that a name, that marker and ``{`` follow and that ends a whole JSON
    value written since the marker (so a ``}b[ARGS]{`` inside a string closes nothing), and the next opens on the
    name there (a lookbehind to the ``}``). Before, the second call was read into the first one's arguments,
    which came back as text."""
    opener, suffix = t.call_start.strip(), t.name_suffix.strip()
    marker = closing_marker(suffix)
    # An id between the name and that marker (``b[CALL_ID]id[ARGS]{…}``, Mistral Small 3.2) may come or not.
    head, _, tail = suffix[: len(suffix) - len(marker)].partition(ID_SLOT)
    ident = rf"(?:{esc(head)}(?P<id>[^\s<>\[\]]+?))?\s*" if head and not tail.strip() and MARKER.fullmatch(head.strip()) else ""
    if (t.arguments.kind != "json" or t.section_start.strip() or t.section_end.strip() or t.call_end.strip() or t.call_separator.strip()
            or not MARKER.fullmatch(opener) or not marker or (suffix != marker and not ident)):
        return None
    name = r"[\w.\-/]+"
    after = rf"(?=\s*{name}\s*{ident}{esc(marker)}\s*\{{)"
    # (the id group always takes part, empty where no id is written: a transform's ``{id}`` must be defined)
    return (rf"{'(?P<id>)' if ident else ''}(?<=[}}])\s*(?P<name>{name})\s*{ident}{esc(marker)}(?=\s*\{{)",
            rf"(?<=[}}]){without_groups(after)}(?<={esc(marker)}\s*{nested_value()})")


def dropped_section(t: Tools) -> str | None:
    """For calls no field can read (``Tools.family == "nameless"``): a pattern for their whole section,
    which the content's close consumes so the calls neither spill into content nor overwrite it."""
    if t.family != "nameless" or not t.section_start:
        return None
    return esc(t.section_start) + r"[\s\S]*?(?:" + (esc(t.section_end) + r"\s*|" if t.section_end else "") + r"\Z)"


def _repr_args(t: Tools, field: dict) -> dict:
    """JSON call objects whose arguments are a Python dict (``family == "json-repr-args"``): the json
    parser reads its single-quoted strings as ``string_delims``."""
    if t.arguments.string_delims and field.get("content") == "json":
        field = {**field, "content_args": {**field.get("content_args", {}), "string_delims": [list(p) for p in t.arguments.string_delims]}}
        order = ["open", "open_pattern", "close", "close_pattern", "repeats", "content", "content_args", "transform_each", "transform"]
        field = {k: field[k] for k in order if k in field} | {k: v for k, v in field.items() if k not in order}
    return field


def _separated_in_section(t: Tools) -> bool:
    """Named calls with JSON arguments inside one section, with no per-call marker, separated by text
    (``<tool_call>f{…};g{…}</tool_call>``)."""
    return (t.format == "TAG_WITH_JSON" and t.arguments.kind == "json" and not t.arguments.string_delims and not t.arguments.unquoted_keys
            and bool(t.section_start.strip()) and not t.call_start.strip() and not t.call_end.strip() and bool(t.call_separator.strip())
            and not t.id_in_header and not t.index_in_header)


def _tagged_separated(t: Tools, ends: list[str]) -> tuple[dict, list[str]]:
    r"""``<tool_call>f{…};g{…}</tool_call>``: each call is ``name`` + its JSON object. A call closes
    (zero-width) after its object's ``}`` where the separator and the next name follow, or at the
    section end; a later call opens on the separator only inside an open section (a lookbehind to the
    section start, run last), so the separator in prose stays content."""
    sec, sec_end = _flex(t.section_start.strip()), _flex(t.section_end.strip()) if t.section_end.strip() else ""
    sep = r"\s*" + _flex(t.call_separator.strip()) + r"\s*"
    suffix = re.escape(t.name_suffix)
    name = r"(?P<name>[\w.\-/]+)" + suffix
    inside = rf"(?<={sec}(?:(?!{sec_end or sec})[\s\S])*?)"
    looks = [rf"(?<=\}})(?={sep}[\w.\-/]+{suffix}\s*\{{)"] + ([rf"(?={sec_end})"] if sec_end else []) + [re.escape(e) for e in ends]
    field = {
        "open_pattern": rf"(?:{sec}\s*{name}|(?<=\}}){sep}{name}{inside})",
        "close_pattern": "|".join(looks),
        "repeats": True,
        "content": "json",
        "transform": _call_transform("{name}", "{content}", None),
    }
    return field, [f"calls in one section are split where '}}{t.call_separator.strip()}name{{' follows, which an argument string can also hold"]


def turn_end_closes(field: dict, ends: list[str], section_end: str = "") -> dict:
    r"""A call whose close never came (cut off, or the model ended its turn inside it) ends where the turn's
    end token ends the text (``<parameter=q>\nweather<|im_end|>``, ``{"city":<｜end▁of▁sentence｜>``): an engine
    that keeps special tokens leaves the token there, which is no part of any argument. Only at the end of the
    text (``\Z`` in the lookahead, so a stream decides at its end): a token written inside a value and followed
    by more of it stays the value's (Ollama's glimmer tests quote ``<|eot|>`` in an argument). Likewise, anywhere,
    where the calls' section ends with a token of its own (``{}<|tool_calls_section_end|>``, the call's end left
    out). Before, the token came back inside the last argument."""
    tokens = [e.strip() for e in ends if SPECIAL.fullmatch(e.strip())]
    close = field.get("close_pattern") or (esc(field["close"]) if isinstance(field.get("close"), str) else None)
    section = section_end.strip() if SPECIAL.fullmatch(section_end.strip()) else ""
    if not (tokens or section) or close is None:
        return field
    field = {k: v for k, v in field.items() if k != "close"}
    alts = [close] + ([rf"(?=(?:{'|'.join(map(esc, tokens))})\s*\Z)"] if tokens else []) + ([f"(?={esc(section)})"] if section else [])
    field["close_pattern"] = "|".join(alts)
    return field


def tool_field(a: Analysis) -> tuple[dict | None, list[str]]:
    t = a.tools
    ends = list(a.turn.end_markers) + [m for m in t.end_markers if m not in a.turn.end_markers]  # a call ends at either
    warnings = [f"not covered: {u}" for u in t.uncovered]
    if t.family in ("unknown", "nameless"):
        return None, warnings
    if t.format == "JSON_NATIVE":
        field, w = _json_native(t, ends, a.reasoning.end if a.reasoning.mode != "NONE" else "")
        field = _repr_args(t, field)
    elif t.arguments.kind == "pythonic":
        field, w = _pythonic(t, ends)
    elif _separated_in_section(t):
        field, w = _tagged_separated(t, ends)
    else:
        others = [a.content.start.strip()] if a.content.mode == "ALWAYS_WRAPPED" else []
        others += [a.reasoning.start] if a.reasoning.start and a.reasoning.mode != "NONE" else []
        field, w = _tagged(t, ends, others)
    field = never_raises(field)
    field = turn_end_closes(field, ends, t.section_end)
    # A call with no close marker of its own ends at the next call or at the turn's end, which engines strip.
    if not t.call_end.strip() and not t.section_end.strip():
        # (text after the arguments closes the call only where it is content: not where content is a wrapped field)
        field = value_ends_text(field, f"(?:{NEW_LINE_TEXT}|{SAME_LINE_TEXT})" if a.content.mode != "ALWAYS_WRAPPED" else "")
    elif t.format == "JSON_NATIVE" and (t.shared_start or t.array_wrapped) and markers(t.call_start.strip()) and markers(t.call_end.strip()):
        field = closer_left_out(field, t.call_start.strip() if t.array_wrapped else "", [e.strip() for e in ends if e.strip()])
    # (after ``value_ends_text``, which reads back over the opener: this one's is a lookbehind)
    again = _call_again_after_arguments(t) if "close_pattern" in field else None
    if again:
        field = {**field, "open_pattern": field["open_pattern"] + "|" + again[0], "close_pattern": field["close_pattern"] + "|" + again[1]}
    return field, warnings + w
