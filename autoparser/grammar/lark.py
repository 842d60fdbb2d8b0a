"""Layout -> a Lark grammar as llguidance reads it (vLLM's ``guidance`` backend, SGLang, llama.cpp).

Free text runs in lazy lexemes that end at the first tool-call trigger or end marker, so text
before a call can never contain the call's opener (the response_template opens a call there too).
Arguments are ``%json`` with each tool's schema; tagged arguments are one rule per parameter in the
schema's order, a string value raw up to the value's end marker, other values JSON. Pythonic calls and
JSON dialects write their values with rules of their own (a value never holds the text that closes its
call for the parser); recipient-headed replies are runs of messages, each up to the next header.
Whitespace between structural parts is free where the parser's patterns allow it.

Markers are text unless the tokenizer is known (``tokens``: its added tokens, text -> id): llguidance
treats every added token as special, so a marker that is one is written in its token syntax
(``<[id]>``) and the free text before it is a lexeme that cannot spell the marker's text either (the
parser reads text, so a spelt-out marker would open a call the grammar does not constrain).
Nothing here uses a grammar feature newer than llguidance 1.7 (vLLM pins < 1.8)."""

from __future__ import annotations

import json

import regex as re

from ..analysis.diff import markers, one_word_apart
from .layout import NAME, Layout, NoGrammar, parameters

WS_CHARS = r"[ \t\r\n]"
SPECIAL_MARKER = r"<\|[A-Za-z0-9_]{1,40}\|>"
_META = set("\\.+*?()|[]{}^$#&-~/")


def lit(text: str) -> str:
    """A Lark string literal."""
    return json.dumps(text, ensure_ascii=False)


def rx(text: str) -> str:
    """``text`` as a literal inside a Rust regex (llguidance's ``/…/``)."""
    out = []
    for ch in text:
        if ch in _META:
            out.append("\\" + ch)
        else:
            out.append({"\n": r"\n", "\t": r"\t", "\r": r"\r"}.get(ch, ch))
    return "".join(out)


def json_rule(schema: dict) -> str:
    """``%json`` for a schema, with no ``x-guidance`` options: llguidance 1.7 refuses the field that would
    allow ``\\u00fc``-style escapes, so a string is written with its characters as they are (the
    parser reads ``ü`` and ``\\u00fc`` alike; only control characters are escaped)."""
    return "%json " + json.dumps(schema, ensure_ascii=False)


class Tokens:
    """Splits marker text into added tokens (``<[id]>``) and text, leftmost-longest as tokenizers do."""

    def __init__(self, added: dict[str, int] | None = None):
        self.added = {t: int(i) for t, i in (added or {}).items() if isinstance(t, str) and t}
        names = sorted(self.added, key=len, reverse=True)
        self._re = re.compile("|".join(re.escape(t) for t in names)) if names else None

    def pieces(self, text: str) -> list[tuple[bool, str]]:
        """``(is_token, text)`` pieces of ``text``."""
        if not self._re or not text:
            return [(False, text)] if text else []
        out, i = [], 0
        for m in self._re.finditer(text):
            if m.start() > i:
                out.append((False, text[i : m.start()]))
            out.append((True, m.group(0)))
            i = m.end()
        if i < len(text):
            out.append((False, text[i:]))
        return out

    def has(self, text: str) -> bool:
        return any(tok for tok, _ in self.pieces(text))

    def seq(self, text: str) -> str:
        """``text`` as a sequence of Lark items."""
        return " ".join(f"<[{self.added[t]}]>" if tok else lit(t) for tok, t in self.pieces(text))

    def ids(self, pattern: str) -> list[int]:
        """Ids of the added tokens matching ``pattern`` in full."""
        return sorted(i for t, i in self.added.items() if re.fullmatch(pattern, t))


def _alt(texts) -> str:
    texts = list(texts)
    return rx(texts[0]) if len(texts) == 1 else "(?:" + "|".join(rx(t) for t in texts) + ")"


