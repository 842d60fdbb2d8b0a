"""Making a tool-call field safe for any text (``never_raises``): the JSON shape an opener must see before a
region the transform indexes into, and the closes that end such a region at its value. Part of the emitter."""

from __future__ import annotations

import regex as re

from .markers import esc, literals, without_groups


# A JSON value, as the regex module's subroutines: ``jv`` any value, ``jo`` an object, ``jb`` only balanced.
# What the grammar accepts, the json content parser reads (its dialect transforms applied): whitespace is JSON's own, strings hold no raw control character and only JSON's escapes, numbers
# have no leading zero (``json.loads`` rejects all of those).
_JSTR = r'"(?:[^"\\\n]++|\\.)*+"'  # a string as the balanced check skips it
_W = r"[ \t\n\r]*+"
_ESCAPE = r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
_NUMBER = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?[0-9]++)?+"
_BARE = r"[A-Za-z0-9_]++"  # an unquoted key the dialect transform quotes (ASCII: a word in every regex flavour)
VALUE_DEPTH = 8  # nesting levels of a JSON value ``value_ends_text`` recognises behind the end of the text, and ``_BALANCED_TOKENS`` reads


class _Dialect:
    r"""The strings and keys of the json content parser's dialect (``string_delims``, ``unquoted_keys``),
    as regexes. The parser replaces each delimiter pair's strings in order, leftmost first and up to the
    first close (``open(.*?)close`` over the whole region, blind to JSON), then quotes a word key right
    after ``{`` or ``,``. So a delimited string holds no earlier pair's opener and no ``\x01``/``\x02``
    (the parser's sentinels, which it refuses); a standard string holds no pair's opener (nor, with
    unquoted keys, ``{`` or ``,`` before a word and a colon); a bare key stands right after ``{`` or ``,``
    and right before its colon."""

    def __init__(self, delims=(), unquoted: bool = False):
        self.delims = [tuple(p) for p in delims]
        self.unquoted = unquoted
        openers = [o for o, _ in self.delims]
        self.standard = not any('"' in o for o in openers)  # a pair whose opener holds ``"`` takes the standard strings
        not_open = "".join(f"(?!{esc(o)})" for o in openers)
        no_key = r"(?![{,][^\s\"\\:]++:)" if unquoted else ""
        strict = [rf'"(?:{not_open}{no_key}[^"\\\x00-\x1f]|{_ESCAPE})*+"' if (not_open or no_key)
                  else rf'"(?:[^"\\\x00-\x1f]++|{_ESCAPE})*+"'] if self.standard else []
        lenient = [_JSTR] if self.standard else []
        for i, (o, c) in enumerate(self.delims):
            earlier = "".join(f"(?!{esc(e)})" for e, _ in self.delims[:i])
            strict.append(rf"{esc(o)}(?:(?!{esc(c)}){earlier}[^\x01\x02])*+{esc(c)}")
            lenient.append(rf"{esc(o)}(?:(?!{esc(c)})[\s\S])*+{esc(c)}")
        self.string = "(?:" + "|".join(strict) + ")"
        self.skip_string = "(?:" + "|".join(lenient) + ")"
        self.firsts = "".join(sorted({re.escape(o[0]) for o in openers if o[0] != '"'}))

    def sound(self) -> bool:
        """Whether the regexes above say what the parser reads: every opener starts with a character JSON
        writes only inside a string, and no pair's delimiters hold an earlier pair's opener."""
        for i, (o, c) in enumerate(self.delims):
            if not o or not c or re.match(r"[\s{}\[\]:,0-9A-Za-z_.+\-]", o):
                return False
            if any(e in o or e in c for e, _ in self.delims[:i]):
                return False
        return bool(self.standard or self.delims)

    def key(self, k: str | tuple[str, ...]) -> str:
        """Key ``k`` as the dialect may write it (a tuple: any of its spellings)."""
        if isinstance(k, tuple):
            return "(?:" + "|".join(self.key(x) for x in k) + ")"
        forms = ([f'"{re.escape(k)}"'] if self.standard else []) + [esc(o) + re.escape(k) + esc(c) for o, c in self.delims]
        forms += [re.escape(k) + "(?=:)"] if self.unquoted and re.fullmatch(r"[A-Za-z0-9_]+", k) else []
        return "(?:" + "|".join(forms) + ")"

    def define(self, grammar: bool = True) -> str:
        """The subroutines; without ``grammar`` only the balanced check (compiling the grammar costs a
        millisecond per pattern, and a close that only finds a value's end never runs it)."""
        # Atomic groups: each value matches one way only, so a malformed or cut call fails in linear time.
        # A pair is written out in the object, not a subroutine of its own: the regex module's subroutine call
        # saves the state of every repeat in the whole pattern, so a call costs in proportion to the pattern's
        # quantifiers, and one per pair as well as one per value made the grammar half of a JSON call's parse.
        # (Inlining the values too adds more quantifiers than it saves calls; same matches, partial ones
        # included: tests/test_emit.py::test_the_json_grammar_matches_as_its_subroutine_form.)
        S, W = self.string, _W
        pair = rf"(?>{W}{S}{W}:(?&jv)" + (rf"|{_BARE}:(?&jv)" if self.unquoted else "") + ")"
        rules = (rf"(?P<jv>(?>{W}(?:(?&jo)|\[{W}(?:(?&jv)(?:,(?&jv))*+)?+\]|{S}|{_NUMBER}|true|false|null){W}))"
                 rf"(?P<jo>(?>\{{(?:{pair}(?:,{pair})*+)?+{W}\}}))") if grammar else ""
        # Only balanced: checked first, it fails (or stays partial) on a call still arriving at a tenth of
        # the grammar's cost, so a stream pays the grammar once per call; for a value the grammar accepts it
        # ends where the grammar's match ends (strings skipped the same way).
        return (rf"(?(DEFINE){rules}"
                rf"(?P<jb>\{{(?:[^{{}}\"{self.firsts}]++|{self.skip_string}|(?&jb))*+\}}"
                rf"|\[(?:[^\[\]\"{self.firsts}]++|{self.skip_string}|(?&jb))*+\]))")

    def object_with(self, keys, whole: bool = True) -> str:
        """An object that has each of ``keys`` at its top level, in any order; not ``whole``: only that it starts
        so (the caller checks the value another way)."""
        # Each key is found by skipping earlier pairs with the balanced check (the object's grammar is
        # checked after): matching every pair with the grammar parsed the whole object again for each key.
        key = self.skip_string + (f"|{_BARE}" if self.unquoted else "")
        skip = rf"(?:{key}){_W}:(?:[^{{}}\[\],\"{self.firsts}]++|{self.skip_string}|(?&jb))*+,{_W}"
        need = "".join(rf"(?={_W}(?:{skip})*?{self.key(k)}{_W}:)" for k in keys)
        return rf"(?=\{{{need})(?&jo)" if whole else rf"(?=\{{{need})"


