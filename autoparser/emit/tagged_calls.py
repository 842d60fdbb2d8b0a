"""The ``tool_calls`` field for calls whose arguments are tags (``<arg_key>k</arg_key><arg_value>v</arg_value>``,
``<parameter=k>v</parameter>``) or JSON after a tagged header (``<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}``):
the header, its wrapper and the calls a block or section may hold. Part of the emitter, beside ``tools``."""

from __future__ import annotations

import regex as re

from ..analysis.diff import MARKER, markers, shared_lead
from ..analysis.model import Tools
from .markers import ARGS_KEYS, CALL_WINDOW, NAME, OBJECT_BEGIN, SPECIAL, _call_transform, _flex, cut_marker, each_branch, esc, flex_pattern, literals, then_space, without_groups
from .typed import JSON_PAIR, JSON_PAIR_TEXT, tagged_value, typed_by_attribute, typed_value_parser


# A look from a JSON object's ``{``: a ``<`` (the tag that ends the call, or another) comes within ``CALL_WINDOW``
# characters, with no backslash before it. A JSON object read as tagged arguments comes back as text, its strings'
# escapes as written (no value parser reads tagged values: ``typed.JSON_PAIR_TEXT``), so one that holds an escape
# (``"a\nb"``, code) is left in content, visible, rather than handed out with its ``\n`` as two characters; and so
# is one longer than the window. Decided at the first ``<``, not at the call's close: a look that waited for the
# close stayed pending while a later header was whole, and the regex module's partial search, which prefers a
# complete match further on to a pending one, opened that one instead in a stream (one-shot read the first).
# The price: an escape after a ``<`` inside a string (``"<b>\n"``) comes back as written.
NO_ESCAPE = rf"(?=[^\\<]{{0,{CALL_WINDOW}}}<)"


def _tag_like(opener: str) -> bool:
    """A marker, or the start of a tag with attributes (``<invoke name="``): distinctive enough to
    open a call on its own, so the section start around the calls may be left out (DeepSeek V3.2
    writes ``<｜DSML｜invoke …>`` for the second call without repeating the section)."""
    # The tag's name may be two words (DeepSeek V4.1's ``<｜DSML｜ invoke name="``).
    return bool(markers(opener)) or bool(re.match(r"<[|｜]?[A-Za-z_][\w:｜|]*(?:\s+[A-Za-z_][\w:.\-]*)?\s+[\w:.\-]+=", opener))


_ESC_TOKEN = re.compile(r"<\\\|(?:[^<>\s\\]|\\.)+?\\\|>|<｜[^<>｜\s]+｜>")  # a special token, as ``esc`` writes it


def space_before_tokens(pattern: str) -> str:
    r"""Whitespace allowed before every special token inside a pattern, after something that is not
    already whitespace: serving engines' detokenizers put a space before a special token
    (``functions.get_weather:0 <|tool_call_argument_begin|>``). Never at the pattern's start, where a
    leading ``\s*`` would be tried at every space of prose, nor at a lookaround's (whitespace that a
    lookahead skips would reopen the implicit content, whose empty close wipes it)."""
    out, last = [], 0
    for m in _ESC_TOKEN.finditer(pattern):
        before = pattern[: m.start()]
        if m.start() and not re.search(r"(?:\(\?:|\(\?<?[=!]|\(|\||\\s\*|\\s\{0,\d+\}|\\s\+|\\n|\?)$", before):
            out.append(pattern[last : m.start()] + r"\s*")
            last = m.start()
    out.append(pattern[last:])
    return "".join(out)


_BRACKET_UNIT = re.compile(r"\\\[[A-Z][A-Z_]*\\\]|\\s(?:\*|\{0,64\})|\(\?P<id>\[\^\\s<>\\\[\\\]\]\*\?\)")


