"""Grammars for the llguidance the engines ship, and the engines' own code where it is installed.

vLLM pins llguidance < 1.8 (1.7.6), SGLang ships 1.9; the ``test`` extra installs the newest. A grammar
feature 1.7 does not know fails every request in vLLM, so the corpus grammars are also compiled and run
with llguidance 1.7: ``.ci/run`` installs that wheel (7 MB, no dependencies) into ``.ci/llguidance-1.7``
with ``pip install --target``, and this test runs it in a subprocess with that directory first on the
path (one process cannot hold two versions of the extension). ``AUTOPARSER_LLGUIDANCE_OLD`` names another
such directory. Without one the test skips with that reason, except under CI, where it fails.

The vLLM and SGLang tests run ``benchmarks/engines.py`` on a few corpus templates where the engine is
importable (its own virtualenv, not CI's; elsewhere they skip with that reason): grammars compiled by its
backend, renderings accepted and unknown tools rejected, the served form under the flags ``--serve``
prints (vLLM's structured-output manager and reasoning parser; SGLang's reasoning gate), request shapes
through its checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autoparser.grammar.build import build
from autoparser.grammar.layout import NoGrammar, layout, marker_texts
from autoparser.verify import VERIFY_TOOLS
from grammar_support import calls, control_tokens, opened, raw_unicode

ROOT = Path(__file__).resolve().parents[1]
OLD = Path(os.environ.get("AUTOPARSER_LLGUIDANCE_OLD") or ROOT / ".ci" / "llguidance-1.7")
SHARED = ROOT.parent / "shared" / "corpus"
TEMPLATES = sorted((SHARED / "templates").glob("*.jinja"))
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import llguidance, llguidance.hf
sys.path.insert(0, sys.argv[3])
from grammar_support import byte_tokenizer
jobs = json.load(open(sys.argv[2]))
out = {"version": llguidance.__file__, "results": []}
for job in jobs:
    hf = byte_tokenizer(job["added"])
    tok = llguidance.hf.from_tokenizer(hf)
    res = []
    for g, text in job["checks"]:
        m = llguidance.LLMatcher(tok, llguidance.grammar_from("lark", g), log_level=0)
        if m.is_error():
            res.append("error: " + m.get_error()[:200])
            continue
        ids = hf.encode(text, add_special_tokens=False)
        res.append("accept" if all(m.consume_token(t) for t in ids) and m.is_accepting() else "reject")
    out["results"].append(res)
print(json.dumps(out))
"""


def _jobs():
    """Per corpus template with a grammar: its markers as added tokens, and (grammar, rendering) pairs
    in the text and token forms and the served (after-reasoning) form."""
    import autoparser
    from autoparser.verify import verify

    jobs = []
    for path in TEMPLATES:
        src = path.read_text(encoding="utf-8")
        try:
            res = autoparser.infer_result(src, TOKENS)
            lay = layout(res.analysis)
            build(res.analysis, VERIFY_TOOLS)
        except (autoparser.AutoparserError, NoGrammar):
            continue
        report = verify(src, res.template, TOKENS, analysis=res.analysis)
        if report.per_field().get("tool_calls") != "pass":
            continue
        added = control_tokens(marker_texts(lay))
        from grammar_support import byte_tokenizer

        vocab = byte_tokenizer(added).get_added_vocab()
        checks = []
        for c in report.cases:
            if c.status != "pass" or not calls(c) or c.history:
                continue
            o = opened(res.analysis, c.prompt)
            text = raw_unicode(c.generated)
            checks.append((build(res.analysis, VERIFY_TOOLS, reasoning_open=o, tokens=vocab), text))
            if not o:  # (an open prompt's rendering starts inside reasoning, where this form does not)
                checks.append((build(res.analysis, VERIFY_TOOLS, reasoning_open=o, tokens=vocab, after_reasoning=True, tool_choice="required"), text))
        if checks:
            jobs.append({"name": path.stem, "added": added, "checks": checks})
    return jobs


@pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")
def test_grammars_with_llguidance_vllm_pins(tmp_path):
    if not (OLD / "llguidance").is_dir():
        msg = f"llguidance 1.7 not found at {OLD}: pip install --no-deps --target {OLD} 'llguidance>=1.7,<1.8'"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    jobs = _jobs()
    assert len(jobs) >= 35, len(jobs)
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    run = subprocess.run([sys.executable, "-c", CHILD, str(OLD), str(tmp_path / "jobs.json"), str(ROOT / "tests")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert str(OLD) in out["version"], out["version"]  # the old wheel, not the venv's
    bad = [(job["name"], r, text[:120]) for job, results in zip(jobs, out["results"]) for (g, text), r in zip(job["checks"], results) if r != "accept"]
    assert not bad, bad[:5]


def _engine_totals(out: str) -> dict[str, tuple[int, int]]:
    import re

    last = out.strip().splitlines()[-1]
    keys = ("grammars compiled", "renderings accepted", "unknown tool rejected", "under the served flags", "request shapes as the README says")
    return {k: tuple(map(int, re.search(re.escape(k) + r": (\d+)/(\d+)", last).groups())) for k in keys}


# Templates that exercise each form: reasoning opened by the prompt (Qwen3), none (Hermes 3), reasoning
# that the call opener ends (Kimi K2 Thinking), and one where vLLM's gate opens inside the call (GLM-4.7).
ENGINE_SAMPLE = ["Qwen-Qwen3-0.6B", "Hermes-3", "Kimi-K2-Thinking", "GLM-4.7-Flash"]


def test_vllm_engine_check(capsys):
    pytest.importorskip("vllm", reason="vLLM is not installed here (run benchmarks/engines.py with the engines' Python)")
    if not TEMPLATES:
        pytest.skip(f"corpus not found at {SHARED}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import engines

    assert engines.main(["--only", *ENGINE_SAMPLE]) == 0
    tot = _engine_totals(capsys.readouterr().out)
    assert tot["grammars compiled"] == (4, 4), tot
    assert all(a == b and b for a, b in tot.values()), tot


def test_sglang_engine_check(capsys):
    pytest.importorskip("sglang", reason="SGLang is not installed here (run benchmarks/engines.py --sglang with its Python)")
    if not TEMPLATES:
        pytest.skip(f"corpus not found at {SHARED}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import engines

    assert engines.main(["--sglang", "--only", *ENGINE_SAMPLE]) == 0
    tot = _engine_totals(capsys.readouterr().out)
    assert tot["grammars compiled"] == (4, 4), tot
    assert all(a == b and b for a, b in tot.values()), tot


_VUE = '<div>{{name}}</div>\n<p>{{ n }}</p> and <b>{{ x }}</b> more'
_USERS = {"users": [{"name": "x", "age": 1}, {"name": "y", "id": "u2"}]}
_WRAPPED = [  # (template, text, the calls' (name, arguments), the content)
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
     '```xml\n<response>\n    {"name": "get_weather", "arguments": {"city": "Paris"}}\n</response>\n```', [("get_weather", {"city": "Paris"})], ""),
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
     'Let me check.\n<tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools>\nDone.', [("get_weather", {"city": "Paris"})],
     "Let me check.\n\nDone."),
    ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
     '<tool_call>\n{"name": "write", "arguments": {"content": ' + json.dumps(_VUE) + '}}\n</tool_call>', [("write", {"content": _VUE})], ""),
    ("meta-llama-Llama-3.1-8B-Instruct",
     '{"name": "write", "parameters": {"content": ' + json.dumps(_VUE) + '}}', [("write", {"content": _VUE})], ""),
    ("mistralai-Mistral-Nemo-Instruct-2407",  # objects with a call's keys inside the arguments, then a second call
     '[TOOL_CALLS][{"name": "a", "arguments": ' + json.dumps(_USERS) + ', "id": "abcdefghi"}, {"name": "b", "arguments": {}, "id": "bcdefghij"}]',
     [("a", _USERS), ("b", {})], ""),
    ("NVIDIA-Nemotron-Nano-v2", '<TOOLCALL>[{"name": "a", "arguments": ' + json.dumps(_USERS) + '}]</TOOLCALL>', [("a", _USERS)], ""),
    ("ibm-granite-granite-4.0", '<tool_call>{"name": "a", "arguments": {"q": {"r": 1}}}}}</tool_call>', [("a", {"q": {"r": 1}})], ""),
    ("deepseek-ai-DeepSeek-V3.2", '</think><｜DSML｜function_calls>\n<｜DSML｜invoke name="a">\n<｜DSML｜parameter name="q" string="true">'
     + _VUE + '</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>', [("a", {"q": _VUE})], ""),
]


@pytest.mark.parametrize("module", ["vllm.parser.chat_parsing", "sglang.srt.parser.chat_parsing"])
def test_the_engines_vendored_parsers_stream_wrapped_calls_whole(module):
    """The served form through the engines' own vendored parser (transformers before 5.24 there, which commits a
    match that does not end at the buffer's edge at once), streamed in chunks of 1, 2, 3 and 7 characters and
    whole: a call in a wrapper the template does not write comes back with no wrapper in content, and a string
    argument holding ``}}</div>`` is not cut there (``emit/tools.py::END_TAG``), nor one holding objects with a call's
    keys, nor a tagged string holding a tag and a newline."""
    parser = pytest.importorskip(module + ".response_parser", reason=f"{module} is not installed here (the engines' virtualenvs)")
    if not TEMPLATES:
        pytest.skip(f"corpus not found at {SHARED}")
    import autoparser
    from autoparser.emit import served

    for name, text, calls, content in _WRAPPED:
        template = served(autoparser.infer_result((SHARED / "templates" / f"{name}.jinja").read_text(encoding="utf-8"), TOKENS).template)
        for size in (1, 2, 3, 7, len(text)):
            p = parser.ResponseParser(template, prefix="")
            events = [e for i in range(0, len(text), size) for e in p.feed(text[i:i + size])] + p.finalize()[1]
            got = [(e["value"]["function"]["name"], e["value"]["function"]["arguments"]) for e in events
                   if e["type"] == "region_close" and e["field"] == "tool_calls"]
            said = "".join(e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == "content")
            assert (got, said.strip()) == (calls, content), (module, name, size, text)