# JSON's tokens between balanced brackets: strings closed, with JSON's escapes (a raw control character allowed: code
# written with its line breaks, which models do and vLLM's parsers pass on), numbers, ``true``, ``false``, ``null``
# and punctuation, nothing else: a value cut off, a bare word or a single-quoted string fails. Neither the order of
# the tokens nor the kind of each closing bracket is checked, and a value nests at most ``VALUE_DEPTH`` deep: written
# out level by level, with no subroutine (the grammar above, a subroutine per value, cost four times as much:
# the regex module saves every repeat's state at each call).
_TOKENS = (r'[ \t\n\r,:]++|"(?:[^"\\]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"|' + _NUMBER + r"|true|false|null")


def _balanced_tokens() -> str:
    """A JSON value so read: an object or array, or a scalar token (``null``; a string of JSON, arguments a model
    wrote so, which the region reads as written)."""
    value = rf"[{{\[](?:{_TOKENS})*+[}}\]]"
    for _ in range(VALUE_DEPTH - 1):
        value = rf"[{{\[](?:{_TOKENS}|{value})*+[}}\]]"
    return rf"(?:{value}|{_TOKENS.split('|', 1)[1]})"


_BALANCED_TOKENS = _balanced_tokens()


TELL = 20  # characters after a JSON value that tell its close from other text (longer than any end marker)
_PLACE = re.compile(r"^\{(\w+)(?:\.(\w+))?")


