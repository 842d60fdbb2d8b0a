"""Real model outputs: what models and serving engines actually write, parsed with the inferred template.

``tests/data/real_outputs/*.jsonl`` (one file per public source) holds model outputs with the message the
source's own hand-written parser is expected to return, transcribed as data with the repository, path
and commit they come from (Ollama's parser tests, LMDeploy's, mlx-lm's, model cards...). vLLM's and
SGLang's parser tests are not copied among them: they are read from ``../shared`` (below).

Each case names a chat template of the family it was written for (``../shared/corpus/templates`` or
``wild/templates``). The template is inferred once (verified, as ``infer`` hands it out), the prefix is its
generation prompt for one user message (rendered with the template switches in ``prompt.kwargs``, e.g.
``enable_thinking``, and ``prompt.user`` as the user message, plus ``prompt.append`` when the source's prompt left a block open that this template
does not; ``prompt.text`` replaces it all), and the output is parsed with transformers' own ``parse_response`` one-shot and with ``ResponseParser``
fed in small chunks. Content and reasoning compare without whitespace (hand-written parsers trim
differently around markers and join the text around calls differently), arguments as JSON values, ids
only where the expected message has one.

``../shared/corpus/peer`` (vLLM's and SGLang's parser tests, 687 cases; its README says how they are
scored) is read by path, never copied: each case keeps its ``source``, gets an id ``peer-<repo>-<family>-<test>``
and is scored as that README says, which differs from the cases above in three ways: the prompt is chosen
per case (a reasoning parser's case continues the thinking-on prompt, a tool parser's case a prompt whose
reasoning is closed, as the peers' tool parsers see only the text after reasoning), text compares after
``strip()`` only, and SGLang's cases compare only what the peer's test asserts (``match``). Families with no
template are left out; cases cut off mid-output (``partial``) are reported apart.

Every case passes or is listed in ``tests/real_outputs_known_failing.json`` with a reason; a listed case
that passes fails too, so the list stays true both ways. ``python benchmarks/real_outputs.py`` prints the
score (per deviation, per family) and ``--update`` rewrites the list after the emitter changes.
"""

from __future__ import annotations

import json
import csv
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
PEER = CORPUS / "peer"

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
    "peer": "off the template's format as the peer case's own `deviant` note says (peer suite)",
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
    """The team's cases (``tests/data/real_outputs``) then the peer suite's (``../shared/corpus/peer``)."""
    cases = []
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    case = json.loads(line)
                    case["_file"] = f"{path.name}:{n}"
                    case["_suite"] = "dev"
                    cases.append(case)
    return cases + load_peer_cases()


def peer_families() -> dict[str, dict]:
    """families.tsv: family -> {template (a path, or None), tokens, render_kwargs, think_kwargs}."""
    path = PEER / "families.tsv"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
    head, out = rows[0], {}
    for r in rows[1:]:
        row = dict(zip(head, r + [""] * (len(head) - len(r))))
        tpl = row["template"].strip()
        out[row["family"]] = {
            "template": CORPUS.parent / tpl if tpl.startswith("corpus/") else None,
            "tokens": json.loads(row["tokens"] or "{}"),
            "render_kwargs": json.loads(row["render_kwargs"] or "{}"),
            "think_kwargs": json.loads(row["think_kwargs"] or "{}") or {"enable_thinking": True},
        }
    return out


def load_peer_cases() -> list[dict]:
    """The peer suite's cases whose family has a template, each with an id made from its source."""
    path = PEER / "cases.jsonl"
    if not path.is_file():
        return []
    fams, cases, seen = peer_families(), [], Counter()
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            case = json.loads(line)
            fam = fams.get(case["family"])
            if fam is None or fam["template"] is None:
                continue
            repo = case["source"]["repo"].split("/")[-1]
            base = re.sub(r"\s+", "_", f"peer-{repo}-{case['family']}-{case['source']['test']}")
            seen[base] += 1
            case["id"] = base if seen[base] == 1 else f"{base}#{seen[base]}"
            case["_file"] = f"peer/cases.jsonl:{n}"
            case["_suite"] = "peer"
            case["_family"] = fam
            case["template"] = str(fam["template"].relative_to(CORPUS))
            case["deviation"] = "peer" if case.get("deviant") else "none"
            cases.append(case)
    return cases


