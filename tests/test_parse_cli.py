"""``autoparser parse``: a real output parsed with the inferred template, printed as the message JSON;
bad input is one line on stderr and a non-zero exit, never a traceback."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import corpus_template
from autoparser.cli.main import main

QWEN3 = "Qwen-Qwen3-0.6B"


def _run(args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "autoparser", "parse", *args], input=stdin, capture_output=True, text=True, timeout=240, cwd=cwd)


@pytest.fixture
def qwen3(tmp_path):
    path = tmp_path / "qwen3.jinja"
    path.write_text(corpus_template(QWEN3), encoding="utf-8")
    return path


def test_parses_stdin_and_prints_the_message(qwen3, capsys, monkeypatch):
    import io

    out = '<think>\nCheck the weather.\n</think>\n\nLet me look. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(out.encode("utf-8")), encoding="utf-8"))
    assert main(["parse", str(qwen3)]) == 0
    msg = json.loads(capsys.readouterr().out)
    assert msg["thinking"].strip() == "Check the weather."
    assert msg["content"].strip() == "Let me look."
    assert msg["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}


def test_prompt_file_opens_reasoning(qwen3, tmp_path, capsys):
    """The prompt decides what the output means: after a prompt that left <think> open, text before
    </think> is reasoning; with the template's own generation prompt it is not."""
    out = tmp_path / "out.txt"
    out.write_text("Hmm.\n</think>\n\nHello!", encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n", encoding="utf-8")
    assert main(["parse", str(qwen3), str(out), "--prompt", str(prompt)]) == 0
    msg = json.loads(capsys.readouterr().out)
    assert msg["thinking"].strip() == "Hmm." and msg["content"].strip() == "Hello!"


def test_tools_type_the_arguments(tmp_path, capsys):
    path = tmp_path / "coder.jinja"
    path.write_text(corpus_template("Qwen3-Coder"), encoding="utf-8")
    out = tmp_path / "out.txt"
    out.write_text("<tool_call>\n<function=set_temp>\n<parameter=value>\n21\n</parameter>\n</function>\n</tool_call>", encoding="utf-8")
    tools = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"value": {"type": "integer"}}}
    tools.write_text(json.dumps({"tools": [{"type": "function", "function": {"name": "set_temp", "parameters": schema}}]}), encoding="utf-8")
    assert main(["parse", str(path), str(out), "--tools", str(tools)]) == 0
    msg = json.loads(capsys.readouterr().out)
    assert msg["tool_calls"][0]["function"] == {"name": "set_temp", "arguments": {"value": 21}}
    assert main(["parse", str(path), str(out)]) == 0  # without the schema the value stays text
    assert json.loads(capsys.readouterr().out)["tool_calls"][0]["function"]["arguments"] == {"value": "21"}


def test_thinking_switch_renders_the_default_prompt(qwen3, tmp_path, capsys):
    out = tmp_path / "out.txt"
    out.write_text("Just an answer.", encoding="utf-8")
    assert main(["parse", str(qwen3), str(out), "--thinking", "off"]) == 0
    assert json.loads(capsys.readouterr().out)["content"].strip() == "Just an answer."


@pytest.mark.parametrize("case", ["no-source", "no-output", "bad-tools", "tools-not-list", "not-utf8", "not-a-template"])
def test_bad_input_is_one_line(case, qwen3, tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("hello", encoding="utf-8")
    args = {
        "no-source": [str(tmp_path / "missing.jinja"), str(out)],
        "no-output": [str(qwen3), str(tmp_path / "missing.txt")],
        "bad-tools": [str(qwen3), str(out), "--tools", str(out)],
        "tools-not-list": [str(qwen3), str(out), "--tools", str(tmp_path / "t.json")],
        "not-utf8": [str(qwen3), str(tmp_path / "bin.txt")],
        "not-a-template": [str(tmp_path / "t.json"), str(out)],
    }[case]
    (tmp_path / "t.json").write_text('{"tools": 3}', encoding="utf-8")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    r = _run(args, cwd=tmp_path)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autoparser: "), r.stderr


def test_malformed_call_is_a_message_or_one_line(qwen3, tmp_path):
    """A call whose JSON does not parse: today transformers' parser raises on it with the inferred
    template (one line, exit 2); once emission tolerates it, the text must stay in content. Either way
    no traceback."""
    r = _run([str(qwen3), "-"], stdin='<tool_call>\n{"name": "f", "arguments": {bad}}\n</tool_call>', cwd=tmp_path)
    assert "Traceback" not in r.stderr
    if r.returncode == 0:
        assert "{bad}" in json.loads(r.stdout).get("content", "")
    else:
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "parser raised" in r.stderr


def test_parse_output_turns_a_raise_into_an_error():
    from autoparser.cli.parse import parse_output
    from autoparser.errors import AutoparserError

    rt = {"start_anchor": "A:", "fields": {"tool_calls": {"open": "<c>", "close": "</c>", "content": "json"}, "content": {"content": "text"}}}
    with pytest.raises(AutoparserError, match="parser raised"):
        parse_output(rt, "hi <c>{bad</c>", "A:")


def test_a_stop_token_given_on_the_command_line_ends_the_turn(tmp_path, capsys):
    """A bare template file brings no generation_config.json: ``--token stop_tokens=…`` (repeatable, each one
    added) names the tokens the model stops on, so a call ending in one keeps its arguments."""
    path = tmp_path / "llama32.jinja"
    path.write_text(corpus_template("meta-llama-Llama-3.2-3B-Instruct"), encoding="utf-8")
    out = tmp_path / "out.txt"
    out.write_text('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>', encoding="utf-8")
    assert main(["parse", str(path), str(out), "--token", "stop_tokens=<|end_of_text|>", "--token", "stop_tokens=<|eom_id|>"]) == 0
    msg = json.loads(capsys.readouterr().out)
    assert msg["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}


def test_a_template_that_concatenates_a_special_token_not_given_still_parses(tmp_path, capsys):
    """``'…' + bos_token`` raises where the token is not given (a bare .jinja): ``infer`` renders it empty and
    warns, and so does the default prompt ``parse`` renders. Fails on the commit before: one line, "template
    raised: 'bos_token' is undefined", for a template ``infer`` reads."""
    path = tmp_path / "missing-eos.jinja"
    path.write_text((Path(__file__).resolve().parents[1] / "models" / "missing-eos.jinja").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "out.txt"
    out.write_text("Hello there.", encoding="utf-8")
    assert main(["parse", str(path), str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == {"role": "assistant", "content": "Hello there."}
