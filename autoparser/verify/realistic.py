"""The realistic-output stage: the round trip proves a template parses its own renderings, but models and
serving engines write something close to them, not them. From each rendering the round trip passed, derive
the ways real outputs are seen to differ, parse each with transformers' own parser (one-shot and streamed)
and say which hold.

Two kinds of variant:
- *same message*: the text differs only in layout (whitespace at a marker, a space a detokenizer puts
  before a special token, the reasoning opener written again or left out, ids left out, text beside the
  calls): parsing must give the same message, with whitespace inside content and reasoning compared as
  one space and ids not compared where they were removed.
- *damaged*: the text is broken (cut at a token limit, a brace missing, a stray end marker after the
  turn): parsing must not raise and must lose no text: every word of the message that the damaged text
  still holds comes back somewhere in the parsed message, as content, reasoning or a call.

Only structural markers are moved: a marker that is part of the message's own text (``<b>`` in content)
is text. Each variant is one text per case with every structural marker changed at once, so the stage
costs a few parses per case, no renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import regex as re
from transformers.utils.chat_parsing import ResponseParser, parse_response

from ..analysis.diff import MARKER
from ..analysis.model import Analysis

BEFORE, AFTER = "Let me check.", "Done."  # text a model writes before and after its calls
_WORD = re.compile(r"[^\W_]{3,}")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Variant:
    text: str
    expected: dict  # the message the text must parse to (same-message variants), or whose words it keeps
    same: bool  # same message (True) or damaged: no raise, no text lost (False)
    ids: bool = True  # compare ids


def _own_text(expected: dict) -> str:
    """The message's own text (content, reasoning, call names and arguments) as one string."""
    parts = [expected.get("content") or "", expected.get("thinking") or ""]
    for c in expected.get("tool_calls") or []:
        parts += [c.get("name") or "", json.dumps(c.get("arguments"), ensure_ascii=False), str(c.get("id") or "")]
    return "\n".join(parts)


def structural(text: str, expected: dict) -> list[tuple[int, int]]:
    """Spans of the markers the template wrote around the message (not markers inside its own text)."""
    own = _own_text(expected)
    return [m.span() for m in MARKER.finditer(text) if m.group() not in own]


def _insert(text: str, at: list[int], what: str) -> str:
    out, last = [], 0
    for i in sorted(set(at)):
        out += [text[last:i], what]
        last = i
    return "".join(out) + text[last:]


def _strip_ws(text: str, spans: list[tuple[int, int]]) -> str:
    """Whitespace right before or after each span removed."""
    keep = [True] * len(text)
    for s, e in spans:
        i = s - 1
        while i >= 0 and text[i].isspace():
            keep[i] = False
            i -= 1
        i = e
        while i < len(text) and text[i].isspace():
            keep[i] = False
            i += 1
    return "".join(ch for ch, k in zip(text, keep) if k)


def _end_at(text: str, a: Analysis) -> int:
    """Where the turn's closing markers (and the whitespace before them) begin."""
    ends = sorted((m for m in a.turn.end_markers if m), key=len, reverse=True)
    stripped = text.rstrip()
    while (m := next((m for m in ends if stripped.endswith(m)), None)) is not None:
        stripped = stripped[: -len(m)].rstrip()
    return len(stripped)


def variants(case, a: Analysis, fields: frozenset) -> dict[str, list[Variant]]:
    """Every variant that applies to ``case`` (a passing round-trip case), by name."""
    text, exp, prompt = case.generated, case.expected, case.prompt
    spans = structural(text, exp)
    out: dict[str, list[Variant]] = {}

    def add(name, new, expected=exp, same=True, ids=True):
        if new != text:
            out.setdefault(name, []).append(Variant(new, expected, same, ids))

    if spans:
        add("space_before_marker", _insert(text, [s for s, _ in spans if s > 0], " "))
        add("newline_around_marker", _insert(text, [e for _, e in spans[:-1]], "\n"))
        add("whitespace_dropped", _strip_ws(text, spans))
    start = a.reasoning.start
    if "thinking" in exp and "reasoning" in fields and start:
        if prompt.rstrip().endswith(start.strip()) and not text.lstrip().startswith(start.strip()):
            add("opener_repeated", start + "\n" + text)
        elif start in text and start not in prompt:
            i = text.index(start)
            add("opener_missing", text[:i] + text[i + len(start):])
    calls = exp.get("tool_calls") or []
    if calls and "tool_calls" in fields and "content" in fields and not exp.get("content"):
        end = _end_at(text, a)
        cut = 0
        if "thinking" in exp and a.reasoning.end and a.reasoning.end in text:
            cut = text.index(a.reasoning.end) + len(a.reasoning.end)
        new = text[:cut] + BEFORE + " " + text[cut:end] + " " + AFTER + text[end:]
        add("text_around_calls", new, {**exp, "content": f"{BEFORE} {AFTER}"})
    ids = [c["id"] for c in calls if c.get("id") and c["id"] in text]
    if ids and "ids" in fields:
        new = text
        for i in ids:
            new = new.replace(i, "")
        add("ids_removed", new, ids=False)
    if calls:
        end = _end_at(text, a)
        for k in (3, 2):
            add("truncated", text[: end * (k - 1) // k], same=False)
        brace = text.rfind("}", 0, end)
        if brace >= 0:
            add("malformed_call", text[:brace] + text[brace + 1:], same=False)
    ends = [m for m in a.turn.end_markers if m]
    if ends:
        add("trailing_text", text + ends[0] + "\n" + AFTER, {**exp}, same=False)
    return out


def _chunks(text: str, spans: list[tuple[int, int]]):
    """Pieces cut at every structural boundary and every seventh character: a marker arriving split, and
    text arriving beside a marker, as a detokenizer sends them."""
    cuts = sorted({0, len(text), *(p for s in spans for p in s), *range(0, len(text), 7)})
    return [text[i:j] for i, j in zip(cuts, cuts[1:])]


def _parse(template: dict, v: Variant, prompt: str, tools) -> tuple[dict, dict]:
    one = parse_response(v.text, template, prefix=prompt, tools=tools)
    p = ResponseParser(template, prefix=prompt, tools=tools)
    for piece in _chunks(v.text, [m.span() for m in MARKER.finditer(v.text)]):
        p.feed(piece)
    streamed, _ = p.finalize()
    return one, streamed


def _norm(msg: dict, reasoning_field: str, fields: frozenset, ids: bool) -> dict:
    def flat(s):
        return _SPACE.sub(" ", s or "").strip()

    out = {}
    if "content" in fields:
        out["content"] = flat(msg.get("content"))
    if "reasoning" in fields:
        out["reasoning"] = flat(msg.get(reasoning_field))
    if "tool_calls" in fields:
        out["tool_calls"] = [(fn.get("name"), fn.get("arguments"), (c.get("id") or None) if ids and "ids" in fields else None)
                             for c in msg.get("tool_calls") or [] if isinstance(c, dict) for fn in [c.get("function") or {}]]
    return out


def _want(exp: dict, fields: frozenset, ids: bool) -> dict:
    """The expected message in parsed form; text of fields the template lacks is expected in content."""
    msg = {"content": exp.get("content") or "", "thinking": exp.get("thinking") or "",
           "tool_calls": [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}} for c in exp.get("tool_calls") or []]}
    return _norm(msg, "thinking", fields, ids)


