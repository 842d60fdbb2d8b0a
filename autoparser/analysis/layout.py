"""Analysis -> the shape of an assistant turn as a model writes it, stated exactly enough for a grammar
(``Layout``).

Both grammar writers (``grammar/lark``, ``grammar/structural_tag``) and verify's outputs written in the
format (``verify/written``) read this instead of the Analysis, so the decision which formats are known
exactly, and why not, is made once. The layout follows what the
emitted response_template parses (``emit_tools``): a grammar must never accept text that parser reads
differently, so anything the layout cannot state exactly is refused with the reason."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import regex as re

from .diff import shared_lead
from .model import Analysis
from ..errors import AutoparserError


class NoGrammar(AutoparserError):
    """The template's tool-call format cannot be constrained (or was not verified); says why."""


KNOWN_TOOL_FIELDS = {"format", "family", "section_start", "section_end", "call_start", "name_suffix", "call_end", "call_separator",
                     "name_path", "args_path", "id_path", "array_wrapped", "name_is_key", "first_key", "index_in_header",
                     "id_in_header", "header_pattern", "arguments", "end_markers", "uncovered", "unreadable", "headed", "call_lead",
                     "call_keys", "call_start_variants"}  # call_keys: the keys a call object holds, as the paths above already state them;
# call_start_variants: other spellings of the opener the parser also takes (a grammar writes the template's own)
NAME = ("name",)  # a header item standing for the tool name


@dataclass(frozen=True)
class Layout:
    """One assistant turn: [reasoning] [content] [tool section] [end marker].

    ``kind``: ``json`` (each call one JSON object), ``json_array`` (one array of call objects),
    ``json_key`` (an array of ``{name: args}``), ``tagged_json`` (a header naming the tool, then JSON
    arguments), ``tagged_kv`` (a header, then one tagged key/value pair per argument), ``pythonic``
    (``NAME(key=value, …)`` in a marked section: values are Python literals), ``tagged_dialect`` (a
    header, then arguments in a JSON dialect: unquoted keys, strings between custom quotes), ``recipient`` (a run of
    messages under ``>>>RECIPIENT\n`` headers: ``all`` for text, a tool name for JSON arguments)."""

    kind: str
    trigger: str = ""  # literal text where tool calling starts ("" = only at the start of the reply)
    section_start: str = ""
    section_end: str = ""
    call_start: str = ""  # JSON formats: before each object (or the array)
    call_end: str = ""
    call_start_raw: str = ""  # the same with the template's whitespace (structural tags state it exactly)
    call_end_raw: str = ""
    separator: str = ""  # between calls, beyond whitespace
    lead: str = ""  # text the model may write before a call with no marker of its own (optional; content may not start with it)
    header: tuple = ()  # tag formats: literal strings, ("re", regex) and NAME
    name_path: tuple[str, ...] = ()
    args_path: tuple[str, ...] = ()
    id_path: tuple[str, ...] = ()
    first_key: str = ""  # the key the template writes first (llguidance keeps schema order)
    extra_key: str = ""  # a key the call object carries besides name/arguments/id
    key_prefix: str = ""  # tagged_kv: <key_prefix>KEY<key_suffix>VALUE<value_suffix>
    key_suffix: str = ""
    typed_suffix: str = ""  # tagged_kv: the key suffix before a list, where the tag names its value's type (A3)
    value_suffix: str = ""
    arg_separator: str = ""
    reasoning_start: str = ""
    reasoning_end: str = ""
    reasoning_open: bool = False  # the generation prompt opened the reasoning block
    reasoning_implicit_end: bool = False  # the call's opener also ends reasoning (as the parser reads it)
    head_words: tuple[str, ...] = ()  # recipient: the header words of content messages ("all")
    head_open: bool = False  # recipient: the generation prompt wrote the first message's header marker
    dialect_quote: tuple = ()  # tagged_dialect: (open, close) of strings, written raw between them
    dialect_unquoted: bool = False  # tagged_dialect: object keys without quotes
    py_quote: str = ""  # pythonic: the quote the template writes strings in
    py_json: bool = False  # pythonic: values written as JSON (``tojson``)
    content_start: str = ""  # content wrapped in its own markers
    content_end: str = ""
    ends: tuple[str, ...] = field(default_factory=tuple)  # end-of-turn markers


