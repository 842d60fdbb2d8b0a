"""Hostile inputs through the real CLI: what the user sees, the exit code, the time and the peak memory.

    python benchmarks/hostile.py            # prints a Markdown table

``CASES`` is also what ``tests/test_hostile.py`` enforces (one error line naming the input, a non-zero
exit, no traceback, bounded time and memory, no half-written ``-o`` file), so the table shows the tested
behaviour. Each case is a scratch directory of files plus the arguments given to ``autoparser infer``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "hostile"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOLS_CHATML = CHATML.replace("<|im_start|>", "<|s|>").replace("<|im_end|>", "<|e|>")
USER_ONLY = (
    "{% for m in messages %}{% if m.role == 'user' %}<|user|>{{ m.content }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

Content = Union[str, bytes, Callable[[], Union[str, bytes]]]


@dataclass(frozen=True)
class Case:
    name: str  # test id
    input: str  # the table's description of the input
    files: dict[str, Content]  # relative path -> text, bytes or a function making them (big files)
    args: tuple[str, ...] = ("t.jinja",)  # after ``autoparser infer``
    expect: str | None = ""  # regex the one stderr line must match (re.search); None: the run must succeed
    where: str = "t.jinja"  # the error line must name this
    env: dict[str, str] = field(default_factory=dict)


def _gguf_key(key: str, kind: int, value: bytes) -> bytes:
    """A GGUF v3 header holding one metadata key (type ``kind``, ``value`` already packed)."""
    return b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, len(key)) + key.encode() + struct.pack("<I", kind) + value


def _config(chat_template) -> str:
    return json.dumps({"chat_template": chat_template, "eos_token": "<|im_end|>"})


_NAMED = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": TOOLS_CHATML}]
# A tools template that writes the default's turns (and the tools in a system turn): its parser reads both.
_WITH_TOOLS = "{% if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif %}" + CHATML
_NAMED_ALIKE = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": _WITH_TOOLS}]
_BAD_WORKAROUND = '{"name": "x", "why": "y", "match": ["<|im_start|>"], "set": {"reasoning.end": 5}}'

CASES: list[Case] = [
    Case("syntax", "Jinja syntax error `{% if %}`", {"t.jinja": "{% if %}hi"}, expect="Jinja syntax error at line 1"),
    Case("empty", "empty file", {"t.jinja": ""}, expect="chat template is empty"),
    Case("binary", "binary file (NUL bytes)", {"t.jinja": bytes(range(256)) * 4}, expect="file is binary"),
    Case("latin1", "non-UTF-8 file (Latin-1)", {"t.jinja": "{{ 'caf\xe9' }}".encode("latin-1")}, expect="not UTF-8"),
    Case("utf16", "UTF-16 file", {"t.jinja": CHATML.encode("utf-16")}, expect="UTF-16"),
    Case("dev-zero", "`/dev/zero` (endless)", {}, ("/dev/zero",), expect="not a regular file", where="/dev/zero"),
    Case("cfg-number", "tokenizer_config.json, chat_template: 42", {"tokenizer_config.json": _config(42)},
         ("tokenizer_config.json",), expect="got int", where="tokenizer_config.json"),
    Case("cfg-dict", "tokenizer_config.json, chat_template: {…}", {"tokenizer_config.json": _config({"default": CHATML})},
         ("tokenizer_config.json",), expect="got dict", where="tokenizer_config.json"),
    Case("cfg-list-default", "named templates, --template default", {"tokenizer_config.json": _config(_NAMED)},
         ("tokenizer_config.json", "--template", "default"), expect=None),
    Case("cfg-list-alike", "named templates, no --template (tool_use, which reads default's replies too)",
         {"tokenizer_config.json": _config(_NAMED_ALIKE)}, ("tokenizer_config.json",), expect=None),
    Case("cfg-list-tool-use", "named templates, --template tool_use", {"tokenizer_config.json": _config(_NAMED)},
         ("tokenizer_config.json", "--template", "tool_use"), expect=None),
    Case("cfg-list-no-default", "named templates, none named default (tool_use, as transformers with tools)",
         {"tokenizer_config.json": _config(_NAMED[1:])}, ("tokenizer_config.json",), expect=None),
    Case("cfg-list-unknown", "named templates, --template nope", {"tokenizer_config.json": _config(_NAMED)},
         ("tokenizer_config.json", "--template", "nope"), expect="no chat template named 'nope'", where="tokenizer_config.json"),
    Case("cfg-list-malformed", "named templates, entry without template",
         {"tokenizer_config.json": _config([{"name": "default", "template": CHATML}, {"name": "x"}])},
         ("tokenizer_config.json",), expect="entry 1", where="tokenizer_config.json"),
    Case("cfg-bad-json", "tokenizer_config.json that is not JSON", {"tokenizer_config.json": '{"chat_template": '},
         ("tokenizer_config.json",), expect="invalid JSON", where="tokenizer_config.json"),
    Case("raise", "`{{ raise_exception('no') }}`", {"t.jinja": "{{ raise_exception('no') }}"}, expect="template raised: no"),
    Case("raise-multiline", "raise_exception with newlines, 5 kB", {"t.jinja": "{{ raise_exception('one\\ntwo ' ~ 'x' * 5000) }}"},
         expect=r"raised: one \| two x+…$"),
    Case("user-only", "renders only user messages", {"t.jinja": USER_ONLY}, expect="no assistant turn"),
    Case("loop", "nested `range(100000)` loops", {"t.jinja": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"},
         expect="took longer than"),
    Case("recursive-macro", "macro calling itself forever", {"t.jinja": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
         expect="recursed too deeply|took longer than"),  # whichever stops it first (a loaded machine: the budget)
    Case("exp-macro", "macro calling itself twice, 40 deep", {"t.jinja": "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}"},
         expect="took longer than"),
    # A chat template whose content macro recurses building lists of lists (tests/data/hostile, beside the
    # others there that tests/test_hostile.py renders next to busy loops: each stopped within twice the
    # budget the error states). One CLI run: each costs the interpreter's start as well.
    Case("recursive-big-lists", "chat template, macro recursing twice per level, building lists of lists",
         {"t.jinja": lambda: (FIXTURES / "recursive-big-lists.jinja").read_text(encoding="utf-8")}, expect="took longer than"),
    Case("ns-doubling", "namespace string doubled 60 times (`~`)",
         {"t.jinja": "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}"},
         expect="builds a string of"),
    Case("repeat", "`'a' * 10**9`", {"t.jinja": "{{ 'a' * 10**9 }}"}, expect="builds a sequence of"),
    Case("nested-print", "nested loops printing", {"t.jinja": "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}xxxxxxxx{% endfor %}{% endfor %}"},
         expect="renders over|took longer than"),
    Case("ljust", "`'a'.ljust(2 * 10**9)`", {"t.jinja": "{{ 'a'.ljust(2000000000) }}"}, expect="builds a value of"),
    Case("center-filter", "`'a'|center(2 * 10**9)`", {"t.jinja": "{{ 'a'|center(2000000000) }}"}, expect="builds a value of"),
    Case("format-width", "`'{:>2000000000}'.format('a')`", {"t.jinja": "{{ '{:>2000000000}'.format('a') }}"}, expect="field width"),
    Case("bigint", "integer squared 40 times", {"t.jinja": "{% set ns = namespace(n=10) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n % 7 }}"},
         expect="integer over"),
    Case("print-refs", "list of 1000 refs to a 1 MB string, printed",
         {"t.jinja": "{% set s = 'a' * 1000000 %}{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = ns.l + [s] %}{% endfor %}{{ ns.l }}"},
         expect="over 1048576 characters"),
    Case("mb-comment", "3 MB comment + valid template", {"t.jinja": lambda: "{# " + "lorem ipsum " * 250000 + " #}" + CHATML}, expect=None),
    Case("mb-output", "2 MB of literal text + valid template", {"t.jinja": lambda: "x" * 2000000 + CHATML}, expect="renders over"),
    Case("too-large", "5 MB template (limit 4 MB)", {"t.jinja": lambda: "x" * (5 << 20) + CHATML}, expect=r"\(limit 4194304\)"),
    Case("too-many-tags", "20 000 `{{ }}` tags", {"t.jinja": "{{ '' }}" * 20000 + CHATML}, expect=r"tags \(limit 10000\)"),
    Case("workaround-json", "workarounds/ file that is not JSON", {"t.jinja": CHATML, "wa/bad.json": "{"},
         expect="invalid JSON", where="bad.json", env={"AUTOPARSER_WORKAROUNDS_DIR": "wa"}),
    Case("workaround-type", "workarounds/ file setting a string field to 5", {"t.jinja": CHATML, "wa/bad.json": _BAD_WORKAROUND},
         expect="must be a string", where="bad.json", env={"AUTOPARSER_WORKAROUNDS_DIR": "wa"}),
    Case("workaround-dir", "AUTOPARSER_WORKAROUNDS_DIR that does not exist", {"t.jinja": CHATML},
         expect="does not exist", where="missing-dir", env={"AUTOPARSER_WORKAROUNDS_DIR": "missing-dir"}),
    Case("gguf-huge-array", "GGUF header declaring an array of 2^40 strings", {"m.gguf": _gguf_key("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 1 << 40))},
         ("m.gguf",), expect="array length of 1099511627776 is over the limit", where="m.gguf"),
    Case("gguf-truncated", "GGUF header cut inside its chat template", {"m.gguf": _gguf_key("tokenizer.chat_template", 8, struct.pack("<Q", 5000) + CHATML.encode())},
         ("m.gguf",), expect="ends inside its metadata", where="m.gguf"),
]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float | None  # peak resident memory of the child (None where wait4 is unavailable)
    timed_out: bool


def materialize(case: Case, directory: Path) -> None:
    for rel, content in case.files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content() if callable(content) else content
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 60.0) -> Run:
    """``python -m autoparser ARGS``, measured with ``wait4`` so peak memory is the child's own."""
    full_env = {**os.environ, **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "autoparser", *args], stdout=out, stderr=err, cwd=cwd, env=full_env)
        killed = threading.Event()
        timer = threading.Timer(timeout, lambda: (killed.set(), proc.kill()))
        timer.start()
        try:
            if hasattr(os, "wait4"):
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                rss = usage.ru_maxrss / 1024
            else:  # pragma: no cover - non-Unix
                proc.wait()
                rss = None
        finally:
            timer.cancel()
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), seconds, rss, killed.is_set())


def run_case(case: Case, directory: Path, timeout: float = 60.0) -> Run:
    materialize(case, directory)
    return run_cli(["infer", *case.args, "-o", "out.json"], directory, case.env, timeout)


def main() -> int:
    print("| input | what the user sees (stderr) | exit | time | peak RSS |")
    print("|---|---|---|---|---|")
    for case in CASES:
        with tempfile.TemporaryDirectory() as d:
            r = run_case(case, Path(d))
        seen = r.stderr.strip().replace("|", "\\|") or ("(nothing; JSON written to out.json)" if r.returncode == 0 else "")
        rss = f"{r.max_rss_mb:.0f} MB" if r.max_rss_mb is not None else "?"
        print(f"| {case.input.replace('|', chr(92) + '|')} | `{seen}` | {r.returncode}{' (killed)' if r.timed_out else ''} | {r.seconds:.2f} s | {rss} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
