"""Conformance on the 57 real chat templates in ../shared/corpus: every template infers (or fails with
one clear error when it cannot be rendered at all), transformers accepts the result, and the round
trip on the template's own renderings passes. Verify reports a case as a limit rather than a failure only
when the analysis found the values it carries unreadable and the same message without them round-trips;
which cases those are is listed in FORMAT_LIMITS, exactly, so a new limit is never silent."""

from pathlib import Path

import pytest
from transformers.utils.chat_parsing.response_templates import load_response_template

import autoparser
from autoparser.verify import verify

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "templates"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

# Templates that cannot be rendered with any probe: the error must say why.
UNRENDERABLE: dict[str, str] = {}

# Probe messages a template's format genuinely cannot carry through a response_template, with why.
# Verify must report exactly these as limits (a fix moves them out); every other case must pass.
FORMAT_LIMITS = {
    ("ByteDance-Seed-OSS", "nested args"): "lists and objects are rendered as Python repr (['a', 'b c'], {'k': 1}); no content type reads Python literals",
    ("google-gemma-4-31B-it", "nested args"): "the JSON dialect writes null as Python None, which the json content type cannot read",
    ("google-gemma-4-31B-it-interleaved", "nested args"): "the JSON dialect writes null as Python None, which the json content type cannot read",
}

TEMPLATES = sorted(CORPUS.glob("*.jinja")) if CORPUS.is_dir() else []
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS} (../shared is absent)")

_cache: dict = {}


def _infer(path: Path):
    if path not in _cache:
        src = path.read_text(encoding="utf-8")
        try:
            _cache[path] = (src, autoparser.infer_result(src, TOKENS))
        except autoparser.AutoparserError as e:
            _cache[path] = (src, e)
    return _cache[path]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_infers_and_transformers_accepts(path):
    src, res = _infer(path)
    if path.stem in UNRENDERABLE:
        assert isinstance(res, autoparser.AutoparserError)
        assert UNRENDERABLE[path.stem] in str(res)
        return
    assert not isinstance(res, Exception), str(res)
    load_response_template(res.template)
    assert not [w for w in res.warnings if "probe text" in w], res.warnings
    assert set(res.template["fields"]) <= {"thinking", "content", "tool_calls"}


@pytest.mark.parametrize("path", [p for p in TEMPLATES if p.stem not in UNRENDERABLE], ids=lambda p: p.stem)
def test_round_trip(path):
    src, res = _infer(path)
    report = verify(src, res.template, TOKENS, analysis=res.analysis)
    assert report.passed, str(report.to_dict()["first_failure"])[:3000]
    listed = {name for (stem, name) in FORMAT_LIMITS if stem == path.stem}
    limited = {c.name for c in report.cases if c.status == "limit"}
    assert limited == listed, f"limits found {sorted(limited)}, listed {sorted(listed)}"
    told = [w.removeprefix("not covered: ") for w in res.warnings if w.startswith("not covered: ")]
    assert all(any(t in lim for t in told) for lim in report.limits()), (report.limits(), res.warnings)  # infer said so
    assert report.counts()["pass"] >= 8


@pytest.mark.parametrize("path", [p for p in TEMPLATES if p.stem not in UNRENDERABLE], ids=lambda p: p.stem)
def test_warnings_and_verdict_say_the_same(path):
    """Every "not covered" warning ``infer`` prints is in the verdict's limits, and every limit is warned:
    gpt-oss warned that content beside calls parses back as reasoning while its verdict said nothing
    (``uncovered: []``, no limits); one account now (``verdict.reconcile``)."""
    src, res = _infer(path)
    told = [w.removeprefix("not covered: ") for w in res.warnings if w.startswith("not covered: ")]
    limits = res.verdict["limits"]
    assert all(any(t in lim for lim in limits) for t in told), (told, limits)
    assert all(any(t in lim for t in told) for lim in limits), (told, limits)
    if path.stem == "openai-gpt-oss-120b":
        from autoparser.analysis.families import CONTENT_AS_REASONING

        assert told == [CONTENT_AS_REASONING] and limits == [CONTENT_AS_REASONING]