def _placeholders(transform) -> list[str]:
    if isinstance(transform, dict):
        return [p for v in transform.values() for p in _placeholders(v)]
    return [transform[1:-1]] if isinstance(transform, str) and _PLACE.match(transform) and transform.endswith("}") else []


def _close_regex(field: dict) -> str:
    if "close" in field:
        return "|".join(literals([field["close"]] if isinstance(field["close"], str) else field["close"]))
    return without_groups(field.get("close_pattern", ""))


def _close_literals(field: dict) -> list[str]:
    """The literal markers a close is made of (``close``; or a close pattern's alternatives, each a literal
    with the whitespace after it or a lookahead for one); alternatives that are no literal are left out."""
    if "close" in field:
        return [field["close"]] if isinstance(field["close"], str) else list(field["close"])
    return _pattern_literals(field.get("close_pattern", ""))


def _pattern_literals(pattern: str) -> list[str]:
    pieces, depth, last = [], 0, 0
    for m in re.finditer(r"\\.|[()|]", pattern):
        t = m.group(0)
        depth += (t == "(") - (t == ")")
        if t == "|" and depth == 0:
            pieces.append(pattern[last : m.start()])
            last = m.end()
    pieces.append(pattern[last:])
    if len(pieces) == 1 and not (re.fullmatch(r"\(\?[:=].*\)", re.sub(r"\\s(?:\*|\{0,\d+\})$", "", pattern))):
        # Whitespace a marker run allows inside it (``\s*``): a slot, written back as ``\s*`` by ``_cut_regex``.
        piece = re.sub(r"\\s(?:\*|\{0,\d+\})", "\x00", re.sub(r"\\s(?:\*|\{0,\d+\})$", "", pattern))
        if not piece or re.search(r"(?<!\\)[()\[\]?*+{}.^$|]", piece):
            return []
        return [re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), piece)]
    out = []
    for piece in pieces:
        piece = re.sub(r"\\s(?:\*|\{0,\d+\})$", "", piece)
        inner = re.fullmatch(r"\(\?[:=](.*)\)", piece)
        out += _pattern_literals(inner.group(1)) if inner else _pattern_literals(piece) if piece else []
    return out


def _open_regex(field: dict) -> str:
    if "open" in field:
        return "(?:" + "|".join(literals([field["open"]] if isinstance(field["open"], str) else field["open"])) + ")"
    return "(?:" + field["open_pattern"] + ")"


