"""``autoparser serve`` without an engine: which flags it adds and which of the user's win, the one start-up
line (inferred, degraded, refused, shipped), the environment it hands the engine's processes, and the
plugins' opt-in (what vLLM's and SGLang's plugin loaders call in each process). Real inference, real
tokenizers saved and loaded by transformers, real spawned processes; the engines' own side is
``benchmarks/serve_engines.py`` (and tests/test_engines.py where they are installed)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_tokenizer

import autoparser
from autoparser import cache, hook, plugin
from autoparser.launch import environment, merge, plan
from autoparser.serve import flags, guidance, shell

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
CHATML = (MODELS / "chatml-think.jinja").read_text(encoding="utf-8")
PROSE_CALLS = (MODELS / "prose-calls.jinja").read_text(encoding="utf-8")
# The reply is written twice, the second time cut short: no parser can give back the content (refused).
REFUSED = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{{ m.content }}|{{ m.content[:3] }}"
           "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A private result cache, no opt-in from the caller's environment, the hook off afterwards."""
    monkeypatch.setenv("AUTOPARSER_CACHE_DIR", str(tmp_path / "autoparser-cache"))
    for name in (hook.ENV, "VLLM_PLUGINS", "SGLANG_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    cache.clear_memory()
    autoparser.disable()
    yield
    autoparser.disable()
    cache.clear_memory()


def model_dir(tmp_path, chat_template, response_template=None, name="model") -> Path:
    """A model directory as transformers saves one: a real fast tokenizer with the template."""
    tok = make_tokenizer(chat_template, response_template)
    path = tmp_path / name
    tok.save_pretrained(path)
    return path


# ------------------------------------------------------------------------------------------------ flags
def test_added_flags_are_what_infer_serve_prints(tmp_path):
    """One source: the flags added are the words of the command line ``infer --serve`` prints."""
    path = model_dir(tmp_path, CHATML)
    for engine, printed_head in (("vllm", f"vllm serve {path}"), ("sglang", f"python -m sglang.launch_server --model-path {path}")):
        p = plan(engine, str(path))
        printed = next(line for line in guidance(p.template, engine, str(path)) if line.startswith(printed_head))
        assert printed == " ".join([printed_head, *shell(list(p.added))])
        assert not p.kept
        assert p.argv[: 2 if engine == "vllm" else 3] == (("serve", str(path)) if engine == "vllm" else ("serve", "--model-path", str(path)))
    p = plan("vllm", str(path))
    assert [f for f, _ in p.added] == ["--reasoning-parser", "--enable-auto-tool-choice", "--tool-call-parser", "--structured-outputs-config"]
    assert p.argv[-1] == '{"enable_in_reasoning": true}'  # one argv word, unquoted: no shell in between


def test_users_flags_win_and_are_named(tmp_path):
    path = model_dir(tmp_path, CHATML)
    user = ["--port", "8001", "--tool_call_parser=hermes", "--reasoning-parser", "qwen3"]
    p = plan("vllm", str(path), user)
    assert [f for f, _ in p.kept] == ["--reasoning-parser", "--tool-call-parser"]
    assert [f for f, _ in p.added] == ["--enable-auto-tool-choice", "--structured-outputs-config"]
    assert p.argv[2:7] == tuple(user)  # theirs as given, in their order, before ours
    assert "hf" not in p.argv
    line = p.line()
    assert "\n" not in line
    assert "kept yours: --reasoning-parser qwen3 (not --reasoning-parser hf), --tool-call-parser hermes (not --tool-call-parser hf)" in line


def test_template_comes_from_the_tokenizer_the_engine_loads(tmp_path):
    """``--tokenizer`` (vLLM) / ``--tokenizer-path`` (SGLang) name where the engine loads the tokenizer,
    so that is where the chat template (and the verdict) comes from."""
    model = model_dir(tmp_path, REFUSED, name="model")
    tok = model_dir(tmp_path, CHATML, name="tok")
    assert plan("vllm", str(model)).template is None
    assert "inferred, full" in plan("vllm", str(model), [f"--tokenizer={tok}"]).line()
    assert "inferred, full" in plan("sglang", str(model), ["--tokenizer-path", str(tok)]).line()
    assert plan("sglang", str(model), ["--tokenizer", str(tok)]).template is None  # not SGLang's flag


def test_merge_flag_by_flag():
    ours = [("--enable-auto-tool-choice", None), ("--tool-call-parser", "hf")]
    assert merge(ours, ["--enable-auto-tool-choice"]) == ([("--tool-call-parser", "hf")], [("--enable-auto-tool-choice", None)])
    assert merge(ours, ["--port=1", "x"]) == (ours, [])


def test_dry_run_prints_the_line_and_the_command(tmp_path):
    path = model_dir(tmp_path, CHATML)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "autoparser", "serve", "--dry-run", "sglang", str(path), "--port", "30001"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("autoparser serve:")]
    assert len(lines) == 1 and "response_template inferred, full (" in lines[0]
    assert shlex.split(out.stdout) == ["sglang", "serve", "--model-path", str(path), "--port", "30001", "--reasoning-parser",
                                       "response_template", "--tool-call-parser", "response_template"]


