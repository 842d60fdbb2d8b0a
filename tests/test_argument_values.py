"""Argument values that write the format's own punctuation come back whole, on every template with a verified
``tool_calls`` field (corpus and wild2): a list of objects with a call's keys, a Vue template's ``}}</div>``,
code with braces, brackets and newlines, unbalanced brackets. Each message is rendered by the template itself
(``verify`` with these probe messages, one-shot and streamed), so the text is the format as written; a value
that looks like markup must not end its call, split it, or leave its text in content. The probes dodge only
the one spelling no parser can decide: a string value's own trailing newline right before its close, which
tagged formats absorb as the newline models put there (docs/FORMATS.md §7b)."""

from __future__ import annotations

from pathlib import Path

import pytest

import autoparser
from autoparser.analysis.probes import assistant
from autoparser.verify import verify
from autoparser.verify.roundtrip import _call

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
TEMPLATES = sorted([*(SHARED / "templates").glob("*.jinja"), *(SHARED / "wild2" / "templates").glob("*.jinja")])
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
pytestmark = pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")

MESSAGES = [
    ("objects with a call's keys", assistant(None, calls=[_call("run_query", {"query": "x", "options": {
        "users": [{"name": "a", "age": 1}, {"name": "b", "id": "u2", "type": "x"}]}}, "call00007")])),
    ("vue", assistant(None, calls=[_call("run_query", {"query": "<div>{{name}}</div>\n<p>{{ n }}</p> and <b>{{ x }}</b>", "limit": 2}, "call00008")])),
    ("code", assistant(None, calls=[_call("run_query", {"query": "def f(a):\n    return {\"x\": [1, 2]}[a]\n\nprint(f('x'))"}, "call00009")])),
    ("brackets", assistant(None, calls=[_call("run_query", {"query": "a[0]) and (b] or c}} {d", "limit": 2}, "call00010")])),
    ("two calls, objects first", assistant(None, calls=[_call("run_query", {"query": "q", "options": {"users": [{"name": "a"}]}}, "call00011"),
                                                       _call("get_weather", {"city": "Paris"}, "call00012")])),
]


def _failing(path: Path, messages: list, json_arguments: bool = False) -> list[str]:
    """The cases of ``messages`` the template's own renderings fail (skips where no tool_calls field, or with
    ``json_arguments`` none whose arguments are JSON, is handed out)."""
    src = path.read_text(encoding="utf-8")
    try:
        res = autoparser.infer_result(src, TOKENS, where=path.name)
    except autoparser.AutoparserError as e:
        pytest.skip(f"no template handed out: {e.message[:80]}")
    if "tool_calls" not in res.template["fields"] or (json_arguments and res.analysis.tools.arguments.kind != "json"):
        pytest.skip("no tool_calls field" + (" with JSON arguments" if json_arguments else "") + " handed out")
    report = verify(src, res.template, TOKENS, analysis=res.analysis, messages=messages)
    return [f"{c.name} ({c.mode}, history {c.history}): {c.error or c.fields}" for c in report.cases if c.status == "fail"]


def _id(p: Path) -> str:
    return f"wild2/{p.stem}" if p.parent.parent.name == "wild2" else p.stem


@pytest.mark.parametrize("path", TEMPLATES, ids=_id)
def test_argument_values_that_look_like_markup_come_back_whole(path):
    failing = _failing(path, MESSAGES)
    assert not failing, failing


QUOTING = [("the format quoted in a string", assistant(None, calls=[_call("run_query", {
    "query": "Wrap it in <tool_call> and </tool_call>, or [TOOL_CALLS] name[ARGS] {\"a\": 1}, or <function=f> ... </function>.",
    "limit": 2}, "call00031")]))]


@pytest.mark.parametrize("path", TEMPLATES, ids=_id)
def test_a_json_string_argument_may_quote_any_format(path):
    """Where the arguments are JSON, a string argument quoting any family's markers (a coding agent writing a
    parser or a chat template: ``</function>``, ``[TOOL_CALLS]``, ``</tool_call>``) is the string's text: a call's
    close, or the next call's opener, counts only after the arguments' ``}``. Before, Functionary's
    ``</function>`` and Mistral's ``[TOOL_CALLS]`` inside a string ended the call there. (A format whose values are
    raw text cannot tell its own markers inside a value from the markup: not asked there.)"""
    failing = _failing(path, QUOTING, json_arguments=True)
    assert not failing, failing
