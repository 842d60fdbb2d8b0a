"""``autoparser serve`` checked inside the real engines (no GPU): run with the Python of an engine's virtualenv
(autoparser installed there with ``pip install -e``, so the engines find its plugin entry points):

    VLLM_VENV/bin/python benchmarks/serve_engines.py --engine vllm [--only NAME ...] [--cases N]
    SGLANG_VENV/bin/python benchmarks/serve_engines.py --engine sglang [...]

For every corpus and wild2 template whose inferred response_template has a verified ``tool_calls`` field, a
model directory is made locally (a byte-level tokenizer built with ``tokenizers``, the template's
control-token-looking markers as added tokens, ``<s>``/``</s>`` as bos/eos, the chat template; no
``response_template``), and the command a user types is run: ``autoparser serve ENGINE DIR`` (``python -m
autoparser``), which starts the engine's own CLI and OpenAI-compatible HTTP server, its processes, its
plugin loading, tokenizer loading, request handling, scheduler and parsers. Only the model execution is a
stand-in (``benchmarks/standin_vllm.py``, ``benchmarks/standin_sglang.py``): it writes, token by token, the text the template itself renders for
the case (the verify cases with calls), picked by the request's ``seed``. Each case is then sent over HTTP
as a chat request with tools and the case's ``chat_template_kwargs``, streamed and not, and counts when the
calls come back parsed (names and arguments equal to the case's).

Also checked: a model that ships its own response_template keeps it (the engine serves with it: the line
says so and the reply is parsed by it), and the plugin does nothing unless opted in (plain ``vllm serve``
with ``--tool-call-parser hf``, without and with ``AUTOPARSER_HOOK=1`` / ``VLLM_PLUGINS=autoparser``).
Prints one row per template and the totals; ``--json`` writes them; ``--summary`` merges earlier runs.

Time (2 shared cores, no GPU): a template costs the engine's start-up, almost all of it Python imports. vLLM:
the API server imports (~7 s quiet) and its engine-core process, which the CPU platform always spawns from a
fresh interpreter (``VLLM_WORKER_MULTIPROC_METHOD`` is forced to ``spawn``) and which imports torch and vLLM
again (~9 s); tokenizer loading is under 1 s, the 8-22 requests of a template 1-3 s, our infer+verify in
this process ~3 s. SGLang: its main process imports (``sglang.srt.entrypoints.http_server``: 40 s under
load), then the scheduler stand-in and the detokenizer, each spawned fresh, import SGLang in parallel
(``tokenizer_e2e`` 37-60 s). ``--preload`` removes the main process's share: this harness imports the
modules the engine's main process imports first (``PRELOAD``) once, and forks each server from itself, which
then runs ``python -m autoparser serve ...`` (or the engine's own module) by ``runpy`` exactly as ``-m``
does; the engine's plugin loading (checked not to have happened in the harness), its spawned processes,
tokenizer loading, HTTP path and parsers are unchanged. Measured on the same 10 templates, both at load
6-8: vLLM median 48 s -> 30 s a template; SGLang (Qwen3-0.6B) 99 s -> 74 s. The engine flags already skip
what a CPU stand-in does not use: ``--enforce-eager`` (no torch.compile or CUDA graphs) in vLLM,
``--skip-server-warmup`` in SGLang. Cutting cases (``--cases``) saves little: requests are ~5% of a template."""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import autoparser  # noqa: E402
from autoparser.emit import served  # noqa: E402
from autoparser.verify import VERIFY_TOOLS, verify  # noqa: E402
from grammar_support import byte_tokenizer, control_tokens  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpus"
FOLDERS = {"corpus": SHARED / "templates", "wild2": SHARED / "wild2" / "templates"}
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
TOOLS = json.loads(json.dumps(VERIFY_TOOLS))


# ------------------------------------------------------------------------------------------------ cases
def templates(only):
    """corpus and wild2 templates, taken in turn from each folder (a run cut short still samples both)."""
    import itertools

    lists = [[(folder, p) for p in sorted(path.glob("*.jinja")) if not only or any(o in p.stem for o in only)] for folder, path in FOLDERS.items()]
    for pair in itertools.zip_longest(*lists):
        yield from (x for x in pair if x is not None)


