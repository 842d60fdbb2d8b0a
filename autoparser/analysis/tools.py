"""Tool-call analysis (llama.cpp's T1-T7 and A1-A2, by needles inside diffs).

T1 diffs an empty turn against one call to isolate the tool text and classify it: the function
name inside a JSON value is JSON_NATIVE; a name outside JSON with JSON arguments is TAG_WITH_JSON;
neither is TAG_WITH_TAGGED. T2 compares one call with two to split section markers from per-call
markers and find the separator; the two calls also use two names, two ids and one vs two arguments
(T3, T5, T7, A1, A2), so the repeating unit's parts fall out of one comparison."""

from __future__ import annotations

import dataclasses
import json
import re as std_re
from collections import Counter

import regex as re

from .diff import MARKER, diff, glued_header, leading_markers, markers, one_word_apart, prefix_len
from . import reads
from .probes import ARG_A, ARG_B, ARG_C, CONTENT, FN_A, FN_B, ID_A, ID_B, RESULT, TOOLS, USER, USER2, VAL_A, VAL_B, Prober, assistant, call, tool_result
from ..errors import TemplateError
from .model import Arguments, Content, Reasoning, Tools, Turn
from .tagged import _json_values, _tagged


def _find_path(value, target, path=()):
    """Path to ``target`` inside ``value`` (dict keys / list indices); ("<key>",) marks a dict key."""
    if value == target:
        return path
    if isinstance(value, dict):
        for k, v in value.items():
            if k == target and isinstance(target, str):
                return path + ("<key>",)
            p = _find_path(v, target, path + (k,))
            if p is not None:
                return p
    elif isinstance(value, list):
        for i, v in enumerate(value):
            p = _find_path(v, target, path + (i,))
            if p is not None:
                return p
    return None


def _tool_text(pr: Prober, calls: list[dict], named: bool = True) -> str | None:
    """What the calls add to an empty turn; ``named=False``: calls whose names the template does not
    render (only their arguments)."""
    mode = pr.modes[0]
    for m in [mode] + [x for x in pr.modes if x != mode]:
        empty = pr.generation(assistant(""), m)
        withc = pr.generation(assistant(None, calls=calls), m)
        if withc and (all(c["function"]["name"] in withc.full for c in calls) if named else VAL_A in withc.full[len(withc.prompt) :]):
            # A template may refuse an empty message (Ministral) or drop it (Nemotron Nano v2 folds a
            # last message into the prompt): the prompt alone is then the baseline.
            dropped = empty is None or withc.prompt.startswith(empty.full)
            d = diff(withc.prompt if dropped else empty.full, withc.full)
            # The cut backs off over a marker glued to JSON (``<[role_assistant]>[{…``): when both sides
            # start with the same marker run, it belongs to the turn, not to the calls.
            lead = leading_markers(d.left)
            if lead and d.left == lead and d.right.startswith(lead) and d.right[len(lead) :].lstrip()[:1] in ("{", "["):
                return d.right[len(lead) :]
            # The cut also backs off over the prompt's last marker when the empty turn glues a word to it
            # (Hunyuan: ``<|extra_0|>助手：`` against ``<|extra_0|><tool_calls>``): what the prompt already
            # wrote is not the calls' (a model never writes it again).
            past = len(withc.prompt) - len(d.prefix)
            if 0 < past < len(d.right) and withc.full.startswith(withc.prompt) and not d.right[:past].strip(" \n") == "" \
                    and d.right[:past] == leading_markers(d.right[:past]):
                return d.right[past:]
            return d.right
    return None


def _section_kept(pr: Prober, calls: list[dict], text: str, log: list[str]) -> str:
    """Some templates render an empty message as a tool section with no calls
    (``<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>``), so the empty-message baseline hides the section
    markers. A content-only message is the second baseline: when it differs from the calls by the
    content needle alone and its diff is the calls plus markers only, those markers are the section."""
    for m in pr.modes:
        withc = pr.generation(assistant(None, calls=calls), m)
        cont = pr.generation(assistant(CONTENT), m)
        if not (withc and cont and FN_A in withc.full):
            continue
        d = diff(cont.full, withc.full)
        left = d.left.rstrip()
        lead = left[: -len(CONTENT)] if left.endswith(CONTENT) else None  # a marker glued to the needle
        if lead is None or not d.right.startswith(lead.rstrip()):
            return text
        right = d.right[len(lead.rstrip()) :]
        extra = right.replace(text, "", 1) if text in right else None
        if extra and not MARKER.sub("", extra).strip():
            log.append(f"T1 an empty message renders the tool section; with it: {right!r}")
            return right
        return text
    return text