def optional_bracket_markers(header: str) -> str:
    r"""Bracket markers between a call's name and its JSON arguments (``[TOOL_CALLS]f[CALL_ID]x[ARGS]{…}``)
    may each be left out, an id marker with its id: Mistral-format models write ``f[ARGS]{…}`` where the
    template writes an id, and tokenizers that drop control tokens from the text leave ``f{…}`` (the
    family's own parsers read both). Only where the text after the name is nothing but such markers,
    whitespace and an id; without its last marker the arguments' ``{`` must follow the name."""
    m = re.search(r"\(\?P<name>(?:[^()\\]|\\.)*\)", header)
    if not m:
        return header
    tail = header[m.end():]
    parts = _BRACKET_UNIT.findall(tail)
    if "".join(parts) != tail or not any(p.startswith("\\[") for p in parts):
        return header
    lead, units = "", []
    for p in parts:
        if p.startswith("\\["):
            units.append(p)
        elif units:
            units[-1] += p
        else:
            lead += p
    *first, last = units
    return header[:m.end()] + lead + "".join(f"(?:{u})?" for u in first) + f"(?:{last}|(?=\\s*\\{{))"


def _key_prefix_pattern(kp: str, vs: str) -> str:
    r"""The key prefix's pattern. Where the value's close ends with the marker the key prefix begins with, the
    template writes that marker once between two arguments (Kimi K3: ``…<|close|>argument<|sep|><|open|>argument
    key=…``, one ``<|sep|>``): the value's close consumes it, so the next key also begins right after it (a
    lookbehind: the parser's search for the next pair starts past the close). Before, every second argument
    was lost."""
    lead = shared_lead(kp, vs)
    if not lead:
        return _flex(kp)
    m = esc(lead)
    return rf"(?:{m}|(?<={m}))" + _flex(kp[len(lead):])


def _args_tagged(t: Tools) -> bool:
    return t.arguments.kind == "tagged"


def _tagged_body(t: Tools, ends: list[str]) -> str:
    r"""A look after a tagged call's header: its first argument's tag, its close, a turn's end or the text's end
    follows (after whitespace), or a JSON object of the arguments (``<tool_call>f\n{"city": "Paris"}</tool_call>``,
    read by ``typed.JSON_PAIR_TEXT``). A body that is other text (``<tool_call>multiply a=1 b=2</tool_call>``) is no
    argument this field reads: the call was one with no arguments, the text silently gone (a call run with
    arguments missing); now it is content, visible. Text between two arguments is still not read."""
    a = t.arguments
    kp, ce = a.key_prefix.strip(), t.call_end.strip()
    lead = re.match(r"""[^\s="']+""", kp)
    if not lead or typed_by_attribute(a.key_suffix, a.value_suffix, a.typed_key_suffix):
        return ""  # (a tag that types its value also reads JSON members, ``typed.JSON_PAIR``: JSON there is read)
    first = MARKER.match(ce)
    closes = [_flex(ce)] + ([esc(first.group(0))] if first and first.group(0) != ce else [])
    # (the key's leading tag as ``_key_prefix_pattern`` reads it: after a value whose close wrote its marker, Kimi K3)
    alts = [_key_prefix_pattern(lead.group(0), a.value_suffix.strip()), *closes, *(esc(e.strip()) for e in ends if e.strip()), r"\Z",
            OBJECT_BEGIN + NO_ESCAPE]
    # (markup before the first argument is no text: a wrapper the model adds, ``<arguments><param …>``)
    return rf"(?=\s*(?:<[^<>\s][^<>]*>\s*)*(?:{'|'.join(alts)}))"


def _self_closing(opener: str, close: str, open_pattern: str, after: str = "") -> str | None:
    r"""A call opened by an XML element with attributes and closed by its end tag (``<invoke name="f">…
    </invoke>``) may be written self-closing when it has no arguments, as XML allows (``<invoke
    name="f"/>``: SGLang's DeepSeek parsers read it): the open also takes ``/>``, and such a call closes
    where it opened (``\G`` right after the self-closed element, in the close). None when the opener is
    no such element."""
    m = re.match(r"<([^\s<>/=\"]+)\s", opener)
    if not m or close != f"</{m.group(1)}>" or not open_pattern.endswith(">"):
        return None
    return open_pattern[:-1] + rf"(?:>{after}|\s*/>)"  # (``after``: a look after the element's ``>`` only)