def call_cases(src: str):
    """(response_template, the verify cases whose message has calls and that pass) or the reason none."""
    try:
        res = autoparser.infer_result(src, TOKENS)
    except autoparser.AutoparserError as e:
        return f"refused: {e.message[:80]}"
    if "tool_calls" not in (res.template.get("fields") or {}):
        return "no tool_calls field"
    report = verify(src, res.template, TOKENS, analysis=res.analysis)
    cases = [c for c in report.cases if c.status == "pass" and c.expected.get("tool_calls") and c.source]
    return (res.template, cases) if cases else "no passing case with calls"


def model_dir(root: Path, name: str, src: str, response_template: dict | None = None) -> Path:
    """A model directory as a user has one: tokenizer files with the chat template, a config the engines
    read (a tiny Llama: no weights are ever loaded), no response_template unless given."""
    tok = byte_tokenizer([*control_tokens([src]), "<s>"], eos="</s>")
    tok.bos_token = "<s>"
    tok.chat_template = src
    if response_template is not None:
        tok.response_template = response_template
    path = root / name
    tok.save_pretrained(path)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
              "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 1, "vocab_size": len(tok),
              "max_position_embeddings": 32768, "torch_dtype": "float32", "bos_token_id": tok.bos_token_id,
              "eos_token_id": tok.eos_token_id, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def expected_calls(case) -> list:
    return [(c["name"], c["arguments"]) for c in case.expected["tool_calls"]]


def got_calls(calls) -> list | str:
    out = []
    for c in calls or []:
        fn = c.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "null")
        except json.JSONDecodeError:
            return f"arguments not JSON: {fn.get('arguments')!r:.80}"
        out.append((fn.get("name"), args))
    return out


# ------------------------------------------------------------------------------------------------ HTTP
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: dict, timeout=120):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            if not body.get("stream"):
                return r.status, json.loads(r.read())
            chunks = []
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    chunks.append(json.loads(line[5:]))
            return r.status, chunks
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[:300]


def streamed_message(chunks) -> dict:
    """The message a client assembles from the deltas: content, reasoning, calls by index."""
    content, reasoning, calls = "", "", {}
    for ch in chunks:
        for choice in ch.get("choices") or []:
            d = choice.get("delta") or {}
            content += d.get("content") or ""
            reasoning += d.get("reasoning_content") or d.get("reasoning") or ""
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc.get("index", len(calls)), {"function": {"name": None, "arguments": ""}})
                fn = tc.get("function") or {}
                if fn.get("name"):
                    slot["function"]["name"] = fn["name"]
                slot["function"]["arguments"] += fn.get("arguments") or ""
    return {"content": content, "reasoning": reasoning, "tool_calls": [calls[k] for k in sorted(calls)]}


PRELOAD = {  # what ``python -m autoparser serve ENGINE`` / the engine's own command imports before it serves
    "vllm": ["vllm.entrypoints.cli.main", "vllm.entrypoints.cli.serve", "vllm.entrypoints.openai.api_server", "standin_vllm"],
    "sglang": ["sglang.cli.main", "sglang.cli.serve", "sglang.launch_server", "sglang.srt.entrypoints.http_server",
               "sglang.srt.entrypoints.engine"],
}


def preload(engine: str, env: dict) -> float:
    """Import in this process the modules the engine's main process imports first, with the environment it
    runs in (modules that read it at import see the same), so each server forked from here starts past them;
    seconds taken. What the engine's processes spawn (vLLM's engine core, SGLang's scheduler and detokenizer)
    still starts from a fresh interpreter, as the engines start them."""
    import importlib

    t0 = time.time()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("VLLM_", "SGLANG_", "TRANSFORMERS_", "HF_"))})
    for name in PRELOAD[engine]:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a module missing here is imported (or fails) in the server as usual
            print(f"preload {name}: {type(e).__name__}: {e}", file=sys.stderr)
    # the plugins must still be loaded by the server itself, in its own environment (the engines load them once a process)
    flag = {"vllm": ("vllm.plugins", "plugins_loaded"), "sglang": ("sglang.srt.plugins", "_plugins_loaded")}[engine]
    if getattr(sys.modules.get(flag[0]), flag[1], False):
        raise SystemExit(f"--preload: importing {engine} loaded its plugins in the harness; run without --preload")
    return time.time() - t0


