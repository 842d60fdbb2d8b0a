"""A call cut off inside a long argument (a token limit hit while a model writes a file) is a call the
serving engines can show: on every corpus, wild and wild2 template with a tool_calls field, each call parsed
from the cut text has a ``function`` that is an object with a name. A ``function`` that is the call's raw
text (what reading a JSON call object whole gave once the window decided it was a call) is dropped by
vLLM's ``hf`` parser with the text, and makes ``transformers serve`` raise (docs/FORMATS.md §9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser.analysis.probes import Prober, assistant
from autoparser.render import Renderer
from autoparser.verify.roundtrip import _generation

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
DIRS = [SHARED / "templates", SHARED / "wild" / "templates", SHARED / "wild2" / "templates"]
TEMPLATES = [p for d in DIRS if d.is_dir() for p in sorted(d.glob("*.jinja"))]
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
pytestmark = pytest.mark.skipif(not TEMPLATES, reason=f"templates not found under {SHARED} (../shared is absent)")

# A dialect's call object (a Python dict's strings) whose name may follow its arguments is read whole as
# ``function`` (``emit/streamed_calls.py::_json_dialect_whole``): past the window its name is nowhere a bounded
# look can read it, and a close's capture is dropped by the engines' older chat_parsing. Its cut call comes back
# as ``function`` text (nothing lost in transformers; FORMATS §9 says what the engines do with it).
READ_WHOLE = {"063-timestep"}

ARGUMENT = "".join(f"line {i}: the model writes a long file, one line after another; " for i in range(60))  # ~3.7k


def _long_call(src: str, analysis) -> tuple[str, str] | None:
    """(prompt, text) of a reply that is one call with a long argument, as the template writes it."""
    pr = Prober(Renderer(src, TOKENS))
    call = {"id": "call00001", "type": "function", "function": {"name": "run_query", "arguments": {"query": ARGUMENT}}}
    for mode in pr.modes:
        g = _generation(pr, analysis, [{"role": "user", "content": "Go."}], assistant(None, calls=[call]), mode)
        if g is not None and ARGUMENT[:200] in g[1]:
            return g[0], g[1]
    return None


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_a_call_cut_inside_a_long_argument_is_a_call_with_a_name(path):
    src = path.read_text(encoding="utf-8")
    try:
        res = autoparser.infer_result(src, TOKENS)
    except autoparser.AutoparserError as e:
        pytest.skip(f"no template inferred: {e.message}")
    if "tool_calls" not in res.template["fields"]:
        pytest.skip("no tool_calls field")
    g = _long_call(src, res.analysis)
    if g is None:
        pytest.skip("the template does not render a call with a long argument")
    prompt, text = g
    start = text.index(ARGUMENT[:200])
    for cut in (start + 600, start + 2400):  # past the window a JSON call decides in, and far past it
        msg = parse_response(text[:cut], res.template, prefix=prompt)
        for call in msg.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if path.stem in READ_WHOLE:
                assert ARGUMENT[:200] in json.dumps(function), (cut, call)  # its text, not lost
                continue
            assert isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"], (cut, call)