def _after_reasoning(text: str | None, r: Reasoning) -> str | None:
    """Drop an (empty) reasoning block the template writes before the calls."""
    if text and r.end and r.end in text and text.find(r.end) < text.find(FN_A):
        return text[text.find(r.end) + len(r.end) :]
    return text


def analyze_tools(pr: Prober, turn: Turn, r: Reasoning, c: Content, log: list[str]) -> Tools:
    t = _analyze_tools(pr, turn, r, c, log)
    if t.format == "NONE" or t.family in ("unknown", "nameless"):
        return t
    return _end_variants(pr, turn, _header_again(pr, t, log), log)


def _header_again(pr: Prober, t: Tools, log: list[str]) -> Tools:
    """T9: calls written as a message of their own under a role header that the generation prompt begins
    (HyperCLOVA X: the prompt ends ``<|im_start|>assistant``, a call continues it `` -> tool/function_call\n[``).
    After another message of the reply (content, reasoning) the model writes that header again in full, as
    history does (``…<|im_end|>\n<|im_start|>assistant -> tool/function_call\n[``): the header and the opener
    together are another spelling of the opener."""
    start = t.call_start or t.section_start
    if not pr.modes or not start.strip() or MARKER.match(start.strip()) or start[:1].isalnum():
        return t
    # (the prompt from the plain turn's generation, which the reasoning analysis rendered already)
    plain = pr.generation(assistant(), pr.modes[0])
    head = glued_header(plain.prompt) if plain else ""
    g = pr.generation(assistant(CONTENT, calls=[call()]), pr.modes[0]) if head else None
    if not (head and g):
        return t
    spelled = head + start.rstrip()
    reply = g.full[len(g.prompt):] if g.full.startswith(g.prompt) else ""
    if spelled not in reply or spelled.strip() in t.call_start_variants:
        return t
    log.append(f"T9 the prompt ends {head!r} and a call continues it with {start!r}: after another message "
               f"the call is written {spelled!r}")
    return dataclasses.replace(t, call_start_variants=(*t.call_start_variants, spelled.strip()))


def _end_variants(pr: Prober, turn: Turn, t: Tools, log: list[str]) -> Tools:
    """End-of-turn markers a template writes after a tool-call turn in another setting of its context
    (Llama 3.1 ends such a turn with ``<|eom_id|>``, end of message: the model waits for the tool's
    result, once ``builtin_tools`` is defined; otherwise with ``<|eot_id|>``). Each other name the
    template reads from its context (``reads.context_names``) is given as defined but empty (``()``):
    where that turns one marker after the call into another, and the rest of the turn's end stays as it
    was, the new marker is a variant of the turn's end that models write (``Tools.end_markers``)."""
    msgs = [{"role": "user", "content": USER}, assistant(None, calls=[call()])]
    base = pr.try_render(msgs)
    if not base or VAL_A not in base:
        return t
    tail = base[base.rfind(VAL_A) + len(VAL_A):]
    ends = list(t.end_markers)
    for name in reads.context_names(pr.r.source):
        if name in pr.tool_vars or name in pr.token_vars:  # already given (the tools under another name)
            continue
        other = pr.try_render(msgs, mode={**pr.modes[0], name: ()})
        if not other or VAL_A not in other:
            continue
        tail2 = other[other.rfind(VAL_A) + len(VAL_A):]
        k = prefix_len(tail, tail2)
        for m in MARKER.finditer(tail):  # from the marker's start, if k is inside one (those after it: no matter)
            if m.start() > k:
                break
            if k < m.end():
                k = m.start()
                break
        old, new = MARKER.match(tail, k), MARKER.match(tail2, k)
        if not (old and new) or old.group(0) not in turn.end_markers or new.group(0) in base or new.group(0) in ends:
            continue
        if tail[old.end():] == tail2[new.end():]:  # only the marker differs after the call
            ends.append(new.group(0))
            log.append(f"T8 end of a tool-call turn with {name} defined: {new.group(0)!r} where {old.group(0)!r} stands")
    return dataclasses.replace(t, end_markers=tuple(ends)) if len(ends) > len(t.end_markers) else t


