"""Verified by default: an inferred template is round-tripped on its own renderings before anyone gets it.

When a field parses wrongly the template is emitted again from the analysis without that field (its text
then arrives as plain content, which is what verify checks), and re-verified; when content itself cannot be
made to round-trip nothing is emitted. A wrong tool call or reasoning split is worse than none: a caller
cannot tell, while text in content is at worst untidy.

The verdict is a plain dict (it goes into JSON files, the cache and across processes):
``status`` full | degraded | refused; ``fields``: content, reasoning, tool_calls, ids -> pass | limit | fail
| absent (absent: the complete template does not parse it or no probe message carries it); ``dropped``:
the fields the emitted template lacks; ``first_failure``: the complete template's first diverging case;
``reason``: why it was refused; ``counts`` of the emitted template's verification and its ``limits``
(what no response_template reads back: the round trip's and the analysis' alike, each also a warning,
``reconcile``);
``tool_capabilities``: single, parallel, nested, content_beside, ids -> pass | fail | absent (what the
emitted tool_calls field covers; fail: rendered but not covered, its text arrives in content);
``uncovered``: the failing capabilities of a tool_calls field that is kept.
``realistic``: variant -> pass | fail for the outputs real models write (``verify.realistic``), with
``realistic_failures``: variant -> its first failure. A failing variant is reported, never dropped for; but
one that loses text (``LOSES_TEXT``, listed in ``text_lost``) makes a full verdict ``degraded``.
"""

from __future__ import annotations

import dataclasses

from ..analysis.model import Analysis, Reasoning, Tools
from ..emit import emit
from ..errors import VerificationError
from . import realistic
from .capabilities import capabilities, capability, rejudge_uncovered
from .roundtrip import FIELD_NAMES, template_fields, verify

FIELDS = ("content", "reasoning", "tool_calls", "ids")
# Variants whose failure can mean words the model wrote reach no field (not a field read wrongly): the text
# on both sides of a call, the text after a stray reasoning close, and a call that is cut off or broken
# (its marker opens no call). When it does (``realistic.LOST``), the verdict is not ``full``; text read into
# another field (a call's arguments) is a failing variant only.
LOSES_TEXT = ("text_around_calls", "stray_reasoning_close", "malformed_call", "call_truncated")
CAPABILITY_WORDS = {"single": "single calls", "parallel": "parallel calls", "nested": "nested arguments",
                    "content_beside": "content beside calls", "ids": "call ids"}
LOST_WORDS = {"text_around_calls": "text both before and after tool calls",
              "stray_reasoning_close": "a reasoning close after the content",
              "malformed_call": "a call whose JSON is broken", "call_truncated": "a call cut off by a token limit"}
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
    verifies (the caller says ``describe(verdict)`` when it is degraded). Raises ``VerificationError`` (carrying the verdict) when none does.

    Tool calls are judged by capability: when single calls round-trip but parallel calls (say) do not,
    the field is kept if the uncovered cases' text arrives in content with no call parsed from it;
    the field is dropped whole only when that fails or no capability holds."""
    report = verify(chat_template, template, special_tokens, analysis=a, reasoning_field=reasoning_field)
    if report.passed:
        return template, None, judge(report, template, a, reasoning_field)
    verdict = _base(report)
    fields = verdict["fields"]
    last = report
    if report.first_failure() is not None:
        partial = _partial(template, report, verdict["tool_capabilities"], reasoning_field)
        if partial is not None:
            reduced, caps = partial
            uncovered = [k for k, v in caps.items() if v == "fail"]
            verdict.update(status="degraded", uncovered=uncovered, counts=reduced.counts(), limits=reduced.limits(), tool_capabilities=caps)
            fields.update({f: v for f, v in reduced.per_field().items() if f in fields})
            fields["tool_calls"] = "pass"
            if "ids" in uncovered:
                fields["ids"] = "fail"
            _unseen(a, verdict)
            _realistic(verdict, reduced, template, a, reasoning_field, set(uncovered))
            return template, None, verdict
        for drop in _attempts({f for f, v in report.per_field().items() if v == "fail"}, template_fields(template, reasoning_field)):
            try:
                reduced, warnings = emit(without(a, drop), reasoning_field)
            except ValueError:
                continue
            last = verify(chat_template, reduced, special_tokens, analysis=a, reasoning_field=reasoning_field)
            if last.passed:
                dropped = [f for f in FIELDS if f in drop]
                caps = verdict["tool_capabilities"]
                if "tool_calls" in drop:
                    caps = _all_fail(caps, report)
                elif "ids" in drop:
                    caps = {**caps, "ids": "fail"}
                verdict.update(status="degraded", dropped=dropped, counts=last.counts(), limits=last.limits(), tool_capabilities=caps)
                _unseen(a, verdict)
                _realistic(verdict, last, reduced, a, reasoning_field)
                return reduced, warnings, verdict
    failing = sorted({f for f, v in last.per_field().items() if v == "fail"}) or ["content"]
    why = report.reason() if report.first_failure() is None else f"{'/'.join(failing)} does not round-trip: {last.first_line()}"
    verdict.update(status="refused", reason=why, counts=report.counts())
    raise VerificationError(f"no verified response_template: {why}", verdict=verdict)


def _base(report) -> dict:
    """The verdict's keys, as the report on the template as it stands gives them (one shape for every status)."""
    per = report.per_field()
    return {"status": "full", "fields": {f: per.get(f, "absent") for f in FIELDS}, "dropped": [], "uncovered": [],
            "first_failure": report.first_line(), "reason": None, "counts": report.counts(), "limits": report.limits(),
            "tool_capabilities": capabilities(report), "realistic": {}, "realistic_failures": {}, "text_lost": []}  # the last three: ``_realistic``