def _optional_wrapper(opener: str, close: str, header: str, ends: list[str] = (), value_end: str = "") -> tuple[str, str | None]:
    r"""A per-call opener made of a wrapper marker and an element that names the call (``<tool_call>

    <function=f>`` … ``</function>
</tool_call>``): the wrapper may be left out, the element opening the
    call on its own (Qwen3-Coder models write ``<function=f>…</function>`` bare, or lose the opening
    ``<tool_call>``; vLLM's parser reads both). (header, close pattern) with the wrapper and its end tag
    optional; the header unchanged (and None) where the opener is no such pair. The element's own close may be
    left out too, the wrapper's end tag then closing the call right after a value's close (``value_end``) or the
    element itself, where the next call's wrapper, the turn's end or the text's end follows it (so the tags
    quoted inside a value stay the value's): before, the call ran on into the next one, whose arguments it took
    (``{"city": "Paris", "query": "x"}`` under the first call's name, the second call gone)."""
    m = MARKER.match(opener)
    rest = opener[m.end():].lstrip() if m else ""
    if not m or not rest or markers(rest) or not re.match(r"<[A-Za-z_][\w:]*=", rest):
        return header, None
    wrapper = m.group(0)
    end = "</" + wrapper[1:] if wrapper.startswith("<") and not wrapper.startswith("</") else ""
    lit = _flex(wrapper)
    if not end or not close.endswith(end) or not header.startswith(lit):
        return header, None
    inner = close[: -len(end)].rstrip()
    tail = re.sub(r"^(?:\\s\*|\\s\{0,64\}|\\n)+", "", header[len(lit):])
    # The end tag is taken when it follows; a stream cut inside it waits for the rest (else the call would
    # close before it and leave it to content).
    after = "|".join([lit, *literals(list(ends)), r"\Z"])
    # (the end tag first, then the look back over it: an alternative that began with the look back made the regex
    # module's partial search hold a whole streamed value back, 99.5% of a 16 KB argument)
    before = "|".join([without_groups(tail), *([_flex(value_end)] if value_end else [])])
    return (rf"(?:{lit}\s*)?" + tail,
            rf"(?:{_flex(inner)}\s*(?:{_flex(end)}|(?!\s*(?:{cut_marker(end)})\Z))|{_flex(end)}(?<=(?:{before})\s*{_flex(end)})(?=\s*(?:{after})))")


def _call_again_in_block(t: Tools, header: str) -> tuple[str, str] | None:
    r"""A later call written inside the previous call's block, with the header's word alone right after that
    call's JSON arguments: Gemma 4's ``<|tool_call>call:f{…}call:g{…}<tool_call|>`` where the template opens
    a block per call (mlx-lm's Gemma 4 parser reads both calls). (an open alternative, a close alternative)
    where the per-call opener is a marker then a word (``call:``) and a marker closes the call; the call
    closes, zero-width, after a ``}`` that the word and a name with ``{`` follow, and the next opens on the
    word there, only inside an open block (a lookbehind to the block's marker, run last). Before, the second
    call was read into the first one's arguments, which came back as text."""
    opener, ce = t.call_start.strip(), t.call_end.strip()
    m = MARKER.match(opener)
    word = opener[m.end():] if m else ""
    # the word, the name and what follows it (the header allows whitespace after the marker: ``_flex``)
    rest = header[len(esc(m.group(0))):].removeprefix(r"\s*") if m and header.startswith(esc(m.group(0))) else ""
    if (t.arguments.kind != "json" or t.section_start.strip() or t.call_separator.strip() or not ce or not markers(ce)
            or not re.fullmatch(r"[A-Za-z_][\w.\-]*:", word) or not rest.startswith(esc(word))):
        return None
    name = without_groups(rest)
    inside = rf"(?<={esc(m.group(0))}(?:(?!{esc(ce)})[\s\S])*?\}}{esc(word)})"
    return rf"{esc(word)}(?<=\}}{esc(word)}){inside}{rest[len(esc(word)):]}(?=\{{)", rf"(?<=\}})(?={name}\{{)"