def never_raises(field: dict) -> dict:
    r"""The tool-call field made safe for any text: transformers' parser raises when a region's JSON does
    not parse, a transform indexes into a value that is not an object or lacks the key, or a placeholder
    names a group that did not take part in the match (KeyError). So:

    - arguments read as a whole region (``{content}``): ``allow_non_json``, a malformed or cut body comes
      back as its text (visible, never raised);
    - a region the transform indexes into (``{content.name}``, ``transform_each``): the open also requires,
      as a lookahead, a JSON value of that shape (an object with the keys the transform reads, or an array
      of them) followed by its close, the end of the text (engines strip a stop marker) or other text;
      a call that is not one is no call, and its text stays in content. The region closes where the
      value ends, and text after it that is no close is content;
    - an id placeholder gets an empty default capture written before the pattern's own (the regex
      module keeps a name's last capture), so a call without an id parses with ``"id": ""``."""
    if field.get("content") != "json" or "(?(DEFINE)" in field.get("open_pattern", ""):
        return _id_default(field)
    roots = [p.split(".") for p in _placeholders(field.get("transform"))]
    each = field.get("transform_each")
    indexed = [r[1] for r in roots if r[0] == "content" and len(r) > 1]
    if not each and not indexed:
        field["content_args"] = {**field.get("content_args", {}), "allow_non_json": True}
        return _id_default(field)
    args = field.get("content_args") or {}
    # A JSON dialect (HTML-escaped quotes, a Python dict's single quotes, bare keys): the shape check speaks it.
    dialect = _Dialect(args.get("string_delims", ()), bool(args.get("unquoted_keys")))
    if not dialect.sound():
        return _id_default(field)
    if each:
        optional = {"id"}
        keys = [r[0] for r in roots if r[0] not in optional]
        obj = dialect.object_with(dict.fromkeys(keys))
        shape = rf"{_W}\[{_W}{obj}(?:{_W},{_W}{obj})*+{_W}\]"
    else:
        shape = _W + dialect.object_with(dict.fromkeys(indexed))
    close = _close_regex(field)
    # The region closes where its value ends (``\G`` is where its body began, ``\K`` leaves the value in
    # it), never inside it: a close marker inside a string argument (``"</s>"``) is text. After the value
    # come its close; or, streamed, enough text to tell it is no close (whitespace taken whole: a close
    # cut at a chunk's end must not end the region there), or a short tail at the end of the text that is
    # not the start of its close (``}``, ``</s>``): the region ends with the value, what follows is
    # content. A close at the edge of a stream is pending from the value's end: the bare close after ``\G``.
    tell = r"\s*+" + (f"(?!{close})" if close else "") + r"[\s\S]{%d}" % TELL
    cut = sorted({lit[:k] for lit in _close_literals(field) for k in range(1, len(lit))},
                 key=lambda x: (-len(x), x))
    cut = [r"\s*".join(esc(p) for p in c.split("\x00")) for c in cut]  # regexes: a marker run's whitespace slots
    short = (r"\s*+" + (f"(?!{close})" if close else "") + (f"(?!(?:{'|'.join(cut)})\\Z)" if cut else "")
             + r"\S[\s\S]{0,%d}\Z" % (TELL - 1))
    # A text cut inside the close (a token limit inside a marker several tokens long): the cut marker ends it.
    cut_close = rf"\s*(?:{'|'.join(cut)})\Z" if cut else ""
    follows = "|".join(([rf"\s*(?:{close})"] if close else []) + [tell, short] + ([cut_close] if cut else []))
    # The region's value: the open verified its shape, and a balanced match ends where the grammar's match
    # of such a value ends, so the close needs only the balanced check and what follows (a tenth of the
    # grammar's cost; the close is searched at every chunk while its end is pending). That holds at the
    # region's start, where ``\G`` follows the opener. Where ``\G`` follows a value's ``}`` or ``]`` instead
    # (a pending close's text was streamed up to the value's end), no second value joins the region; where
    # the opener itself ends with one, the shape is checked again (after the balanced check, so once).
    opener = _open_regex(field)
    ends_value = bool(re.search(r"\\[\]}]\)?$", opener))
    bare_opener = without_groups(opener)  # its groups would be the close's
    # A value starts right after the opener, or where no value ended: after a value's ``}``/``]`` the
    # region's own value is over (a second value glued to it is content, not part of the region).
    check, start = ((rf"(?={shape})", rf"(?:(?<![}}\]])|(?<={bare_opener}))") if ends_value
                    else ("", r"(?<![}\]])"))
    value = (rf"\G{start}(?=\s*+(?&jb)(?:{follows})){check}\s*+(?&jb)\K"
             + (rf"(?:\s*(?:{close})|{cut_close})?" if cut else rf"(?:\s*(?:{close}))?" if close else ""))
    # The open: a value of that shape followed as the close expects it, or ending the text (the same
    # test, so one-shot and streamed agree); the balanced check first.
    field.pop("open", None)
    # The balanced check and what follows first: they stay partial while the value arrives, and the grammar
    # runs once the value is whole (it ends where the balanced match ends).
    field["open_pattern"] = opener + rf"(?=\s*+(?&jb)(?:{follows}|\s*\Z))(?={shape})" + dialect.define()
    field.pop("close", None)
    # The value's end, stood on: after a pending close turned out to be none, or a value streamed into the
    # region while its close was pending, the region ends where the value ended (``\G`` follows a ``}`` or
    # ``]``, and not the opener's own). It is also the match transformers 5.24 finds when it re-matches the
    # ``\K`` alternative at its reported start to see whether it is final: the same span, so it commits.
    own = f"(?<!{bare_opener})" if ends_value else ""
    after_value = rf"|\G(?<=[}}\]]){own}(?=(?:{tell}|{short}))"
    field["close_pattern"] = value + (rf"|\G\s*(?:{close})" if close else "") + (rf"|\G{cut_close}" if cut else "") + after_value + dialect.define(grammar=ends_value)
    keys = list(field)
    order = ["open_pattern"] + [k for k in keys if k != "open_pattern"]
    field = {k: field[k] for k in order}
    if each and "id" in [r[0] for r in roots]:
        field["open_pattern"] = "(?P<id>)" + field["open_pattern"]
    return _id_default(field)


