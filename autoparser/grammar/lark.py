"""Layout -> a Lark grammar as llguidance reads it (vLLM's ``guidance`` backend, SGLang, llama.cpp).

Free text runs in lazy lexemes that end at the first tool-call trigger or end marker, so text
before a call can never contain the call's opener (the response_template opens a call there too).
Arguments are ``%json`` with each tool's schema; tagged arguments are one rule per parameter in the
schema's order, a string value raw up to the value's end marker, other values JSON. Markers are
matched as text; whitespace between structural parts is free, as the parser's patterns allow."""

from __future__ import annotations

import json

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
    """``%json`` for a schema. Templates that dump with ``ensure_ascii`` write ``\\u00fc``, which
    llguidance refuses unless general unicode escapes are on (the parser decodes them alike)."""
    return "%json " + json.dumps({**schema, "x-guidance": {"json_allow_general_unicode_escapes": True}}, ensure_ascii=False)


def _alt(texts) -> str:
    texts = list(texts)
    return rx(texts[0]) if len(texts) == 1 else "(?:" + "|".join(rx(t) for t in texts) + ")"


def _is_string(schema: dict) -> bool:
    t = schema.get("type") if isinstance(schema, dict) else None
    return t == "string" or (isinstance(t, list) and "string" in t)


class _Writer:
    def __init__(self, lay: Layout, fns: list[dict], tool_choice: str, parallel: bool):
        self.lay, self.fns, self.choice, self.parallel = lay, fns, tool_choice, parallel
        self.rules: list[str] = []

    def rule(self, text: str) -> None:
        self.rules.append(text)

    def header(self, i: int, drop: str = "") -> str:
        """Tool ``i``'s call header; ``drop``: the trigger the free text already consumed."""
        parts: list[str] = []
        for item in self.lay.header:
            if item == NAME:
                parts.append(lit(self.fns[i]["name"]))
            elif isinstance(item, tuple):
                parts.append(f"/{item[1]}/")
            else:
                text = item[len(drop):] if drop and item.startswith(drop) else item
                drop = ""
                if text:
                    parts.append(lit(text))
        return " ".join(parts)

    def kv_args(self, i: int) -> str:
        lay, schema = self.lay, parameters(self.fns[i])
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out = []
        for k, (key, sub) in enumerate(props.items()):
            name = f"p{i}_{k}"
            suffix = lay.key_suffix
            if not _is_string(sub) and "true" in suffix:
                suffix = suffix.replace("true", "false")  # DeepSeek V3.2: string="false" on non-strings
            head = lit(lay.key_prefix + key + suffix)
            if _is_string(sub):
                self.rule(f"{name}_v[lazy]: /(?s:.*){rx(lay.value_suffix)}/")
                self.rule(f"{name}: {head} {name}_v")
            elif isinstance(sub, dict) and sub.get("type") == "boolean":
                self.rule(f"{name}: {head} WS? /(true|false|True|False)/ WS? {lit(lay.value_suffix)}")
            else:
                self.rule(f"{name}: {head} WS? {name}_v WS? {lit(lay.value_suffix)}")
                self.rule(f"{name}_v: {json_rule(sub or {})}")
            sep = f"WS? {lit(lay.arg_separator)} " if lay.arg_separator and out else ""
            out.append(f"({sep}WS? {name})" + ("" if key in required else "?"))
        return " ".join(out)

    def call(self, i: int, drop: str = "") -> str:
        """Rule name for one tag-format call of tool ``i``."""
        lay = self.lay
        name = f"call{i}{'_first' if drop else ''}"
        if lay.kind == "tagged_json":
            args = f"WS? args{i}"
            if not drop:
                self.rule(f"args{i}: {json_rule(parameters(self.fns[i]))}")
        else:
            args = f"args{i}"
            if not drop:
                self.rule(f"args{i}: {self.kv_args(i) or 'WS?'}")
        end = f" WS? {lit(lay.call_end)}" if lay.call_end else ""
        self.rule(f"{name}: {self.header(i, drop)} {args}{end}")
        return name

    def call_object(self) -> str:
        """``obj``: one JSON call object (an anyOf over the tools)."""
        lay, schemas = self.lay, []
        for fn in self.fns:
            if lay.kind == "json_key":
                schemas.append({"type": "object", "properties": {fn["name"]: parameters(fn)}, "required": [fn["name"]], "additionalProperties": False})
                continue
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
            schemas.append(_schema(tree))
        one = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
        self.rule(f"obj: {json_rule(one)}")
        return "obj"

    def section(self, consumed: bool) -> str:
        """The tool-call section after the trigger (``consumed``) or from its start."""
        lay, many = self.lay, self.parallel
        sep = f"WS? {lit(lay.separator)} " if lay.separator else ""
        if lay.kind in ("json_array", "json_key"):
            obj = self.call_object()
            head = "" if consumed or not lay.call_start else f"WS? {lit(lay.call_start)} "
            more = f" (WS? \",\" WS? {obj})*" if many else ""
            end = f" WS? {lit(lay.call_end)}" if lay.call_end else ""
            return f"{head}WS? \"[\" WS? {obj}{more} WS? \"]\"{end}"
        if lay.kind == "json":
            obj = self.call_object()
            end = f" WS? {lit(lay.call_end)}" if lay.call_end else ""
            if not lay.call_start:
                return f"WS? {obj}{end}"  # the parser reads a call only at the start of the reply
            first = f"WS? {obj}{end}" if consumed else f"WS? {lit(lay.call_start)} WS? {obj}{end}"
            nxt = f"{sep}WS? {lit(lay.call_start)} WS? {obj}{end}"
            return first + (f" ({nxt})*" if many else "")
        idx = range(len(self.fns))
        full = "(" + " | ".join(self.call(i) for i in idx) + ")"
        if lay.section_start:
            head = "" if consumed else f"WS? {lit(lay.section_start)} "
            first = f"{head}WS? {full}"
        elif consumed:
            first = "(" + " | ".join(self.call(i, drop=lay.trigger) for i in idx) + ")"
        else:
            first = f"WS? {full}"
        more = f" ({sep}WS? {full})*" if many else ""
        end = f" WS? {lit(lay.section_end)}" if lay.section_end else ""
        return first + more + end

    def write(self) -> str:
        lay = self.lay
        self.rule("WS: /[ \\t\\r\\n]+/")
        ends = list(lay.ends)
        self.rule("tail: WS? end?" if ends or lay.content_start else "tail: WS?")
        if ends or lay.content_start:
            # With wrapped content the parser drops text outside fields: a model may close the turn
            # with its own turn marker (Command R7B's <|END_OF_TURN_TOKEN|> after an action).
            marker = [f"/{SPECIAL_MARKER}/"] if lay.content_start else []
            self.rule("end: " + " | ".join([lit(e) for e in ends] + marker))
        content: list[str] = []
        calls: list[str] = []
        if lay.content_start:
            self.rule(f"cwrap[lazy]: /{WS_CHARS}*{rx(lay.content_start)}(?s:.*){_alt([lay.content_end])}/")
            content += ["cwrap tail", "WS?"]
            if self.choice != "none":
                self.rule(f"open: /{WS_CHARS}*{rx(lay.trigger)}/" if lay.trigger else "open: WS?")
                calls.append(f"cwrap? open {self.section(consumed=bool(lay.trigger))} tail")
        elif lay.trigger:
            if ends:
                self.rule(f"text_end[lazy]: /(?s:.*){_alt(ends)}/")
                content.append("text_end")
            self.rule("TEXT: /(?s:.+)/")
            content.append("TEXT?")
            if self.choice != "none":
                self.rule(f"text_call[lazy]: /(?s:.*){rx(lay.trigger)}/")
                calls.append(f"text_call {self.section(consumed=True)} tail")
        else:  # calls only at the very start: content must not look like one
            first = "[ \\t\\r\\n]*[^{\\[ \\t\\r\\n]"
            if ends:
                self.rule(f"text_end[lazy]: /{first}(?s:.*){_alt(ends)}/")
                content.append("text_end")
            self.rule(f"TEXT: /{first}(?s:.*)/")
            content.append("TEXT?")
            if self.choice != "none":
                calls.append(f"{self.section(consumed=False)} tail")
        body = calls if self.choice not in ("auto", "none") else content + calls
        self.rule("body: " + "\n    | ".join(body))
        if lay.reasoning_end and lay.reasoning_open:
            self.rule(f"think[lazy]: /(?s:.*){rx(lay.reasoning_end)}/")
            start = "start: think body"
        elif lay.reasoning_end and lay.reasoning_start:
            self.rule(f"think[lazy]: /{WS_CHARS}*{rx(lay.reasoning_start)}(?s:.*){rx(lay.reasoning_end)}/")
            start = "start: think? body"
        else:
            start = "start: body"
        return "%llguidance {}\n" + start + "\n" + "\n".join(self.rules) + "\n"


def _schema(tree: dict) -> dict:
    props, required = {}, []
    for key, (node, req) in tree.items():
        props[key] = _schema(node) if isinstance(node, dict) and node and all(isinstance(v, tuple) for v in node.values()) else node
        if req:
            required.append(key)
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def lark_grammar(lay: Layout, fns: list[dict], *, tool_choice: str = "auto", parallel: bool = True) -> str:
    """The Lark grammar of one assistant turn for these tools (``fns``: function definitions)."""
    if not fns:
        raise NoGrammar("no tools to call")
    return _Writer(lay, fns, tool_choice, parallel).write()