def _is_string(schema: dict) -> bool:
    t = schema.get("type") if isinstance(schema, dict) else None
    return t == "string" or (isinstance(t, list) and "string" in t)


class _Writer:
    def __init__(self, lay: Layout, fns: list[dict], tool_choice: str, parallel: bool, tokens: Tokens, after_reasoning: bool):
        self.lay, self.fns, self.choice, self.parallel = lay, fns, tool_choice, parallel
        self.tok, self.after_reasoning = tokens, after_reasoning
        self.rules: list[str] = []
        self._vstyle: dict | None = None

    def rule(self, text: str) -> None:
        if text not in self.rules:  # a section written twice (two start forms) defines its calls once
            self.rules.append(text)

    def lit(self, text: str) -> str:
        return self.tok.seq(text)

    def upto(self, name: str, markers, lead: str = "", first: str = "", avoid=(), never_text=(), not_start: str = "") -> str:
        """Rule ``name``: [whitespace and ``lead``] free text, then one of ``markers``. The text is lazy
        (it ends at the first marker); ``first``: a regex the text must start with. A marker that
        holds an added token is reached by a free-text lexeme that cannot spell it, then its tokens.
        ``avoid``: other markers at this place the text must not spell where they are tokens;
        ``never_text``: markers the text must not hold at all (tokens or not); ``not_start``: `` & ~/…/``
        refusing a start the text must not have (with ``first``, without ``lead``)."""
        markers = [m for m in dict.fromkeys(markers) if m]
        tokened = [m for m in markers if self.tok.has(m)]
        plain = [m for m in markers if m not in tokened]
        spelt = [m for m in dict.fromkeys([*tokened, *avoid]) if m and self.tok.has(m)] + [m for m in never_text if m]
        spelt = list(dict.fromkeys(spelt))
        never = (f" & ~/(?s:.*)(?:{'|'.join(rx(m) for m in spelt)})(?s:.*)/" if spelt else "") + not_start
        if not tokened and not self.tok.has(lead) and not never:
            head = f"{WS_CHARS}*{rx(lead)}" if lead else ""
            self.rule(f"{name}[lazy]: /{head}{first}(?s:.*){_alt(plain)}/")
            return name
        head = f"WS? {self.lit(lead)} " if lead else ""
        alts = []
        if plain:
            self.rule(f"{name}_t[lazy]: /{first}(?s:.*){_alt(plain)}/{never}")
            alts.append(f"{name}_t")
        free = f"FREE_{name.upper()}"
        body = f"{first}(?s:.*)" if first else "(?s:.+)"
        self.rule(f"{free}: /{body}/{never}")
        for m in tokened:
            pieces = self.tok.pieces(m)
            if not pieces[0][0]:  # text before the marker's first token: reach that text lazily
                k = len(self.rules)
                self.rule(f"{name}_p{k}[lazy]: /{first}(?s:.*){rx(pieces[0][1])}/{never}")
                alts.append(f"{name}_p{k} {self.lit(m[len(pieces[0][1]):])}")
            else:
                alts.append(f"{free}? {self.lit(m)}")
        self.rule(f"{name}: {head}(" + " | ".join(alts) + ")")
        return name

    def header(self, i: int, drop: str = "") -> str:
        """Tool ``i``'s call header; ``drop``: the trigger the free text already consumed."""
        parts: list[str] = []
        for item in self.lay.header:
            if item == NAME:
                parts.append(self.lit(self.fns[i]["name"]))
            elif isinstance(item, tuple):
                parts.append(f"/{item[1]}/")
            else:
                text = item[len(drop):] if drop and item.startswith(drop) else item
                drop = ""
                if text:
                    parts.append(self.lit(text))
        return " ".join(parts)

    def kv_args(self, i: int) -> str:
        lay, schema = self.lay, parameters(self.fns[i])
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out = []
        for k, (key, sub) in enumerate(props.items()):
            name = f"p{i}_{k}"
            head = self.lit(lay.key_prefix + key + lay.key_suffix)
            split = one_word_apart(lay.key_suffix, lay.typed_suffix) if lay.typed_suffix and not _is_string(sub) else None
            if split:  # the tag names a non-string value's type in one word (A3): the string's word never
                before, word, after, other = split
                if {word, other} == {"true", "false"}:  # DeepSeek V3.2's string="false"
                    typed = self.lit(other)
                else:  # Kimi K3's type="number"|"boolean"|…: the model writes its own word for the type
                    typed = "TYPEWORD"
                    self.rule(f"TYPEWORD: /[A-Za-z_]+/ & ~/{word}/")
                head = " ".join([self.lit(lay.key_prefix + key + before), typed] + ([self.lit(after)] if after else []))
            if _is_string(sub):
                # A closer's first chunk that the value's own end holds (``</｜T｜`` of ``</｜T｜ invoke>`` and
                # of ``</｜T｜ parameter>``, a two-word tag) is the value's end, not text it must avoid.
                never = [m for m in self.closers() if m not in lay.value_suffix]
                self.upto(f"{name}_v", [lay.value_suffix], never_text=never)
                self.rule(f"{name}: {head} {name}_v")
            elif isinstance(sub, dict) and sub.get("type") == "boolean":
                self.rule(f"{name}: {head} WS? /(true|false|True|False)/ WS? {self.lit(lay.value_suffix)}")
            else:
                self.rule(f"{name}: {head} WS? {name}_v WS? {self.lit(lay.value_suffix)}")
                self.rule(f"{name}_v: {json_rule(sub or {})}")
            sep = f"WS? {self.lit(lay.arg_separator)} " if lay.arg_separator and out else ""
            out.append(f"({sep}WS? {name})" + ("" if key in required else "?"))
        return " ".join(out)

    def value_style(self, *, quote: tuple = (), unquoted: bool = False, never=(), never_rx: str = "") -> None:
        """The base rules ``schema_value`` writes values with, for formats whose parser closes a call at
        a text it does not read as JSON (so a string must never hold it): strings raw between custom
        ``quote``s (a JSON dialect; lazily to the closing quote) or JSON strings, none holding a text in
        ``never`` or matching ``never_rx``; object keys unquoted where the dialect writes them so."""
        if self._vstyle is not None:
            return
        if quote:
            self.rule(f"vstr: {self.lit(quote[0])} {self.upto('vstr_text', [quote[1]], never_text=never)}")
            string = "vstr"
        else:
            alts = [rx(m) for m in never if m] + ([never_rx] if never_rx else [])
            neg = f" & ~/(?s:.*)(?:{'|'.join(alts)})(?s:.*)/" if alts else ""
            self.rule('VSTR: /"(?:[^"\\\\\\x00-\\x1f]|\\\\.)*"/' + neg)
            string = "VSTR"
        self.rule(r"VNUM: /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/")
        self.rule("VCONST: /(?:true|false|null)/")
        key = "VKEY" if unquoted else string
        if unquoted:
            self.rule("VKEY: /[A-Za-z_][A-Za-z0-9_]*/")
        self.rule(f"vval: {string} | VNUM | VCONST | vlist | vobj")
        self.rule('vlist: "[" WS? (vval (WS? "," WS? vval)*)? WS? "]"')
        self.rule(f'vobj: "{{" WS? ({key} WS? ":" WS? vval (WS? "," WS? {key} WS? ":" WS? vval)*)? WS? "}}"')
        self._vstyle = {"quote": tuple(quote) or ('"', '"'), "unquoted": unquoted, "string": string, "never": [*never]}

    def schema_value(self, name: str, schema) -> str:
        """A value following ``schema`` in the style ``value_style`` set: object keys in the schema's
        order or sorted (templates that sort keys write them sorted), only the listed ones; values
        without a schema are any value of the style. Bounds, patterns and formats are not stated (the
        strings' own rule is what keeps the parser reading the call whole)."""
        st = self._vstyle
        q0, q1 = st["quote"]
        t = schema.get("type") if isinstance(schema, dict) else None
        if t == "string":
            enum = schema.get("enum")
            if isinstance(enum, list) and enum and all(isinstance(e, str) and e.isprintable() and q1 not in e and "\\" not in e
                                                       and not any(m in e for m in st["never"]) for e in enum):
                return "(" + " | ".join(self.lit(q0 + e + q1) for e in enum) + ")"
            return st["string"]
        if t == "integer":
            return "/-?[0-9]+/"
        if t == "number":
            return "VNUM"
        if t == "boolean":
            return "/(?:true|false)/"
        if t == "null":
            return '"null"'
        if t == "array" and isinstance(schema.get("items"), dict):
            item = self.schema_value(f"{name}_i", schema["items"])
            self.rule(f'{name}: "[" WS? ({item} (WS? "," WS? {item})*)? WS? "]"')
            return name
        props = schema.get("properties") if t == "object" and isinstance(schema.get("properties"), dict) else None
        if not props:
            return {"array": "vlist", "object": "vobj"}.get(t, "vval")
        required = set(schema.get("required") or [])
        items = []
        for k, (key, sub) in enumerate(props.items()):
            head = self.lit(key if st["unquoted"] else json.dumps(key, ensure_ascii=False))
            self.rule(f"{name}_{k}: {head} WS? \":\" WS? {self.schema_value(f'{name}_{k}v', sub)}")
            items.append((key, f"{name}_{k}", key in required))
        orders = [items]
        if sorted(items) != items:
            orders.append(sorted(items))
        alts = [self._comma_seq([(n, req) for _, n, req in order]) or "WS?" for order in orders]
        self.rule(f'{name}: "{{" WS? (' + " | ".join(alts) + ') WS? "}"')
        return name

    @staticmethod
    def _comma_seq(items) -> str:
        """``items`` (rule, required) in order, a comma only between the ones written."""
        def rest(k):
            return " ".join(f'(WS? "," WS? {n})' + ("" if req else "?") for n, req in items[k:])

        def first(k):
            if k == len(items):
                return ""
            n, req = items[k]
            head = f"{n} {rest(k + 1)}".strip()
            if req:
                return head
            tail = first(k + 1)
            return f"({head} | {tail})" if tail else f"({head})?"

        return first(0)

    def py_lexemes(self) -> None:
        """Python literals as the parser reads a pythonic value: quoted strings (no text that would close
        the call inside them), numbers, constants, and lists/dicts of them."""
        lay = self.lay
        name = r"[A-Za-z_][A-Za-z0-9_.\-]*"
        closes = [rf",{WS_CHARS}*{name}\("] + ([f"{WS_CHARS}*{rx(lay.section_end)}"] if lay.section_end else [])
        self._py_close = rf"\)(?:{'|'.join(closes)})"
        never = rf" & ~/(?s:.*){self._py_close}(?s:.*)/"
        for rule, q in (("PYQ", "'"), ("PYD", '"')):
            self.rule(f"{rule}: /{q}(?:[^{q}\\\\]|\\\\(?s:.))*{q}/{never}")
        self.rule(r"PYNUM: /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/")
        self.rule("PYCONST: /(?:True|False|None|true|false|null)/")
        self.rule("py_val: PYQ | PYD | PYNUM | PYCONST | py_list | py_dict")
        self.rule('py_list: "[" WS? (py_val (WS? "," WS? py_val)*)? WS? "]"')
        self.rule('py_dict: "{" WS? (py_kv (WS? "," WS? py_kv)*)? WS? "}"')
        self.rule('py_kv: (PYQ | PYD) WS? ":" WS? py_val')

    def py_value(self, name: str, sub: dict) -> str:
        """One pythonic value of schema ``sub``: scalars by their type, strings in the template's quote,
        lists and dicts as Python literals (JSON is one too; their items unconstrained), or every value
        as JSON where the template writes them with ``tojson``."""
        lay = self.lay
        self.py_lexemes()
        t = sub.get("type") if isinstance(sub, dict) else None
        if lay.py_json:  # JSON values (tojson), whose strings must not close the call either
            self.value_style(never_rx=self._py_close)
            return self.schema_value(f"{name}_v", sub or {})
        if t == "string":
            enum = sub.get("enum")
            if isinstance(enum, list) and enum and all(isinstance(e, str) and lay.py_quote not in e and "\\" not in e for e in enum):
                return "(" + " | ".join(lit(lay.py_quote + e + lay.py_quote) for e in enum) + ")"
            return "PYQ" if lay.py_quote == "'" else "PYD"
        if t == "integer":
            return "/-?[0-9]+/"
        if t == "number":
            return "PYNUM"
        if t == "boolean":
            return "/(?:True|False|true|false)/"
        if t == "null":
            return "/(?:None|null)/"
        return {"array": "py_list", "object": "py_dict"}.get(t, "py_val")  # JSON or Python literals alike

    def py_args(self, i: int) -> str:
        """``key=value`` pairs of tool ``i`` in the schema's order, commas only between pairs written."""
        schema = parameters(self.fns[i])
        props = list((schema.get("properties") or {}).items())
        required = set(schema.get("required") or [])
        items = []
        for k, (key, sub) in enumerate(props):
            name = f"p{i}_{k}"
            self.rule(f"{name}: {self.lit(key + '=')} {self.py_value(name, sub)}")  # the parser reads no space after '='
            items.append((name, key in required))

        return self._comma_seq(items)

    def closers(self) -> list[str]:
        """The texts that end a call (its end, the section's, the next call's opener, reasoning's opener,
        the turn's end) and each one's first chunk (``</function>`` of ``</function>\n</tool_call>``):
        a value holding one would end the call early where the parser does not read the value whole.
        Marker text that is an added token needs no such care (a value's lexeme never holds a token)."""
        lay, out = self.lay, []
        opener = lay.header[0] if lay.header and isinstance(lay.header[0], str) else ""
        for m in (lay.call_end, lay.section_end, lay.trigger, opener, lay.reasoning_start, *lay.ends):
            m = m.strip()
            if m:
                out += [m, m.split()[0]]
        return [m for m in dict.fromkeys(out) if not self.tok.has(m)]

    def call(self, i: int, drop: str = "") -> str:
        """Rule name for one tag-format call of tool ``i``."""
        lay = self.lay
        name = f"call{i}{'_first' if drop else ''}"
        if lay.kind == "tagged_json":
            args = f"WS? args{i}"
            if not drop and self.closers():
                # the closer is text a JSON string could hold: strings by rules that cannot hold it
                self.value_style(never=self.closers())
                self.rule(f"args{i}: {self.schema_value(f'j{i}', parameters(self.fns[i]))}")
            elif not drop:
                self.rule(f"args{i}: {json_rule(parameters(self.fns[i]))}")
        elif lay.kind == "tagged_dialect":
            args = f"WS? args{i}"
            if not drop:
                self.value_style(quote=lay.dialect_quote, unquoted=lay.dialect_unquoted, never=[lay.call_end])
                self.rule(f"args{i}: {self.schema_value(f'd{i}', parameters(self.fns[i]))}")
        elif lay.kind == "pythonic":
            args = f"WS? args{i}"
            if not drop:
                self.rule(f"args{i}: {self.py_args(i) or 'WS?'}")
        else:
            args = f"args{i}"
            if not drop:
                self.rule(f"args{i}: {self.kv_args(i) or 'WS?'}")
        end = f" WS? {self.lit(lay.call_end)}" if lay.call_end else ""
        self.rule(f"{name}: {self.header(i, drop)} {args}{end}")
        return name

    def call_object(self) -> str:
        """``obj``: one JSON call object (an anyOf over the tools)."""
        schemas = [call_schema(self.lay, fn) for fn in self.fns]
        one = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
        self.rule(f"obj: {json_rule(one)}")
        return "obj"

    def section(self, consumed: bool) -> str:
        """The tool-call section after the trigger (``consumed``) or from its start."""
        lay, many = self.lay, self.parallel
        sep = f"WS? {self.lit(lay.separator)} " if lay.separator else ""
        if lay.kind == "pythonic":  # the parser reads the next call only where its comma follows the ")"
            sep = f"{self.lit(lay.separator)} "
        lead = ""  # the parser's open takes it, optional; as text it is one lexeme with the whitespace before it
        if lay.lead:  # (free text that could start with it would otherwise swallow that whitespace first)
            lead = f"({self.lit(lay.lead)} WS?)? " if self.tok.has(lay.lead) else f"(/{WS_CHARS}*{rx(lay.lead)}/ WS?)? "
        if lay.kind in ("json_array", "json_key"):
            obj = self.call_object()
            head = "" if consumed else f"WS? {self.lit(lay.call_start)} " if lay.call_start else f"WS? {lead}" if lead else ""
            more = f" (WS? \",\" WS? {obj})*" if many else ""
            end = f" WS? {self.lit(lay.call_end)}" if lay.call_end else ""
            return f"{head}WS? \"[\" WS? {obj}{more} WS? \"]\"{end}"
        if lay.kind == "json":
            obj = self.call_object()
            end = f" WS? {self.lit(lay.call_end)}" if lay.call_end else ""
            if not lay.call_start:
                return f"WS? {lead}{obj}{end}"  # the parser reads a call only at the start of the reply
            first = f"WS? {obj}{end}" if consumed else f"WS? {self.lit(lay.call_start)} WS? {obj}{end}"
            nxt = f"{sep}WS? {self.lit(lay.call_start)} WS? {obj}{end}"
            return first + (f" ({nxt})*" if many else "")
        idx = range(len(self.fns))
        full = "(" + " | ".join(self.call(i) for i in idx) + ")"
        if lay.section_start:
            head = "" if consumed else f"WS? {self.lit(lay.section_start)} "
            first = f"{head}WS? {full}"
        elif consumed:
            first = "(" + " | ".join(self.call(i, drop=lay.trigger) for i in idx) + ")"
        else:
            first = f"WS? {full}"
        more = f" ({sep}WS? {full})*" if many else ""
        end = f" WS? {self.lit(lay.section_end)}" if lay.section_end else ""
        if lay.section_end and not lay.section_start:
            # A closer with no opener is the turn's tail after the calls, and text may come before it
            # (content written after the calls, as the parser reads it).
            end = f" {self.upto('after_calls', [lay.section_end], never_text=[lay.trigger])}"
        return first + more + end

    def write_recipient(self) -> str:
        """Messages under headers: text under a content word, JSON arguments under a tool's name. A
        message runs to the next header marker or the end, so text cannot contain the marker; text is
        lazy up to that marker (a greedy lexeme would swallow the marker's first characters)."""
        lay, hs, he = self.lay, self.lay.trigger, self.lay.header[1]
        self.rule("WS: /[ \\t\\r\\n]+/")
        word = "(" + " | ".join(self.lit(w + he) for w in lay.head_words) + ")"
        h = self.lit(hs)
        self.rule(f"said_mid: {word} {self.upto('mid_text', [hs], avoid=lay.ends)}")
        avoid = [hs, *lay.ends]
        self.rule(f"MTEXT: /(?s:.+)/ & ~/(?s:.*)(?:{'|'.join(rx(m) for m in avoid)})(?s:.*)/")
        self.rule(f"said_last: {word} ({self.upto('last_text', lay.ends, avoid=[hs])} | MTEXT?)")
        mids, lasts = [], []
        for i, fn in enumerate(self.fns):
            self.value_style(never=[hs, *lay.ends])  # the parser ends a message at the next header
            self.rule(f"args{i}: {self.schema_value(f'a{i}', parameters(fn))}")
            self.rule(f"call{i}: {self.lit(fn['name'] + he)} WS? args{i} WS?")
            mids.append(f"call{i} {h}")
            lasts.append(f"call{i}")
        self.rule("call_mid: " + " | ".join(mids))
        self.rule("end: " + " | ".join(self.lit(e) for e in lay.ends))
        self.rule("call_last: (" + " | ".join(lasts) + ") end?")
        if self.choice == "none":
            body = "said_mid* said_last"
        elif self.parallel and self.choice == "auto":
            body = "(said_mid | call_mid)* (said_last | call_last)"
        elif self.parallel:
            body = "said_mid* (call_mid (said_mid | call_mid)* (said_last | call_last) | call_last)"
        elif self.choice == "auto":
            body = "said_mid* (call_mid said_mid* said_last | call_last | said_last)"
        else:
            body = "said_mid* (call_mid said_mid* said_last | call_last)"
        start = body if lay.head_open else f"{h} {body}"
        return "%llguidance {}\nstart: " + start + "\n" + "\n".join(self.rules) + "\n"

    def write(self) -> str:
        lay = self.lay
        if lay.kind == "recipient":
            return self.write_recipient()
        self.rule("WS: /[ \\t\\r\\n]+/")
        ends = list(lay.ends)
        self.rule("tail: WS? end?" if ends or lay.content_start else "tail: WS?")
        if ends or lay.content_start:
            # With wrapped content the parser drops text outside fields: a model may close the turn
            # with its own turn marker (Command R7B's <|END_OF_TURN_TOKEN|> after an action).
            marker = []
            if lay.content_start:
                ids = self.tok.ids(SPECIAL_MARKER)
                marker = [f"<[{','.join(map(str, ids))}]>"] if ids else []
                marker.append(f"/{SPECIAL_MARKER}/")
            self.rule("end: " + " | ".join([self.lit(e) for e in ends] + marker))
        content: list[str] = []
        calls: list[str] = []
        if lay.content_start:
            self.upto("cwrap", [lay.content_end], lead=lay.content_start)
            content += ["cwrap tail", "WS?"]
            if self.choice != "none":
                if not lay.trigger:
                    self.rule("open: WS?")
                elif self.tok.has(lay.trigger):
                    self.rule(f"open: WS? {self.lit(lay.trigger)}")
                else:
                    self.rule(f"open: /{WS_CHARS}*{rx(lay.trigger)}/")
                sec = self.section(consumed=bool(lay.trigger))
                # The wrapped content before the calls, or after them (a template that writes its answer
                # after the calls: ``[CALLS]…[ANSWER]…[/ANSWER]``); not both: the parser would keep the second.
                calls += [f"cwrap? open {sec} tail", f"open {sec} WS? cwrap tail"]
                if lay.trigger and markers(lay.trigger):
                    # Content written bare before the calls (a template that wraps only replies without
                    # calls): the parser opens it at the reply's start when the first character begins no
                    # marker that may stand there, and closes it where the call's marker opens.
                    firsts = sorted({m.strip()[0] for m in [lay.content_start, lay.trigger, lay.reasoning_start, *ends] if m and m.strip()})
                    first = "[ \\t\\r\\n]*[^ \\t\\r\\n" + "".join(rx(ch) for ch in firsts) + "]"
                    calls.append(f"{self.upto('text_bare', [lay.trigger], first=first)} {self.section(consumed=True)} tail")
        elif lay.trigger:
            if ends:
                content.append(self.upto("text_end", ends, avoid=[lay.trigger]))
            avoid = [m for m in [lay.trigger, *ends] if self.tok.has(m)]
            self.rule("TEXT: /(?s:.+)/" + (f" & ~/(?s:.*)(?:{'|'.join(rx(m) for m in avoid)})(?s:.*)/" if avoid else ""))
            content.append("TEXT?")
            if self.choice != "none":
                calls.append(f"{self.upto('text_call', [lay.trigger])} {self.section(consumed=True)} tail")
        else:  # calls only at the very start: content must not look like one (nor start with the call's lead)
            first = "[ \\t\\r\\n]*[^{\\[ \\t\\r\\n]"
            not_lead = f" & ~/{WS_CHARS}*{rx(lay.lead)}(?s:.*)/" if lay.lead else ""
            if ends:
                content.append(self.upto("text_end", ends, first=first, not_start=not_lead))
            avoid = [m for m in ends if self.tok.has(m)]
            self.rule(f"TEXT: /{first}(?s:.*)/" + (f" & ~/(?s:.*)(?:{'|'.join(rx(m) for m in avoid)})(?s:.*)/" if avoid else "") + not_lead)
            content.append("TEXT?")
            if self.choice != "none":
                calls.append(f"{self.section(consumed=False)} tail")
        body = calls if self.choice not in ("auto", "none") else content + calls
        self.rule("body: " + "\n    | ".join(body))
        starts = []
        if lay.reasoning_end and lay.reasoning_open:
            if self.after_reasoning:
                starts.append("body")  # the engine applies the grammar after its reasoning parser saw the end
            else:
                starts.append(f"{self.upto('think', [lay.reasoning_end])} body")
        elif lay.reasoning_end and lay.reasoning_start:
            starts.append(f"{self.upto('think', [lay.reasoning_end], lead=lay.reasoning_start)}? body")
        else:
            starts.append("body")
        if lay.reasoning_implicit_end and lay.reasoning_end and lay.trigger and self.choice != "none":
            # Reasoning that the call's opener ends (no end marker): the grammar runs on into the call.
            # Where the engine's gate opens at that opener (vLLM: whenever the prompt has not settled
            # reasoning), the grammar starts right after it.
            if self.after_reasoning:
                starts.append(f"{self.section(consumed=True)} tail")
            if lay.reasoning_open:
                if not self.after_reasoning:
                    starts.append(f"{self.upto('think_call', [lay.trigger])} {self.section(consumed=True)} tail")
            elif lay.reasoning_start:
                starts.append(f"{self.upto('think_call', [lay.trigger], lead=lay.reasoning_start)} {self.section(consumed=True)} tail")
        return "%llguidance {}\nstart: " + "\n    | ".join(starts) + "\n" + "\n".join(self.rules) + "\n"