_STR = r'"(?:[^"\\]|\\.)*"'


def nested_value() -> str:
    """A JSON object or array nested at most ``VALUE_DEPTH`` deep. One bracket class for objects and arrays:
    the pattern grows linearly with the depth (a ``{`` closed by ``]`` is no JSON value either way: its
    arguments do not parse and come back as their text)."""
    value = rf"[{{\[](?:[^{{}}\[\]\"]|{_STR})*[}}\]]"
    for _ in range(VALUE_DEPTH - 1):
        value = rf"[{{\[](?:[^{{}}\[\]\"]|{_STR}|{value})*[}}\]]"
    return value


def value_ends_text(field: dict, then_text: str = "") -> dict:
    r"""Arguments read whole after a call with no close marker of its own, which ends at the next call or the
    turn's end marker the engines strip (``[TOOL_CALLS]f[ARGS]{…}</s>``):
    the close also matches at the end of the text when everything since the call's opener is one complete
    JSON value (``\Z``, then a lookbehind to the opener over a value nested at most ``VALUE_DEPTH`` deep).
    ``then_text``: a lookahead for text that follows a value and is none of it (``tools.NEW_LINE_TEXT``); the
    close matches there too, behind the same complete value (``[TOOL_CALLS]f[ARGS]{…}\nDone.``: the text is
    content, where it made the arguments no JSON; a ``}`` inside a string that holds a raw newline is no
    value's end, so the call is not cut there).

    SGLang keeps a tool region closed at the end of the text only when its close pattern matches there
    (``_is_unusable_tool_end``: else the call was cut off, and it is dropped); it has already removed the
    stop token, so a call that ends the reply had no close left. ``(?<=[}\]])\Z`` alone also matched at a
    stream's edge after a nested ``}`` (a call closed inside its arguments). Behind ``\Z``, the check runs
    only where the text ends, and only when it ends with ``}`` or ``]``: once per call, not per delta. A call
    that ends the text with a value nested deeper stays as before (closed by the end of the stream)."""
    opener, close = field.get("open_pattern"), field.get("close_pattern")
    if (field.get("content") != "json" or not opener or re.search(r"\(\?(?:\(DEFINE\)|&|P=|<[=!])|\\G", opener)
            or (close and re.search(r"\\G|\(\?&|\\\}", close)) or not (field.get("content_args") or {}).get("allow_non_json")):
        return field
    value = nested_value()
    bare_opener = without_groups(opener)  # its groups would be the close's
    whole = rf"(?<=(?:{bare_opener})\s*(?:{value})\s*)"
    end = rf"(?<=[}}\]])(?:\Z|{then_text}){whole}" if then_text else rf"\Z(?<=[}}\]]){whole}"  # (one copy of the look back)
    if close:
        field["close_pattern"] = close + "|" + end
    elif "close" in field:
        field["close_pattern"] = "|".join(literals([field.pop("close")] if isinstance(field["close"], str) else field.pop("close"))) + "|" + end
    return field