def group(case: dict) -> str:
    """well-formed | deviant | partial (a peer case cut off mid-output, scored apart)."""
    if case.get("partial"):
        return "partial"
    return "well-formed" if case.get("deviation", "none") == "none" else "deviant"


def load_known() -> dict[str, str]:
    if not KNOWN_FILE.is_file():
        return {}
    data = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def template_file(case: dict) -> Path:
    """``Qwen3-Coder.jinja`` -> the corpus file; ``wild/NNN-x.jinja`` or ``wild2/x.jinja`` -> the wild one; a peer case's from families.tsv."""
    if "_family" in case:
        return case["_family"]["template"]
    name = case["template"]
    for corpus in ("wild/", "wild2/"):
        if name.startswith(corpus):
            return CORPUS / corpus / "templates" / name[len(corpus):]
    return CORPUS / "templates" / name


def family(case: dict) -> str:
    return case.get("family") or Path(case["template"]).stem


def tokens_for(case: dict) -> dict[str, str]:
    if "_family" in case:
        return dict(case["_family"]["tokens"])
    stem = Path(case["template"]).stem
    # a wild2 template: the tokens its model's tokenizer_config names, as families.tsv gives them
    return dict(SPECIAL_TOKENS.get(stem) or _family_tokens().get(stem) or DEFAULT_TOKENS)


@lru_cache(maxsize=None)
def _family_tokens() -> dict[str, dict]:
    """families.tsv's special tokens by template stem, read once."""
    return {Path(f["template"]).stem: f["tokens"] for f in peer_families().values() if f["template"] is not None}


# --------------------------------------------------------------------------------------- inference

@lru_cache(maxsize=None)
def _infer(path: str, tokens: tuple) -> tuple[dict | None, str | None, tuple[str, str]]:
    """(response_template, error, (reasoning start, end)) as ``infer`` hands it out (verified); cached per template."""
    import autoparser

    source = Path(path).read_text(encoding="utf-8")
    for attempt in range(2):
        try:
            res = autoparser.infer_result(source, dict(tokens), where=Path(path).name)
            return res.template, None, (res.analysis.reasoning.start, res.analysis.reasoning.end)
        except Exception as e:  # noqa: BLE001 - reported per case
            if attempt == 0 and "took longer than" in str(e):  # a loaded machine trips the budget: retry once
                continue
            return None, f"{type(e).__name__}: {e}", ("", "")
    raise AssertionError("unreachable")


@lru_cache(maxsize=None)
def _prefix(path: str, tokens: tuple, tools_json: str, kwargs_json: str, user: str | None) -> str:
    from autoparser.cli.parse import PLACEHOLDER_USER, generation_prompt

    tools = json.loads(tools_json) or None
    return generation_prompt(Path(path).read_text(encoding="utf-8"), dict(tokens), tools=tools, user_message=user or PLACEHOLDER_USER,
                             **json.loads(kwargs_json))


def prefix_for(case: dict) -> str:
    if "_family" in case:
        return _peer_prefix(case)
    prompt = case.get("prompt") or {}
    if "text" in prompt:
        return prompt["text"]
    tokens = tuple(sorted(tokens_for(case).items()))
    tools_json = json.dumps(case.get("tools") or [], sort_keys=True)
    kwargs_json = json.dumps(prompt.get("kwargs") or {}, sort_keys=True)
    return _prefix(str(template_file(case)), tokens, tools_json, kwargs_json, prompt.get("user")) + prompt.get("append", "")


def is_reasoning_case(case: dict) -> bool:
    """A reasoning parser's test, or a case that expects reasoning (peer README)."""
    return "reasoning" in case["source"]["path"].split("/")[-1] or bool((case["expected"].get("reasoning") or "").strip())


def _peer_prefix(case: dict) -> str:
    """The peer README's prompt: thinking on for a reasoning case; for a tool case the plain prompt when it
    leaves no reasoning open, else a thinking-off render, else the plain prompt plus the reasoning end marker."""
    fam = case["_family"]
    path, tokens = str(fam["template"]), tuple(sorted(fam["tokens"].items()))
    own = case.get("render_kwargs") or {}
    kwargs = {**fam["render_kwargs"], **own}
    render = lambda kw: _prefix(path, tokens, "[]", json.dumps(kw, sort_keys=True), None)  # noqa: E731
    if is_reasoning_case(case):
        # The case's own kwargs win: a peer test run with thinking off (``enable_thinking=False``) is scored
        # on the thinking-off prompt, not on the family's thinking-on one.
        return render({**kwargs, **fam["think_kwargs"], **own})
    start, end = _infer(path, tokens)[2]

    def left_open(p: str) -> bool:
        return bool(start) and bool(end) and p.rfind(start) > p.rfind(end)

    plain = render(kwargs)
    if not left_open(plain):
        return plain
    off = render({**kwargs, "enable_thinking": False})
    return off if not left_open(off) else plain + end


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


