"""The realistic-output stage: what models and serving engines write is not exactly what the template renders.

From verify's own cases (no new renders) each variant below is derived from a rendering that round-tripped,
parsed with transformers' ``parse_response`` (one-shot; streamed too when asked), and judged:

- ``space_before_marker``: a space before every marker (detokenizers put one before special tokens);
- ``whitespace_added``: a newline after every marker the template writes none after;
- ``whitespace_removed``: no whitespace next to any marker;
- ``end_marker_stripped``: the end-of-turn marker left out (engines strip the stop token);
- ``reasoning_opener_repeated``: the reasoning opener written again (after a prompt that opened it);
- ``reasoning_opener_missing``: only the reasoning's close written, no opener;
- ``stray_reasoning_close``: the reasoning's close written after the content, then more text; both kept;
- ``ids_removed``: calls without their ids (the names and arguments must still parse);
- ``text_around_calls``: text after the last call as well as before the first; both must be kept;
- ``malformed_call``: a call with a brace or close removed; nothing may raise, its text must stay visible.
- ``call_truncated``: the text cut inside the first call's first string value (a token limit), also with the
  section's opening marker left out where each call has a marker of its own; nothing may raise and the text
  that arrived must stay visible: in content, or in the call parsed from what arrived (the emitter's choice,
  docs/FORMATS.md §7b: a cut call is parsed as the serving engines parse it).

Each variant must parse to the same message (fields compared as verify compares them; ids not judged
where they were removed). A variant that fails is reported with its first failure; it never drops a
field: real outputs vary, and knowing which variations the template takes is what a caller needs.
"""

from __future__ import annotations

import functools
import re  # literal alternations and whitespace: the standard library compiles them in a third of the regex module's time

from ..analysis.diff import markers
from ..analysis.model import Analysis
from .parsing import _Parsing
from .roundtrip import VERIFY_TOOLS, Case, _compare, _strings

VARIANTS = ("space_before_marker", "whitespace_added", "whitespace_removed", "end_marker_stripped", "reasoning_opener_repeated",
            "reasoning_opener_missing", "stray_reasoning_close", "ids_removed", "text_around_calls", "malformed_call", "call_truncated")
AFTER = "QXAFTERQX and done."
LOST = "text lost"  # how a failure starts whose text reached no field of the message (not read into another)


def structural_markers(a: Analysis) -> list[str]:
    """The markers the analysis found (turn ends, reasoning, tool calls, content wrapper), longest first."""
    t, r, c = a.tools, a.reasoning, a.content
    texts = [*a.turn.end_markers, *t.end_markers, r.start, r.end, c.start, c.end, t.section_start, t.section_end, t.call_start, t.call_end]
    out = set()
    for s in texts:
        s = (s or "").strip()
        out.update(markers(s))
    return sorted(out, key=lambda m: (-len(m), m))


@functools.lru_cache(maxsize=64)
def _patterns(marks: tuple[str, ...]):
    """(any marker, whitespace before one, whitespace after one), compiled once per marker set: the regex
    module's own cache turns over on a corpus, and compiling them was a third of this stage."""
    alt = "|".join(map(re.escape, marks))
    return re.compile(alt), re.compile(r"\s+(?=" + alt + ")"), re.compile("(" + alt + r")\s+")


def _spans(text: str, marks: list[str]) -> list[tuple[int, int]]:
    if not marks:
        return []
    return [m.span() for m in _patterns(tuple(marks))[0].finditer(text)]


def _edit(text: str, spans, fn) -> str:
    out, last = [], 0
    for s, e in spans:
        out.append(text[last:s])
        out.append(fn(text, s, e))
        last = e
    out.append(text[last:])
    return "".join(out)


