"""``verify`` itself: expectations come from what the rendering carries, never more and never less.

Each test pairs a small chat template with a hand-written response_template and the analysis facts verify
reads (end markers, reasoning markers), so what is tested is verify, not the analyzer."""

from __future__ import annotations

import pytest
from transformers.utils.chat_parsing.response_templates import load_response_template

from autoparser.render import watchdog
from autoparser.analysis.model import Analysis, Content, Reasoning, Tools, Turn
from autoparser.errors import TemplateError
from autoparser.verify import verify


def chatml(assistant: str, gen: str = "") -> str:
    """A ChatML template whose assistant turn body is ``assistant`` (Jinja, message ``m``)."""
    return ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}" + assistant
            + "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
            "{%- if add_generation_prompt %}<|im_start|>assistant\n" + gen + "{% endif %}")


CALLS = ("{%- for c in m.tool_calls or [] %}<tool_call>\n{\"name\": \"{{ c.function.name }}\", "
         "\"arguments\": {{ c.function.arguments | tojson }}}\n</tool_call>{% endfor %}")
THINK = "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content | trim }}\n</think>\n\n{% endif %}"

END = "<|im_end|>"
TOOL_FIELD = {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
              "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}}


def rt(thinking: bool = True, tools: bool = True, content: bool = True) -> dict:
    fields: dict = {}
    if thinking:
        fields["thinking"] = {"open": "<think>", "close": "</think>", "content": "text"}
    if tools:
        fields["tool_calls"] = dict(TOOL_FIELD)
    if content:
        fields["content"] = {"close": [END, "\n" + END], "content": "text"}
    template = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": fields}
    load_response_template(template)  # a malformed template would make every test below meaningless
    return template


def analysis(reasoning: bool = True) -> Analysis:
    r = Reasoning("TAG_BASED", "<think>", "</think>", ("</think>",)) if reasoning else Reasoning()
    return Analysis(Turn(end_markers=(END,)), r, Content(), Tools(format="JSON_NATIVE", call_start="<tool_call>", call_end="</tool_call>"))


def call(name: str, args: dict, id: str) -> dict:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


W1 = call("get_weather", {"city": "Paris", "days": 3}, "call00001")
W2 = call("get_weather", {"city": "Zürich", "metric": False}, "call00002")
Q = call("run_query", {"query": "x", "options": {"rows": [{"a": 1}, {"b": 2}]}}, "call00003")


def run(template: str, message: dict, response_template: dict | None = None, a: Analysis | None = None):
    return verify(template, response_template or rt(), analysis=a or analysis(), messages=[("m", message)])


def test_trimmed_reasoning_is_expected_trimmed():
    """The template trims reasoning: what it rendered (the trimmed text) is expected, and found."""
    report = run(chatml(THINK + "{{ m.content }}"), {"role": "assistant", "content": "Answer.", "reasoning_content": "  \n lead and trail \n"})
    assert report.passed, report.to_dict()["first_failure"]
    assert all(c.expected.get("thinking") == "lead and trail" for c in report.cases)


def test_short_values_are_not_found_by_coincidence():
    """Content ``{`` appears in any JSON call; it is expected only because the rendering changes with it."""
    dropped = chatml("{% if not m.tool_calls %}{{ m.content }}{% endif %}" + CALLS)
    report = run(dropped, {"role": "assistant", "content": "{", "tool_calls": [W1]})
    assert report.passed, report.to_dict()["first_failure"]
    assert [c.expected for c in report.cases if c.status == "pass"][0] == {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": None}]}


def test_only_the_calls_the_template_renders_are_expected():
    """A template that renders only the first of several calls (gpt-oss, GigaChat 3.1)."""
    first_only = chatml("{{ m.content or '' }}{% if m.tool_calls %}{% set c = m.tool_calls[0] %}<tool_call>\n"
                        "{\"name\": \"{{ c.function.name }}\", \"arguments\": {{ c.function.arguments | tojson }}}\n</tool_call>{% endif %}")
    report = run(first_only, {"role": "assistant", "content": None, "tool_calls": [W1, W2]})
    assert report.passed, report.to_dict()["first_failure"]
    assert [c["arguments"] for c in report.cases[0].expected["tool_calls"]] == [W1["function"]["arguments"]]
    # ... and identical calls still count twice where the template renders both
    report = run(chatml(CALLS), {"role": "assistant", "content": None, "tool_calls": [W1, W1]})
    assert report.passed and len(report.cases[0].expected["tool_calls"]) == 2


def test_prefill_split_does_not_cut_a_marker():
    """The prompt ends ``<think></think>``, history renders ``</think>answer``: the model generates ``answer``."""
    template = ("{%- for m in messages %}{% if m.role == 'user' %}<|User|>{{ m.content }}{% else %}<|Assistant|></think>"
                "{{ m.content }}<|end|>{% endif %}{% endfor %}{% if add_generation_prompt %}<|Assistant|><think></think>{% endif %}")
    a = Analysis(Turn(end_markers=("<|end|>",)), Reasoning("FORCED_CLOSED", "<think>", "</think>", ("</think>",)), Content(), Tools())
    template_rt = {"defaults": {"role": "assistant"}, "start_anchor": "<|Assistant|>",
                   "fields": {"thinking": {"open": "<think>", "close": "</think>", "content": "text"},
                              "content": {"close": "<|end|>", "content": "text"}}}
    report = run(template, {"role": "assistant", "content": "Hello there."}, template_rt, a)
    assert report.passed, report.to_dict()["first_failure"]
    case = report.cases[0]
    assert case.how == "prefill-dropped" and case.generated == "Hello there.<|end|>"


def test_history_that_drops_reasoning_after_an_open_prompt_is_synthesized():
    """The prompt opens ``<think>``; history renders only the answer: the model writes reasoning, ``</think>``, answer."""
    template = chatml("{{ m.content }}", gen="<think>\n")
    report = run(template, {"role": "assistant", "content": "Answer.", "reasoning_content": "Because."})
    assert report.passed, report.to_dict()["first_failure"]
    assert report.cases[0].how == "synthesized" and report.cases[0].expected == {"content": "Answer.", "thinking": "Because."}


def test_a_broken_response_template_is_caught_with_the_diverging_case():
    template = chatml(THINK + "{{ m.content or '' }}" + CALLS)
    good = run(template, {"role": "assistant", "content": None, "tool_calls": [W1, Q]})
    assert good.passed, good.to_dict()["first_failure"]
    broken = rt()
    broken["fields"]["tool_calls"]["open"] = "<tool>"
    report = run(template, {"role": "assistant", "content": None, "tool_calls": [W1, Q]}, broken)
    assert not report.passed
    first = report.to_dict()["first_failure"]
    assert first["name"] == "m" and "<tool_call>" in first["generated"] and report.per_field()["tool_calls"] == "fail"


def test_a_field_the_template_lacks_is_expected_in_content():
    """Only the fields a response_template has are judged; the text of one it lacks must arrive in content
    (a degraded template: reasoning as plain content), and a parser that loses that text fails."""
    template = chatml(THINK + "{{ m.content }}")
    message = {"role": "assistant", "content": "Answer.", "reasoning_content": "Because."}
    no_thinking = rt(thinking=False)  # the reasoning block then lands in content
    report = run(template, message, no_thinking)
    assert report.passed and report.per_field() == {"content": "pass"} and "reasoning" not in report.fields
    assert "Because." in report.cases[0].parsed["content"]
    losing = rt(thinking=False)
    losing["fields"]["content"] = {"close": ["</think>", END], "content": "text"}  # closes twice: the reasoning is overwritten
    report = run(template, message, losing)
    assert not report.passed and report.per_field()["content"] == "fail"


def test_builtin_probes_pass_on_a_correct_template():
    report = verify(chatml(THINK + "{{ m.content or '' }}" + CALLS), rt(), analysis=analysis())
    assert report.passed, report.to_dict()["first_failure"]
    assert report.counts()["pass"] >= 14


def test_renders_run_under_the_analysis_budget(monkeypatch):
    slow = chatml("{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}{{ m.content }}")
    monkeypatch.setattr(watchdog, "TIME_BUDGET", 0.2)
    with pytest.raises(TemplateError, match="longer than"):
        run(slow, {"role": "assistant", "content": "Answer."})


PY_CALLS = ("{%- for c in m.tool_calls or [] %}<tool_call>\n<function={{ c.function.name }}>\n"
            "{% for k, v in c.function.arguments.items() %}<parameter={{ k }}>{{ v }}</parameter>\n{% endfor %}"
            "</function>\n</tool_call>{% endfor %}")
PY_FIELD = {"open_pattern": r"<tool_call>\n<function=(?P<name>[^>\n]+)>\n", "close": "</function>\n</tool_call>", "repeats": True,
            "content": "xml-inline", "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>(?P<value>[\s\S]*?)</parameter>\n?"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}
PY_LISTS = ("array", "list arguments are rendered as Python repr")


def py_analysis(unreadable=(PY_LISTS,)) -> Analysis:
    return Analysis(Turn(end_markers=(END,)), Reasoning(), Content(),
                    Tools(format="TAG_WITH_TAGGED", call_start="<tool_call>", call_end="</tool_call>", unreadable=unreadable))


def py_rt(field: dict | None = None) -> dict:
    template = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
                "fields": {"tool_calls": field or PY_FIELD, "content": {"close": [END, "\n" + END], "content": "text"}}}
    load_response_template(template)
    return template


LISTED = call("get_weather", {"city": "Paris", "days": 3, "tags": ["a", "b c"]}, "call00001")


def test_values_the_analysis_found_unreadable_are_a_limit_told_plainly():
    """``{{ v }}`` writes ``['a', 'b c']``: the call fails only on that argument, so the case is a limit,
    the report passes and says which argument and why, and the same message without it round-trips."""
    template = chatml("{{ m.content or '' }}" + PY_CALLS)
    report = run(template, {"role": "assistant", "content": None, "tool_calls": [LISTED]}, py_rt(), py_analysis())
    assert report.passed and report.counts()["limit"] == 2 and report.per_field()["tool_calls"] == "limit"
    assert report.limits() == ["not covered: list arguments are rendered as Python repr (the same calls without tags round-trip)"]
    # without the analysis' finding the same case is a failure: verify never guesses a limit
    assert not run(template, {"role": "assistant", "content": None, "tool_calls": [LISTED]}, py_rt(), py_analysis(())).passed


def test_a_limit_never_hides_a_bug_beside_it():
    """A parser that also loses an argument fails even though the message carries an unreadable list."""
    template = chatml("{{ m.content or '' }}" + PY_CALLS)
    loses_days = dict(PY_FIELD, content_args={"tag_pattern": r"<parameter=(?P<key>[ct][^>\n]*)>(?P<value>[\s\S]*?)</parameter>\n?"})
    report = run(template, {"role": "assistant", "content": None, "tool_calls": [LISTED]}, py_rt(loses_days), py_analysis())
    assert not report.passed and report.counts()["fail"] == 2 and not report.limits()


def test_cli_reports_limits_and_the_first_failure(tmp_path, capsys):
    """``infer --verify`` and ``verify`` exit 0 with the limit said in one line; a broken response_template
    exits 1 with the diverging case (the full report on stdout for ``verify``)."""
    import json

    from autoparser.cli.main import main

    path = tmp_path / "py.jinja"
    path.write_text(chatml("{{ m.content or '' }}" + PY_CALLS), encoding="utf-8")
    assert main(["infer", "--verify", str(path)]) == 0
    err = capsys.readouterr().err
    assert "verify: not covered: list arguments" in err and "FAILED" not in err
    broken = json.loads(json.dumps(py_rt()))
    broken["fields"]["tool_calls"]["close"] = "</nope>"  # calls never close
    (tmp_path / "broken.json").write_text(json.dumps(broken), encoding="utf-8")
    assert main(["verify", str(path), "--response-template", str(tmp_path / "broken.json")]) == 1
    out, err = capsys.readouterr()
    assert "verify: FAILED" in err and json.loads(out)["first_failure"]["generated"].startswith("<tool_call>")