def _strip(v: Any) -> str:
    if v is None:
        return ""
    return (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)).strip()


def normalize_peer(msg: dict) -> dict:
    reasoning = next((msg[k] for k in ("thinking", "reasoning_content", "reasoning") if k in msg), None)
    return {"content": _strip(msg.get("content")), "reasoning": _strip(reasoning), "tool_calls": norm_calls(msg.get("tool_calls"))}


def _json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: 10 == 10.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _string_params(tools: list | None, name: str) -> set[str]:
    for t in tools or []:
        fn = t.get("function", t)
        if fn.get("name") == name:
            props = (fn.get("parameters") or {}).get("properties") or {}
            return {k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "string"}
    return set()


def _args_match(expected: Any, got: Any, how: str, strings: set[str]) -> bool:
    """``exact`` or ``subset`` (the expected keys only); an expected string of a parameter the schema types
    "string" matches a parsed number with the same JSON text (peer README)."""
    if how == "unasserted":
        return True
    if not (isinstance(expected, dict) and isinstance(got, dict)):
        return _json_equal(expected, got)
    if how == "exact" and expected.keys() != got.keys():
        return False

    def same(k):
        e, g = expected[k], got.get(k)
        if k not in got:
            return False
        if isinstance(e, str) and k in strings and isinstance(g, (int, float)) and not isinstance(g, bool):
            return json.dumps(g) == e or _json_equal(e, g)
        return _json_equal(e, g)
    return all(same(k) for k in expected)


def diff_peer(case: dict, expected: dict, got: dict) -> list[str]:
    """Fields that differ as the peer README scores them: only what ``match`` asserts (SGLang cases)."""
    match = case.get("match") or {}
    out = []
    how = match.get("content", "exact")
    if how == "exact" and expected["content"] != got["content"]:
        out.append("content")
    if how == "contains" and not all(t in got["content"] for t in match.get("content_contains") or []):
        out.append("content")
    if match.get("reasoning", "exact") == "exact" and expected["reasoning"] != got["reasoning"]:
        out.append("reasoning")
    e, g = expected["tool_calls"], got["tool_calls"]
    if len(e) != len(g):
        out.append(f"tool_calls.count({len(e)}!={len(g)})")
    per_call = match.get("tool_calls") or []
    for i, (a, b) in enumerate(zip(e, g)):
        m = per_call[i] if i < len(per_call) else {}
        if m.get("name", "exact") == "exact" and a.get("name") != b.get("name"):
            out.append(f"tool_calls[{i}].name")
        if not _args_match(a.get("arguments"), b.get("arguments"), m.get("arguments", "exact"), _string_params(case.get("tools"), a.get("name"))):
            out.append(f"tool_calls[{i}].arguments")
    return out


def _compare(case: dict, expected: dict, msg: dict) -> tuple[dict, list[str]]:
    """(the parsed message normalised, the fields that differ) by the case's suite's rules."""
    if case.get("_suite") == "peer":
        got = normalize_peer(msg)
        return got, diff_peer(case, expected, got)
    got = normalize(msg)
    return got, diff(expected, got)


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

    peer = case.get("_suite") == "peer"
    expected = (normalize_peer if peer else normalize)(case["expected"])
    out = {"id": case["id"], "family": family(case), "deviation": case.get("deviation", "none"), "group": group(case),
           "suite": case.get("_suite", "dev"), "expected": expected, "got": None}
    template, err, _ = _infer(str(template_file(case)), tuple(sorted(tokens_for(case).items())))
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
    got, d = _compare(case, expected, msg)
    out["got"] = got
    out["lost_words"] = lost_words(case, msg)
    if d:
        return {**out, "status": "fail", "why": "differs: " + ", ".join(d)}
    try:
        streamed, d = _compare(case, expected, _stream(template, case["output"], prefix, tools))
    except Exception as e:  # noqa: BLE001
        return {**out, "status": "stream", "why": f"streamed: ResponseParser raises {type(e).__name__}: {str(e)[:160]}"}
    if d:
        return {**out, "got": streamed, "status": "stream", "why": "streamed differs: " + ", ".join(d)}
    return {**out, "status": "pass", "why": ""}