def judge(report, template: dict, a: Analysis, reasoning_field: str) -> dict:
    """The verdict on ``template`` as it stands, from its round trip ``report``: nothing is left out to make it
    pass. Full or degraded (what it renders but does not parse: ``dropped``) when it passed, as ``settle`` says
    of a template it hands out; refused, with the first diverging case as ``reason``, when it did not."""
    verdict = _base(report)
    if not report.passed:
        verdict.update(status="refused", reason=report.reason())
        return verdict
    _unseen(a, verdict)
    unparsed = _unparsed(report)
    if unparsed:  # rendered, but no field parses it: said as for a field left out
        verdict["fields"].update(dict.fromkeys(unparsed, "fail"))
        verdict.update(status="degraded", dropped=unparsed,
                       first_failure=f"the template renders {', '.join(unparsed)} that the analysis could not read")
        if "tool_calls" in unparsed:
            verdict["tool_capabilities"] = _all_fail(verdict["tool_capabilities"], report)
    _realistic(verdict, report, template, a, reasoning_field)
    return verdict


def _realistic(verdict: dict, report, template: dict, a: Analysis, reasoning_field: str, uncovered: set[str] = frozenset()) -> None:
    """What real outputs vary in, checked on the template handed out (on the cases of the capabilities it
    covers); reported, never a reason to drop a field (the round trip already showed each field right on
    the template's own text)."""
    cases = [c for c in report.cases if capability(c) not in uncovered] if uncovered else report.cases
    verdict["realistic"], verdict["realistic_failures"] = realistic.check(cases, template, a, report.fields, reasoning_field,
                                                                         parsing=report.parsing)
    lost = [v for v in LOSES_TEXT if verdict["realistic"].get(v) == "fail" and realistic.LOST in verdict["realistic_failures"][v]]
    verdict["text_lost"] = lost
    if lost and verdict["status"] == "full":  # text that vanishes is never a full verdict (docs/FORMATS.md §7b)
        verdict["status"] = "degraded"
        verdict["first_failure"] = verdict["realistic_failures"][lost[0]]


def _all_fail(caps: dict, report) -> dict:
    """Capabilities once the tool_calls field is left out: every one the renderings show fails."""
    shown = {capability(c) for c in report.cases} - {None}
    return {k: ("fail" if k in shown or (k == "ids" and v != "absent") else "absent") for k, v in caps.items()}


