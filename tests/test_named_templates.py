"""A model with named chat templates (``default`` and ``tool_use``: Hermes 2 Pro, Command R): transformers renders
every request that has tools with ``tool_use``, so a model's calls answer that template alone. Where no name is
asked, the CLI, the hook, ``launch`` and ``batch`` analyse it, and check that its parser also reads the replies the
default renders (requests without tools); where it does not, the default is analysed, with a warning. Parses
with transformers' own ``parse_response``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser.cli.main import main
from autoparser.pipeline import infer_source
from autoparser.sources.hub import resolve

from conftest import make_tokenizer

MODELS = Path(__file__).resolve().parents[1] / "models"
TOOLS = (MODELS / "chatml-think.jinja").read_text(encoding="utf-8")  # ChatML turns, Hermes-style calls
# The default such a model ships beside it: ChatML turns, no tools.
DEFAULT = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
OTHER_TURNS = DEFAULT.replace("<|im_start|>", "<|s|>").replace("<|im_end|>", "<|e|>")  # a default with turns of its own
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"


def _config(path: Path, default: str, tools: str) -> Path:
    (path / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": [{"name": "default", "template": default}, {"name": "tool_use", "template": tools}],
        "eos_token": "<|im_end|>"}), encoding="utf-8")
    return path


def _calls(msg: dict) -> list:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]


@pytest.mark.parametrize("layout", ["config list", "additional_chat_templates"])
def test_the_tools_template_is_analysed_where_it_reads_the_defaults_replies(tmp_path, layout):
    if layout == "config list":
        _config(tmp_path, DEFAULT, TOOLS)
    else:
        (tmp_path / "chat_template.jinja").write_text(DEFAULT, encoding="utf-8")
        (tmp_path / "additional_chat_templates").mkdir()
        (tmp_path / "additional_chat_templates" / "tool_use.jinja").write_text(TOOLS, encoding="utf-8")
    src = resolve(str(tmp_path))
    assert (src.name, src.template, src.plain) == ("tool_use", TOOLS, DEFAULT)
    res, used = infer_source(src)
    assert used is src and not any("'tool_use'" in w for w in res.warnings), res.warnings
    assert _calls(parse_response(CALL, res.template, prefix=PROMPT)) == [("get_weather", {"city": "Paris"})]
    assert parse_response("Hello there.<|im_end|>", res.template, prefix=PROMPT)["content"] == "Hello there."
    # the default alone, asked by name, has no calls to read
    alone, _ = infer_source(resolve(str(tmp_path), name="default"))
    assert "tool_calls" not in alone.template["fields"]


def test_a_tools_template_whose_parser_misreads_the_defaults_replies_gives_way_to_the_default(tmp_path):
    src = resolve(str(_config(tmp_path, OTHER_TURNS, TOOLS)))
    res, used = infer_source(src)
    assert (used.name, used.template) == ("default", OTHER_TURNS)
    assert res.template["start_anchor"] == "<|s|>assistant\n"
    said = [w for w in res.warnings if "'tool_use'" in w]
    assert len(said) == 1 and "--template tool_use" in said[0] and "does not read the replies" in said[0], res.warnings


def test_a_tools_template_that_gives_no_parser_gives_way_to_the_default(tmp_path):
    src = resolve(str(_config(tmp_path, DEFAULT, "{{ raise_exception('tools only through the API') }}")))
    res, used = infer_source(src)
    assert used.name == "default" and res.template["start_anchor"] == "<|im_start|>assistant\n"
    assert any("gives no parser" in w and "tools only through the API" in w for w in res.warnings), res.warnings


def test_a_default_that_gives_no_parser_leaves_the_tools_templates(tmp_path):
    src = resolve(str(_config(tmp_path, "{{ raise_exception('use the tools template') }}", TOOLS)))
    res, used = infer_source(src)
    assert used.template == TOOLS and "tool_calls" in res.template["fields"]
    assert any("'default' template gives no parser" in w and "not checked" in w for w in res.warnings), res.warnings


def test_neither_template_giving_a_parser_is_the_tools_templates_error(tmp_path):
    src = resolve(str(_config(tmp_path, "{{ raise_exception('no default') }}", "{{ raise_exception('no tools') }}")))
    with pytest.raises(autoparser.AutoparserError, match="no tools"):
        infer_source(src)


def test_the_cli_says_nothing_when_the_tools_template_reads_both_and_warns_when_it_gives_way(tmp_path, capsys):
    alike, other = tmp_path / "alike", tmp_path / "other"
    alike.mkdir()
    other.mkdir()
    assert main(["infer", str(_config(alike, DEFAULT, TOOLS))]) == 0
    out, err = capsys.readouterr()
    assert "tool_calls" in json.loads(out)["fields"] and "tool_use" not in err, err
    assert main(["infer", str(_config(other, OTHER_TURNS, TOOLS))]) == 0
    out, err = capsys.readouterr()
    assert "tool_calls" not in json.loads(out)["fields"] and "--template tool_use" in err, err
    assert main(["infer", str(other), "--template", "tool_use"]) == 0  # asked by name: that one, no check
    out, err = capsys.readouterr()
    assert "tool_calls" in json.loads(out)["fields"] and "--template" not in err, err


def test_the_hook_attaches_the_tools_templates_parser():
    tok = autoparser.attach(make_tokenizer({"default": DEFAULT, "tool_use": TOOLS}))
    assert _calls(parse_response(CALL, tok.response_template, prefix=PROMPT)) == [("get_weather", {"city": "Paris"})]
    other = autoparser.attach(make_tokenizer({"default": OTHER_TURNS, "tool_use": TOOLS}))
    assert other.response_template["start_anchor"] == "<|s|>assistant\n"  # the default's: its turns differ
    only = autoparser.attach(make_tokenizer({"tool_use": TOOLS}))  # no default: transformers renders every request with it
    assert "tool_calls" in only.response_template["fields"]


def test_batch_analyses_the_tools_template_and_falls_back_alike(tmp_path):
    for name, default in (("alike", DEFAULT), ("other", OTHER_TURNS)):
        (tmp_path / name).mkdir()
        _config(tmp_path / name, default, TOOLS)
    (tmp_path / "models.txt").write_text("./alike\n./other\n")
    r = subprocess.run([sys.executable, "-m", "autoparser", "batch", "models.txt", "-o", "-", "--workers", "1"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = {row["model"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert "tool_calls" in rows["./alike"]["response_template"]["fields"]
    other = rows["./other"]
    assert other["response_template"]["start_anchor"] == "<|s|>assistant\n"
    assert any("--template tool_use" in w for w in other.get("warnings", [])), other