# ------------------------------------------------------------------------------------------ words kept

_WORD = re.compile(r"\w+")
# A marker spelt without attributes: ``<|tool_call_start|>``, ``<｜tool▁sep｜>``, ``</think>``, ``[TOOL_CALLS]``.
# Its words are the format's even where the template never renders that marker (a workaround's format).
# A markdown fence with its language tag (```` ```json ````) is markup too.
_BARE_MARKER = re.compile(r"<\|[^|<>]*\|>|<｜[^｜]*｜>|</?[\w:.-]+/?>|\[/?[A-Z_]+\]|```\w*")


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


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")


def _numbers(value: Any, out: list) -> list:
    """The numbers among a message's values (not booleans)."""
    if isinstance(value, dict):
        for v in value.values():
            _numbers(v, out)
    elif isinstance(value, list):
        for v in value:
            _numbers(v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(float(value))
    return out


def _message_words(msg: dict) -> Counter:
    """Every word of a parsed message: its text fields, call names, argument keys and values, ids (and the
    message's own key names, which the output spells too: ``"name"``, ``"arguments"``)."""
    # Text fields hold the output's own text (a call left in content, escapes and all): read as the output is.
    text = ("content", "reasoning", "thinking")
    raw = [_ESCAPE.sub(" ", v) for k, v in msg.items() if k in text and isinstance(v, str)]
    rest = {k: v for k, v in msg.items() if not (k in text and isinstance(v, str))}
    keys = [k for k in msg if k not in rest]  # the text fields' own key names, as ``_strings`` counts every key
    # A value is read both as parsed and with its escapes read as the output's are (arguments left as their
    # JSON text hold ``\\nre.compile``, whose word is ``re``), each word counted by the reading that holds it more often.
    out = Counter(w for s in keys + raw for w in _words(s))
    for s in _strings(rest, []):
        out.update(Counter(_words(s)) | Counter(_words(_ESCAPE.sub(" ", s))))
    # A call's ``arguments`` key is spelled ``parameters`` too (docs/FORMATS.md §7b, call spellings).
    out["parameters"] += out["arguments"]
    return out


@lru_cache(maxsize=None)
def format_words(path: str, tokens: tuple) -> frozenset:
    """The words the format itself writes (markers, keys, channel and recipient words: ``tool_call``,
    ``functions``, ``analysis``): in the template's own renderings of verify's messages, the words of each
    generated text that its message does not hold; and the words of a call marker a workaround states, which
    the renderings never write (phi-4-mini's ``functools``)."""
    from autoparser.pipeline import verify

    try:
        source = Path(path).read_text(encoding="utf-8")
        report = verify(source, None, dict(tokens))
    except Exception:  # noqa: BLE001 - a refused template: no format words, every word must reach the message
        return frozenset()
    out: set[str] = set()
    for c in report.cases:
        if c.generated:
            out |= set(Counter(_words(c.generated)) - _message_words(c.expected))  # more often than the message: the format's too
    return frozenset(out | _call_marker_words(path, tokens))


def _call_marker_words(path: str, tokens: tuple) -> set[str]:
    """The words of the call markers the analysis found in the template's renderings of calls in history
    (GigaChat 3's ``function call`` role header before each call). Verify's call cases give them too, but
    only where the template renders a call as the last turn: GigaChat 3 writes it as a message of its own
    role, verify skips those cases, and the header's words were counted as lost from every call."""
    from autoparser.pipeline import analyze

    try:
        t = analyze(Path(path).read_text(encoding="utf-8"), dict(tokens)).tools
    except Exception:  # noqa: BLE001 - nothing analysed: no marker words
        return set()
    marks = (t.section_start, t.section_end, t.call_start, t.call_end, t.call_separator, t.call_lead, t.content_opener)
    return {w for m in marks for w in _words(_ESCAPE.sub(" ", m))}


def lost_words(case: dict, msg: dict | None) -> list[str]:
    """The words of the output that reach no field of the parsed message (``msg``; None: nothing parsed),
    counted with their repeats, leaving out the words the format itself writes (``format_words``).
    Empty: every word the model wrote reaches the message."""
    fmt = format_words(str(template_file(case)), tuple(sorted(tokens_for(case).items())))
    have = _message_words(msg or {})
    text = _ESCAPE.sub(" ", _BARE_MARKER.sub(" ", case["output"]))
    # A number the message holds as a number keeps what the model wrote, whatever its spelling there
    # (``1e20`` is ``1e+20``, ``5.0`` read as the integer the schema asks for is ``5``).
    numbers = set(_numbers(msg or {}, []))
    text = _NUMBER.sub(lambda m: " " if float(m[0]) in numbers else m[0], text)
    # Two of the format's words glued are the format's too (``<functionname="f">``: a tag's space dropped).
    glued = lambda w: any(w[:k] in fmt and w[k:] in fmt for k in range(1, len(w)))  # noqa: E731
    need = Counter(w for w in _words(text) if w not in fmt and not glued(w))
    # A call's name is one datum however often the format writes it (a header's recipient and the call
    # element's name attribute: ``to=f<|message|><invoke name="f">``).
    named = {w for c in (msg or {}).get("tool_calls") or [] if isinstance(c, dict)
             for w in _words(str((c.get("function") if isinstance(c.get("function"), dict) else c).get("name") or ""))}
    return sorted(w for w, n in need.items() if n > have[w] and w not in named)


def cause(r: dict) -> str:
    """A failure in words (the known-failing list's reason and the benchmark's cause column)."""
    if r["status"] in ("raise", "infer"):
        return r["why"].splitlines()[0][:140]
    e, g = r["expected"], r["got"] or {"content": "", "reasoning": "", "tool_calls": []}
    squash = lambda t: t.replace(" ", "")  # noqa: E731
    asserted = lambda f: r["suite"] != "peer" or f in r["why"]  # noqa: E731 - a peer case's match may leave a field unasserted
    out = []
    ne, ng = len(e["tool_calls"]), len(g["tool_calls"])
    if ng < ne:
        out.append("call not recognised" + (", its text left in content" if len(g["content"]) > len(e["content"]) else "")
                   if ng == 0 else f"{ne - ng} of {ne} calls not recognised")
    elif ng > ne:
        out.append("text taken for a call" if ne == 0 else "extra call")
    else:
        for i, (a, b) in enumerate(zip(e["tool_calls"], g["tool_calls"])):
            if a.get("name") != b.get("name") and asserted(f"[{i}].name"):
                out.append("call name differs")
            elif a.get("arguments") != b.get("arguments") and asserted(f"[{i}].arguments"):
                stringified = isinstance(b.get("arguments"), dict) and {k: json.dumps(v) if not isinstance(v, str) else v
                                                                       for k, v in a["arguments"].items()} == b["arguments"]
                out.append("argument values left as strings" if stringified else "arguments differ")
            elif "id" in a and a["id"] != b.get("id"):
                out.append("call id differs")
    er, gr = squash(e["reasoning"]), squash(g["reasoning"])
    if er != gr and asserted("reasoning"):
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
    if ec != gc and not explained and asserted("content"):
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
    for c in (c for c in _CASES if c["_suite"] == "dev"):
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


def test_peer_cases_are_well_formed():
    """The peer suite is read by path (never copied) and each case keeps the test it was transcribed from."""
    if not (PEER / "cases.jsonl").is_file():
        pytest.skip(f"peer suite not found at {PEER} (../shared is absent)")
    peer = [c for c in _CASES if c["_suite"] == "peer"]
    assert len(peer) >= 600, len(peer)
    assert not list(DATA.glob("*peer*")), "the peer suite is read from ../shared, not copied into tests/data"
    for c in peer:
        src, where = c["source"], c["_file"]
        assert src.get("repo") in FORBIDDEN_SOURCES and src.get("path") and src.get("test") and src.get("via"), where
        assert template_file(c).is_file(), f"{where}: no template {template_file(c)}"
        assert isinstance(c["output"], str) and isinstance(c["expected"], dict), where
        for tc in c["expected"].get("tool_calls") or []:  # a cut-off or malformed call may keep its arguments as text; an unasserted name is null
            assert isinstance(tc.get("name"), (str, type(None))) and isinstance(tc.get("arguments"), (dict, str)), where


def test_known_failing_names_real_cases():
    ids = {c["id"] for c in _CASES}
    known = set(_KNOWN) if (PEER / "cases.jsonl").is_file() else {k for k in _KNOWN if not k.startswith("peer-")}
    stale = sorted(known - ids)
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