def _variants(case: Case, a: Analysis, marks: list[str]):
    """(variant, text, expected, judge) for one verified case; judge is "same" (the expected message),
    "around" (content and the text after the calls both kept), or a text that must stay visible somewhere
    in the parsed message (a malformed or cut call)."""
    g, exp = case.generated, case.expected
    spans = _spans(g, marks)
    if spans:
        yield "space_before_marker", _edit(g, spans, lambda t, s, e: (" " if s > 0 and not t[s - 1].isspace() else "") + t[s:e]), exp, "same"
        yield "whitespace_added", _edit(g, spans, lambda t, s, e: t[s:e] + ("\n" if e < len(t) and not t[e].isspace() else "")), exp, "same"
        _, before, after = _patterns(tuple(marks))
        stripped = after.sub(r"\1", before.sub("", g))
        yield "whitespace_removed", stripped, exp, "same"
    ends = [e for e in (*a.turn.end_markers, *a.tools.end_markers) if e.strip()]
    tail = next((e for e in sorted(ends, key=len, reverse=True) if g.rstrip().endswith(e)), None)
    if tail:
        yield "end_marker_stripped", g.rstrip()[: -len(tail)], exp, "same"
    r = a.reasoning
    if r.start and r.mode != "NONE" and "thinking" in exp:
        opened = case.prompt.rstrip().endswith(r.start)
        if opened:
            yield "reasoning_opener_repeated", r.start + "\n" + g, exp, "same"
        elif r.start in g:
            i = g.index(r.start)
            yield "reasoning_opener_repeated", g[:i] + r.start + g[i:], exp, "same"
            yield "reasoning_opener_missing", g[:i] + g[i + len(r.start):], exp, "same"
    yield from _stray_close(case, a)
    calls = exp.get("tool_calls") or []
    if calls and any(c.get("id") for c in calls):
        text = g
        for c in calls:
            if c.get("id"):
                text = re.sub(r'\s*"id"\s*:\s*"' + re.escape(c["id"]) + r'"\s*,', "", text, count=1)
                text = re.sub(r',\s*"id"\s*:\s*"' + re.escape(c["id"]) + r'"', "", text, count=1)
                text = text.replace(c["id"], "", 1)
        yield "ids_removed", text, {**exp, "tool_calls": [{**c, "id": None} for c in calls]}, "same"
    if calls:
        cut = _after_calls(g, tail, a)
        if cut is not None:
            text = g[:cut] + "\n" + AFTER + g[cut:]
            yield "text_around_calls", text, {**exp, "content": ((exp.get("content") or "") + "\n" + AFTER).strip()}, "around"
        value = next((v for v in calls[0]["arguments"].values() if isinstance(v, str) and v in g), None)
        if value is not None:
            i = g.index(value)
            j = next((k for k in range(i + len(value), len(g)) if g[k] in "}>"), None)  # after the value: it stays whole
            if j is not None:
                yield "malformed_call", g[:j] + g[j + 1:], exp, value
            if len(value) > 1:
                yield "call_truncated", g[: i + len(value) // 2], {}, value[: len(value) // 2]
                # ... and with the section's opening marker left out, where each call has a marker of its own
                # (a model may write the calls without it: Solar Open's ``<|tool_call:begin|>`` with no
                # ``<|tool_calls|>``)
                sec, own = a.tools.section_start.strip(), markers(a.tools.call_start.strip())
                k = g.find(sec) if sec else -1
                if own and markers(sec) == [sec] and sec not in own and 0 <= k < i and g.count(sec) == 1:
                    yield "call_truncated", g[:k] + g[k + len(sec):i + len(value) // 2], {}, value[: len(value) // 2]


def _after_calls(g: str, tail: str | None, a: Analysis) -> int | None:
    """Where a model writes text after its last call: before the turn's end marker; where the analysis knows
    none at the end, right after the last call's (or section's) close when only markers follow it (a turn
    end it does not list: ``<|END_ACTION|>`` then ``<|END_OF_TURN_TOKEN|>``), or at the end. None in headed
    replies whose text ends at a call's close: the call ends the turn (harmony's ``<|call|>``, a stop token),
    and text after a turn's last token is not model output."""
    if tail:
        return len(g.rstrip()) - len(tail)
    t = a.tools
    closes = [x.strip() for x in (t.section_end, t.call_end) if x.strip()]
    ends = [(g.rfind(x) + len(x)) for x in closes if x in g]
    if not ends:
        return len(g.rstrip())
    cut = max(ends)
    rest = g[cut:].strip()
    if not rest:
        return None if t.headed.kind else len(g.rstrip())
    return cut if not re.sub("|".join(map(re.escape, sorted(markers(rest), key=len, reverse=True))) or r"(?!)", "", rest).strip() else len(g.rstrip())


def _stray_close(case: Case, a: Analysis):
    """The reasoning's close written again after the content (thinking off, or a model closing twice),
    then more text: the content and what follows must both stay in content (none of it is reasoning).
    Not where the reply's start is left to the model and a lone close makes what precedes it reasoning
    (``Reasoning.lone_close``), nor in headed replies (the close ends a message; text outside is no field)."""
    g, exp, r = case.generated, case.expected, a.reasoning
    content = (exp.get("content") or "").strip()
    free = r.lone_close and not case.prompt.rstrip().endswith((r.start, r.end))
    if r.mode != "NONE" and r.end and content and content in g and not exp.get("tool_calls") and not free and not a.tools.headed.kind:
        i = g.rindex(content) + len(content)
        # The words on both sides of the close must be kept; the close itself may be consumed, whole or in part
        # (one spelt token + word + token, Kimi K3's ``<|close|>think<|sep|>``, leaves its word): it is no
        # word of the content.
        yield "stray_reasoning_close", g[:i] + r.end + AFTER + g[i:], {**exp, "content": content + "\n" + AFTER}, "around"


def _parse(text: str, case: Case, parsing: _Parsing, stream: bool) -> tuple[dict, dict]:
    one = parsing.one_shot(case.prompt, text, fresh=False)  # only judged, never edited
    if not stream:
        return one, one
    return one, parsing.streamed(case.prompt, text)  # cut as verify cuts: at every delimiter


def _judge(judge: str, exp: dict, got: dict, reasoning_field: str, fields: frozenset, calls_sent: bool = False) -> str | None:
    """None when the variant holds, else what went wrong."""
    if judge == "same":
        res = _compare(exp, got, reasoning_field, fields - {"ids"} if any(c.get("id") is None for c in exp.get("tool_calls", [])) else fields, calls_sent)
        bad = [f for f, v in res.items() if v == "fail"]
        return f"{', '.join(bad)} differ" if bad else None
    if judge == "around":
        content = got.get("content") or ""
        before = exp["content"].replace(AFTER, "").strip()
        missing = [x for x in (before, AFTER) if x and x not in content]
        if not missing:
            return None
        everywhere = " ".join(_strings(got, []))
        gone = [x for x in missing if x not in everywhere]
        return f"{LOST} {gone[0][:40]!r} (in no field)" if gone else f"content misses {missing[0][:40]!r} (read into another field)"
    # Every key and leaf of the message: wherever the written text may have gone, it is still visible.
    return None if any(judge in s for s in _strings(got, [])) else f"{LOST}: the call's text {judge!r} is in no field"


def check(cases: list[Case], template: dict, a: Analysis, fields: frozenset, reasoning_field: str = "thinking",
          stream: bool = False, parsing: _Parsing | None = None) -> tuple[dict, dict]:
    """({variant: pass | fail}, {variant: first failure in one line}) over one case per probe message, parsed
    one-shot (``stream``: also streamed, cut as verify cuts; the tests do, infer does not, to stay cheap).
    ``parsing``: the verification's (``Report.parsing``, for ``template``): a variant that parses as a text
    already parsed (the same text after the same start anchor) is not parsed again."""
    marks = structural_markers(a)
    parsing = parsing if parsing is not None else _Parsing(None, template, VERIFY_TOOLS)  # compiled once, not per parse
    seen, results, why = set(), {}, {}
    for case in cases:
        if case.status != "pass" or case.name in seen:
            continue
        seen.add(case.name)
        for name, text, exp, judge in _variants(case, a, marks):
            if text == case.generated or results.get(name) == "fail":
                continue
            try:
                one, streamed = _parse(text, case, parsing, stream)
            except Exception as e:  # noqa: BLE001 - a raise is what this stage looks for
                results[name], why[name] = "fail", f"{case.name!r}: the parser raises {type(e).__name__}: {str(e).splitlines()[0][:100]}"
                continue
            bad = _judge(judge, exp, one, reasoning_field, fields, case.calls_sent)
            if not bad and streamed is not one:  # one-shot only (``stream`` off): the same message, judged once
                bad = _judge(judge, exp, streamed, reasoning_field, fields, case.calls_sent)
            if bad:
                results[name], why[name] = "fail", f"{case.name!r}: {bad}; text {text[:100]!r}"
            else:
                results.setdefault(name, "pass")
    return {v: results[v] for v in VARIANTS if v in results}, why
