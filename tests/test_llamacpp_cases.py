"""llama.cpp conformance: parse llama.cpp's own chat-parser test cases with the inferred template.

``../shared/corpus/llamacpp-cases.jsonl`` holds the cases of llama.cpp's ``tests/test-chat.cpp`` (model
output, rendered prompt, tools, expected message). For every case the template file is inferred once
(module-level cache), the case's ``input`` is parsed with transformers' ``parse_response`` (prefix = the
case's prompt, ``tools=`` the case's tools) and content, reasoning and tool calls are compared with
llama.cpp's expected message.

Left out (counted by ``benchmarks/llamacpp_report.py``):

* partial cases (``is_partial``): llama.cpp's streaming of truncated output, not a finished message;
* reasoning kept in content: ``reasoning_format == "none"`` cases whose expected content carries the
  reasoning (its markers are in the input or the expected content, or the prompt forces the reasoning
  block open), i.e. llama.cpp was told *not* to extract reasoning. ``none`` cases without any reasoning
  in play (most tool-call cases) are kept.

Every other case passes or is listed in ``tests/llamacpp_exceptions.json`` (``"<template stem>#<case_index>":
"reason"``: genuine limits of the response_template format), which marks it ``xfail(strict=True)`` so an
exception that starts passing is noticed. ``tests/llamacpp_known_failing.json`` lists, the same way, cases
failing because of analyzer bugs not fixed yet (regenerate it with ``benchmarks/llamacpp_report.py
--write-known``); a case missing from both that fails is a regression.

The helpers here are shared with ``benchmarks/llamacpp_report.py``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from message_norm import norm_calls

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
CASES_FILE = CORPUS / "llamacpp-cases.jsonl"
EXCEPTIONS_FILE = Path(__file__).resolve().parent / "llamacpp_exceptions.json"
KNOWN_FILE = Path(__file__).resolve().parent / "llamacpp_known_failing.json"

# Test data: the special tokens of each model (from its tokenizer_config.json). llama.cpp's test prompts
# are rendered without a BOS, so these only matter to inference (e.g. Mistral ends assistant turns with
# eos_token). Templates not listed get DEFAULT_TOKENS.
DEFAULT_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
_LLAMA3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
_DEEPSEEK = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
_LFM = {"bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"}
_COHERE = {"bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>"}
SPECIAL_TOKENS: dict[str, dict[str, str]] = {
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": _COHERE,
    "CohereForAI-c4ai-command-r-plus-tool_use": _COHERE,
    "google-gemma-2-2b-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "google-gemma-4-31B-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "ByteDance-Seed-OSS": {"bos_token": "<seed:bos>", "eos_token": "<seed:eos>", "pad_token": "<seed:pad>"},
    "deepseek-ai-DeepSeek-V3.1": _DEEPSEEK,
    "deepseek-ai-DeepSeek-V3.2": _DEEPSEEK,
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": _DEEPSEEK,
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": _DEEPSEEK,
    "llama-cpp-deepseek-r1": _DEEPSEEK,
    "LFM2-8B-A1B": _LFM,
    "LFM2.5-Instruct": _LFM,
    "LFM2.5-8B-A1B": _LFM,
    "meetkai-functionary-medium-v3.1": _LLAMA3,
    "meetkai-functionary-medium-v3.2": _LLAMA3,
    "fireworks-ai-llama-3-firefunction-v2": _LLAMA3,
    "meta-llama-Llama-3.1-8B-Instruct": _LLAMA3,
    "meta-llama-Llama-3.2-3B-Instruct": _LLAMA3,
    "meta-llama-Llama-3.3-70B-Instruct": _LLAMA3,
    "StepFun3.5-Flash": {"bos_token": "<|begin▁of▁sentence|>", "eos_token": "<|im_end|>"},
}


# ---------------------------------------------------------------------------------------------- data

def stem(case: dict) -> str:
    """``models/templates/Qwen3.5-4B.jinja`` -> ``Qwen3.5-4B``."""
    name = case["template"].rsplit("/", 1)[-1]
    return name[: -len(".jinja")] if name.endswith(".jinja") else name


def case_id(case: dict) -> str:
    return f"{stem(case)}#{case['case_index']}"


def template_path(case: dict) -> Path:
    return CORPUS / "templates" / case["template"].rsplit("/", 1)[-1]


def special_tokens(name: str) -> dict[str, str]:
    return dict(SPECIAL_TOKENS.get(name, DEFAULT_TOKENS))


def load_cases() -> list[dict]:
    if not CASES_FILE.is_file():
        return []
    with CASES_FILE.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_known() -> dict[str, str]:
    """Cases failing because of analyzer bugs not fixed yet (tests/llamacpp_known_failing.json)."""
    if not KNOWN_FILE.is_file():
        return {}
    data = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def load_exceptions() -> dict[str, str]:
    if not EXCEPTIONS_FILE.is_file():
        return {}
    data = json.loads(EXCEPTIONS_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


# ------------------------------------------------------------------------------------- classification

SKIP_PARTIAL = "partial"
SKIP_REASONING_IN_CONTENT = "reasoning-in-content"


def _reasoning_markers(case: dict) -> list[str]:
    markers = [m for m in (case.get("thinking_start_tag"), case.get("thinking_end_tag")) if m and m.strip()]
    # formats whose reasoning has no tag pair in llama.cpp's metadata
    markers += ["<|channel|>analysis", "[BEGIN FINAL RESPONSE]"]
    return markers


def skip_reason(case: dict) -> str | None:
    """Why a case is left out, or None if it is tested."""
    if case.get("is_partial"):
        return SKIP_PARTIAL
    if case.get("reasoning_format") == "none":
        markers = _reasoning_markers(case)
        content = (case.get("expected") or {}).get("content") or ""
        if any(m in case["input"] or m in content for m in markers):
            return SKIP_REASONING_IN_CONTENT
        start = (case.get("thinking_start_tag") or "").strip()
        if start and case.get("prompt", "").rstrip().endswith(start):
            return SKIP_REASONING_IN_CONTENT  # prompt forces the reasoning block open
    return None


# --------------------------------------------------------------------------------------- inference

class InferenceFailure(Exception):
    pass


@lru_cache(maxsize=None)
def infer_template(name: str) -> tuple[dict | None, str | None, float]:
    """(response_template, error, seconds) for a corpus template stem; cached per template file."""
    import time

    import autoparser

    source = (CORPUS / "templates" / f"{name}.jinja").read_text(encoding="utf-8")
    for attempt in range(2):
        t0 = time.perf_counter()
        try:
            result = autoparser.infer_result(source, special_tokens(name), where=f"{name}.jinja")
        except Exception as e:  # noqa: BLE001 - reported per case
            error = f"{type(e).__name__}: {e}"
            # The analysis runs under a wall-clock budget; on a loaded machine (parallel test runs) it can
            # trip spuriously. Retry once: this harness checks conformance, the budget has its own tests.
            if attempt == 0 and "took longer than" in str(e):
                continue
            return None, error, time.perf_counter() - t0
        return result.template, None, time.perf_counter() - t0
    raise AssertionError("unreachable")


# ------------------------------------------------------------------------------------------ compare

def _text(v: Any) -> str:
    if v is None:
        return ""
    return v.strip() if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def normalize_expected(expected: dict) -> dict:
    return {
        "content": _text(expected.get("content")),
        "reasoning": _text(expected.get("reasoning_content")),
        "tool_calls": norm_calls(expected.get("tool_calls")),
    }


def normalize_got(msg: dict) -> dict:
    reasoning = next((msg[k] for k in ("thinking", "reasoning_content", "reasoning") if k in msg), None)
    return {
        "content": _text(msg.get("content")),
        "reasoning": _text(reasoning),
        "tool_calls": norm_calls(msg.get("tool_calls")),
    }


def diff(expected: dict, got: dict) -> list[str]:
    """Fields that differ (``content``, ``reasoning``, ``tool_calls[i].name`` ...); empty when equal.

    Tool-call ids are compared only when both sides have one (llama.cpp generates ids for formats that
    carry none; a format that carries one but is not parsed is noted by the report, not failed)."""
    out = [f for f in ("content", "reasoning") if expected[f] != got[f]]
    e, g = expected["tool_calls"], got["tool_calls"]
    if len(e) != len(g):
        out.append(f"tool_calls.count({len(e)}!={len(g)})")
    for i, (a, b) in enumerate(zip(e, g)):
        if a.get("name") != b.get("name"):
            out.append(f"tool_calls[{i}].name")
        if a.get("arguments") != b.get("arguments"):
            out.append(f"tool_calls[{i}].arguments")
        if "id" in a and "id" in b and a["id"] != b["id"]:
            out.append(f"tool_calls[{i}].id")
    return out


def run_case(case: dict) -> dict:
    """Parse one case; returns {"id", "status": pass|fail|error, "diff", "expected", "got", "error"}."""
    from transformers.utils.chat_parsing import parse_response

    name = stem(case)
    expected = normalize_expected(case.get("expected") or {})
    out = {"id": case_id(case), "template": name, "case_index": case["case_index"], "expected": expected,
           "got": None, "diff": [], "error": None, "raw": None}
    template, err, _ = infer_template(name)
    if template is None:
        out.update(status="error", error=f"infer: {err}")
        return out
    try:
        msg = parse_response(case["input"], template, prefix=case.get("prompt") or "", tools=case.get("tools"))
    except Exception as e:  # noqa: BLE001
        out.update(status="error", error=f"parse: {type(e).__name__}: {e}")
        return out
    got = normalize_got(msg)
    d = diff(expected, got)
    out.update(status="fail" if d else "pass", got=got, diff=d, raw=msg)
    return out


# --------------------------------------------------------------------------------------------- tests

_CASES = load_cases()
_EXCEPTIONS = load_exceptions()
# Cases that fail because of analyzer bugs not fixed yet (NOT expressiveness limits); strict xfails so a
# fix is noticed. Regenerate with: python benchmarks/llamacpp_report.py --write-known
_KNOWN = load_known()


def _params():
    if not _CASES:
        return [pytest.param(None, id="corpus-missing",
                             marks=pytest.mark.skip(reason=f"llama.cpp cases not found at {CASES_FILE} (../shared absent)"))]
    params = []
    for case in _CASES:
        cid = case_id(case)
        marks = []
        why = skip_reason(case)
        if why:
            marks.append(pytest.mark.skip(reason=f"left out: {why}"))
        elif cid in _EXCEPTIONS:
            marks.append(pytest.mark.xfail(strict=True, reason=_EXCEPTIONS[cid]))
        elif cid in _KNOWN:
            marks.append(pytest.mark.xfail(strict=True, reason="known analyzer bug: " + _KNOWN[cid]))
        params.append(pytest.param(case, id=cid, marks=marks))
    return params


def test_exceptions_name_real_cases():
    """Every exception names a tested (not skipped) case and gives a reason; known failures likewise."""
    if not _CASES:
        pytest.skip("llama.cpp cases not found (../shared absent)")
    tested = {case_id(c) for c in _CASES if not skip_reason(c)}
    stale = sorted(k for k in _EXCEPTIONS if k not in tested)
    assert not stale, f"exceptions for unknown or skipped cases: {stale}"
    assert all(isinstance(v, str) and v.strip() for v in _EXCEPTIONS.values())
    stale = sorted(k for k in _KNOWN if k not in tested or k in _EXCEPTIONS)
    assert not stale, f"known-failing entries for unknown, skipped or excepted cases: {stale}"


@pytest.mark.parametrize("case", _params())
def test_llamacpp_case(case):
    r = run_case(case)
    if r["status"] == "error":
        pytest.fail(r["error"])
    assert not r["diff"], (
        f"{r['id']}: fields differ: {', '.join(r['diff'])}\n"
        f"  input:    {case['input']!r}\n"
        f"  expected: {json.dumps(r['expected'], ensure_ascii=False)}\n"
        f"  got:      {json.dumps(r['got'], ensure_ascii=False)}"
    )
