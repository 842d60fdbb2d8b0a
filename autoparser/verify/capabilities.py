"""Tool-call capabilities (single, parallel, nested, content beside, ids) read from a verification's cases, and
the cases of capabilities a field does not cover judged again as plain text. Part of verification."""

from __future__ import annotations

from .roundtrip import Case, Report, _check, _compare


# Which probe messages show which capability of a tool-call field. A case whose rendering carries only
# one call (templates that render the first call alone) shows a single call, whatever its name.
CAPABILITIES = ("single", "parallel", "nested", "content_beside", "ids")
_CAPABILITY_OF = {"one call": "single", "reasoning + call": "single", "parallel calls": "parallel", "nested args": "nested",
                  "content + call": "content_beside"}


def capability(case: Case) -> str | None:
    """The tool-call capability a case shows, or None (no calls rendered, or not a tool-call probe)."""
    calls = case.expected.get("tool_calls")
    cap = _CAPABILITY_OF.get(case.name)
    if not calls or cap is None:
        return None
    return "single" if cap == "parallel" and len(calls) < 2 else cap


def capabilities(report: Report) -> dict[str, str]:
    """Each capability: pass (every case showing it passes or is a limit), fail, or absent (no case shows
    it). ``ids`` is the ids field's verdict (absent when no call renders an id)."""
    out = dict.fromkeys(CAPABILITIES, "absent")
    for c in report.cases:
        cap = capability(c)
        if cap is None or c.status == "skip":
            continue
        parsed = "tool_calls" in report.fields  # without the field, calls that pass arrived in content: not covered
        out[cap] = "fail" if c.status == "fail" or out[cap] == "fail" or not parsed else "pass"
    ids = report.per_field().get("ids")
    out["ids"] = {"pass": "pass", "limit": "pass", "fail": "fail"}.get(ids, "absent") if "ids" in report.fields else \
        ("fail" if any(c.expected.get("tool_calls") and any(x["id"] for x in c.expected["tool_calls"]) for c in report.cases) else "absent")
    return out


def _content_kept(c: Case, reasoning_field: str) -> bool:
    """Content beside calls that does not round-trip but loses nothing: the calls parse right and the
    content holds the message's (with text the template writes around it, ``Thought: …``)."""
    if c.error or not c.parsed or not c.streamed:
        return False
    for got in (c.parsed, c.streamed):
        judged = _compare(c.expected, got, reasoning_field, frozenset(f for f in c.fields if f != "content") | {"tool_calls"})
        if any(v == "fail" for v in judged.values()) or c.expected.get("content", "") not in (got.get("content") or ""):
            return False
    return True


def rejudge_uncovered(report: Report, response_template: dict, uncovered: set[str], reasoning_field: str = "thinking") -> Report:
    """The report with the cases of ``uncovered`` capabilities judged as for a template without tool
    calls: no call may be parsed from them and their text (the content and each call's name) must
    arrive in content. What a field does not cover must come back as plain text, never wrong."""
    plain = report.fields - {"tool_calls", "ids"}
    cases = []
    for c in report.cases:
        if capability(c) == "content_beside" and "content_beside" in uncovered and c.status == "fail" and _content_kept(c, reasoning_field):
            c = Case(c.name, c.mode, c.history, "pass", c.how, fields={**c.fields, "content": "pass"}, prompt=c.prompt, generated=c.generated,
                     expected=c.expected, parsed=c.parsed, streamed=c.streamed, source=c.source, reading=c.reading)
        elif capability(c) in uncovered and c.status in ("pass", "fail") and c.source:
            c = Case(c.name, c.mode, c.history, "pass", c.how, prompt=c.prompt, generated=c.generated, expected=c.expected, source=c.source,
                     reading=c.reading)
            _check(c, response_template, reasoning_field, plain, report.parsing)
            for got in (c.parsed, c.streamed):
                if c.status == "pass" and (got or {}).get("tool_calls"):
                    c.status, c.error = "fail", "an uncovered tool call was parsed instead of arriving in content"
                    c.fields = {**c.fields, "content": "fail"}
        cases.append(c)
    return Report(cases, report.fields, report.parsing)