def _partial(template: dict, report, caps: dict, reasoning_field: str):
    """(report, capabilities) when the tool_calls field holds for single calls and every failing case is
    a tool-call case of another capability whose text, rejudged as uncovered, arrives in content.
    The ids capability is judged on the covered cases."""
    if "tool_calls" not in report.fields:
        return None
    if caps["single"] != "pass":
        return None
    failing = [c for c in report.cases if c.status == "fail"]
    uncovered = {capability(c) for c in failing}
    if None in uncovered or "single" in uncovered or not uncovered:
        return None
    rejudged = rejudge_uncovered(report, template, uncovered, reasoning_field)
    if not rejudged.passed:
        return None
    return rejudged, {**capabilities(rejudged), **dict.fromkeys(uncovered, "fail")}


def _unseen(a: Analysis, verdict: dict) -> None:
    """Calls the analysis cannot see at all (``Tools.unseen``: rendered only in earlier turns, or only in
    a call shape callers do not send): the verdict says so, never silently."""
    unseen = a.tools.unseen
    if not unseen or "tool_calls" in verdict["dropped"]:
        return
    verdict["fields"]["tool_calls"] = "fail"
    verdict["dropped"] = sorted(set(verdict["dropped"]) | {"tool_calls"}, key=FIELDS.index)
    verdict["tool_capabilities"] = {k: "fail" if k != "ids" else v for k, v in verdict["tool_capabilities"].items()}
    earlier = verdict["first_failure"] if verdict["status"] == "degraded" else None
    verdict.update(status="degraded", first_failure="; ".join(list(unseen) + ([earlier] if earlier else [])))


def _unparsed(report) -> list[str]:
    """Fields the template renders (some case expects them) that the response_template does not parse."""
    seen = {FIELD_NAMES[k] for c in report.cases for k in c.expected}
    return [f for f in FIELDS if f in seen and f not in report.fields]


NOT_COVERED = "not covered: "


def reconcile(warnings: list[str], verdict: dict) -> list[str]:
    """One account of what the template handed out does not cover, in its warnings and in its verdict
    alike. Emit warns of what the analysis found the format cannot express (``Tools.uncovered``: "not
    covered: …"); the round trip finds limits of its own (unreadable values, content read as
    reasoning). A statement only one of them makes is added to the other: a warning to the verdict's
    ``limits`` (nameless calls the round trip has no case for), a limit to the warnings. Returns the
    warnings; ``verdict`` is updated in place."""
    said = [w[len(NOT_COVERED):] for w in warnings if w.startswith(NOT_COVERED)]
    limits = verdict.setdefault("limits", [])
    limits += [s for s in said if not any(s in lim for lim in limits)]
    return warnings + [NOT_COVERED + lim.removeprefix(NOT_COVERED) for lim in limits if not any(s in lim for s in said)]


def describe(verdict: dict | None) -> str:
    """The verdict in one line: what the CLI warns, the hook logs and batch summaries show."""
    if not verdict:
        return "not verified"
    if verdict["status"] == "refused":
        return f"refused: {verdict['reason']}"
    if verdict["status"] == "degraded":
        dropped = verdict["dropped"]
        parts = []
        if dropped:
            spill = "; ".join(SPILL[f] for f in dropped if f in SPILL) or "calls come without ids"
            parts.append(f"parsing of {', '.join(dropped)} left out ({spill})")
        lost = verdict.get("text_lost") or []
        if lost:
            parts.append(f"text lost where real outputs write {' and '.join(LOST_WORDS[v] for v in lost)} "
                         f"({verdict['realistic_failures'][lost[0]]})")
        uncovered = verdict.get("uncovered") or []
        if uncovered:
            held = [k for k, v in (verdict.get("tool_capabilities") or {}).items() if v == "pass"]
            parts.append(f"tool calls not covered: {', '.join(CAPABILITY_WORDS.get(u, u) for u in uncovered)} "
                         f"(their text arrives as content; covered: {', '.join(CAPABILITY_WORDS.get(h, h) for h in held)})")
        first = "" if parts and lost and not dropped and not uncovered else f"; first failure: {verdict['first_failure']}"
        return f"degraded: {'; '.join(parts)}{first}" + _real(verdict)
    kept = ", ".join(f"{f} {v}" for f, v in verdict["fields"].items() if v != "absent")
    return f"full ({kept})" + _real(verdict)


def _real(verdict: dict) -> str:
    failing = [k for k, v in (verdict.get("realistic") or {}).items() if v == "fail"]
    return f"; real outputs it does not take: {', '.join(failing)}" if failing else ""
