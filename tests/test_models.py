"""The team's own chat templates in models/: each infers to its reviewed response_template and
round-trips through transformers' parser, offline."""

import json
from pathlib import Path

import pytest

import autoparser
from autoparser.pipeline import verify

MODELS = Path(__file__).resolve().parents[1] / "models"
TEMPLATES = sorted(MODELS.glob("*.jinja"))


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_infers_expected_template(path):
    expected = json.loads(path.with_suffix(".response.json").read_text(encoding="utf-8"))
    assert autoparser.infer(path.read_text(encoding="utf-8")) == expected


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_round_trip(path):
    report = verify(path.read_text(encoding="utf-8"))
    counts = report.counts()
    assert report.passed, json.dumps(report.to_dict(), indent=1, ensure_ascii=False)[:4000]
    # content, awkward content, with and without history, in every mode; a limit is a case that round-trips
    # without the argument values the analysis found unreadable (Python True/None in a Python-dict dialect)
    assert counts["pass"] >= 4 and counts["pass"] + counts["limit"] >= 8
    if "reasoning_content" in path.read_text(encoding="utf-8"):
        assert report.per_field().get("reasoning") == "pass"


def test_verify_catches_a_broken_template():
    src = (MODELS / "chatml-think.jinja").read_text(encoding="utf-8")
    broken = json.loads((MODELS / "chatml-think.response.json").read_text(encoding="utf-8"))
    thinking = broken["fields"]["thinking"]
    thinking.pop("close", None)
    thinking.pop("close_pattern", None)
    thinking["close"] = "</thought>"  # wrong end marker
    report = verify(src, broken)
    assert not report.passed
    first = report.first_failure()
    assert first is not None and first.fields.get("reasoning") == "fail"
    assert "</think>" in first.generated


def test_special_tokens_the_template_reads(capsys):
    """A bare .jinja carries no special tokens: infer says which ones it rendered empty, and the CLI's
    --token supplies them (they change the analysis where the template writes them)."""
    from autoparser.cli.main import main

    path = MODELS / "forced-closed.jinja"
    src = path.read_text(encoding="utf-8")
    assert any("bos_token" in w for w in autoparser.infer_result(src).warnings)
    assert not any("bos_token" in w for w in autoparser.infer_result(src, {"bos_token": "<s>"}).warnings)
    assert main(["infer", str(path), "--token", "bos_token=<s>"]) == 0
    assert "bos_token" not in capsys.readouterr().err
    assert main(["infer", str(path), "--token", "bos_token"]) == 2
    assert capsys.readouterr().err.strip().endswith("--token wants NAME=VALUE, got 'bos_token'")


if __name__ == "__main__":
    # After a reviewed change to the emitter: rewrite every expected template (then read the git diff).
    for path in TEMPLATES:
        template = autoparser.infer(path.read_text(encoding="utf-8"))
        path.with_suffix(".response.json").write_text(json.dumps(template, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(path.with_suffix(".response.json").name)


def test_nameless_calls_are_in_the_verdict_as_in_the_warnings():
    """Calls rendered without their names cannot be parsed (the field is left out): the warning says so,
    and the verdict's limits say the same, though no round-trip case shows it."""
    res = autoparser.infer_result((MODELS / "nameless-calls.jinja").read_text(encoding="utf-8"))
    told = [w.removeprefix("not covered: ") for w in res.warnings if w.startswith("not covered: ")]
    assert told and res.verdict["limits"] == told