def forked(argv: list[str], env: dict, log: Path) -> int:
    """``python -m MODULE ARGS`` run in a child forked from this (preloaded) process: its own session, its
    output to ``log``, the environment and sys.path a fresh interpreter with ``env`` would have, and the
    module run as ``__main__`` by runpy as ``-m`` does (so processes it spawns re-import it by name, as
    they would). The child's pid."""
    assert argv[1] == "-m", argv
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the harness's own (main)
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.environ.clear()
        os.environ.update(env)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        ours = {str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")}  # what this script put first
        rest = [p for p in sys.path if p not in ours and p not in extra and p != os.getcwd()]
        sys.path[:] = [os.getcwd(), *extra, *rest]  # as ``python -m`` with PYTHONPATH=env's builds it
        import importlib

        importlib.invalidate_caches()
        import runpy

        sys.argv = [argv[2], *argv[3:]]
        try:
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class _Forked:
    """The little of ``subprocess.Popen`` ``Server`` uses, for a forked child."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self):
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        end = time.time() + (timeout or 1e9)
        while self.poll() is None:
            if time.time() > end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.2)
        return self.returncode


FORK = {"on": False}  # set by --preload: servers are forked from this process instead of started fresh


class Server:
    """An engine's server started by a command line (``autoparser serve`` or the engine's own), on loopback;
    stopped (its whole process group) on exit."""

    def __init__(self, argv: list[str], env: dict, log: Path, timeout: float):
        self.log = log
        self.started = time.time()
        if FORK["on"]:
            self.proc = _Forked(forked(argv, env, log))
        else:
            self.proc = subprocess.Popen(argv, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.port = int(argv[argv.index("--port") + 1])
        try:
            self.ready = self._wait(timeout)
        except BaseException:  # stopped while it starts (SIGTERM): the server goes too
            self.stop()
            raise
        self.start_seconds = round(time.time() - self.started, 1)

    def _wait(self, timeout: float) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        return False

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.log.read_text(errors="replace").splitlines() if line.startswith(prefix)]

    def tail(self, n=6) -> str:
        return " | ".join(self.log.read_text(errors="replace").splitlines()[-n:])[-600:]

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ------------------------------------------------------------------------------------------------ engines
ENGINE_ARGS = {
    # the stand-in model execution; the rest are sizes a CPU stand-in needs (no GPU memory to fit)
    "vllm": ["--distributed-executor-backend", "standin_vllm.StandInExecutor", "--max-model-len", "16384", "--enforce-eager",
             "--dtype", "float32", "--max-num-seqs", "4", "--host", "127.0.0.1"],
    # the stand-in scheduler comes in through SGLang's plugin loading (standin_plugin_dir); no warm-up request
    "sglang": ["--host", "127.0.0.1", "--device", "cpu", "--skip-server-warmup", "--context-length", "16384"],
}


def standin_plugin_dir(work: Path) -> Path:
    """A folder that, on PYTHONPATH, registers the stand-in scheduler as an SGLang general plugin (a
    dist-info with its entry point: how an installed package registers one)."""
    d = work / "standin-plugin"
    info = d / "serve_standin-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: serve-standin\nVersion: 0.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[sglang.srt.plugins]\nstandin = standin_sglang:plugin\n", encoding="utf-8")
    return d


def engine_env(engine: str, work: Path, scripts: Path) -> dict:
    env = dict(os.environ)
    env.update(STANDIN_SCRIPTS=str(scripts), AUTOPARSER_CACHE_DIR=str(work / "cache"), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    if engine == "vllm":
        env.update(VLLM_TARGET_DEVICE="cpu", VLLM_LOGGING_LEVEL=env.get("VLLM_LOGGING_LEVEL", "WARNING"))
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(standin_plugin_dir(work)), env["PYTHONPATH"]])
    for name in ("AUTOPARSER_HOOK", "VLLM_PLUGINS", "SGLANG_PLUGINS"):
        env.pop(name, None)
    return env


def serve_argv(engine: str, model: Path, port: int, extra=()) -> list[str]:
    return [sys.executable, "-m", "autoparser", "serve", engine, str(model), "--port", str(port), *ENGINE_ARGS[engine], *extra]


def ask(port: int, model: Path, case, seed: int, stream: bool, tools=True) -> tuple[str, dict | None]:
    """('ok' | why not, the message) for one case, one way."""
    msgs, _, mode = case.source
    body = {"model": str(model), "messages": copy.deepcopy(msgs), "seed": seed, "max_tokens": 2048, "temperature": 0, "stream": stream}
    if tools:
        body.update(tools=TOOLS, tool_choice="auto")
    if mode:
        body["chat_template_kwargs"] = dict(mode)
    status, got = post(port, body)
    for _ in range(3):
        unbound = re.search(r"'(\w+)' is undefined", got) if status == 400 and isinstance(got, str) else None
        if not (unbound and tools and not unbound.group(1).endswith("_token")):
            break
        # a template that reads variables of its own (firefunction's ``functions``, ``datetime``): its clients
        # pass them through the engine's chat_template_kwargs; bound as verify renders it (the tools' JSON text)
        body["chat_template_kwargs"] = {**body.get("chat_template_kwargs", {}), unbound.group(1): json.dumps(TOOLS)}
        status, got = post(port, body)
    if status != 200:
        return f"HTTP {status}: {got}", None
    msg = streamed_message(got) if stream else got["choices"][0]["message"]
    calls = got_calls(msg.get("tool_calls"))
    if isinstance(calls, str):
        return calls, msg
    want = expected_calls(case)
    if calls != want:
        return f"calls {calls!r:.160} != {want!r:.160}; content {(msg.get('content') or '')[:120]!r}", msg
    return "ok", msg


def run_template(engine: str, folder: str, path: Path, work: Path, args) -> dict:
    src = path.read_text(encoding="utf-8")
    got = call_cases(src)
    row = {"template": f"{folder}/{path.stem}", "cases": 0, "plain": 0, "streamed": 0}
    if isinstance(got, str):
        row["skipped"] = got
        return row
    _, cases = got
    cases = cases[: args.cases] if args.cases else cases
    model = model_dir(work, path.stem, src)
    try:  # the verdict the server's processes read from the cache (an infer there would repeat this one)
        from autoparser.cache import cached_entry

        cached_entry(src, TOKENS)
    except autoparser.AutoparserError:
        pass
    scripts = work / f"{path.stem}.scripts.json"
    scripts.write_text(json.dumps({str(1000 + k): c.generated for k, c in enumerate(cases)}), encoding="utf-8")
    port = free_port()
    with Server(serve_argv(engine, model, port), engine_env(engine, work, scripts), work / f"{path.stem}.log", args.start_timeout) as srv:
        said = srv.lines("autoparser serve:")
        row["line"] = said[0] if said else ""
        row["start_seconds"] = srv.start_seconds
        if not srv.ready:
            row["error"] = f"server did not start: {srv.tail()}"
            return row
        # the process that runs the model (vLLM's engine core, SGLang's scheduler) loaded the tokenizer too
        row["model_process"] = [line.partition("fields: ")[2] for line in srv.log.read_text(errors="replace").splitlines() if "tokenizer response_template fields:" in line]
        if not srv.ready:
            row["error"] = f"server did not start: {srv.tail()}"
            return row
        fails = []
        for k, c in enumerate(cases):
            row["cases"] += 1
            for stream in (False, True):
                why, _ = ask(port, model, c, 1000 + k, stream)
                if why == "ok":
                    row["streamed" if stream else "plain"] += 1
                else:
                    fails.append(f"{c.name} [{c.mode}{', history' if c.history else ''}] {'streamed' if stream else 'plain'}: {why}")
        row["fails"] = fails
    return row


# ------------------------------------------------------------------------------------------------ untouched / opt-in
QWEN = "Qwen-Qwen3-0.6B"


def shipped_check(engine: str, work: Path, args) -> dict:
    """A model that ships a response_template keeps it: the one we ship parses calls but has no reasoning
    field, so the reasoning the stand-in writes must stay in content, where the inferred one would take it out."""
    src = (FOLDERS["corpus"] / f"{QWEN}.jinja").read_text(encoding="utf-8")
    template, cases = call_cases(src)
    shipped = served(copy.deepcopy(template))  # a model ships what the engines accept (no join on text fields)
    shipped["fields"].pop("thinking", None)
    case = next(c for c in cases if c.name == "reasoning + call")
    model = model_dir(work, "shipped", src, shipped)
    scripts = work / "shipped.scripts.json"
    scripts.write_text(json.dumps({"7": case.generated}), encoding="utf-8")
    port = free_port()
    out = {"check": "model ships its own response_template"}
    with Server(serve_argv(engine, model, port), engine_env(engine, work, scripts), work / "shipped.log", args.start_timeout) as srv:
        out["line"] = (srv.lines("autoparser serve:") or [""])[0]
        if not srv.ready:
            out["ok"], out["why"] = False, f"server did not start: {srv.tail()}"
            return out
        why, msg = ask(srv.port, model, case, 7, False)
        kept = why == "ok" and "I need the weather tool." in (msg.get("content") or "") and not msg.get("reasoning_content") and not msg.get("reasoning")
        out["ok"] = kept and "ships its own response_template (kept)" in out["line"]
        out["why"] = "" if out["ok"] else f"{why}; message {json.dumps(msg)[:300]}"
    return out


def opt_in_checks(engine: str, work: Path, args) -> list[dict]:
    """The engine's own command (no ``autoparser serve``) with the parser flags that need a response_template:
    without an opt-in the plugin does nothing (the model has none, so the engine cannot parse calls); with
    ``AUTOPARSER_HOOK=1`` or the engine's allow-list naming autoparser it attaches one in every process."""
    src = (FOLDERS["corpus"] / f"{QWEN}.jinja").read_text(encoding="utf-8")
    _, cases = call_cases(src)
    case = next(c for c in cases if c.name == "one call" and not c.history)
    model = model_dir(work, "optin", src)
    scripts = work / "optin.scripts.json"
    scripts.write_text(json.dumps({"5": case.generated}), encoding="utf-8")
    out = []
    allow = {"vllm": "VLLM_PLUGINS", "sglang": "SGLANG_PLUGINS"}[engine]
    named = "autoparser" if engine == "vllm" else "standin,autoparser"  # SGLang's allow-list must name the stand-in too
    variants = [("no opt-in", {}, False), ("AUTOPARSER_HOOK=1", {"AUTOPARSER_HOOK": "1"}, True), (f"{allow}={named}", {allow: named}, True)]
    if engine == "sglang":  # an allow-list that names other plugins leaves ours off
        variants.append((f"{allow}=standin", {allow: "standin"}, False))
    for label, extra_env, want in variants:
        port = free_port()
        env = {**engine_env(engine, work, scripts), **extra_env}
        if engine == "vllm":
            argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(model), "--port", str(port), *ENGINE_ARGS[engine],
                    "--reasoning-parser", "hf", "--enable-auto-tool-choice", "--tool-call-parser", "hf"]
        else:
            argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(model), "--port", str(port), *ENGINE_ARGS[engine],
                    "--reasoning-parser", "response_template", "--tool-call-parser", "response_template"]
        with Server(argv, env, work / f"optin-{len(out)}.log", args.start_timeout) as srv:
            if srv.ready:
                why, _ = ask(port, model, case, 5, False)
                parsed = why == "ok"
            else:
                parsed, why = False, f"server did not start: {srv.tail(3)}"
        out.append({"check": f"plugin, {label}", "ok": parsed == want, "calls parsed": parsed, "why": why if parsed != want or not parsed else ""})
    return out