def call_schema(lay: Layout, fn: dict) -> dict:
    """The JSON schema of one call object of tool ``fn`` in a JSON layout (keys in the rendered order)."""
    if lay.kind == "json_key":
        return {"type": "object", "properties": {fn["name"]: parameters(fn)}, "required": [fn["name"]], "additionalProperties": False}
    tree: dict = {}
    first = next((p for p in (lay.name_path, lay.args_path, lay.id_path) if p[:1] == (lay.first_key,)), None)
    if first is None and lay.extra_key:
        tree[lay.extra_key] = ({}, False)
    elif first:
        tree[first[0]] = None  # a placeholder keeping the rendered first key first
    tree.setdefault("type", ({"type": "string"}, False))  # OpenAI-style objects carry it ("function")
    for path, leaf, req in ((lay.name_path, {"const": fn["name"]}, True), (lay.args_path, parameters(fn), True), (lay.id_path, {"type": "string"}, False)):
        node = tree
        for key in path[:-1]:
            if node.get(key) is None:
                node[key] = ({}, True)
            node = node[key][0]
        if path:
            node[path[-1]] = (leaf, req)
    return _schema(tree)


def _schema(tree: dict) -> dict:
    props, required = {}, []
    for key, (node, req) in tree.items():
        props[key] = _schema(node) if isinstance(node, dict) and node and all(isinstance(v, tuple) for v in node.values()) else node
        if req:
            required.append(key)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def lark_grammar(lay: Layout, fns: list[dict], *, tool_choice: str = "auto", parallel: bool = True,
                 tokens: dict[str, int] | None = None, after_reasoning: bool = False) -> str:
    """The Lark grammar of one assistant turn for these tools (``fns``: function definitions).

    ``tokens``: the tokenizer's added tokens (text -> id), written in token syntax where a marker is
    one. ``after_reasoning``: the form for an engine that applies the grammar only once its reasoning
    parser has seen reasoning end (vLLM without ``enable_in_reasoning``): where the prompt leaves
    reasoning open, the grammar starts after the reasoning's end instead of inside it."""
    if not fns:
        raise NoGrammar("no tools to call")
    return _Writer(lay, fns, tool_choice, parallel, Tokens(tokens), after_reasoning).write()
