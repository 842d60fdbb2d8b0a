"""The realistic-output stage (issue 17): every verdict says which variations of real outputs its template takes.

Over corpus + wild, every template handed out carries ``verdict["realistic"]``; a variant it does not take is
named with its first failure (``realistic_failures``) and in ``describe``, and never drops a field. On a small
team-written template the variants are checked one by one with transformers' own parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser.verify.realistic import VARIANTS
from autoparser.verify.verdict import describe

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def test_every_verdict_reports_the_realistic_stage():
    paths = sorted((CORPUS / "templates").glob("*.jinja")) + sorted((CORPUS / "wild" / "templates").glob("*.jinja"))
    if not paths:
        pytest.skip(f"corpus not found at {CORPUS} (../shared is absent)")
    checked = 0
    for path in paths:
        try:
            res = autoparser.infer_result(path.read_text(encoding="utf-8"), TOKENS, where=path.name)
        except autoparser.AutoparserError:
            continue
        v = res.verdict
        assert set(v["realistic"]) <= set(VARIANTS), path.stem  # empty: no marker, no call, no reasoning to vary
        for variant, outcome in v["realistic"].items():
            assert outcome in ("pass", "fail"), (path.stem, variant)
            if outcome == "fail":
                assert v["realistic_failures"][variant].strip(), (path.stem, variant)
                assert variant in describe(v), (path.stem, variant)
        assert "raises" not in " ".join(v["realistic_failures"].values()), (path.stem, v["realistic_failures"])
        checked += bool(v["realistic"])
    assert checked >= 100


CHATML_CALLS = (ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def chatml():
    return autoparser.infer_result(CHATML_CALLS)


PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize("text", [
    CALL + "<|im_end|>",
    " " + CALL.replace("</tool_call>", " </tool_call>") + " <|im_end|>",  # a space before each marker
    CALL.replace("\n", "") + "<|im_end|>",  # no whitespace where the template writes some
    CALL.replace("<tool_call>", "<tool_call>\n\n") + "\n\n<|im_end|>",  # more where it writes some
    CALL,  # the end-of-turn marker stripped by the engine
    CALL.replace("</tool_call>", ""),  # the call's close left out at the end
    CALL + "</s>",  # a stray end-of-sequence marker after the call
])
def test_whitespace_and_stripped_markers_parse_the_same_call(chatml, text):
    msg = parse_response(text, chatml.template, prefix=PROMPT)
    assert msg["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}, text


@pytest.mark.parametrize("text", [
    CALL[:40],  # cut at a token limit
    CALL.replace('"Paris"}', '"Paris"'),  # a brace removed
    CALL.replace('{"name"', '{"name"{'),  # a brace doubled
    CALL.replace('"city": "Paris"', '"city": "Paris",'),  # not JSON
    '<tool_call>\n{"name": "get_weather", "arguments": "</tool_call>"}\n</tool_call>',  # the close inside a string
    CALL.replace("</tool_call>", "</s>"),  # another marker where the close belongs
])
def test_a_call_that_does_not_parse_stays_in_content(chatml, text):
    msg = parse_response(text, chatml.template, prefix=PROMPT)
    calls = msg.get("tool_calls") or []
    assert "get_weather" in (msg.get("content") or "") or (calls and calls[0]["function"]["name"] == "get_weather"), (text, msg)


def test_a_worded_stray_close_is_no_text_lost():
    """A stray reasoning close spelt token + word + token (``<|close|>think<|sep|>``, Kimi K3's), consumed as
    a close, may leave its word in content: the words the model wrote on both sides of it are all kept, so
    nothing is lost and the verdict stays full (it said 'text lost' when the judge wanted the close's word)."""
    res = autoparser.infer_result((ROOT / "models" / "worded-tags.jinja").read_text(encoding="utf-8"))
    assert res.verdict["realistic"]["stray_reasoning_close"] == "pass", res.verdict["realistic_failures"]
    assert res.verdict["text_lost"] == [] and res.verdict["status"] == "full"


def test_a_worded_content_close_before_calls_is_no_turn_end():
    """The content's worded close (``<|close|>response<|sep|>``) comes before the calls as before the turn's
    end, so it ends no turn: verification cuts a generation at the turn's real end and checks the calls after
    it (before, it cut at the content's close and the verdict said ``tool_calls: absent`` in a ``full``
    template). A stray ``<|close|>`` alone closes no content either."""
    res = autoparser.infer_result((ROOT / "models" / "typed-tags.jinja").read_text(encoding="utf-8"))
    assert res.verdict["status"] == "full" and res.verdict["fields"]["tool_calls"] == "pass", res.verdict
    assert res.verdict["tool_capabilities"]["content_beside"] == "pass", res.verdict["tool_capabilities"]
    prefix = '<|open|>message role="user"<|sep|>hi<|end_of_msg|><|open|>message role="assistant"<|sep|>'
    msg = parse_response('<|open|>response<|sep|>a <|close|> b<|close|>response<|sep|><|end_of_msg|>', res.template, prefix=prefix)
    assert msg.get("content") == "a <|close|> b", msg


def test_a_call_cut_off_without_its_sections_marker_is_a_realistic_variant():
    """``call_truncated`` also cuts a call written without the section's opening marker where each call has a marker
    of its own (models leave it out: Solar Open). The variant exists and passes on models/wrapped-call-tokens.jinja,
    and it judges: a template whose content never opens at the call's marker loses that text, and the variant
    says so (the emitter before the call's marker opened content failed it on Solar Open: degraded, text lost)."""
    from autoparser.verify.realistic import _variants, structural_markers

    src = (ROOT / "models" / "wrapped-call-tokens.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    assert res.verdict["realistic"]["call_truncated"] == "pass", res.verdict
    report = autoparser.pipeline.verify(src, res.template)
    case = next(c for c in report.cases if c.status == "pass" and c.expected.get("tool_calls"))
    cuts = [t for n, t, _, _ in _variants(case, res.analysis, structural_markers(res.analysis)) if n == "call_truncated"]
    assert any("<|calls|>" not in t and "<|call|>" in t for t in cuts), cuts
    # Content that also opens at the section's marker (as before the call's marker did) keeps a cut call's text only
    # where the section's marker was written: the variant without it fails, text lost.
    content = {"open_pattern": r"<\|say\|>|<\|calls\|>", "close": "<|done|>", "content": "text"}
    broken = {**res.template, "fields": {**res.template["fields"], "content": content}}
    verdict = autoparser.pipeline.judge(src, broken)[2]
    assert verdict["realistic"]["call_truncated"] == "fail", verdict
    assert "text lost" in verdict["realistic_failures"]["call_truncated"], verdict
