"""Outputs written in the format (verify/written.py): a template whose history renders call values lossily
keeps its tool_calls field as a limit, said once; outputs a model writes in the format parse. Parsed with
transformers' own parser."""

import json
from pathlib import Path

from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser.pipeline import verify
from autoparser.verify import written
from autoparser.verify.roundtrip import VERIFY_TOOLS

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_lossy_history_keeps_tool_calls_as_a_limit():
    src = (MODELS / "pythonic-unquoted.jinja").read_text(encoding="utf-8")
    res = autoparser.infer_result(src)
    v = res.verdict
    assert v["status"] == "full" and v["fields"]["tool_calls"] == "limit" and not v["dropped"]
    assert [w for w in res.warnings if written.LOSSY in w] and len([w for w in res.warnings if "lossily" in w]) == 1
    prompt = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
    out = '[get_weather(city="Paris", days=3), run_query(query=\'a, b\', tags=["x", "y"])]<|im_end|>'
    msg = parse_response(out, res.template, prefix=prompt, tools=VERIFY_TOOLS)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        ("get_weather", {"city": "Paris", "days": 3}), ("run_query", {"query": "a, b", "tags": ["x", "y"]})]


def test_a_wrong_call_reading_is_no_limit():
    """The written output is judged only where the parse found the expected calls by name: a template that
    misreads the calls themselves still fails verification."""
    src = (MODELS / "pythonic-unquoted.jinja").read_text(encoding="utf-8")
    broken = json.loads((MODELS / "pythonic-unquoted.response.json").read_text(encoding="utf-8"))
    broken["fields"]["tool_calls"]["transform"]["function"]["name"] = "x{name}"
    report = verify(src, broken)
    assert not report.passed and report.per_field()["tool_calls"] == "fail"
    assert not any(c.status == "limit" for c in report.cases)


def test_calls_written_in_each_format():
    from autoparser.analysis.layout import NAME, Layout

    calls = [{"name": "f", "arguments": {"a": "x y", "n": 2}, "id": "c1"}, {"name": "g", "arguments": {"b": [1]}, "id": "c2"}]
    py = Layout("pythonic", trigger="[", section_start="[", section_end="]", call_end=")", header=(NAME, "("), py_quote="'")
    assert written.write_calls(py, calls) == "[f(a='x y', n=2), g(b=[1])]"
    kv = Layout("tagged_kv", trigger="<call ", header=("<call name=\"", NAME, "\">"), call_end="</call>", key_prefix="<arg k=\"",
                key_suffix="\">", value_suffix="</arg>")
    assert written.write_calls(kv, calls[:1]) == '<call name="f"><arg k="a">x y</arg><arg k="n">2</arg></call>'
    js = Layout("json", trigger="<tool_call>", call_start="<tool_call>", call_end="</tool_call>", name_path=("name",), args_path=("arguments",))
    assert written.write_calls(js, calls[:1]) == '<tool_call>{"name": "f", "arguments": {"a": "x y", "n": 2}}</tool_call>'


def test_a_bracket_glued_to_a_word_opens_no_call():
    """A pythonic list with no marker opens calls only as a list of its own: ``hello world[A(`` (vLLM's
    regex-timeout case) stays content, every character of it."""
    src = (MODELS / "pythonic-unquoted.jinja").read_text(encoding="utf-8")
    template = autoparser.infer(src)
    for text in ("hello world[A(A=\t)A(A=,\t\tA(A=,", "see arr[f(x) now"):
        assert parse_response(text, template, prefix="") == {"role": "assistant", "content": text}
    msg = parse_response('Sure.\n[get_weather(city="Paris")]', template, prefix="")
    assert msg["content"] == "Sure." and msg["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_markup_escaping_in_history_is_no_format():
    """A call object built by adding strings to a ``|safe`` value renders ``{&#34;name&#34;: …`` through transformers
    (jinja's Markup escapes what is added to it); the model writes JSON, which the inferred template reads whole."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    src = (MODELS / "markup-escaped.jinja").read_text(encoding="utf-8")
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}]
    assert "{&#34;name&#34;: &#34;get_weather&#34;" in _compile_jinja_template(src).render(messages=history)
    res = autoparser.infer_result(src)
    assert res.verdict["status"] == "full" and not res.verdict["dropped"] and res.verdict["fields"]["tool_calls"] == "pass"
    out = 'Checking. [CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, {"name": "get_time", "arguments": {}}]</s>'
    msg = parse_response(out, res.template, prefix="[INST]Weather?[/INST]", tools=VERIFY_TOOLS)
    assert msg.get("content") == "Checking."
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        ("get_weather", {"city": "Paris", "days": 3}), ("get_time", {})]