# ------------------------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["vllm", "sglang"], required=True)
    ap.add_argument("--summary", nargs="+", metavar="JSON", help="print the totals of earlier --json runs (merged) and stop")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--skip", nargs="*", default=[], help="templates (stems) not to run again")
    ap.add_argument("--cases", type=int, default=0, help="at most this many call cases per template (0: all)")
    ap.add_argument("--start-timeout", type=float, default=600)
    ap.add_argument("--no-extra", action="store_true", help="skip the shipped-template and plugin opt-in checks")
    ap.add_argument("--json", help="write the rows and checks here")
    ap.add_argument("--preload", action="store_true",
                    help="import the engine's main-process modules here once and fork each server from this process")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (model dirs, server logs)")
    args = ap.parse_args(argv)
    if args.summary:
        runs = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.summary]
        rows = {r["template"]: r for d in runs for r in d["rows"]}  # a template run again: the later file's row
        return summarize(args.engine, list(rows.values()), [c for d in runs for c in d["checks"]])

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops its server too (Server.__exit__)
    work = Path(tempfile.mkdtemp(prefix=f"serve-{args.engine}-"))
    os.environ["AUTOPARSER_CACHE_DIR"] = str(work / "cache")  # the servers' cache: primed here, read there
    rows, checks = [], []
    if args.preload:
        FORK["on"] = True
        print(f"preloaded {args.engine}'s main-process modules in {preload(args.engine, engine_env(args.engine, work, work / 'none.json')):.1f} s", flush=True)
    try:
        for folder, path in templates(args.only):
            if path.stem in args.skip:
                continue
            t0 = time.time()
            row = run_template(args.engine, folder, path, work, args)
            row["seconds"] = round(time.time() - t0, 1)
            rows.append(row)
            if args.json:
                Path(args.json).write_text(json.dumps({"rows": rows, "checks": checks}, indent=1, ensure_ascii=False), encoding="utf-8")
            if "skipped" in row:
                continue
            status = f"{row['plain']}/{row['cases']} plain, {row['streamed']}/{row['cases']} streamed"
            print(f"{row['template'][:56]:56} {row.get('error') or status}  ({row['seconds']:.0f} s)", flush=True)
            for f in row.get("fails", [])[:4]:
                print(f"    {f[:300]}", flush=True)
        if not args.no_extra:
            checks.append(shipped_check(args.engine, work, args))
            checks += opt_in_checks(args.engine, work, args)
    finally:
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": rows, "checks": checks}, indent=1, ensure_ascii=False), encoding="utf-8")
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder: {work}")
    return summarize(args.engine, rows, checks)


