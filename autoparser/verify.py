"""Self-verification: the round trip of BRIEF §4 on the template's own renderings.

For each probe message M and each thinking mode, render the prompt and the conversation ending in
M; the text after the prompt, cut after the end-of-turn marker, is what a model would generate.
Parsing it with the response_template (prefix = the prompt), one-shot and streamed in small chunks,
must give back every field of M that the template rendered."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from transformers.utils.chat_parsing import ResponseParser, parse_response

from .analysis.model import Analysis
from .diff import diff
from .errors import TemplateError
from .probes import Prober, assistant
from .render import Renderer, budget

AWKWARD = 'He said "hi" {not: json} <b>bold</b> & \\ back\\slash\n  tab\there — naïve 日本語 🙂'

VERIFY_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Days ahead"},
                    "metric": {"type": "boolean", "description": "Use metric units"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_query",
            "description": "Run a structured query.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Query text"},
                    "limit": {"type": "number", "description": "Maximum rows"},
                    "options": {"type": "object", "description": "Extra options"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
                },
                "required": ["query"],
            },
        },
    },
]


def _call(name, args, id):
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


def probe_messages() -> list[tuple[str, dict]]:
    w1 = _call("get_weather", {"city": "Paris", "days": 3, "metric": True}, "call00001")
    w2 = _call("get_weather", {"city": "Zürich", "days": 1, "metric": False}, "call00002")
    q = _call("run_query", {"query": AWKWARD, "limit": 2.5, "options": {"nested": {"deep": [1, 2, {"x": "y"}]}, "flag": None}, "tags": ["a", "b c"]}, "call00003")
    return [
        ("content", assistant("Hello! Here is some code:\n```python\nprint({'a': 1})\n```\nBye.")),
        ("awkward content", assistant(AWKWARD)),
        ("reasoning + content", assistant("The answer is 42.", reasoning="Let me think about it.\nStep 1: {x} <y>.")),
        ("one call", assistant(None, calls=[w1])),
        ("parallel calls", assistant(None, calls=[w1, w2])),
        ("content + call", assistant("Let me check that for you.", calls=[w1])),
        ("reasoning + call", assistant(None, reasoning="I need the weather tool.", calls=[w1])),
        ("nested args", assistant(None, calls=[q])),
    ]


HISTORY = [
    {"role": "user", "content": "Earlier question?"},
    {"role": "assistant", "content": "Earlier answer."},
]


@dataclass
class Case:
    name: str
    mode: str
    history: bool
    status: str  # pass | fail | skip
    how: str = ""  # exact | prefill-dropped | synthesized
    fields: dict = field(default_factory=dict)  # field -> pass/fail
    prompt: str = ""
    generated: str = ""
    expected: dict = field(default_factory=dict)
    parsed: dict = field(default_factory=dict)
    streamed: dict = field(default_factory=dict)
    error: str = ""


@dataclass
class Report:
    cases: list[Case]

    @property
    def passed(self) -> bool:
        return all(c.status != "fail" for c in self.cases) and any(c.status == "pass" for c in self.cases)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0}
        for c in self.cases:
            out[c.status] += 1
        return out

    def per_field(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in self.cases:
            for f, ok in c.fields.items():
                if ok == "fail" or f not in out:
                    out[f] = ok
        return out

    def first_failure(self) -> Case | None:
        return next((c for c in self.cases if c.status == "fail"), None)

    def to_dict(self) -> dict:
        first = self.first_failure()
        return {
            "passed": self.passed,
            "counts": self.counts(),
            "fields": self.per_field(),
            "first_failure": None if first is None else {k: getattr(first, k) for k in ("name", "mode", "history", "how", "prompt", "generated", "expected", "parsed", "streamed", "error")},
        }


def chunks(text: str, sizes=(1, 3, 2, 4)):
    i = k = 0
    while i < len(text):
        n = sizes[k % len(sizes)]
        yield text[i : i + n]
        i += n
        k += 1


def stream_parse(template: dict, text: str, prefix: str, tools) -> dict:
    p = ResponseParser(template, prefix=prefix, tools=tools)
    for piece in chunks(text):
        p.feed(piece)
    msg, _ = p.finalize()
    return msg


def _norm_calls(calls) -> list:
    out = []
    for c in calls or []:
        fn = c.get("function", {}) if isinstance(c, dict) else {}
        out.append({"name": fn.get("name"), "arguments": fn.get("arguments"), "id": c.get("id") if isinstance(c, dict) else None})
    return out


def _cut(text: str, ends: tuple[str, ...]) -> str:
    best = None
    for e in ends:
        i = text.find(e)
        if i >= 0 and (best is None or i + len(e) < best):
            best = i + len(e)
    return text[:best] if best is not None else text.rstrip()


def _generation(pr: Prober, a: Analysis, msgs: list[dict], m: dict, mode: dict):
    """(prompt, generated text, how) or None when this mode cannot produce M."""
    prompt = pr.try_render(msgs, gen=True, mode=mode, tools=VERIFY_TOOLS)
    full = pr.try_render(msgs + [m], gen=False, mode=mode, tools=VERIFY_TOOLS)
    if prompt is None or full is None:
        return None
    k = len(os.path.commonprefix([prompt, full]))
    if k < len(prompt):  # the prompt's prefill and the reply may share a marker's first bytes (`<|`)
        k = len(diff(prompt, full).prefix)
    ends = a.turn.end_markers + a.tools.end_markers
    if k == len(prompt):
        return prompt, _cut(full[k:], ends), "exact"
    dropped, rest = prompt[k:], full[k:]
    r = a.reasoning
    if r.end and r.end in dropped:  # closed reasoning prefill: the model continues after it
        if m.get("reasoning_content"):
            return None
        return prompt, _cut(rest, ends), "prefill-dropped"
    if r.start and r.end and r.start in dropped:  # open reasoning prefill that history drops
        reasoning = m.get("reasoning_content") or ""
        if reasoning and reasoning in rest:
            return None
        return prompt, _cut(reasoning + "\n" + r.end + "\n\n" + rest, ends), "synthesized"
    return None


def _expected(m: dict, generated: str) -> dict:
    exp: dict = {}
    if m.get("content") and m["content"].strip().split("\n")[0][:20] in generated:
        exp["content"] = m["content"].strip()
    if m.get("reasoning_content") and m["reasoning_content"].split("\n")[0][:20] in generated:
        exp["thinking"] = m["reasoning_content"].strip()
    if m.get("tool_calls") and all(c["function"]["name"] in generated for c in m["tool_calls"]):
        exp["tool_calls"] = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"], "id": c["id"] if c["id"] in generated else None}
            for c in m["tool_calls"]
        ]
    return exp


def _compare(exp: dict, got: dict, reasoning_field: str) -> dict[str, str]:
    res = {}
    if "content" in exp or (got.get("content") or "").strip():
        res["content"] = "pass" if (got.get("content") or "").strip() == exp.get("content", "") else "fail"
    if "thinking" in exp or (got.get(reasoning_field) or "").strip():
        res["reasoning"] = "pass" if (got.get(reasoning_field) or "").strip() == exp.get("thinking", "") else "fail"
    if "tool_calls" in exp or got.get("tool_calls"):
        want = exp.get("tool_calls", [])
        have = _norm_calls(got.get("tool_calls"))
        names_args = [(c["name"], c["arguments"]) for c in want] == [(c["name"], c["arguments"]) for c in have]
        res["tool_calls"] = "pass" if names_args else "fail"
        if any(c["id"] for c in want):
            res["ids"] = "pass" if [c["id"] for c in want if c["id"]] == [c["id"] for c in have if c["id"]] else "fail"
    return res


def verify(chat_template: str, response_template: dict | None = None, special_tokens: dict | None = None, *, analysis: Analysis | None = None, messages=None, reasoning_field: str = "thinking") -> Report:
    from .api import infer_result

    if response_template is None or analysis is None:
        res = infer_result(chat_template, special_tokens)
        analysis = analysis or res.analysis
        response_template = response_template or res.template
    renderer = Renderer(chat_template, special_tokens)
    cases: list[Case] = []
    with budget(30.0, "verification"):
        pr = Prober(renderer)
        for name, m in messages or probe_messages():
            for hist in (False, True):
                msgs = (HISTORY if hist else []) + [{"role": "user", "content": "What is the weather in Paris?"}]
                done = False
                for mode in pr.modes:
                    mode_name = ",".join(f"{k}={v}" for k, v in mode.items()) or "default"
                    got = _generation(pr, analysis, msgs, m, mode)
                    if got is None:
                        continue
                    prompt, text, how = got
                    exp = _expected(m, text)
                    if not exp:
                        continue
                    case = Case(name, mode_name, hist, "pass", how, prompt=prompt, generated=text, expected=exp)
                    try:
                        case.parsed = parse_response(text, response_template, prefix=prompt, tools=VERIFY_TOOLS)
                        case.streamed = stream_parse(response_template, text, prompt, VERIFY_TOOLS)
                    except Exception as e:  # noqa: BLE001 - a parse error is a verification failure
                        case.status, case.error = "fail", f"{type(e).__name__}: {e}"
                        cases.append(case)
                        done = True
                        continue
                    f1 = _compare(exp, case.parsed, reasoning_field)
                    f2 = _compare(exp, case.streamed, reasoning_field)
                    case.fields = {k: ("pass" if f1.get(k) == f2.get(k) == "pass" else "fail") for k in set(f1) | set(f2)}
                    if any(v == "fail" for v in case.fields.values()):
                        case.status = "fail"
                    cases.append(case)
                    done = True
                if not done:
                    cases.append(Case(name, "-", hist, "skip", error="template does not render this message"))
    return Report(cases)
