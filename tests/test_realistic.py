"""The realistic-output stage: variants of the template's own renderings that real outputs show are derived,
parsed with transformers' parser and reported per variant; every verdict names what does not hold and why."""

from __future__ import annotations

from pathlib import Path

import pytest

import autoparser
from autoparser.verify import VERIFY_TOOLS, realistic, verify
from autoparser.verify.verdict import describe

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
CHATML = (ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8")


def _report(src: str):
    res = autoparser.infer_result(src, TOKENS)
    return res, verify(src, res.template, TOKENS, analysis=res.analysis)


def test_variants_move_only_structural_markers():
    """A marker inside the message's own text (``<y>`` in reasoning) is text, not layout: no variant moves it."""
    res, report = _report(CHATML)
    case = next(c for c in report.cases if c.name == "reasoning + content" and c.status == "pass" and not c.history)
    assert "<y>" in case.generated
    spans = realistic.structural(case.generated, case.expected)
    assert spans and all(case.generated[s:e] != "<y>" for s, e in spans)
    got = realistic.variants(case, res.analysis, report.fields)
    spaced = got["space_before_marker"][0].text
    assert " <y>" not in spaced.replace("} <y>", "") and spaced.count(" </think>") == 1


def test_layout_variants_hold_and_damage_is_reported():
    """chatml-think takes whitespace at every marker (its emitter takes the whitespace after each close); what
    it cannot take is reported with the case and the reason, never raised."""
    res, report = _report(CHATML)
    got = realistic.check(report, res.template, res.analysis, "thinking", VERIFY_TOOLS)
    v = got["variants"]
    assert set(v) == set(realistic.ORDER)
    assert v["space_before_marker"] == v["newline_around_marker"] == v["whitespace_dropped"] == "pass"
    assert v["ids_removed"] == "absent"  # the template renders no ids
    for name, status in v.items():
        assert (status == "fail") == (name in got["failures"]), name
    assert all(got["failures"][k].startswith("'") for k in got["failures"])


def test_a_strict_template_fails_the_whitespace_variant():
    """A hand-written template that requires the exact newline after its call opener does not take the
    variant that drops it: the stage says so (it judges, it does not trust the template)."""
    res, report = _report(CHATML)
    strict = {**res.template, "fields": dict(res.template["fields"])}
    calls = dict(strict["fields"]["tool_calls"])
    calls.pop("open", None)
    calls["open_pattern"] = r"<tool_call>\n"
    strict["fields"]["tool_calls"] = calls
    got = realistic.check(report, strict, res.analysis, "thinking", VERIFY_TOOLS)
    assert got["variants"]["whitespace_dropped"] == "fail", got


def test_verdicts_name_every_variant_over_corpus_and_wild():
    """Over corpus + wild: each template handed out carries the stage's result, every variant named with
    pass/fail/absent, and each failure with the case and why."""
    paths = sorted((CORPUS / "templates").glob("*.jinja")) + sorted((CORPUS / "wild" / "templates").glob("*.jinja"))
    if not paths:
        pytest.skip(f"corpus not found at {CORPUS} (../shared is absent)")
    seen = 0
    for path in paths:
        try:
            res = autoparser.infer_result(path.read_text(encoding="utf-8"), TOKENS, where=path.name)
        except autoparser.AutoparserError:
            continue
        v = res.verdict
        assert set(v["realistic"]) == set(realistic.ORDER), path.name
        assert set(v["realistic_failures"]) == {k for k, s in v["realistic"].items() if s == "fail"}, path.name
        if v["realistic_failures"]:
            assert "real-output variants not held: " in describe(v), path.name
        seen += 1
    assert seen >= 100