def refused_by_engine(row: dict) -> str:
    """Why the engine answered every request of a template with the same HTTP 400 (its own prompt
    rendering refusing the template, before any model or parser runs), or ''."""
    fails = row.get("fails") or []
    whys = {f.partition(": ")[2] for f in fails}
    if row.get("cases") and len(fails) == 2 * row["cases"] and len(whys) == 1 and next(iter(whys)).startswith("HTTP 400"):
        return next(iter(whys))
    return ""


def summarize(engine: str, rows: list, checks: list) -> int:
    """The totals (printed); 1 when anything failed."""
    served = [r for r in rows if "skipped" not in r]
    full = lambda key: sum(1 for r in served if r["cases"] and r[key] == r["cases"])  # noqa: E731
    seconds = sorted(r["seconds"] for r in served if "seconds" in r)
    print(f"\n== autoparser serve {engine} ({_version(engine)}), stand-in model execution ==")
    print(f"templates with verified tool calls: {len(served)} (of {len(rows)}; the rest: "
          f"{', '.join(sorted({r['skipped'].split(':')[0] for r in rows if 'skipped' in r}))})")
    attached = sum(1 for r in served if r.get("model_process") and all(f != "None" for f in r["model_process"]))
    print(f"the model process's tokenizer had the template (attached there by the plugin): {attached}/{len(served)}")
    print(f"every case's calls back, not streamed: {full('plain')}/{len(served)}; streamed: {full('streamed')}/{len(served)}; "
          f"cases: {sum(r['plain'] for r in served)}/{sum(r['cases'] for r in served)} not streamed, "
          f"{sum(r['streamed'] for r in served)}/{sum(r['cases'] for r in served)} streamed; "
          f"servers that did not start: {sum(1 for r in served if 'error' in r)}")
    if seconds:
        print(f"seconds a template (start-up, requests and our infer+verify): median {seconds[len(seconds) // 2]:.0f}, "
              f"max {seconds[-1]:.0f}, total {sum(seconds) / 60:.1f} min")
    failed = [r for r in served if "error" in r or r["plain"] < r["cases"] or r["streamed"] < r["cases"]]
    for r in failed:
        why = refused_by_engine(r)
        print(f"  not all back: {r['template']}: " + (f"the engine refused every request ({why[:200]})" if why else
              (r.get("error") or "; ".join(r.get("fails", [])[:2]))[:300]))
    for c in checks:
        print(f"{c['check']}: {'ok' if c['ok'] else 'FAILED'}" + (f" ({c['why'][:300]})" if c.get("why") else ""))
    return 1 if failed or any(not c["ok"] for c in checks) else 0


def _version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