def _lost(v: Variant, got: dict, reasoning_field: str) -> list[str]:
    """Words of the message the text still holds that the parsed message does not."""
    have = "\n".join([got.get("content") or "", got.get(reasoning_field) or ""]
                     + [json.dumps(c, ensure_ascii=False) for c in got.get("tool_calls") or []])
    return [w for w in dict.fromkeys(_WORD.findall(_own_text(v.expected))) if w in v.text and w not in have]


def judge(template: dict, v: Variant, prompt: str, reasoning_field: str, fields: frozenset, tools) -> str | None:
    """None when the variant holds, else why not in one line."""
    try:
        one, streamed = _parse(template, v, prompt, tools)
    except Exception as e:  # noqa: BLE001 - a raise is exactly what this stage looks for
        return f"the parser raised {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    for how, got in (("one-shot", one), ("streamed", streamed)):
        if v.same:
            if "tool_calls" not in fields or "content" not in fields:  # spilled text: only nothing lost
                lost = _lost(v, got, reasoning_field)
                if lost:
                    return f"{how}: text lost ({', '.join(lost[:3])})"
                continue
            want, have = _want(v.expected, fields, v.ids), _norm(got, reasoning_field, fields, v.ids)
            bad = [k for k in want if want[k] != have.get(k)]
            if bad:
                k = bad[0]
                return f"{how}: {k} is {str(have.get(k))[:80]!r}, expected {str(want[k])[:80]!r}"
        else:
            lost = _lost(v, got, reasoning_field)
            if lost:
                return f"{how}: text lost ({', '.join(lost[:3])})"
    return None


ORDER = ("space_before_marker", "newline_around_marker", "whitespace_dropped", "opener_repeated", "opener_missing",
         "text_around_calls", "ids_removed", "truncated", "malformed_call", "trailing_text")


PER_VARIANT = 2  # cases each variant is tried on


def check(report, template: dict, a: Analysis, reasoning_field: str, tools) -> dict:
    """``{"variants": {name: pass | fail | absent}, "failures": {name: first failing case, one line}}``.

    Each variant is tried on the ``PER_VARIANT`` passing cases (without history, first thinking mode
    that renders the message) with the most structural markers: history and other modes render the same
    markers around the same reply, and the richest cases hold every marker the simpler ones do. A few
    parses per variant keep the stage within a fraction of one template compile."""
    fields = report.fields
    status = dict.fromkeys(ORDER, "absent")
    failures: dict[str, str] = {}
    tried: dict[str, list] = {}
    names: set[str] = set()
    for case in report.cases:
        if case.status != "pass" or case.history or case.name in names:
            continue
        names.add(case.name)
        weight = len(structural(case.generated, case.expected))
        for name, vs in variants(case, a, fields).items():
            tried.setdefault(name, []).extend((-weight, len(tried.get(name, ())), case, v) for v in vs)
    for name in ORDER:
        picked = sorted(tried.get(name, ()), key=lambda x: x[:2])
        cases_seen: list = []
        for _, _, case, v in picked:
            if case not in cases_seen:
                if len(cases_seen) == PER_VARIANT:
                    break
                cases_seen.append(case)
            why = judge(template, v, case.prompt, reasoning_field, fields, tools)
            if why is not None:
                status[name] = "fail"
                failures[name] = f"{case.name!r} (mode {case.mode}): {why}"
                break
            status[name] = "pass"
    return {"variants": status, "failures": failures}


def line(verdict: dict | None) -> str | None:
    """The variants a verdict says do not hold, in one line (None when all that apply hold)."""
    real = (verdict or {}).get("realistic") or {}
    bad = [k for k, v in real.items() if v == "fail"]
    if not bad:
        return None
    first = (verdict.get("realistic_failures") or {}).get(bad[0], "")
    return f"real-output variants not held: {', '.join(bad)} (first: {bad[0]} in {first})"