def header_items(pattern: str) -> tuple:
    """The analysis' header regex as literal strings, regex pieces and NAME. It is built from escaped
    literals, ``(?P<id>…)`` wrappers, the name group and ``\\d+``; anything else is refused."""
    items: list = []
    lit: list[str] = []
    i = 0

    def flush():
        if lit:
            items.append("".join(lit))
            lit.clear()

    while i < len(pattern):
        if pattern.startswith("(?P<name>", i):
            j = pattern.index(")", i) + 1
            flush()
            items.append(NAME)
            i = j
        elif pattern.startswith("(?P<id>", i):
            depth, j = 1, i + len("(?P<id>")
            body_start = j
            while depth:  # the id group may wrap the name (functions.NAME:0)
                c = pattern[j]
                depth += (c == "(") - (c == ")") if pattern[j - 1] != "\\" else 0
                j += 1
            inner = pattern[body_start : j - 1]
            if "(?P<name>" in inner:
                pattern = pattern[:i] + inner + pattern[j:]
                continue
            flush()
            items.append(("re", _lazy_free(inner)))
            i = j
        elif pattern.startswith(r"\d+", i):
            flush()
            items.append(("re", "[0-9]+"))
            i += 3
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            c = pattern[i + 1]
            lit.append({"n": "\n", "t": "\t", "r": "\r"}.get(c, c))
            if c.isalnum() and c not in "ntr":
                raise NoGrammar(f"header pattern {pattern!r} has a class {pattern[i:i + 2]!r} a grammar does not reproduce")
            i += 2
        elif pattern[i] in "()[]{}|*+?.^$":
            raise NoGrammar(f"header pattern {pattern!r} is not a literal with a name")
        else:
            lit.append(pattern[i])
            i += 1
    flush()
    return tuple(items)


def _lazy_free(regex: str) -> str:
    """llguidance lexemes are lazy or greedy as a whole: drop ``?`` after quantifiers."""
    return re.sub(r"([*+}])\?", r"\1", regex)


def _upto_turn_end(close: str, ends: tuple[str, ...]) -> str:
    """A close that holds the turn's end marker ends with it (HyperCLOVAX's ``]<|im_end|><|stop|>``): the model
    stops at that marker, so what the template renders after it is never written (as the parser reads it)."""
    cut = min((close.find(e) + len(e) for e in ends if e in close), default=len(close))
    return close[:cut].strip()