def test_missing_engine_is_one_line(tmp_path):
    """Without the engine installed (CI), serving is refused in one line naming the install, exit 2."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here: serving would start it")
    path = model_dir(tmp_path, CHATML)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "autoparser", "serve", "vllm", str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1].startswith("autoparser: error: vllm is not installed in this Python") and "pip install vllm" in out.stderr


# ------------------------------------------------------------------------------------------------ the one line
def test_degraded_template_is_said_with_what_is_left_out(tmp_path):
    p = plan("vllm", str(model_dir(tmp_path, PROSE_CALLS)))
    assert set(p.template["fields"]) == {"thinking", "content"}
    assert "degraded: parsing of tool_calls left out" in p.line()
    assert [f for f, _ in p.added] == ["--reasoning-parser"]  # no tool parser for a template without tool_calls


def test_refused_template_is_said_and_the_server_still_starts(tmp_path):
    p = plan("sglang", str(model_dir(tmp_path, REFUSED)))
    assert p.template is None and p.added == () and p.argv[-1] == str(tmp_path / "model")
    line = p.line()
    assert "no response_template (no verified response_template" in line and line.endswith("added no parser flags")


def test_shipped_template_is_kept(tmp_path):
    shipped = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>", "content": "text"}}}
    p = plan("vllm", str(model_dir(tmp_path, CHATML, shipped)))
    assert p.template == shipped and "ships its own response_template (kept)" in p.line()
    assert p.added == () and flags(shipped, "vllm") == []
    assert not list(cache.cache_dir().glob("*.json"))  # nothing inferred for it


# ------------------------------------------------------------------------------------------------ env + plugins
def test_environment_hands_the_hook_on():
    env = environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", hook.ENV: hook.SAID} and hook.asked(env) == hook.SAID


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_plugin_does_nothing_unless_opted_in(engine, monkeypatch):
    allow = plugin.ALLOW_LISTS[engine]
    for env in ({}, {hook.ENV: "0"}, {hook.ENV: ""}, {allow: "other,plugins"}, {plugin.ALLOW_LISTS[{"vllm": "sglang", "sglang": "vllm"}[engine]]: "autoparser"}):
        assert not plugin.opted_in(engine, env), env
        assert plugin.register(engine, env) is False and not hook.enabled()
    for env in ({hook.ENV: "1"}, {hook.ENV: "said"}, {allow: "lora, autoparser"}):
        assert plugin.opted_in(engine, env), env
        assert plugin.register(engine, env) is True and hook.enabled()
        autoparser.disable()
    monkeypatch.setenv(allow, "autoparser")  # the entry point itself reads the process environment
    getattr(plugin, engine)()
    assert hook.enabled()


def test_pyproject_registers_both_entry_points():
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    for group, fn in (("vllm.general_plugins", plugin.vllm), ("sglang.srt.plugins", plugin.sglang)):
        module, _, attr = data[group][plugin.NAME].partition(":")
        assert f"{fn.__module__}:{fn.__name__}" == f"{module}:{attr}"


def _child(path: str, entry: str, queue) -> None:
    """What an engine's spawned process does: load its plugins (ours among them), then the tokenizer."""
    from transformers import AutoTokenizer

    from autoparser import plugin as p

    getattr(p, entry)()
    tok = AutoTokenizer.from_pretrained(path)
    queue.put(json.dumps(getattr(tok, "response_template", None)))


def _spawned(path: Path, entry: str, env: dict) -> dict | None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        proc = ctx.Process(target=_child, args=(str(path), entry, queue))
        proc.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        got = json.loads(queue.get(timeout=240))
    finally:
        proc.join(60)
    assert proc.exitcode == 0
    return got


def test_spawned_process_gets_the_template_through_the_environment(tmp_path):
    """The hand-off ``autoparser serve`` relies on: a spawned process (as the engines start theirs; the
    parent's patch does not reach it) attaches the template the parent chose, from the environment alone;
    without the opt-in it attaches nothing; a shipped template stays."""
    path = model_dir(tmp_path, CHATML)
    p = plan("vllm", str(path))  # the parent chooses (and caches) the template
    base = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    assert _spawned(path, "vllm", environment(base)) == p.template
    assert _spawned(path, "sglang", {**base, "SGLANG_PLUGINS": "autoparser"}) == p.template
    assert _spawned(path, "vllm", base) is None
    shipped = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>", "content": "text"}}}
    assert _spawned(model_dir(tmp_path, CHATML, shipped, "shipped"), "vllm", environment(base)) == shipped


# ------------------------------------------------------------------------------------------------ inside the engines
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_serve_inside_the_engine(engine, tmp_path):
    """Where the engine is installed (its own virtualenv, with autoparser installed editable so its plugin
    entry points exist; not CI's): ``benchmarks/serve_engines.py`` on one template, through the engine's own
    server with a stand-in model: calls back streamed and not, the shipped template kept, the plugin off
    unless opted in."""
    pytest.importorskip(engine, reason=f"{engine} is not installed here (run benchmarks/serve_engines.py with its virtualenv's Python)")
    from importlib.metadata import entry_points

    group = {"vllm": "vllm.general_plugins", "sglang": "sglang.srt.plugins"}[engine]
    if plugin.NAME not in {ep.name for ep in entry_points(group=group)}:
        pytest.skip(f"autoparser's {group} entry point is not installed here (pip install -e {ROOT})")
    if not (ROOT.parent / "shared" / "corpus" / "templates" / "Qwen-Qwen3-0.6B.jinja").is_file():
        pytest.skip("corpus not found")
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve_engines.py"), "--engine", engine, "--only", "Qwen-Qwen3-0.6B",
                           "--cases", "4", "--json", str(out)], capture_output=True, text=True, timeout=3000)
    got = json.loads(out.read_text())
    (row,) = got["rows"]
    assert row["cases"] == 4 and row["plain"] == 4 and row["streamed"] == 4, proc.stdout[-2000:]
    assert len(got["checks"]) >= 4 and all(c["ok"] for c in got["checks"]), got["checks"]
    assert proc.returncode == 0