def _analyze_tools(pr: Prober, turn: Turn, r: Reasoning, c: Content, log: list[str]) -> Tools:
    one = _tool_text(pr, [call()])
    if not one or FN_A not in one:
        return _nameless(pr, r, log)
    two_calls = [call(), call(FN_B, {ARG_A: VAL_B, ARG_B: VAL_A}, ID_B)]
    two = _tool_text(pr, two_calls)
    if two and FN_B not in two:
        two = None
    one, two = _section_kept(pr, [call()], one, log), _section_kept(pr, two_calls, two, log) if two else two
    log.append(f"T1 one call: {one!r}")
    log.append(f"T2 two calls: {two!r}")
    one, two = _after_reasoning(one, r), _after_reasoning(two, r)
    values = _json_values(one)
    for start, end, value in values:
        if _find_path(value, FN_A) is not None:
            t = _json_native(one, two, start, end, value, turn, log)
            return _content_opener(pr, r, _call_lead(pr, r, t, log), log)
    t = _repr_json_native(pr, r, one, two, turn, log)
    if t is not None:
        return t
    t = _pythonic(one, two, turn, log) or _tagged(one, two, turn, log)
    if t.family == "pythonic":
        t = _pythonic_json_values(pr, r, t, log)
    t = _header_id(pr, one, t, log)
    return _typed_attribute(pr, r, _python_literals(pr, r, t, log), log)


def _literal_args() -> dict:
    """A2's and A3's one call: a null, a list and an object argument (fresh each time: a render may hold it)."""
    return {ARG_A: None, ARG_B: [VAL_B], ARG_C: {"k": VAL_A}}


