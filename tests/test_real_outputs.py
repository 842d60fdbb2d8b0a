"""Real model outputs: what models and serving engines actually write, parsed with the inferred template.

``tests/data/real_outputs/*.jsonl`` (one file per public source) holds model outputs with the message the
source's own hand-written parser is expected to return, transcribed as data with the repository, path
and commit they come from (Ollama's parser tests, LMDeploy's, mlx-lm's, model cards...). vLLM's and
SGLang's parser tests are NOT among them: they are kept for an independent evaluation.

Each case names a chat template of the family it was written for (``../shared/corpus/templates`` or
``wild/templates``). The template is inferred once (verified, as ``infer`` hands it out), the prefix is its
generation prompt for one user message (rendered with the template switches in ``prompt.kwargs``, e.g.
``enable_thinking``, and ``prompt.user`` as the user message, plus ``prompt.append`` when the source's prompt left a block open that this template
does not; ``prompt.text`` replaces it all), and the output is parsed with transformers' own ``parse_response`` one-shot and with ``ResponseParser``
fed in small chunks. Content and reasoning compare without whitespace (hand-written parsers trim
differently around markers and join the text around calls differently), arguments as JSON values, ids
only where the expected message has one.

Every case passes or is listed in ``tests/real_outputs_known_failing.json`` with a reason; a listed case
that passes fails too, so the list stays true both ways. ``python benchmarks/real_outputs.py`` prints the
score (per deviation, per family) and ``--update`` rewrites the list after the emitter changes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from message_norm import norm_calls

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "real_outputs"
KNOWN_FILE = HERE / "real_outputs_known_failing.json"
CORPUS = HERE.parents[0].parent / "shared" / "corpus"

DEVIATIONS = {
    "none": "written as the template renders it",
    "whitespace": "whitespace at a marker boundary differs (space before a special token, newlines between tags)",
    "repeated_opener": "the reasoning opener is written again after a prompt that opened it",
    "missing_opener": "reasoning closed with no opener (the prompt opened it, or the model skipped it)",
    "missing_close": "a block opened and never closed (reasoning or a call cut off, or the end marker left out)",
    "missing_id": "a call id or index the template writes is left out",
    "text_around_calls": "content written before and after tool calls, or between them",
    "multiple_calls": "several calls in one turn",
    "truncated": "output cut off (a token limit) mid-call or mid-reasoning",
    "malformed": "a call whose arguments do not parse; its text must stay visible",
    "spelling": "an alternative spelling the family's parser accepts (keys, quotes, separators, fences)",
    "stray_marker": "a marker where the format has none (end-of-turn mid-text, a closer with no opener)",
    "reasoning_in_content": "the family's parser keeps the reasoning markers in content (reasoning off)",
}

# Special tokens the templates read (from the models' tokenizer_config.json); others get DEFAULT_TOKENS.
DEFAULT_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
_DEEPSEEK = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
_LLAMA3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
SPECIAL_TOKENS = {
    "deepseek-ai-DeepSeek-V3.1": _DEEPSEEK,
    "deepseek-ai-DeepSeek-V3.2": _DEEPSEEK,
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": _DEEPSEEK,
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": _DEEPSEEK,
    "llama-cpp-deepseek-r1": _DEEPSEEK,
    "LFM2-8B-A1B": {"bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"},
    "LFM2.5-8B-A1B": {"bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"},
    "LFM2.5-Instruct": {"bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"},
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": {"bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>"},
    "google-gemma-2-2b-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "google-gemma-4-31B-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "meta-llama-Llama-3.1-8B-Instruct": _LLAMA3,
    "meta-llama-Llama-3.2-3B-Instruct": _LLAMA3,
    "meta-llama-Llama-3.3-70B-Instruct": _LLAMA3,
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "ByteDance-Seed-OSS": {"bos_token": "<seed:bos>", "eos_token": "<seed:eos>", "pad_token": "<seed:pad>"},
}
FORBIDDEN_SOURCES = ("vllm-project/vllm", "sgl-project/sglang")


# ---------------------------------------------------------------------------------------------- data

def load_cases() -> list[dict]:
    cases = []
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    case = json.loads(line)
                    case["_file"] = f"{path.name}:{n}"
                    cases.append(case)
    return cases


def load_known() -> dict[str, str]:
    if not KNOWN_FILE.is_file():
        return {}
    data = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def template_file(case: dict) -> Path:
    """``Qwen3-Coder.jinja`` -> the corpus file; ``wild/NNN-x.jinja`` -> the wild one."""
    name = case["template"]
    if name.startswith("wild/"):
        return CORPUS / "wild" / "templates" / name[len("wild/"):]
    return CORPUS / "templates" / name


def family(case: dict) -> str:
    return case.get("family") or Path(case["template"]).stem


def tokens_for(case: dict) -> dict[str, str]:
    return dict(SPECIAL_TOKENS.get(Path(case["template"]).stem, DEFAULT_TOKENS))


# --------------------------------------------------------------------------------------- inference

@lru_cache(maxsize=None)
def _infer(path: str, tokens: tuple) -> tuple[dict | None, str | None]:
    """(response_template, error) as ``infer`` hands it out (verified); cached per template."""
    import autoparser

    source = Path(path).read_text(encoding="utf-8")
    for attempt in range(2):
        try:
            return autoparser.infer_result(source, dict(tokens), where=Path(path).name).template, None
        except Exception as e:  # noqa: BLE001 - reported per case
            if attempt == 0 and "took longer than" in str(e):  # a loaded machine trips the budget: retry once
                continue
            return None, f"{type(e).__name__}: {e}"
    raise AssertionError("unreachable")


@lru_cache(maxsize=None)
def _prefix(path: str, tokens: tuple, tools_json: str, kwargs_json: str, user: str | None) -> str:
    from autoparser.cli.parse import PLACEHOLDER_USER, generation_prompt

    tools = json.loads(tools_json) or None
    return generation_prompt(Path(path).read_text(encoding="utf-8"), dict(tokens), tools=tools, user_message=user or PLACEHOLDER_USER,
                             **json.loads(kwargs_json))


def prefix_for(case: dict) -> str:
    prompt = case.get("prompt") or {}
    if "text" in prompt:
        return prompt["text"]
    tokens = tuple(sorted(tokens_for(case).items()))
    tools_json = json.dumps(case.get("tools") or [], sort_keys=True)
    kwargs_json = json.dumps(prompt.get("kwargs") or {}, sort_keys=True)
    return _prefix(str(template_file(case)), tokens, tools_json, kwargs_json, prompt.get("user")) + prompt.get("append", "")


# ------------------------------------------------------------------------------------------ compare

def _text(v: Any) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        v = json.dumps(v, ensure_ascii=False)
    return re.sub(r"\s+", " ", v).strip()


def normalize(msg: dict) -> dict:
    reasoning = next((msg[k] for k in ("thinking", "reasoning_content", "reasoning") if k in msg), None)
    return {"content": _text(msg.get("content")), "reasoning": _text(reasoning), "tool_calls": norm_calls(msg.get("tool_calls"))}


def diff(expected: dict, got: dict) -> list[str]:
    """Fields that differ; ids count only where the expected message has one."""
    out = [f for f in ("content", "reasoning") if expected[f].replace(" ", "") != got[f].replace(" ", "")]
    e, g = expected["tool_calls"], got["tool_calls"]
    if len(e) != len(g):
        out.append(f"tool_calls.count({len(e)}!={len(g)})")
    for i, (a, b) in enumerate(zip(e, g)):
        if a.get("name") != b.get("name"):
            out.append(f"tool_calls[{i}].name")
        if a.get("arguments") != b.get("arguments"):
            out.append(f"tool_calls[{i}].arguments")
        if "id" in a and a["id"] != b.get("id"):
            out.append(f"tool_calls[{i}].id")
    return out


def _stream(template: dict, text: str, prefix: str, tools) -> dict:
    from transformers.utils.chat_parsing import ResponseParser

    p = ResponseParser(template, prefix=prefix, tools=tools)
    i = k = 0
    sizes = (1, 3, 2, 5, 4)
    while i < len(text):
        n = sizes[k % len(sizes)]
        p.feed(text[i:i + n])
        i += n
        k += 1
    msg, _ = p.finalize()
    return msg


def run_case(case: dict) -> dict:
    """{"id", "status": pass | fail | raise | stream | infer, "why", "expected", "got"}: ``fail`` = the message
    differs, ``raise`` = transformers' parser raised, ``stream`` = one-shot right but streamed differs,
    ``infer`` = no template was inferred."""
    from transformers.utils.chat_parsing import parse_response

    expected = normalize(case["expected"])
    out = {"id": case["id"], "family": family(case), "deviation": case.get("deviation", "none"), "expected": expected, "got": None}
    template, err = _infer(str(template_file(case)), tuple(sorted(tokens_for(case).items())))
    if template is None:
        return {**out, "status": "infer", "why": f"infer: {err}", "lost_words": lost_words(case, None)}
    tools = case.get("tools") or None
    try:
        prefix = prefix_for(case)
    except Exception as e:  # noqa: BLE001
        return {**out, "status": "infer", "why": f"prompt: {type(e).__name__}: {e}"}
    try:
        msg = parse_response(case["output"], template, prefix=prefix, tools=tools)
    except Exception as e:  # noqa: BLE001 - the parser must not raise on any text: that is the finding
        return {**out, "status": "raise", "why": f"parse_response raises {type(e).__name__}: {str(e)[:160]}", "lost_words": lost_words(case, None)}
    got = normalize(msg)
    d = diff(expected, got)
    out["got"] = got
    out["lost_words"] = lost_words(case, msg)
    if d:
        return {**out, "status": "fail", "why": "differs: " + ", ".join(d)}
    try:
        streamed = normalize(_stream(template, case["output"], prefix, tools))
    except Exception as e:  # noqa: BLE001
        return {**out, "status": "stream", "why": f"streamed: ResponseParser raises {type(e).__name__}: {str(e)[:160]}"}
    d = diff(expected, streamed)
    if d:
        return {**out, "got": streamed, "status": "stream", "why": "streamed differs: " + ", ".join(d)}
    return {**out, "status": "pass", "why": ""}


# ------------------------------------------------------------------------------------------ words kept

_WORD = re.compile(r"\w+")
# A marker spelt without attributes: ``<|tool_call_start|>``, ``<｜tool▁sep｜>``, ``</think>``, ``[TOOL_CALLS]``.
# Its words are the format's even where the template never renders that marker (a workaround's format).
_BARE_MARKER = re.compile(r"<\|[^|<>]*\|>|<｜[^｜]*｜>|</?[\w:.-]+/?>|\[/?[A-Z_]+\]")


_ESCAPE = re.compile(r'\\[nrt"\\/]')  # ``\n`` inside a JSON string: a separator, not the start of a word


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _strings(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    else:
        out.append(json.dumps(value) if value is None or isinstance(value, bool) else str(value))  # null, true as written
    return out


def _message_words(msg: dict) -> Counter:
    """Every word of a parsed message: its text fields, call names, argument keys and values, ids (and the
    message's own key names, which the output spells too: ``"name"``, ``"arguments"``)."""
    return Counter(w for s in _strings(msg, []) for w in _words(s))


@lru_cache(maxsize=None)
def format_words(path: str, tokens: tuple) -> frozenset:
    """The words the format itself writes (markers, keys, channel and recipient words: ``tool_call``,
    ``functions``, ``analysis``): in the template's own renderings of verify's messages, the words of each
    generated text that its message does not hold."""
    from autoparser.pipeline import verify

    try:
        report = verify(Path(path).read_text(encoding="utf-8"), None, dict(tokens))
    except Exception:  # noqa: BLE001 - a refused template: no format words, every word must reach the message
        return frozenset()
    out: set[str] = set()
    for c in report.cases:
        if c.generated:
            out |= set(Counter(_words(c.generated)) - _message_words(c.expected))  # more often than the message: the format's too
    return frozenset(out)


def lost_words(case: dict, msg: dict | None) -> list[str]:
    """The words of the output that reach no field of the parsed message (``msg``; None: nothing parsed),
    counted with their repeats, leaving out the words the format itself writes (``format_words``).
    Empty: every word the model wrote reaches the message."""
    fmt = format_words(str(template_file(case)), tuple(sorted(tokens_for(case).items())))
    have = _message_words(msg or {})
    text = _ESCAPE.sub(" ", _BARE_MARKER.sub(" ", case["output"]))
    need = Counter(w for w in _words(text) if w not in fmt)
    return sorted(w for w, n in need.items() if n > have[w])


def cause(r: dict) -> str:
    """A failure in words (the known-failing list's reason and the benchmark's cause column)."""
    if r["status"] in ("raise", "infer"):
        return r["why"].splitlines()[0][:140]
    e, g = r["expected"], r["got"] or {"content": "", "reasoning": "", "tool_calls": []}
    squash = lambda t: t.replace(" ", "")  # noqa: E731
    out = []
    ne, ng = len(e["tool_calls"]), len(g["tool_calls"])
    if ng < ne:
        out.append("call not recognised" + (", its text left in content" if len(g["content"]) > len(e["content"]) else "")
                   if ng == 0 else f"{ne - ng} of {ne} calls not recognised")
    elif ng > ne:
        out.append("text taken for a call" if ne == 0 else "extra call")
    else:
        for a, b in zip(e["tool_calls"], g["tool_calls"]):
            if a.get("name") != b.get("name"):
                out.append("call name differs")
            elif a.get("arguments") != b.get("arguments"):
                stringified = isinstance(b.get("arguments"), dict) and {k: json.dumps(v) if not isinstance(v, str) else v
                                                                       for k, v in a["arguments"].items()} == b["arguments"]
                out.append("argument values left as strings" if stringified else "arguments differ")
            elif "id" in a and a["id"] != b.get("id"):
                out.append("call id differs")
    er, gr = squash(e["reasoning"]), squash(g["reasoning"])
    if er != gr:
        if er and not gr:
            out.append("reasoning not recognised" + (", left in content" if er in squash(g["content"]) else ""))
        elif not er:
            out.append("text taken for reasoning")
        elif gr.endswith(er):
            out.append("a repeated opener kept in reasoning")
        elif er in gr:
            out.append("more text in reasoning")
        else:
            out.append("reasoning differs")
    ec, gc = squash(e["content"]), squash(g["content"])
    explained = any(o.startswith("call not recognised") or o.endswith("left in content") for o in out) and ec in gc
    if ec != gc and not explained:
        if ec and ec in gr:
            out.append("content taken into reasoning")
        elif len(gc) < len(ec):
            out.append("content text lost" if gc in ec or not gc else "content differs")
        else:
            out.append("extra text in content" if ec in gc else "content differs")
    text = "; ".join(dict.fromkeys(out)) or r["why"]
    return ("streamed: " if r["status"] == "stream" else "") + text


# --------------------------------------------------------------------------------------------- tests

_CASES = load_cases()
_KNOWN = load_known()
pytestmark = pytest.mark.skipif(not (CORPUS / "templates").is_dir(), reason=f"corpus not found at {CORPUS} (../shared is absent)")


def test_cases_are_well_formed():
    """Every case says where it comes from, names a template that exists, and has an expected message."""
    assert len(_CASES) >= 150, len(_CASES)
    ids = [c["id"] for c in _CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    for c in _CASES:
        src = c.get("source") or {}
        where = c["_file"]
        assert src.get("url") or (src.get("repo") and src.get("path") and re.fullmatch(r"[0-9a-f]{40}", src.get("commit", ""))), where
        assert not any(f in json.dumps(src).lower() for f in FORBIDDEN_SOURCES), f"{where}: kept for independent evaluation"
        assert template_file(c).is_file(), f"{where}: no template {c['template']}"
        assert c.get("deviation", "none") in DEVIATIONS, f"{where}: unknown deviation {c.get('deviation')}"
        assert isinstance(c.get("output"), str) and isinstance(c.get("expected"), dict), where
        assert set(c["expected"]) <= {"content", "reasoning", "tool_calls"}, where
        for tc in c["expected"].get("tool_calls") or []:
            assert isinstance(tc.get("name"), str) and isinstance(tc.get("arguments"), dict), where


def test_known_failing_names_real_cases():
    ids = {c["id"] for c in _CASES}
    stale = sorted(set(_KNOWN) - ids)
    assert not stale, f"known-failing entries for cases that do not exist: {stale}"
    assert all(isinstance(v, str) and v.strip() for v in _KNOWN.values())


@pytest.mark.parametrize("case", _CASES, ids=[c["id"] for c in _CASES])
def test_real_output(case):
    r = run_case(case)
    if case["id"] in _KNOWN:
        assert r["status"] != "pass", f"{case['id']} passes now: take it out of {KNOWN_FILE.name} (python benchmarks/real_outputs.py --update)"
        return
    assert r["status"] == "pass", (
        f"{case['id']} ({case['_file']}, deviation {r['deviation']}): {r['why']}\n"
        f"  output:   {case['output']!r}\n"
        f"  expected: {json.dumps(r['expected'], ensure_ascii=False)}\n"
        f"  got:      {json.dumps(r['got'], ensure_ascii=False)}"
    )