def layout(a: Analysis, *, reasoning_open: bool | None = None) -> Layout:
    """The turn's layout, or NoGrammar saying why this format cannot be constrained."""
    t, r, c = a.tools, a.reasoning, a.content
    if t.format == "NONE":
        raise NoGrammar("the template renders no tool calls")
    if getattr(t, "uncovered", ()):
        raise NoGrammar("not covered: " + "; ".join(t.uncovered))
    headed = getattr(t, "headed", None)
    if headed is not None and headed.kind:
        return _headed(a, headed)
    unknown = [f.name for f in fields(t) if f.name not in KNOWN_TOOL_FIELDS and getattr(t, f.name) != f.default]
    if unknown:  # a format detail added to the analysis after this writer: it may change what calls look like
        raise NoGrammar(f"tool-call format detail {', '.join(unknown)} is not constrained yet")
    if t.family == "unknown":
        raise NoGrammar("tool-call format not recognised")
    ends = tuple(dict.fromkeys(m for m in tuple(a.turn.end_markers) + tuple(t.end_markers) if m.strip()))
    common: dict = {"ends": ends}
    if r.mode != "NONE" and r.end and r.mode != "FORCED_CLOSED":
        opened = reasoning_open
        if opened is None:
            opened = not r.start or a.turn.generation_prompt.rstrip().endswith(r.start)
        # The emitted thinking field closes at the call's opener too for reasoning that exists to plan
        # calls (emit.template: TOOLS_ONLY with a marker-led opener).
        implicit = r.mode == "TOOLS_ONLY" and bool(r.start)
        common.update(reasoning_start=r.start.strip(), reasoning_end=r.end.strip(), reasoning_open=opened, reasoning_implicit_end=implicit)
    if c.mode == "ALWAYS_WRAPPED" and c.start.strip():
        common.update(content_start=c.start.strip(), content_end=(c.end.strip() or (ends[0] if ends else "")))
        if not common["content_end"]:
            raise NoGrammar("wrapped content has no end marker")
    args = t.arguments
    lead = t.call_lead.strip()
    if lead and t.call_start.strip() and lead != t.call_separator.strip():
        # A lead found by diff is the separator written before every call but the first (analysis T2): free
        # text before the first call and the separator between calls already allow it. Any other lead
        # before a marked call is one the parser's opener takes only glued to the marker.
        raise NoGrammar(f"a lead {lead!r} before the call's opener that is not the separator between calls")
    if t.format == "JSON_NATIVE":
        start = t.call_start.strip()
        paths = dict(name_path=tuple(t.name_path), args_path=tuple(t.args_path), id_path=tuple(t.id_path))
        extra = t.first_key if t.first_key and all(p[:1] != (t.first_key,) for p in paths.values()) and not t.name_is_key else ""
        kind = "json_key" if t.name_is_key else "json_array" if t.array_wrapped else "json"
        if kind == "json_key" and not start:
            raise NoGrammar("calls keyed by name without a marker")
        if kind != "json_key" and not (t.name_path and t.args_path):
            raise NoGrammar("call objects without name and arguments paths")
        return Layout(kind, trigger=start, call_start=start, call_end=_upto_turn_end(t.call_end.strip(), ends), separator=t.call_separator.strip(),
                      lead="" if start else lead,
                      call_start_raw=t.call_start, call_end_raw=t.call_end,
                      first_key=t.first_key, extra_key=extra, **paths, **common)
    pythonic = args.kind == "pythonic"
    if pythonic and not (t.name_suffix == "(" and t.call_end.strip() == ")" and args.key_suffix.strip() == "=" and not args.key_prefix.strip()):
        raise NoGrammar("pythonic calls not written NAME(key=value, …)")
    dialect = args.kind == "json" and bool(args.unquoted_keys or args.string_delims)
    delims = tuple(tuple(d) for d in args.string_delims or ())
    if dialect and (len(delims) > 1 or any(len(d) != 2 or not d[0] or not d[1] for d in delims)):
        raise NoGrammar("arguments are written in a JSON dialect with several string quotes")
    header = header_items(t.header_pattern)
    if NAME not in header:
        raise NoGrammar("the call header carries no tool name")
    section = t.section_start.strip()
    trigger = section or (header[0] if isinstance(header[0], str) else "")
    if not trigger:
        raise NoGrammar("a call starts without a literal marker, so free text cannot stop at it")
    kv = {}
    if dialect:
        kv = dict(dialect_quote=delims[0] if delims else ('"', '"'), dialect_unquoted=bool(args.unquoted_keys))
    call_end = _upto_turn_end(t.call_end.strip(), ends)
    if pythonic:
        delims = tuple(tuple(d) for d in (args.string_delims or ()) if len(d) == 2 and len(d[0]) == 1 and d[0] == d[1])
        kv = dict(key_suffix="=", arg_separator=",", py_quote=delims[0][0] if delims else '"', py_json=bool(args.json_values))
    elif args.kind != "json":
        if not (args.key_prefix.strip() and args.value_suffix.strip()):
            raise NoGrammar("tagged arguments without key and value markers")
        kv = dict(key_prefix=args.key_prefix, key_suffix=args.key_suffix, typed_suffix=args.typed_key_suffix,
                  value_suffix=args.value_suffix.strip(), arg_separator=args.separator.strip())
        # A value's close that ends with the marker the key prefix begins with writes that marker once between two
        # arguments (Kimi K3's ``…<|close|>argument<|sep|><|open|>argument key=…``): it is the next tag's, which the
        # call's end also begins with (``<|sep|><|close|>call``), so a grammar writes it once.
        lead = shared_lead(args.key_prefix, kv["value_suffix"])
        if lead and call_end and not call_end.startswith(lead):
            kv["value_suffix"], call_end = kv["value_suffix"][: -len(lead)], lead + call_end
    kind = "pythonic" if pythonic else "tagged_dialect" if dialect else "tagged_json" if args.kind == "json" else "tagged_kv"
    return Layout(kind, trigger=trigger, section_start=section,
                  section_end=_upto_turn_end(t.section_end.strip(), ends), call_end=call_end,
                  separator=t.call_separator.strip(),
                  call_start_raw=t.call_start, call_end_raw=t.call_end,
                  header=header, **kv, **common)