def _named_twice(header: str, others: list[str]) -> str:
    """A header that writes the call's name twice, as a recipient and again in the call's own element
    (``to=f<|message|><atem:invoke name="f">``, a backreference in the analysis' header): the element names
    the call. Models fumble the recipient, leaving it out or naming only the tool's namespace (``to=muse``
    before ``name="muse.bash"``, Ollama's tests), while the element stays whole; so the recipient is any
    name or none, and the element's name is captured. A recipient that opens another field (``to=user``
    for content, ``to=self`` for reasoning) is no call's."""
    first, ref = header.find("(?P<name>"), header.find("(?P=name)")
    if first < 0 or ref < first:
        return header
    depth, end = 0, first
    for end in range(first, ref):  # the name group's closing parenthesis (no escapes inside a name class)
        depth += {"(": 1, ")": -1}.get(header[end], 0) if header[end - 1] != "\\" else 0
        if depth == 0:
            break
    group = header[first : end + 1]
    kept = re.match(r"(?:.*>(?:\\s\{0,64\})?)?", header[:first]).end()  # the markers before the recipient stay
    lead = header[kept:first]
    guard = "".join(f"(?!{re.escape(o)})" for o in others if o and re.match(lead, o))
    free = f"(?:{guard}{lead}{group.replace('(?P<name>', '(?:', 1)})?"
    return f"{header[:kept]}{free}{header[end + 1 : ref]}{group}{header[ref + len('(?P=name)'):]}"


def _json_in_tags(t: Tools, header: str) -> tuple[str, str] | None:
    r"""(an open alternative, a close alternative) for a call written as a JSON call object inside the wrapper tag
    the template puts around each tagged call: ``<tool_call>{"name": "f", "arguments": {…}}</tool_call>`` where
    the template writes ``<tool_call>f\n<arg_key>k</arg_key>…`` (GLM 4.7, which mlx-lm's parser reads so) or
    ``<tool_call>\n<function=f>…`` (Qwen3-Coder, whose family writes the Hermes call between the same tags).
    The call object describes itself (FORMATS §7b): it opens on the tag and the object's head, name first, then
    ``arguments`` or ``parameters`` and an object; the region is that object, its members read by the field's
    own xml-inline parser (``typed.JSON_PAIR_TEXT``: values as text, typed by the schema as tagged values are);
    it closes on the wrapper's end tag right after a ``}``. Only an object whose first ``<`` comes within
    ``CALL_WINDOW`` characters with no escape before it (``NO_ESCAPE``). None where the call's opener begins with
    no plain tag that its close ends with."""
    opener, ce = t.call_start.strip(), t.call_end.strip()
    m = re.match(r"<([A-Za-z_][\w:.\-]*)>", opener)
    if not m or not ce.endswith(f"</{m.group(1)}>"):
        return None
    ident = "(?P<id>)" if "(?P<id>" in header else ""
    end = _flex(f"</{m.group(1)}>")
    head = (rf'{_flex(m.group(0))}\s*{NO_ESCAPE}\{{\s*"name"\s*:\s*"(?P<name>{NAME})"{ident}\s*,\s*"(?:{"|".join(ARGS_KEYS)})"\s*:\s*'
            rf"(?={OBJECT_BEGIN})")
    return head, rf"(?<=\}})\s*{end}\s*"


