"""Verified by default: an inferred template is round-tripped on its own renderings before anyone gets it.

When a field parses wrongly the template is emitted again from the analysis without that field (its text
then arrives as plain content, which is what verify checks), and re-verified; when content itself cannot be
made to round-trip nothing is emitted. A wrong tool call or reasoning split is worse than none: a caller
cannot tell, while text in content is at worst untidy.

The verdict is a plain dict (it goes into JSON files, the cache and across processes):
``status`` full | degraded | refused; ``fields``: content, reasoning, tool_calls, ids -> pass | limit | fail
| absent (absent: the complete template does not parse it or no probe message carries it); ``dropped``:
the fields the emitted template lacks; ``first_failure``: the complete template's first diverging case;
``reason``: why it was refused; ``counts`` and ``limits`` of the emitted template's verification;
``realistic``: variant -> pass | fail for the outputs real models write (``verify.realistic``), with
``realistic_failures``: variant -> its first failure. A failing variant is reported, never dropped for.
"""

from __future__ import annotations

import dataclasses

from ..analysis.model import Analysis, Reasoning, Tools
from ..emit import emit
from ..errors import VerificationError

FIELDS = ("content", "reasoning", "tool_calls", "ids")
SPILL = {"tool_calls": "tool-call text arrives as content", "reasoning": "reasoning text arrives as content"}


def without(a: Analysis, drop: set[str]) -> Analysis:
    """The analysis as if the template had no such fields: no tools (but their end-of-turn markers), no
    reasoning, or calls without ids. Emitting it keeps content's bounds consistent with what is left."""
    t, r = a.tools, a.reasoning
    if "tool_calls" in drop:
        t = Tools(end_markers=t.end_markers)
    elif "ids" in drop:
        t = dataclasses.replace(t, id_path=(), id_in_header=False)
    if "reasoning" in drop:
        r = Reasoning()
        if t.headed.kind:
            t = dataclasses.replace(t, headed=dataclasses.replace(t.headed, reasoning_words=()))
    return dataclasses.replace(a, tools=t, reasoning=r)


def _attempts(failing: set[str], present: frozenset[str]) -> list[set[str]]:
    """Field sets to drop, keeping the most first. A failing content may be caused by the fields that
    bound it (a call opener it does not stop at), so those are tried next."""
    drop = failing - {"content"}
    if "tool_calls" in drop:
        drop.add("ids")
    tries = [drop] if drop else []
    if "content" in failing:
        tries += [drop | {"tool_calls", "ids"}, drop | {"tool_calls", "ids", "reasoning"}]
    out: list[set[str]] = []
    for d in tries:
        d = d & present
        if d and d not in out:
            out.append(d)
    return out


def settle(chat_template: str, special_tokens: dict | None, a: Analysis, template: dict, reasoning_field: str) -> tuple[dict, list[str], dict]:
    """(template, its emit warnings or None to keep the caller's, verdict) for the first field set that
    verifies (the caller says ``describe(verdict)`` when it is degraded). Raises ``VerificationError`` (carrying the verdict) when none does."""
    from .roundtrip import template_fields, verify

    report = verify(chat_template, template, special_tokens, analysis=a, reasoning_field=reasoning_field)
    per = report.per_field()
    fields = {f: per.get(f, "absent") for f in FIELDS}
    verdict = {"status": "full", "fields": fields, "dropped": [], "first_failure": report.first_line(), "reason": None,
               "counts": report.counts(), "limits": report.limits()}
    if report.passed:
        _realistic(verdict, report, template, a, reasoning_field)
        unparsed = _unparsed(report)
        if unparsed:  # rendered, but the analysis emitted no field for it: say so, as for a field left out
            fields.update(dict.fromkeys(unparsed, "fail"))
            verdict.update(status="degraded", dropped=unparsed,
                           first_failure=f"the template renders {', '.join(unparsed)} that the analysis could not read")
        return template, None, verdict
    last = report
    if report.first_failure() is not None:
        for drop in _attempts({f for f, v in per.items() if v == "fail"}, template_fields(template, reasoning_field)):
            try:
                reduced, warnings = emit(without(a, drop), reasoning_field)
            except ValueError:
                continue
            last = verify(chat_template, reduced, special_tokens, analysis=a, reasoning_field=reasoning_field)
            if last.passed:
                dropped = [f for f in FIELDS if f in drop]
                verdict.update(status="degraded", dropped=dropped, counts=last.counts(), limits=last.limits())
                _realistic(verdict, last, reduced, a, reasoning_field)
                return reduced, warnings, verdict
    failing = sorted({f for f, v in last.per_field().items() if v == "fail"}) or ["content"]
    why = report.reason() if report.first_failure() is None else f"{'/'.join(failing)} does not round-trip: {last.first_line()}"
    verdict.update(status="refused", reason=why, counts=report.counts())
    raise VerificationError(f"no verified response_template: {why}", verdict=verdict)


def _realistic(verdict: dict, report, template: dict, a: Analysis, reasoning_field: str) -> None:
    from .realistic import check

    verdict["realistic"], verdict["realistic_failures"] = check(report.cases, template, a, report.fields, reasoning_field)


def _unparsed(report) -> list[str]:
    """Fields the template renders (some case expects them) that the response_template does not parse."""
    from .roundtrip import FIELD_NAMES

    seen = {FIELD_NAMES[k] for c in report.cases for k in c.expected}
    return [f for f in FIELDS if f in seen and f not in report.fields]


def describe(verdict: dict | None) -> str:
    """The verdict in one line: what the CLI warns, the hook logs and batch summaries show."""
    if not verdict:
        return "not verified"
    if verdict["status"] == "refused":
        return f"refused: {verdict['reason']}"
    failing = [k for k, v in (verdict.get("realistic") or {}).items() if v == "fail"]
    real = f"; real outputs it does not take: {', '.join(failing)}" if failing else ""
    if verdict["status"] == "degraded":
        dropped = verdict["dropped"]
        spill = "; ".join(SPILL[f] for f in dropped if f in SPILL) or "calls come without ids"
        return f"degraded: parsing of {', '.join(dropped)} left out ({spill}); first failure: {verdict['first_failure']}{real}"
    kept = ", ".join(f"{f} {v}" for f, v in verdict["fields"].items() if v != "absent")
    return f"full ({kept}){real}"