def closer_left_out(field: dict, list_opener: str = "", ends=()) -> dict:
    r"""JSON calls after one opener that a closer ends once (``<tool_calls>\n{…}\n{…}\n</tool_calls>``,
    ``<|tools_prefix|>[{"f": {…}}]<|tools_suffix|>``), whose closer the model left out at the end of the
    text (vLLM's MiniMax-M1 and Apertus parsers read such calls): the last call also closes at its object's
    ``}`` (and the list's ``]``) where the text ends or its turn's end marker follows, when the calls are
    complete JSON (``\Z``, then a
    lookbehind, as ``value_ends_text``). Before, the region ran to the end and the arguments came back as
    their text with the call's ``}`` and ``]``.

    What the lookbehind reads back over: a run of call objects (MiniMax-M1), the call's own head and
    arguments (``{"name": "f", "arguments": {…}}``: one call, not the whole run, which would be re-read at
    every delta that ends with ``}``); a list of calls (``list_opener``, Apertus), the whole list from its
    opener, and only where the text ends with ``}]``: a name-keyed call's head (``{"f": ``) is any object's
    too, so an object nested in the arguments could pass for a call where a stream's edge falls after it.
    A value still arriving is never complete JSON there, so transformers (which holds a match at ``\Z``
    until more text or the end comes) and a server that commits it at a delta's edge read the same."""
    close, open_pattern = field.get("close_pattern"), field.get("open_pattern") or ""
    head = without_groups(open_pattern[open_pattern.find(r"\{"):]) if r"\{" in open_pattern else ""
    if (field.get("content") != "json" or not close or not close.startswith(r"\}") or not head
            or re.search(r"\(\?(?:\(DEFINE\)|&|P=|<[=!])|\\G", head) or not (field.get("content_args") or {}).get("allow_non_json")):
        return field
    # (or right before the turn's end marker ``ends``, where the text still holds it)
    stop = r"(?:\Z|(?=" + "|".join(esc(e) for e in ends) + "))" if ends else r"\Z"
    if list_opener:
        end = rf"\}}\s*\]\s*{stop}(?<={esc(list_opener)}\s*{nested_value()}\s*)"
    else:
        end = rf"\}}\s*{stop}(?<={head}{nested_value()}\s*\}}\s*)"
        # A call of a run also ends at its whole object's ``}`` at a line's end where the next line is no call and
        # no closer (``{…}\n{invalid json}\n{…}``, text): that line is content, and the next call opens after it;
        # before, the call's arguments ran on to the next call's head and came back as text, the line with them.
        # (The next line's first character decides: ``<`` may begin the closer, still arriving, and ``{"`` a call:
        # the regex module's partial search prefers this whole match to theirs, pending.) The whole object is looked
        # for only where its head stands within ``LINE_END_WINDOW`` characters: a raw newline never stands inside a
        # JSON string, but pretty-printed arguments end many lines with ``}``, and each look reads back to the head.
        end += (rf"|\}}(?=[ \t]*\n\s*(?:[^\s<{{]|\{{\s*[^\s\"]))(?<={head}[\s\S]{{0,{LINE_END_WINDOW}}})"
                rf"(?<={head}{nested_value()}\s*\}})")
    field["close_pattern"] = close + "|" + end
    return field


LINE_END_WINDOW = 1024  # characters between a run's call head and a ``}`` at a line's end that may close it (``closer_left_out``)


def _id_default(field: dict) -> dict:
    """An ``{id}`` capture that may not take part in a match gets an empty default before it."""
    roots = [p.split(".")[0] for p in _placeholders(field.get("transform"))]
    pattern = field.get("open_pattern", "")
    if "id" in roots and "(?P<id>" in pattern and not pattern.startswith("(?P<id>)") and not field.get("transform_each"):
        field["open_pattern"] = "(?P<id>)" + pattern
    return field