def _headed(a: Analysis, h) -> Layout:
    """A reply made of recipient-headed messages (``>>>all`` text, ``>>>NAME`` JSON arguments), as the
    emitter parses it: each message ends at the next header or an end marker."""
    if h.kind != "recipient":
        raise NoGrammar(f"replies made of headed messages ({h.kind}) are not constrained yet")
    if a.reasoning.mode != "NONE" or h.reasoning_words:
        raise NoGrammar("replies made of headed messages with reasoning are not constrained yet")
    if not (h.header_start.strip() and h.header_end and h.content_words and h.ends):
        raise NoGrammar("replies made of headed messages without literal headers and end markers")
    if a.tools.arguments.kind != "json":
        raise NoGrammar("replies made of headed messages whose arguments are not JSON")
    opened = a.turn.generation_prompt.endswith(h.header_start)
    return Layout("recipient", trigger=h.header_start, header=(NAME, h.header_end), ends=tuple(h.ends),
                  content_start=h.header_start, content_end="", reasoning_open=False, head_words=tuple(h.content_words), head_open=opened)


def select_tools(tools: list, tool_choice: str) -> list[dict]:
    """The function definitions a reply may call: all, or the one ``tool_choice`` names."""
    fns = [t.get("function", t) for t in tools or []]
    if not fns or not all(isinstance(f, dict) and isinstance(f.get("name"), str) for f in fns):
        raise NoGrammar("tools must be a non-empty list of {'type': 'function', 'function': {'name': ..., 'parameters': ...}}")
    if tool_choice in ("auto", "required", "none"):
        return fns
    chosen = [f for f in fns if f["name"] == tool_choice]
    if not chosen:
        raise NoGrammar(f"tool_choice names {tool_choice!r}, which is not among the tools")
    return chosen


def parameters(fn: dict) -> dict:
    p = fn.get("parameters")
    return p if isinstance(p, dict) else {"type": "object", "properties": {}}


def marker_texts(lay: Layout) -> list[str]:
    """Every literal the layout writes around content and calls (for a tokenizer check: which of
    them are added tokens decides how a grammar spells them)."""
    items = [lay.trigger, lay.section_start, lay.section_end, lay.call_start, lay.call_end, lay.separator, lay.lead,
             lay.key_prefix, lay.key_suffix, lay.value_suffix, lay.arg_separator, lay.reasoning_start, lay.reasoning_end,
             lay.content_start, lay.content_end, *lay.ends, *(h for h in lay.header if isinstance(h, str))]
    return [m for m in dict.fromkeys(items) if m and m.strip()]
