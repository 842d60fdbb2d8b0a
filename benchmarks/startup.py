"""How long the command line takes before it does any work, and how long a Hub that cannot be reached costs.

    python benchmarks/startup.py [--runs 5] [--sections startup,hub]

startup  wall time of ``python -m autoparser --help``, ``--version`` and a usage error, next to
         ``python -c pass`` (the interpreter alone) and ``python -c "import transformers"`` (what every
         command paid before transformers was imported only where needed); target: --help < 0.5 s.
hub      ``infer`` of a Hub id whose files are in the HF cache, and of one that is not, with ``HF_ENDPOINT`` at
         an endpoint that refuses connections and at one that accepts them and never answers (no network is
         used: the cache is filled from a local stand-in Hub first); the same template from a local model
         directory for reference, and ``resolve`` alone. Targets: cached < 2 s more than the local directory
         (resolve alone < 2 s), uncached: one line on stderr within 10 s. The line is printed.

Medians of ``--runs`` whole-process runs (wall clock: the load average is printed first).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _time(cmd: list[str], runs: int, env: dict | None = None, cwd: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Median wall seconds of ``runs`` runs (after one warm-up) and the last run's result."""
    subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    times, last = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        last = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), last


def startup(runs: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = [("python -c pass", [sys.executable, "-c", "pass"]),
            ("python -c 'import transformers'", [sys.executable, "-c", "import transformers"]),
            ("autoparser --help", [sys.executable, "-m", "autoparser", "--help"]),
            ("autoparser --version", [sys.executable, "-m", "autoparser", "--version"]),
            ("autoparser infer (usage error)", [sys.executable, "-m", "autoparser", "infer"]),
            ("autoparser batch --help", [sys.executable, "-m", "autoparser", "batch", "--help"])]
    print(f"{'command':<36} {'median s':>9}  exit")
    for name, cmd in rows:
        t, r = _time(cmd, runs, env)
        print(f"{name:<36} {t:>9.3f}  {r.returncode}")


def _closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def hub(runs: int) -> None:
    from conftest import CORPUS, FakeHub

    path = CORPUS / "templates" / "Qwen-Qwen3-0.6B.jinja"
    template = path.read_text(encoding="utf-8") if path.is_file() else (ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8")
    config = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HTTP", "http", "ALL_PROXY", "all_proxy"))}
        base.update(PYTHONPATH=str(ROOT), HF_HOME=str(tmp / "hf"), AUTOPARSER_CACHE_DIR=str(tmp / "ap"), NO_PROXY="127.0.0.1,localhost",
                    HF_HUB_DISABLE_TELEMETRY="1")
        fake = FakeHub()
        fake.add("Qwen/Qwen3-0.6B", {"chat_template.jinja": template, "tokenizer_config.json": config})
        fill = subprocess.run([sys.executable, "-m", "autoparser", "infer", "Qwen/Qwen3-0.6B"], capture_output=True, text=True,
                              env=dict(base, HF_ENDPOINT=fake.url))
        fake.stop()
        if fill.returncode:
            sys.exit(f"could not fill the cache: {fill.stderr}")
        local = tmp / "local-model"
        local.mkdir()
        (local / "chat_template.jinja").write_text(template, encoding="utf-8")
        (local / "tokenizer_config.json").write_text(__import__("json").dumps(config), encoding="utf-8")
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        endpoints = {"refused": _closed_port(), "silent": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        infer = [sys.executable, "-m", "autoparser", "infer"]
        t, _ = _time(infer + [str(local)], runs, base)
        print(f"{'case':<44} {'median s':>9}  exit  stderr lines (besides warnings)")
        print(f"{'infer local model directory (reference)':<44} {t:>9.3f}")
        resolve = [sys.executable, "-c", "from autoparser.sources.hub import resolve; resolve('Qwen/Qwen3-0.6B')"]
        lines = {}
        for kind, url in endpoints.items():
            env = dict(base, HF_ENDPOINT=url)
            for name, cmd in ((f"resolve cached, Hub {kind}", resolve), (f"infer cached, Hub {kind}", infer + ["Qwen/Qwen3-0.6B"]),
                              (f"infer not cached, Hub {kind}", infer + ["Qwen/Qwen3-1.7B"])):
                t, r = _time(cmd, runs, env)
                said = [line for line in r.stderr.splitlines() if line.strip() and "PyTorch" not in line and not line.startswith("warning:")]
                print(f"{name:<44} {t:>9.3f}  {r.returncode:>4}  {len(said)}")
                lines.update({kind + (" cached" if "not" not in name else " not cached"): said})
        silent.close()
        for kind, said in lines.items():
            for line in said:
                print(f"  {kind}: {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per command (median reported), after one warm-up")
    ap.add_argument("--sections", default="startup,hub", help="comma-separated: startup, hub")
    args = ap.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    sections = args.sections.split(",")
    if "startup" in sections:
        startup(args.runs)
    if "hub" in sections:
        hub(args.runs)


if __name__ == "__main__":
    main()
