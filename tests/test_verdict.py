"""Never silently wrong: ``infer`` verifies what it emits, leaves out fields that do not round-trip, refuses
templates whose content does not, and says which; the CLI's --no-verify, --strict, --serve and -o records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser import pipeline
from autoparser.cli.main import main
from autoparser.verify import template_fields, verify
from autoparser.verify.capabilities import rejudge_uncovered

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
PROSE_CALLS = ROOT / "models" / "prose-calls.jinja"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
REFUSED = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{{ m.content }}|{{ m.content[:3] }}"
           "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def outcomes():
    """Every corpus and wild template through ``infer_result`` once: name -> (source, Result or error)."""
    paths = sorted((CORPUS / "templates").glob("*.jinja")) + sorted((CORPUS / "wild" / "templates").glob("*.jinja"))
    if not paths:
        pytest.skip(f"corpus not found at {CORPUS} (../shared is absent)")
    out = {}
    for path in paths:
        src = path.read_text(encoding="utf-8")
        try:
            out[f"{path.parent.parent.name}/{path.stem}"] = (src, autoparser.infer_result(src, TOKENS, where=path.name))
        except autoparser.AutoparserError as e:
            out[f"{path.parent.parent.name}/{path.stem}"] = (src, e)
    return out


def test_nothing_emitted_fails_its_own_verify(outcomes):
    """Each template is fully verified, degraded to fields that verify, or refused with a reason."""
    statuses = {}
    for name, (src, res) in outcomes.items():
        if isinstance(res, autoparser.AutoparserError):
            assert res.message.strip(), name
            if isinstance(res, autoparser.VerificationError):
                assert res.verdict["status"] == "refused" and res.verdict["reason"], name
            statuses[name] = "refused"
            continue
        v = res.verdict
        statuses[name] = v["status"]
        report = verify(src, res.template, TOKENS, analysis=res.analysis)
        report = rejudge_uncovered(report, res.template, set(v.get("uncovered") or ()))
        assert report.passed, (name, report.reason())
        kept = template_fields(res.template)
        assert not set(v["dropped"]) & kept, (name, v)
        if v["status"] == "degraded":
            assert (v["dropped"] or v["uncovered"] or v["text_lost"]) and v["first_failure"], (name, v)  # text lost: §7b
            assert not v["uncovered"] or v["tool_capabilities"]["single"] == "pass", (name, v)  # a field is kept only when single calls hold
            assert any(why.startswith("degraded: ") for why in res.warnings), name  # said once, in one line
        else:
            assert v["status"] == "full" and not v["dropped"] and all(x != "fail" for x in v["fields"].values()), (name, v)
    corpus = [s for n, s in statuses.items() if n.startswith("corpus/")]
    assert corpus and all(s == "full" for s in corpus), statuses  # the 57 real templates lose nothing


def test_a_repeat_is_remembered_and_callers_get_copies(monkeypatch):
    src = (ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8")
    first = autoparser.infer_result(src)

    def no_analysis(*a, **k):
        raise AssertionError("a repeat analysed the template again")

    monkeypatch.setattr(pipeline, "_infer", no_analysis)  # a repeat must not reach the analysis at all
    again = autoparser.infer_result(src)
    monkeypatch.undo()
    assert again.template == first.template and again.verdict == first.verdict
    again.template["fields"].clear()
    again.verdict["fields"].clear()
    assert autoparser.infer(src) == first.template and autoparser.infer_result(src).verdict == first.verdict
    assert autoparser.infer_result(src, verify=False).verdict is None


def test_refusal_is_remembered_and_names_the_caller():
    for where in ("a.jinja", "b.jinja"):
        with pytest.raises(autoparser.VerificationError) as e:
            autoparser.infer_result(REFUSED, where=where)
        assert e.value.where == where and e.value.verdict["status"] == "refused" and "content" in e.value.message


def test_cli_records_the_verdict_and_verify_reads_it(tmp_path, capsys):
    out = tmp_path / "o.json"
    assert main(["infer", str(PROSE_CALLS), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "degraded: parsing of tool_calls left out" in line and "first failure" in line]
    rec = json.loads(out.read_text())
    assert rec["verdict"]["status"] == "degraded" and rec["verdict"]["dropped"] == ["tool_calls"]
    assert set(rec["response_template"]["fields"]) == {"thinking", "content"}
    assert main(["verify", str(PROSE_CALLS), "--response-template", str(out)]) == 0  # the record is read as its template
    capsys.readouterr()
    assert main(["infer", str(PROSE_CALLS), "--strict"]) == 1
    stdout = capsys.readouterr().out
    assert "tool_calls" not in json.loads(stdout)["fields"]  # stdout stays the bare template
    assert main(["infer", str(PROSE_CALLS), "--no-verify", "-o", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["verdict"] is None and "tool_calls" in rec["response_template"]["fields"]
    assert main(["infer", "--verify", str(PROSE_CALLS)]) == 0  # the old flag is still accepted


def test_cli_refusal_is_one_line_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "r.jinja"
    src.write_text(REFUSED, encoding="utf-8")
    out = tmp_path / "o.json"
    assert main(["infer", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no verified response_template: content does not round-trip" in err[0]
    assert not out.exists()


def test_cli_serve_flags_fit_the_template(capsys):
    full = str(ROOT / "models" / "chatml-think.jinja")
    assert main(["infer", full, "--serve", "vllm"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    assert "serve: vllm serve MODEL --reasoning-parser hf --enable-auto-tool-choice --tool-call-parser hf" in err
    assert 'tokenizer_config.json under the key "response_template"' in err and "batch --write" in err
    assert main(["infer", str(PROSE_CALLS), "--serve", "vllm"]) == 0
    err = capsys.readouterr().err
    assert "serve: vllm serve MODEL --reasoning-parser hf\n" in err and "no --tool-call-parser hf" in err
    assert main(["infer", str(PROSE_CALLS), "--serve", "sglang"]) == 0
    err = capsys.readouterr().err
    assert "--model-path MODEL --reasoning-parser response_template\n" in err and "HTTP 400" in err
    no_thinking = str(ROOT / "models" / "json-bare.jinja")
    assert main(["infer", no_thinking, "--serve", "sglang"]) == 0
    err = capsys.readouterr().err
    assert "--reasoning-parser response_template --tool-call-parser response_template" in err
    assert "although the template has no thinking field" in err


def test_tool_capabilities_shape_on_a_full_verdict():
    res = autoparser.infer_result((ROOT / "models" / "json-per-call.jinja").read_text(encoding="utf-8"))
    assert res.verdict["tool_capabilities"] == {"single": "pass", "parallel": "pass", "nested": "pass", "content_beside": "pass", "ids": "pass"}
    plain = autoparser.infer_result((ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8"))
    assert set(plain.verdict["tool_capabilities"].values()) <= {"absent", "pass"}


def test_a_field_that_holds_for_single_calls_is_kept_and_the_rest_arrives_in_content():
    """A tool_calls field that reads single, parallel and content-beside calls but not a call with nested
    arguments keeps its field: the nested call's text arrives in content (no call parsed from it), the
    verdict names what is not covered, and verify judges the uncovered case that way."""
    import copy

    from autoparser.verify.verdict import describe, settle

    src = (ROOT / "models" / "json-per-call.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    t = copy.deepcopy(res.template)
    calls = t["fields"]["tool_calls"]
    calls.pop("open", None)
    name = '(?P<name>[^"\\\\]{1,256})'  # the call's name as its keyed head captures it (docs/FORMATS.md §9)
    assert name in calls["open_pattern"]
    for k in ("open_pattern", "close_pattern"):  # reads only get_weather calls
        calls[k] = calls[k].replace(name, "(?P<name>get_weather)")
    t["fields"]["content"]["close_pattern"] = r"<\|eot\|>\s{0,64}"
    kept, _, v = settle(src, None, res.analysis, t, "thinking")
    assert kept == t and v["status"] == "degraded" and not v["dropped"] and v["uncovered"] == ["nested"]
    assert v["tool_capabilities"] == {"single": "pass", "parallel": "pass", "nested": "fail", "content_beside": "pass", "ids": "pass"}
    assert "not covered: nested arguments" in describe(v)
    assert rejudge_uncovered(verify(src, t, analysis=res.analysis), t, set(v["uncovered"])).passed
    assert not verify(src, t, analysis=res.analysis).passed


def test_an_uncovered_case_that_parses_a_call_forces_the_drop():
    """Parallel calls read as one wrong call cannot be left to content: the field is dropped whole."""
    import copy

    from autoparser.verify.verdict import settle

    src = (ROOT / "models" / "json-per-call.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    t = copy.deepcopy(res.template)
    calls = t["fields"]["tool_calls"]
    calls.pop("open", None)
    calls["open_pattern"] = r"\A\s*<\|act\|>"  # only a call at the very start
    calls["close_pattern"] = r"<\|eot\|>\s{0,64}"
    t["fields"]["content"]["close_pattern"] = r"<\|eot\|>\s{0,64}"
    kept, _, v = settle(src, None, res.analysis, t, "thinking")
    assert "tool_calls" not in kept["fields"] and "tool_calls" in v["dropped"] and not v["uncovered"]
    assert v["tool_capabilities"]["single"] == "fail"


@pytest.mark.parametrize("name, why", [("history-only-calls", "render only in earlier turns"), ("flat-calls", "render only in the flat shape"),
                                       ("marker-without-calls", "renders a marker of its own but neither the calls' names"),
                                       ("prefill-last-turn", "render only in earlier turns")])
def test_calls_the_analysis_cannot_see_are_said(name, why):
    """Calls rendered only in earlier turns, only in the flat {"name", "arguments"} shape, or not at all where
    the turn writes a marker of its own (``[CALLS]`` and the content), are never lost silently: the verdict drops
    tool_calls with the reason, and the warning says it. The content still parses, the marker with it in a turn
    with calls: before, that turn's content failed the round trip and nothing was handed out (vLLM's old
    Mistral tool template, which writes ``[TOOL_CALLS]`` and the content)."""
    from transformers.utils.chat_parsing import parse_response

    res = autoparser.infer_result((ROOT / "models" / f"{name}.jinja").read_text(encoding="utf-8"))
    v = res.verdict
    assert v["status"] == "degraded" and v["dropped"] == ["tool_calls"] and why in v["first_failure"]
    assert v["tool_capabilities"]["single"] == "fail"
    assert any(why in w for w in res.warnings)
    assert parse_response("The answer.", res.template, prefix="")["content"] == "The answer."


def test_content_beside_a_run_of_calls_is_uncovered_and_the_field_kept():
    """Pythonic calls with no marker are read only as a run at the reply's start: content before them is not
    covered, so its case arrives in content, and the field stays for what it covers."""
    from autoparser.verify.verdict import describe

    for name in ("pythonic-semicolon",):
        res = autoparser.infer_result((ROOT / "models" / f"{name}.jinja").read_text(encoding="utf-8"))
        v = res.verdict
        assert "tool_calls" in res.template["fields"], name
        assert v["status"] == "degraded" and v["uncovered"] == ["content_beside"] and not v["dropped"], (name, v)
        assert v["tool_capabilities"]["single"] == v["tool_capabilities"]["parallel"] == "pass"
        assert "not covered: content beside calls" in describe(v)


def test_content_beside_a_run_of_json_calls_is_covered():
    """A JSON call object describes itself: a run of them with no marker is read after text too (its head
    decides, docs/FORMATS.md §7b), so content beside the calls round-trips (before: uncovered, degraded)."""
    for name in ("json-run-lines", "json-glued"):
        res = autoparser.infer_result((ROOT / "models" / f"{name}.jinja").read_text(encoding="utf-8"))
        v = res.verdict
        assert v["status"] == "full" and v["tool_capabilities"]["content_beside"] == "pass", (name, v)


def test_reasoning_switches_are_read_from_the_template():
    from autoparser.analysis.reads import reasoning_switches

    src = ("{% if reasoning_effort == 'high' %}H{% endif %}{% if thinking %}T{% endif %}{% if thinking_budget == 0 %}B{% endif %}"
           "{% if thinking_mode in ['on', 'auto'] %}M{% endif %}"
           "{% set think_local = 1 %}{{ think_local }}{{ messages }}")
    modes = reasoning_switches(src)
    assert {"reasoning_effort": "high"} in modes and {"thinking": True} in modes and {"thinking": False} in modes
    assert {"thinking_mode": "auto"} in modes
    assert not any("thinking_budget" in m or "think_local" in m for m in modes)  # a number is a budget; a set variable no switch


def test_a_template_broken_only_with_tools_is_analysed_without_them():
    """A template that raises only where it reads the tools (it sets an attribute on a tool, as MiroThinker
    does; transformers' renderer raises too) renders without them: it is analysed so, its calls found where its
    history writes them, and one warning says tools= cannot reach it. Before, nothing was handed out."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    src = (Path(__file__).resolve().parents[1] / "models" / "tools-refused.jinja").read_text(encoding="utf-8")
    user = [{"role": "user", "content": "Hi"}]
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}
    assert _compile_jinja_template(src).render(messages=user, add_generation_prompt=True)  # renders without tools
    with pytest.raises(Exception):  # and transformers' own renderer refuses it with them, as the warning says
        _compile_jinja_template(src).render(messages=user, tools=[tool], add_generation_prompt=True)
    result = autoparser.infer_result(src)
    assert result.verdict["status"] == "full" and result.verdict["fields"]["tool_calls"] == "pass", result.verdict
    assert [w for w in result.warnings if "raises when given tools" in w and "\n" not in w], result.warnings
    text = 'Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>'
    msg = parse_response(text, result.template, prefix="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert msg["content"] == "Let me check." and msg["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_a_template_refusing_every_assistant_turn_says_so():
    """A template whose assistant turn raises in transformers' sandbox (MiroThinker writes ``message.content``)
    gets one line naming that, not "renders no assistant turn"."""
    src = ("{%- for m in messages %}{% if m.role == 'assistant' %}{% set m.content = m.content ~ '!' %}{% endif %}"
           "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}"
           "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    with pytest.raises(autoparser.AutoparserError) as e:
        autoparser.infer_result(src)
    message = str(e.value)
    assert "raises on an assistant turn" in message and "\n" not in message, message


def test_context_reads_are_walked_once_and_both_readers_agree():
    """The reasoning switches and the context names read one walk of the tree (``context_reads``): what they
    find is what each found walking it alone, and a name first set, then read, is neither."""
    from autoparser.analysis.reads import _read_before_set, _tree, context_names, context_reads, reasoning_switches

    src = ("{% set think_local = 1 %}{{ think_local }}{% for m in messages %}{{ m.content }}{% endfor %}"
           "{% if reasoning_effort == 'low' %}L{% endif %}{{ date_string }}{% set x = builtin_tools %}")
    context_reads.cache_clear()
    reads = context_reads(src)
    assert reads == frozenset(_read_before_set(_tree(src)))
    assert {"reasoning_effort", "date_string", "builtin_tools", "messages"} <= reads and "think_local" not in reads and "m" not in reads
    assert context_names(src) == ["builtin_tools", "date_string", "reasoning_effort"]
    assert {"reasoning_effort": "low"} in reasoning_switches(src)
    assert context_reads.cache_info().hits >= 1  # the second reader did not walk again