def _typed_attribute(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Tools:
    """A3: a tagged argument whose tag names its value's type (Kimi K3's ``<|open|>argument key="k"
    type="string"<|sep|>``, ``type="array"`` before a list): the probes' values are strings, so the key
    suffix the diffs found holds the string's word. The one-call rendering with a list value (the one
    ``_python_literals`` made) shows the suffix before a value that is no string; where the two differ in
    one word, that word names the type, and the emitter reads the other words' values as JSON."""
    a = t.arguments
    if a.kind != "tagged" or not a.key_suffix:
        return t
    text = _after_reasoning(_tool_text(pr, [call(args=_literal_args())]), r) or ""  # (rendered by _python_literals)
    k = text.find(a.key_prefix.strip() + ARG_B)
    v = text.find(VAL_B, k) if k >= 0 else -1
    if v < 0:
        return t
    start = k + len(a.key_prefix.strip()) + len(ARG_B)
    lead = text[start:v]
    other = lead[: lead.rfind("[")] if "[" in lead else ""
    if not other or other == a.key_suffix or one_word_apart(a.key_suffix, other) is None:
        return t
    log.append(f"A3 the argument's tag names its value's type: {a.key_suffix!r} before a string, {other!r} before a list")
    return dataclasses.replace(t, arguments=dataclasses.replace(a, typed_key_suffix=other))


def _nameless(pr: Prober, r: Reasoning, log: list[str]) -> Tools:
    """Calls the template renders without the function name (a header carrying only the call id,
    ``<|tool_call_begin|>ID<|tool_call_argument_begin|>{…}``): no parser can give the name back.
    When a marker opens them, the section is recognised so its text does not spill into content,
    and the analysis says the calls cannot be parsed."""
    text = _tool_text(pr, [call()], named=False)
    if text and r.end and r.end in text and text.find(r.end) < text.find(VAL_A):
        text = text[text.find(r.end) + len(r.end) :]
    ms = markers(text or "")
    if text and VAL_A in text and not ms:
        log.append(f"T1 calls rendered with neither their names nor a marker: {text!r}; {BARE_VALUES}")
        return Tools(unseen=(BARE_VALUES,))
    if not text or not ms or not text.lstrip().startswith(ms[0]):
        unseen = _unseen_calls(pr, log)
        if not unseen:
            log.append("T1 no tool calls rendered -> NONE")
        return Tools(unseen=unseen)
    end = ms[-1] if len(ms) > 1 and text.rstrip().endswith(ms[-1]) else ""
    why = "tool calls are rendered without the function name (the call header carries only the call id): they cannot be parsed back and are dropped from the message"
    log.append(f"T1 calls rendered without their names: {text!r} -> section {ms[0]!r}…{end!r}; {why}")
    return Tools(format="TAG_WITH_JSON", family="nameless", section_start=ms[0], section_end=end, uncovered=(why,))


BARE_VALUES = "tool calls render only their argument values, with neither the function name nor a marker: they cannot be parsed back and arrive as content"
HISTORY_ONLY = "tool calls render only in earlier turns (the last assistant turn drops them), so their format cannot be read from a reply: calls a model writes arrive as content"
MARKER_ONLY = ("a turn with tool calls renders a marker of its own but neither the calls' names nor their arguments, so their "
               "format cannot be read: calls a model writes arrive as content")
FLAT_ONLY = ("tool calls render only in the flat shape {\"name\", \"arguments\"} (no \"function\" key), which callers do not send: "
             "the template drops standard calls, and calls a model writes arrive as content")


def _unseen_calls(pr: Prober, log: list[str]) -> tuple[str, ...]:
    """Why a template that renders no call in the last turn still renders calls somewhere: in an
    earlier turn (a call, its result, then another user turn), or only when the call is written flat
    (``{"name", "arguments"}`` without ``function``). Either way the analysis cannot read the format
    from a reply, and says so. A call counts as rendered when its name and argument value appear more
    often than in the same conversation with a content-only turn (the system prompt lists the tools)."""
    flat = {"id": ID_A, "type": "function", "name": FN_A, "arguments": {ARG_A: VAL_A}}

    def convo(turn: dict, earlier: bool) -> list[dict]:
        head = [{"role": "user", "content": USER}, turn]
        return head + [tool_result(), {"role": "user", "content": USER2}] if earlier else head

    def rendered(c: dict, earlier: bool) -> bool:
        # (a call's turn with no content, or with an empty one where the template reads the content as a string:
        # ``content.strip()`` raises on None)
        with_call = None
        for empty in (None, ""):
            try:
                with_call = pr._render(convo({"role": "assistant", "content": empty, "tool_calls": [c]}, earlier), tools=TOOLS)
                break
            except TemplateError:
                continue
        try:
            base = pr._render(convo({"role": "assistant", "content": CONTENT}, earlier), tools=TOOLS)
        except TemplateError:
            return False
        return with_call is not None and with_call.count(FN_A) > base.count(FN_A) and VAL_A in with_call

    if rendered(call(), True):
        log.append(f"T1 calls render only in earlier turns: {HISTORY_ONLY}")
        return (HISTORY_ONLY,)
    if rendered(flat, False) or rendered(flat, True):
        log.append(f"T1 calls render only flat: {FLAT_ONLY}")
        return (FLAT_ONLY,)
    # A turn with calls that writes a marker of its own but nothing of the calls (``[TOOL_CALLS]`` and the
    # content): the template knows such turns, not their calls' format.
    try:
        with_call = pr._render(convo({"role": "assistant", "content": CONTENT, "tool_calls": [call()]}, False), tools=TOOLS)
        base = pr._render(convo({"role": "assistant", "content": CONTENT}, False), tools=TOOLS)
    except TemplateError:
        return ()
    extra = Counter(markers(with_call)) - Counter(markers(base))
    if extra and with_call.count(FN_A) <= base.count(FN_A) and with_call.count(VAL_A) <= base.count(VAL_A):
        log.append(f"T1 a turn with calls writes {', '.join(extra)} but none of its calls: {MARKER_ONLY}")
        return (MARKER_ONLY,)
    return ()


def _call_lead(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Tools:
    """A separator between calls that is no whitespace (a literal ``\\n`` the template escaped twice)
    may be written before every call: then it also stands between content and the first call, and
    belongs to the call's opener there. Right after the generation prompt the prompt ends with it.
    Compared on a content + call rendering, rendered only when the separator is no whitespace."""
    sep, start = t.call_separator, t.call_start
    if not (sep.strip() and start.strip()) or t.shared_start or MARKER.fullmatch(sep.strip()):
        return t
    for _, g in pr.generations(assistant(CONTENT, calls=[call()])):
        text = _after_reasoning(g.text, r) or ""
        i, j = text.find(CONTENT), text.find(start)
        if 0 <= i < j and text[i + len(CONTENT) : j] == sep:
            log.append(f"T2 the separator {sep!r} also stands between content and the first call: it leads every call")
            return dataclasses.replace(t, call_lead=sep)
    return t


def _content_opener(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Tools:
    """An opener made of several markers with nothing between them (``<|python_start|><|python_end|>``)
    may be a wrapper the template fills with the content written with the calls. Compared on a
    content + call rendering, rendered only for such openers."""
    start = t.call_start.strip()
    ms = markers(start)
    if len(ms) < 2 or MARKER.sub("", start).strip():
        return t
    for _, g in pr.generations(assistant(CONTENT, calls=[call()])):
        text = _after_reasoning(g.text, r) or ""
        i = text.find(CONTENT)
        if i < 0:
            continue
        before, after = text[:i].rstrip(), text[i + len(CONTENT) :].lstrip()
        for k in range(1, len(ms)):
            head = start[: start.find(ms[k - 1]) + len(ms[k - 1])]
            rest = start[len(head) :].strip()
            if before.endswith(head) and after.startswith(rest):
                log.append(f"T2 content with calls is written inside the opener: {head!r} content {rest!r}")
                return dataclasses.replace(t, content_opener=head)
    return t


def _header_id(pr: Prober, one: str, t: Tools, log: list[str]) -> Tools:
    """A header built from the name and an index (``functions.fn:0``) is the call's id when the
    template writes it again as the id its tool response answers: capture it as ``id``."""
    if not t.index_in_header or t.id_in_header or not t.header_pattern:
        return t
    m = re.search(t.header_pattern, one)
    if not m:
        return t
    head = m.group(0)
    lead = leading_markers(head)
    tail = head[m.end("name") - m.start() :]
    ms = markers(tail)
    cut = tail.find(ms[0]) if ms else len(tail)
    header_id = head[len(lead) : m.end("name") - m.start() + cut]
    convo = [{"role": "user", "content": USER}, assistant(None, calls=[call()])]
    answered = pr.try_render(convo + [tool_result()])
    if not header_id.strip() or not answered or RESULT not in answered or answered[answered.find(head) + len(head) :].find(header_id) < 0:
        return t
    # The header regex with the id part wrapped: literal prefix, the name, the digits, then the markers.
    prefix = re.escape(head[len(lead) : m.start("name") - m.start()])
    suffix = re.sub(r"\d+", r"\\d+", re.escape(tail[:cut]))
    pattern = re.escape(lead) + "(?P<id>" + prefix + r"(?P<name>[\w.\-/]+)" + suffix + ")" + _tail_pattern(t.header_pattern, tail[cut:])
    if not re.fullmatch(pattern, head):
        return t
    log.append(f"T6 the header {header_id!r} is the id the tool response answers -> {pattern!r}")
    return dataclasses.replace(t, header_pattern=pattern, id_in_header=True)


def _tail_pattern(header_pattern: str, literal_tail: str) -> str:
    """The regex for the markers after the index: the end of the header pattern that matches them. Each suffix
    is tried with the standard library's ``re``, which compiles (and refuses) a pattern in a third of the
    ``regex`` module's time: a header's every suffix was 8 ms of Kimi K2's analysis. A header the analysis
    builds holds only syntax both modules share."""
    for i in range(len(header_pattern)):
        piece = header_pattern[i:]
        try:
            if std_re.fullmatch(piece, literal_tail):
                return piece
        except (std_re.error, OverflowError, RecursionError):
            continue
    return re.escape(literal_tail)


# ------------------------------------------------------------------------------------------ pythonic
_PY_CALL = re.compile(r"(?P<open>\()\s*(?P<key>\w+)(?P<eq>\s*=\s*)(?P<q>['\"])(?P<val>[^'\"]*)(?P=q)\s*(?P<close>\))")
# A template that prints values with ``{{ v }}`` writes strings unquoted (``f(city=Paris)``, Llama 3.2's and
# ToolACE's own templates): still Python call syntax, whose strings a model writes quoted.
_PY_CALL_BARE = re.compile(r"(?P<open>\()\s*(?P<key>\w+)(?P<eq>\s*=\s*)(?P<q>)(?P<val>[^'\",()\s]+)\s*(?P<close>\))")


def _pythonic(one, two, turn, log) -> Tools | None:
    """Python call syntax, ``[f(a='x'), g(b=1)]``: the name is followed by ``(``, each argument is
    ``key=value`` with a quoted string, calls are separated by a comma inside one section. Read off
    the renderings: section markers around the calls, the separator between them, and the one
    between arguments (second call of the two-call rendering)."""
    n1 = one.find(FN_A)
    call_re = _PY_CALL
    m = _PY_CALL.match(one, n1 + len(FN_A))
    if not m:
        call_re, m = _PY_CALL_BARE, _PY_CALL_BARE.match(one, n1 + len(FN_A))
    if not m or m["key"] != ARG_A or m["val"] != VAL_A:
        return None
    section_start, section_end = one[:n1], one[m.end() :]
    sep = arg_sep = ""
    if two and FN_B in two:
        a1 = call_re.match(two, two.find(FN_A) + len(FN_A))
        b = two.find(FN_B)
        if not a1 or not two.startswith(section_start) or not two.endswith(section_end):
            return None
        sep = two[a1.end() : b]
        k2 = two.find(ARG_B, b)
        v1 = two.find(VAL_B, b)
        if k2 < 0 or v1 < 0:
            return None
        arg_sep = two[v1 + len(VAL_B) + len(m["q"]) : k2]  # after the closing quote
    for e in turn.end_markers:
        if e in section_end:
            section_end = section_end[: section_end.find(e)]
    t = Tools(
        format="TAG_WITH_TAGGED",
        family="pythonic",
        section_start=section_start,
        section_end=section_end,
        call_start="",
        name_suffix=m["open"],
        call_end=m["close"],
        call_separator=sep,
        header_pattern=r"(?P<name>[A-Za-z_][\w.\-]*)" + re.escape(m["open"]),
        arguments=Arguments(kind="pythonic", key_suffix=m["eq"], separator=arg_sep, string_delims=((m["q"], m["q"]),) if m["q"] else ()),
    )
    log.append(f"T3-T7 pythonic calls -> {t}")
    return t


def _pythonic_json_values(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Tools:
    """Pythonic values written with ``tojson``: a string holding a quote and a newline comes out
    ``"a \\"b\\"\\nc"`` (JSON escapes in double quotes) and a list as ``["x"]``. Then every value is JSON
    and the json parser reads it back, escapes and nesting included."""
    text = _after_reasoning(_tool_text(pr, [call(args={ARG_A: 'a "b"\nc', ARG_B: [VAL_B]})]), r) or ""
    if '"a \\"b\\"\\nc"' in text and f'["{VAL_B}"]' in text:
        log.append("A1 pythonic values are JSON (strings JSON-escaped in double quotes): the json parser reads them")
        return dataclasses.replace(t, arguments=dataclasses.replace(t.arguments, json_values=True))
    if "'a \"b\"\nc'" in text and f"['{VAL_B}']" in text:
        log.append("A1 pythonic values are Python literals (raw strings in single quotes, lists as repr): the json parser reads them with ' as a string delimiter")
        return dataclasses.replace(t, arguments=dataclasses.replace(t.arguments, python_values=True))
    return t


def _python_literals(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Tools:
    """Templates that print values with ``{{ value }}`` write Python literals: a list as ``['a']``, an
    object as ``{'k': 'a'}`` (no json decoder reads them; a tagged or pythonic value comes back as that
    string) and, inside a JSON dialect, null as ``None`` (the json parser rejects the call). Found by
    rendering one of each; ``Tools.unreadable`` names the kinds so verify can tell a limit from a bug."""
    json_dialect = t.format == "TAG_WITH_JSON" and (t.arguments.unquoted_keys or t.arguments.string_delims)
    if not (json_dialect or t.format == "TAG_WITH_TAGGED") or t.family == "unknown":
        return t
    text = _after_reasoning(_tool_text(pr, [call(args=_literal_args())]), r) or ""
    found: dict[str, str] = {}
    # A dialect with ' string delimiters reads ['a'] and {'k': 'a'}.
    # Unquoted pythonic values (``{{ v }}``) are read by their spelling, Python-quoted lists and dicts included.
    unquoted = t.family == "pythonic" and not t.arguments.string_delims and not t.arguments.json_values
    py_dict = (json_dialect and ("'", "'") in t.arguments.string_delims) or t.arguments.python_values or unquoted
    if not py_dict and f"['{VAL_B}']" in text:
        found["array"] = "list arguments are rendered as Python repr (['a']), which no json decoder reads; they come back as strings"
    if not py_dict and f"{{'k': '{VAL_A}'}}" in text:
        found["object"] = "object arguments are rendered as Python repr ({'k': 'a'}), which no json decoder reads; they come back as strings"
    k = text.find(ARG_A)
    if json_dialect and k >= 0 and re.match(r"\W{0,3}None\b", text[k + len(ARG_A) :]):
        found["null"] = "null arguments are rendered as Python None, which the json parser rejects"
    if py_dict and json_dialect:  # a Python dict: its True and escapes too
        text2 = _after_reasoning(_tool_text(pr, [call(args={ARG_A: True, ARG_B: "x\ny"})]), r) or ""
        if re.search(rf"{ARG_A}\W{{0,3}}True\b", text2):
            found["boolean"] = REPR_UNREADABLE["boolean"]
        if "'x\\ny'" in text2:
            found["escaped"] = REPR_UNREADABLE["escaped"]
    for f in found.values():
        log.append(f"A2 {f}")
    if not found:
        return t
    return dataclasses.replace(t, uncovered=t.uncovered + tuple(found.values()), unreadable=tuple(found.items()))


# ------------------------------------------------------------------------------- Python repr arguments
_SQ = re.compile(r"'([^'\\\n]*)'")


def _requote(text: str) -> str:
    """Single-quoted strings written with double quotes (same length, so positions hold): a call
    object whose arguments a template prints as a Python dict (``{{ arguments }}``) reads as JSON."""
    return _SQ.sub(lambda m: '"' + m.group(1) + '"', text)


REPR_UNREADABLE = {
    "boolean": "boolean arguments are rendered as Python True/False, which the json parser rejects",
    "null": "null arguments are rendered as Python None, which the json parser rejects",
    "escaped": "string arguments with quotes, backslashes or control characters are rendered with Python escapes, which come back escaped",
}


def _repr_json_native(pr: Prober, r: Reasoning, one: str, two: str | None, turn: Turn, log: list[str]) -> Tools | None:
    """A JSON call object whose arguments the template prints as a Python dict
    (``{"arguments": {'a': 'x'}, "name": "f"}``): strings in single quotes, which the json parser reads
    as ``string_delims``. Python's True, False and None, and strings it writes with escapes, no json
    parser reads back: found by rendering one of each, they are ``Tools.unreadable``."""
    html = _html_json_native(pr, r, one, two, turn, log)
    if html is not None or "'" not in one:
        return html
    q1, q2 = _requote(one), _requote(two) if two else two
    for start, end, value in _json_values(q1):
        if _find_path(value, FN_A) is None or _find_path(value, {ARG_A: VAL_A}) is None:
            continue
        if _requote(one[start:end]) == one[start:end]:
            return None  # plain JSON: not this family
        t = _json_native(q1, q2, start, end, value, turn, log)
        t = dataclasses.replace(t, family="json-repr-args", arguments=Arguments(kind="json", string_delims=(("'", "'"),)))
        args = {ARG_A: True, ARG_B: None, ARG_C: "x\ny"}
        text = _after_reasoning(_tool_text(pr, [call(args=args)]), r) or ""
        found = {}
        if re.search(rf"{ARG_A}\W{{0,3}}True\b", text):
            found["boolean"] = REPR_UNREADABLE["boolean"]
        if re.search(rf"{ARG_B}\W{{0,3}}None\b", text):
            found["null"] = REPR_UNREADABLE["null"]
        if "'x\\ny'" in text:
            found["escaped"] = REPR_UNREADABLE["escaped"]
        log.append(f"A1 arguments are a Python dict inside a JSON call object: string_delims ' '; unreadable {sorted(found)}")
        t = dataclasses.replace(t, uncovered=t.uncovered + tuple(found.values()), unreadable=tuple(found.items()))
        return _content_opener(pr, r, _call_lead(pr, r, t, log), log)
    return None


HTML_QUOTE = "&#34;"
HTML_UNREADABLE = "string arguments holding & < > or quotes are rendered HTML-escaped (&amp;lt; …), which come back escaped"


def _html_json_native(pr: Prober, r: Reasoning, one: str, two: str | None, turn: Turn, log: list[str]) -> Tools | None:
    """A call object whose arguments the template HTML-escapes (``{{ arguments | tojson | e }}``):
    ``{&#34;a&#34;: &#34;x&#34;}``. The json parser reads ``&#34;`` as a string delimiter; strings
    holding characters HTML escapes (``& < > " '``) come back escaped (``Tools.unreadable``: html)."""
    if HTML_QUOTE not in one:
        return None
    q1, q2 = one.replace(HTML_QUOTE, '"'), two.replace(HTML_QUOTE, '"') if two else two
    for start, end, value in _json_values(q1):
        if _find_path(value, FN_A) is None or _find_path(value, {ARG_A: VAL_A}) is None:
            continue
        tail = len(q1) - end
        if HTML_QUOTE in one[:start] or HTML_QUOTE in one[len(one) - tail:]:
            return None  # the markers around the call are escaped too: not this family
        t = _json_native(q1, q2, start, end, value, turn, log)
        t = dataclasses.replace(t, family="json-html-args", arguments=Arguments(kind="json", string_delims=((HTML_QUOTE, HTML_QUOTE),)),
                                uncovered=t.uncovered + (HTML_UNREADABLE,), unreadable=(("html", HTML_UNREADABLE),))
        log.append(f"A1 arguments are HTML-escaped JSON inside a JSON call object: string_delims {HTML_QUOTE}")
        return _content_opener(pr, r, _call_lead(pr, r, t, log), log)
    return None


# --------------------------------------------------------------------------------------------- JSON
def _json_native(one, two, start, end, value, turn, log) -> Tools:
    array = isinstance(value, list)
    element = value[0] if array else value
    name_path = _find_path(element, FN_A)
    args_path = _find_path(element, {ARG_A: VAL_A})
    string_args = False
    if args_path is None:
        args_path = _find_path(element, json.dumps({ARG_A: VAL_A}))
        string_args = args_path is not None
    id_path = _find_path(element, ID_A) or ()
    call_start, call_end = one[:start], one[end:]
    for m in turn.end_markers:  # the turn's end follows the call; it is no part of it
        if m and m in call_end and (call_end[: call_end.find(m)].strip() or array):
            # (after a list's ``]``, the turn's end alone too: ``[TOOL_CALLS][{…}]</s>``, whose ``</s>`` an engine strips)
            call_end = call_end[: call_end.find(m)]
    uncovered = []
    shared = False
    name_is_key = bool(name_path) and name_path[-1] == "<key>"
    first_key = next(iter(element)) if isinstance(element, dict) and element else ""
    sep = ""
    if two and not array:
        vals = [v for v in _json_values(two) if _find_path(v[2], FN_A) is not None or _find_path(v[2], FN_B) is not None]
        if len(vals) >= 2:
            between = two[vals[0][1] : vals[1][0]]
            if call_start.strip() and call_start.strip() in between:
                # Per-call markers: the separator is what lies between one call's end and the next start.
                i = between.find(call_start.strip())
                sep = between[len(call_end.rstrip()) if between.startswith(call_end.rstrip()) else 0 : i]
            else:
                # One opener, then the calls back to back: each call ends where the separator and the
                # next call object begin (``<|python_start|>{…}{…}``).
                sep = between
                # With no opener at all, calls separated by text (``{…};{…}``, one per line) are a run
                # from the start of the reply, read the same way.
                # Glued with nothing between (``{…}{…}``, Llama 4's JSON template) they are a run too.
                shared = bool(call_start.strip()) or bool(between) or not call_end.strip()
                # Read as ``{"name": "<name>", "arguments": <args>}``: only objects of those two keys, in
                # that order, are split this way.
                if shared and not (isinstance(element, dict) and list(element) == [name_path[0], args_path[0]] if name_path and args_path and len(name_path) == len(args_path) == 1 else False):
                    shared = False
                    uncovered.append("several calls share one opener without per-call markers, in call objects with keys other than a name and arguments")
    if string_args:
        uncovered.append("arguments are a JSON string inside the call object; they come back as a string")
    family = "json-array" if array else ("json-bare" if not call_start.strip() else "json-object")
    if name_is_key:
        family = "json-name-key"
    elif "```" in call_start:  # calls in a fenced block after a lead-in (Command R+'s "Action: ```json")
        family = "markdown-block"
    t = Tools(
        format="JSON_NATIVE",
        family=family,
        call_start=call_start,
        call_end=call_end,
        call_separator=sep,
        name_path=tuple(str(p) for p in name_path or ()),
        args_path=tuple(str(p) for p in args_path or ()),
        id_path=tuple(str(p) for p in id_path),
        array_wrapped=array,
        name_is_key=name_is_key,
        first_key=first_key,
        call_keys=tuple(str(k) for k in element) if isinstance(element, dict) else (),
        uncovered=tuple(uncovered),
        shared_start=shared,
    )
    log.append(f"T1 JSON_NATIVE -> {t}")
    return t