def _tagged(t: Tools, ends: list[str], others: list[str]) -> tuple[dict, list[str]]:
    warnings: list[str] = []
    opener = t.call_start.strip()
    section = t.section_start.strip()
    # An id the caller writes in history may be left out by the model: the call still parses (``"id": ""``).
    header = flex_pattern(t.header_pattern).replace(r"(?P<id>[^\s<>\[\]]+?)", r"(?P<id>[^\s<>\[\]]*?)")
    if t.arguments.kind == "json":
        header = optional_bracket_markers(header)
    # A namespace glued to the name with a dot (Kimi's ``functions.f:0``) may be left out: models write
    # ``f:0`` too (vLLM's Kimi K2 parser reads it); the name is what follows the dot when there is one.
    header = re.sub(r"(?<![\w\\])([A-Za-z_]\w*)\\\.\(\?P<name>", r"(?:\1\\.)?(?P<name>", header, count=1)
    header = _named_twice(header, others)
    # A name an element's tag or attribute gives whole after ``=`` (``<function=NAME>``, ``name="NAME"``) may be
    # words with single spaces between (Ollama's Qwen3-Coder parser reads ``<function=get current temperature>``);
    # elsewhere (``<tool_call>NAME\n``) a space ends the name.
    header = re.sub(r"(?<==\"?)\(\?P<name>\[\\w\.\\-/\]\+\)(?=[\">])", r"(?P<name>[\\w.\\-/]+(?: [\\w.\\-/]+)*)", header, count=1)
    # The header regex starts with the escaped opener, possibly with leading whitespace already stripped.
    header, wrapper_close = (_optional_wrapper(opener, t.call_end.strip(), header, ends, t.arguments.value_suffix.strip())
                             if not section else (header, None))
    if section and not _tag_like(opener):
        # A per-call opener that is no marker (``to=``) is only a call after the section start or a separator.
        alts = [_flex(section)] + ([re.escape(t.call_separator)] if t.call_separator.strip() else [])
        open_pattern = "(?:" + "|".join(alts) + r")\s*" + header
    elif section:
        open_pattern = "(?:" + _flex(section) + r"\s*)?" + header
    else:
        open_pattern = header
    ce = t.call_end.strip()  # the section end is consumed by the implicit field (see emit.py)
    a = t.arguments
    typed = typed_by_attribute(a.key_suffix, a.value_suffix, a.typed_key_suffix) if _args_tagged(t) else None
    body = _tagged_body(t, ends) if _args_tagged(t) else ""
    self_closing = _self_closing(opener, ce, open_pattern, body) if _args_tagged(t) else None
    field: dict = {"open_pattern": space_before_tokens(self_closing or (each_branch(open_pattern, body) if body else open_pattern))}
    # JSON arguments end at their object's ``}``: the call's close, or the next call's opener, written inside a
    # string argument (code that quotes the format, ``"see </function> here"``) is the string's. A call whose object
    # never closed ends at the turn's end (``turn_end_closes``), its text its arguments'. (A class, ``[}]``: a
    # close that reads ``\}`` is one that ``value_ends_text`` takes as reading whole values already, and leaves.)
    after_json = r"(?<=[}])\s*" if t.arguments.kind == "json" else ""
    lead = SPECIAL.match(opener)
    if ce and lead and SPECIAL.fullmatch(ce):
        # Special tokens never occur inside arguments, so a call whose end token the model left out
        # ends where the next call's token begins (Kimi K2 Thinking).
        field["close_pattern"] = then_space(_flex(ce)) + f"|(?={esc(lead.group(0))})"
    elif ce:
        field["close_pattern"] = ("" if wrapper_close else after_json) + then_space(wrapper_close or _flex(ce))
    else:
        # No close marker: a call ends where the next call (after its separator), the section's end,
        # another field, or the turn's end begins.
        sep = t.call_separator.strip()
        nxt = (_flex(t.call_separator.strip()) + r"\s*" if sep and not _tag_like(opener) else "") + re.escape(opener) if opener else ""
        looks = [x for x in [nxt, _flex(t.section_end.strip()) if t.section_end.strip() else ""] + [re.escape(o) for o in others if o] if x]
        alts = [f"{after_json}(?={'|'.join(looks)})"] if looks else []
        alts += [re.escape(e) for e in ends]
        if alts:
            field["close_pattern"] = "|".join(alts)
    json_call = _json_in_tags(t, header) if _args_tagged(t) and not typed else None
    if json_call and "close_pattern" in field:
        field["open_pattern"] += "|" + json_call[0]
        field["close_pattern"] += "|" + json_call[1]
    value_end = a.value_suffix.strip()
    if _args_tagged(t) and ce and value_end and "close_pattern" in field:
        # A call whose close the model left out ends where the next call's header follows a value's close (GLM's
        # ``…</arg_value>\n<tool_call>g``, DSML's ``…</｜DSML｜parameter><｜DSML｜invoke name="g">``): only after a
        # value's close, so the format's own tags written inside a value stay the value's. Before, the call ran on
        # into the next one and took its arguments under its own name.
        # (the look ahead first: it fails at once where no header begins, the look back would read the spaces)
        field["close_pattern"] += rf"|(?={without_groups(header)})(?<={_flex(value_end)}\s*)"
        # ... and where the section's end follows a value's close (Hy3's ``…</arg_value></tool_calls>``): the calls'
        # section ends, so does its last call. Before, the call ran on to the text's end, and the text after the
        # section was read as its arguments and lost.
        if t.section_end.strip() and t.section_end.strip() != ce:
            # (the look ahead first, as above; a look back first, or one with a greedy run of spaces, made the regex
            # module's partial search beside the self-closing ``\G`` alternative report a match pending from the
            # value's start: a stream held the whole argument back)
            end = _flex(t.section_end.strip())
            field["close_pattern"] += rf"|(?={end})(?<={_flex(value_end)}\s{{0,64}}+){end}\s*"
    again = _call_again_in_block(t, header)
    if again and "close_pattern" in field:
        field["open_pattern"] += "|" + again[0]
        field["close_pattern"] += "|" + again[1]
    if "close_pattern" in field:
        field["close_pattern"] = space_before_tokens(field["close_pattern"])
    if self_closing:
        # A self-closing call ends where it opened: right after the element itself, never after any ``/>``
        # (``"<br/>"`` in an argument, where a stream may have resumed).
        element = space_before_tokens(without_groups(header[:-1]))
        field["close_pattern"] += rf"|\G(?<={element}\s*/>)"
    field["repeats"] = True
    if a.kind == "json":
        field["content"] = "json"
        args = {}
        if a.unquoted_keys:
            args["unquoted_keys"] = True
        if a.string_delims:
            args["string_delims"] = [list(p) for p in a.string_delims]
        if args:
            field["content_args"] = args
    else:
        ks = a.key_suffix
        # Models put a newline inside value tags whether or not their template does (Seed-OSS
        # renders <parameter=k>v</parameter> but generates <parameter=k>\nv\n</parameter>).
        ks_re = _flex(ks.rstrip("\n")) + (r"\n?" if ks.endswith("\n") or ks.rstrip().endswith(">") else "")
        ks_re = re.sub(r"(true|false)", "(?:true|false)", ks_re)
        vs = a.value_suffix
        vs_re = (r"\n?" if vs.startswith("\n") or vs.lstrip().startswith("<") else "") + _flex(vs.lstrip("\n"))
        field["content"] = "xml-inline"
        # A value also ends where the call's text ends: a call cut off (a token limit) or a value close
        # written wrongly keeps what arrived in the value instead of dropping it (never lose text).
        key_re = _key_prefix_pattern(a.key_prefix.strip(), vs.strip()) + r"(?P<key>[^<>\"\n=]+?)"
        if typed:
            field["content_args"] = {"tag_pattern": f"(?:{key_re}{typed[0]}|{JSON_PAIR})", "value_parser": typed_value_parser(vs, typed[1])}
            warnings.append("tagged argument values the template marks as strings come back as strings; the others are read as JSON")
        else:
            # the next key's whole tag (``<parameter=state>``): a value holding ``<parameter=`` alone goes on
            kp = (_flex(a.key_prefix.strip()) + r"[^<>\"\n=]+?" + _flex(ks.rstrip("\n"))
                  if a.key_prefix.strip().startswith("<") and vs.strip().startswith("</") else "")
            field["content_args"] = {"tag_pattern": f"(?:{key_re}{tagged_value(ks, vs, ks_re, vs_re, kp)}|{JSON_PAIR_TEXT})"}
            warnings.append("tagged argument values come back as strings unless tools= is passed to the parser (then they are cast by the tool schema)")
    field["transform"] = _call_transform("{name}", "{content}", "{id}" if t.id_in_header else None)
    return field, warnings
