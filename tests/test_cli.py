"""The command line as scripts use it: quick to start, every flag described, ``-o -`` on stdout, ``--version``,
``verify --json`` in ``infer -o``'s shape, and files of the wrong kind refused in one line before any work."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import autoparser
from autoparser.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "chatml-think.jinja"  # a team-written template: thinking, tool calls, content


def _cli(*args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autoparser", *args], capture_output=True, text=True, cwd=cwd, input=stdin,
                          timeout=timeout)


def _lines(stderr: str) -> list[str]:
    """stderr without transformers' import banner (it prints one when PyTorch is absent)."""
    return [line for line in stderr.splitlines() if "PyTorch" not in line]


# -- start-up ----------------------------------------------------------------------------------------------------

HEAVY = ("transformers", "huggingface_hub", "jinja2", "regex", "numpy", "torch")
PROBE = ("import runpy, sys\nsys.argv = ['autoparser', *sys.argv[1:]]\ncode = 0\ntry:\n    runpy.run_module('autoparser', run_name='__main__')\n"
         "except SystemExit as e:\n    code = e.code\nheavy = [m for m in %r if m in sys.modules]\n"
         "sys.stderr.write('\\nLOADED=' + ','.join(heavy) + '\\n')\nsys.exit(code)\n" % (HEAVY,))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["infer", "--help"], ["batch", "--help"], ["grammar", "--help"],
                                  ["parse", "--help"], ["verify", "--help"], ["infer"], ["infer", "x.jinja", "--no-such-flag"]])
def test_help_version_and_usage_errors_load_no_heavy_module(args):
    """``python -m autoparser --help`` took 3 s because the package imported transformers for every command."""
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    loaded = r.stderr.rsplit("LOADED=", 1)[1].strip()
    assert loaded == "", f"{args}: {loaded}"
    assert r.returncode == (0 if any(a in args for a in ("--help", "--version")) else 2), r.stderr


def test_public_names_still_resolve():
    """The package's names are loaded on first use; each is still there and what it was."""
    from autoparser import grammar, hook, pipeline

    assert autoparser.infer is pipeline.infer and autoparser.infer_result is pipeline.infer_result
    assert autoparser.attach is hook.attach and autoparser.enable is hook.enable
    assert callable(grammar) and autoparser.grammar is grammar
    importlib.import_module("autoparser.grammar.build")  # loading the subpackage's modules must not shadow the function

    assert callable(autoparser.grammar)
    assert set(autoparser.__all__) <= set(dir(autoparser))
    with pytest.raises(AttributeError):
        autoparser.no_such_name  # noqa: B018


def test_version_is_the_package_version():
    r = _cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"autoparser {autoparser.__version__}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" in project["dynamic"]  # read from autoparser.__version__: one place to change


def _actions(parser: argparse.ArgumentParser, path: str = "autoparser"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"{path} {choice.dest}", choice
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_flag_is_described_in_help():
    missing = [f"{where}: {'/'.join(a.option_strings) or a.dest}" for where, a in _actions(build_parser())
               if not a.help or a.help == argparse.SUPPRESS]
    assert missing == []


# -- scriptable output -------------------------------------------------------------------------------------------

def test_infer_output_dash_is_stdout(tmp_path):
    """``-o -`` wrote a file named ``-``; it is stdout, with what ``-o FILE`` writes."""
    r = _cli("infer", str(MODEL), "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "-").exists()
    got = json.loads(r.stdout)
    assert set(got) == {"response_template", "verdict"} and got["verdict"]["status"] == "full"
    assert main(["infer", str(MODEL), "-o", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8")) == got


def test_verify_json_is_shaped_like_infer(tmp_path, capsys):
    """``verify --json`` prints {response_template, verdict} with the keys infer's verdict has: for the inferred
    template its very verdict; for a given one the same keys; a template that fails is refused (exit 1)."""
    assert main(["infer", str(MODEL), "-o", str(tmp_path / "r.json")]) == 0
    inferred = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["verify", str(MODEL), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == inferred

    given = json.loads((ROOT / "models" / "chatml-think.response.json").read_text(encoding="utf-8"))
    del given["fields"]["tool_calls"]  # judged only on what it has: tool-call text must arrive as content
    (tmp_path / "no-tools.json").write_text(json.dumps(given), encoding="utf-8")
    assert main(["verify", str(MODEL), "--response-template", str(tmp_path / "no-tools.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["response_template"] == given and set(out["verdict"]) == set(inferred["verdict"])
    assert out["verdict"]["fields"]["tool_calls"] == "fail" and out["verdict"]["status"] == "degraded"
    assert out["verdict"]["dropped"] == ["tool_calls"]

    wrong = json.loads(json.dumps(given))
    wrong["fields"]["thinking"]["content"] = "json"  # reasoning text is not JSON: every reasoning case fails
    (tmp_path / "wrong.json").write_text(json.dumps(wrong), encoding="utf-8")
    assert main(["verify", str(MODEL), "--response-template", str(tmp_path / "wrong.json"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out["verdict"]) == set(inferred["verdict"]) and out["verdict"]["status"] == "refused"
    assert out["verdict"]["reason"] and out["verdict"]["fields"]["reasoning"] == "fail"


@pytest.mark.parametrize("content, kind", [("[1, 2]", "a list"), ('"text"', "a string"), ("3", "a number"),
                                           ('{"response_template": [], "verdict": null}', "a list")])
def test_response_template_that_is_not_an_object_is_one_line(tmp_path, content, kind):
    """Read up front: before, a list went through the whole analysis and every case failed on it."""
    (tmp_path / "rt.json").write_text(content, encoding="utf-8")
    r = _cli("verify", str(MODEL), "--response-template", "rt.json", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert _lines(r.stderr) == [f"autoparser: error: rt.json: not a response_template: want a JSON object, got {kind}"]


def test_response_template_transformers_refuses_is_one_line(tmp_path):
    (tmp_path / "rt.json").write_text('{"fields": {}, "extra": 1}', encoding="utf-8")
    r = _cli("verify", str(MODEL), "--response-template", "rt.json", cwd=tmp_path, timeout=120)
    lines = _lines(r.stderr)
    assert r.returncode == 2 and len(lines) == 1 and "not a response_template transformers accepts" in lines[0], r.stderr


@pytest.mark.parametrize("tools", ['{"type": "function", "function": {"name": "f"}}', '["get_weather", "search"]', '"f"'])
def test_grammar_tools_of_the_wrong_shape_is_one_line(tmp_path, tools):
    """``grammar --tools`` with an object or a list of strings ended in ``internal error: AttributeError``
    (exit 3); it is the line ``parse`` gives for the same file (exit 2)."""
    (tmp_path / "tools.json").write_text(tools, encoding="utf-8")
    want = ["autoparser: error: tools.json: cannot read tools: want a JSON list of tool objects"]
    for command in (["grammar", str(MODEL), "--tools", "tools.json"], ["parse", str(MODEL), "-", "--tools", "tools.json"]):
        r = _cli(*command, cwd=tmp_path, stdin="Hello", timeout=60)
        assert (r.returncode, _lines(r.stderr)) == (2, want), command
