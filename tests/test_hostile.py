"""Hostile inputs: through the real CLI (one error line naming the input, non-zero exit, no traceback,
bounded time and memory, nothing half-written) and through the Python API.

The cases live in ``benchmarks/hostile.py`` so the table it prints is what these tests enforce. The CLI
runs happen once per session, two at a time, because each one pays the interpreter and transformers start.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import autoparser
from autoparser.analysis import probes, workarounds
from autoparser.render import Renderer, sandbox, watchdog
from autoparser.errors import SourceError, TemplateError, WorkaroundError
from autoparser.sources.hub import resolve

_spec = importlib.util.spec_from_file_location("hostile_cases", Path(__file__).resolve().parents[1] / "benchmarks" / "hostile.py")
hostile = importlib.util.module_from_spec(_spec)
sys.modules["hostile_cases"] = hostile  # dataclasses resolve annotations through sys.modules
_spec.loader.exec_module(hostile)

CASES = {c.name: c for c in hostile.CASES}
CLI_SECONDS = 15  # interpreter + transformers start (~1 s) + a 2 s render budget, with room for a busy CI box
API_SECONDS = 6
MAX_RSS_MB = 400  # the watchdog's limit is +512 MB; the guards keep every case far below it
ANCHORS = {"cfg-list-default": "<|im_start|>assistant\n", "cfg-list-tool-use": "<|s|>assistant\n", "cfg-list-alike": "<|im_start|>assistant\n",
           "cfg-list-no-default": "<|s|>assistant\n", "mb-comment": "<|im_start|>assistant\n"}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """Every case through ``python -m autoparser infer ... -o out.json``: name -> (Run, scratch dir)."""
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("the hostile CLI cases use /dev/zero and wait4")

    def one(case):
        d = tmp_path_factory.mktemp(case.name)
        return case.name, (hostile.run_case(case, d, timeout=CLI_SECONDS * 2), d)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, hostile.CASES))


@pytest.mark.parametrize("name", [c.name for c in hostile.CASES if c.expect is not None])
def test_cli_fails_with_one_clear_line(cli_runs, name):
    case, (run, d) = CASES[name], cli_runs[name]
    lines = run.stderr.splitlines()
    assert not run.timed_out and run.seconds < CLI_SECONDS, f"took {run.seconds:.1f} s"
    assert run.returncode == 2, run.stderr
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"autoparser: error: {case.where}") or lines[0].startswith("autoparser: error: ") and case.where in lines[0], lines[0]
    assert re.search(case.expect, lines[0]), lines[0]
    assert run.stdout == ""
    assert not (d / "out.json").exists() and not list(d.glob(".out.json*")), "a failed run left output behind"
    if run.max_rss_mb is not None:
        assert run.max_rss_mb < MAX_RSS_MB


@pytest.mark.parametrize("name", [c.name for c in hostile.CASES if c.expect is None])
def test_cli_succeeds_quietly(cli_runs, name):
    run, d = cli_runs[name]
    assert run.returncode == 0 and run.stderr == "", run.stderr  # no PyTorch banner, no warnings
    assert run.seconds < CLI_SECONDS
    assert json.loads((d / "out.json").read_text(encoding="utf-8"))["response_template"]["start_anchor"] == ANCHORS[name]  # -o writes a record


def test_cli_verify_subcommand_is_bounded(tmp_path):
    (tmp_path / "t.jinja").write_text(CASES["loop"].files["t.jinja"])
    run = hostile.run_cli(["verify", "t.jinja"], tmp_path, timeout=CLI_SECONDS * 2)
    assert run.returncode == 2 and run.seconds < CLI_SECONDS
    assert run.stderr.splitlines() == ["autoparser: error: t.jinja: template took longer than 2 s to render"]


def test_cli_unwritable_output_is_one_line(tmp_path):
    (tmp_path / "t.jinja").write_text(hostile.CHATML)
    (tmp_path / "out.json").mkdir()  # a directory where the file should go
    run = hostile.run_cli(["infer", "t.jinja", "-o", "out.json"], tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("autoparser: error: out.json: cannot write") and len(run.stderr.splitlines()) == 1


# -- the same inputs through the Python API --------------------------------------------------------------


def _text(case) -> str:
    content = case.files["t.jinja"]
    return content() if callable(content) else content


TEMPLATE_CASES = [c.name for c in hostile.CASES if c.args == ("t.jinja",) and c.expect is not None and not c.env
                  and isinstance(_text(c), str) and _text(c).strip() and len(_text(c)) <= sandbox.MAX_TEMPLATE]


@pytest.mark.parametrize("name", TEMPLATE_CASES)
def test_api_raises_clearly_and_in_time(name):
    case = CASES[name]
    start = time.monotonic()
    with pytest.raises((TemplateError, autoparser.AnalysisError)) as e:
        autoparser.infer_result(_text(case), where="t.jinja")
    assert time.monotonic() - start < API_SECONDS
    assert re.search(case.expect.replace(r" \| ", "\n").replace("…$", ""), str(e.value)) and str(e.value).startswith("t.jinja: ")


@pytest.mark.parametrize("name", ["empty", "too-large", "too-many-tags"])
def test_api_rejects_before_compiling(name):
    with pytest.raises(TemplateError, match=CASES[name].expect):
        Renderer(_text(CASES[name]), where="t.jinja")


@pytest.mark.parametrize("name", ["binary", "latin1", "utf16", "dev-zero", "cfg-number", "cfg-dict",
                                  "cfg-list-unknown", "cfg-list-malformed", "cfg-bad-json"])
def test_api_source_errors(tmp_path, name):
    case = CASES[name]
    hostile.materialize(case, tmp_path)
    arg = case.args[0] if case.args[0].startswith("/") else str(tmp_path / case.args[0])
    with pytest.raises(SourceError) as e:
        resolve(arg, name=case.args[2] if len(case.args) > 2 else None)
    assert re.search(case.expect, e.value.message) and case.where in e.value.where


def test_api_named_templates_work(tmp_path):
    hostile.materialize(CASES["cfg-list-default"], tmp_path)
    cfg = str(tmp_path / "tokenizer_config.json")
    assert (resolve(cfg, name="default").template, resolve(cfg, name="default").name) == (hostile.CHATML, "default")
    assert (resolve(cfg, name="tool_use").template, resolve(cfg, name="tool_use").name) == (hostile.TOOLS_CHATML, "tool_use")
    assert resolve(str(tmp_path), name="tool_use").template == hostile.TOOLS_CHATML  # the model directory too
    # no name: the template transformers renders requests with tools with, the default kept to check against
    src = resolve(cfg)
    assert (src.template, src.name, src.plain) == (hostile.TOOLS_CHATML, "tool_use", hostile.CHATML)


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON at line 1"),
    ('{"name": "x", "why": "y", "match": ["a"], "set": {"reasoning.end": 5}}', "'reasoning.end' must be a string"),
    ('{"name": "x", "why": "y", "match": ["a"], "set": {"reasoning": "x"}}', "'reasoning' is a group of fields"),
    ('{"name": "x", "why": "y", "match": ["a"], "set": {"turn.end_markers": "x"}}', "must be a list of strings"),
    ('{"name": "x", "why": "y", "match": ["a"], "when": {"tools.array_wrapped": "no"}, "set": {"reasoning.end": "e"}}', "must be true or false"),
    ("[]", "list of workarounds is empty"),
    ('[{"name": "x", "why": "y", "match": ["a"], "set": {"reasoning.end": "e"}}, 3]', "workaround 1: each workaround must be a JSON object"),
    (b"\xff{}", "not UTF-8"),
    ("[" * 100000, "nests too deeply|invalid JSON"),
])
def test_api_malformed_workaround_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    workarounds.load_dir.cache_clear()
    with pytest.raises(WorkaroundError) as e:
        autoparser.analyze(hostile.CHATML, workarounds_dir=str(tmp_path))
    assert str(e.value).startswith(str(path)) and re.search(message, str(e.value)) and "\n" not in str(e.value)


def test_workaround_names_are_unique(tmp_path):
    w = '{"name": "same", "why": "y", "match": ["a"], "set": {"reasoning.end": "e"}}'
    (tmp_path / "a.json").write_text(w)
    (tmp_path / "b.json").write_text(w)
    with pytest.raises(WorkaroundError, match="'same' is already used in a.json"):
        workarounds.load_dir(str(tmp_path))


def test_workaround_list_values_become_tuples_and_when_matches(tmp_path):
    (tmp_path / "w.json").write_text(json.dumps({
        "name": "ends", "why": "y", "match": ["<|im_start|>"],
        "when": {"turn.end_markers": ["<|im_end|>"]}, "set": {"turn.end_markers": ["<|im_end|>", "<|endoftext|>"]}}))
    a = autoparser.analyze(hostile.CHATML, workarounds_dir=str(tmp_path))
    assert a.workarounds == ("ends",) and a.turn.end_markers == ("<|im_end|>", "<|endoftext|>")


def test_workarounds_dir_from_environment(tmp_path, monkeypatch):
    (tmp_path / "bad.json").write_text("{")
    monkeypatch.setenv(workarounds.ENV_DIR, str(tmp_path))
    with pytest.raises(WorkaroundError, match="bad.json"):
        autoparser.analyze(hostile.CHATML)
    monkeypatch.setenv(workarounds.ENV_DIR, str(tmp_path / "nowhere"))
    with pytest.raises(WorkaroundError, match="does not exist"):
        workarounds.load_dir()
    monkeypatch.delenv(workarounds.ENV_DIR)
    assert isinstance(workarounds.load_dir(), tuple)  # back to the shipped directory


# -- the watchdog itself ------------------------------------------------------------------------------------


def test_budget_interrupts_a_busy_loop():
    start = time.monotonic()
    with pytest.raises(TemplateError, match="took longer than 0.3 s"):
        with watchdog.budget(0.3, "loop"):
            while True:
                pass
    assert time.monotonic() - start < 2


def test_budget_counts_work_not_waiting():
    """The budget is the thread's CPU time (a loaded machine does not make a template fail); waiting is
    still cut off at WALL_FACTOR times the budget."""
    with watchdog.budget(0.4, "sleeper"):
        time.sleep(0.5)  # over the budget in wall time (not over its cut-off, 0.6 s), nearly no CPU
    start = time.monotonic()
    with pytest.raises(TemplateError, match="took longer than 0.1 s"):
        with watchdog.budget(0.1, "waiter"):
            while True:
                time.sleep(0.01)
    assert 0.1 * watchdog.WALL_FACTOR - 0.05 < time.monotonic() - start < 2


def test_budget_does_not_count_garbage_collection():
    """A full collection of a large heap is the process's cost, not the template's (a CI run once failed
    a 20 ms render on its 2 s budget): here a collection made slow on purpose outlasts the budget."""

    finished = []

    def slow_collection(phase, info):
        if phase == "start":
            until = time.thread_time() + 0.4
            while time.thread_time() < until:
                pass
            finished.append(True)

    gc.callbacks.append(slow_collection)
    try:
        with watchdog.budget(0.2, "collector"):
            gc.collect()
    finally:
        gc.callbacks.remove(slow_collection)
    assert finished, "the budget fired inside the collection"
    with pytest.raises(TemplateError, match="took longer than 0.2 s"):  # and the budget still holds after it
        with watchdog.budget(0.2, "collector"):
            gc.collect()
            while True:
                pass


def test_budget_fires_again_when_its_exception_is_swallowed():
    """An exception raised inside a gc callback or ``__del__`` is printed and dropped; the watchdog keeps
    firing until the budget is left."""
    start = time.monotonic()
    with pytest.raises(TemplateError, match="took longer than 0.1 s"):
        with watchdog.budget(0.1, "swallower"):
            try:
                while True:
                    pass
            except watchdog.RenderTimeout:
                pass
            while True:
                pass
    assert time.monotonic() - start < 3


_STOP_IN_GC = """
import gc, sys, time
from autoparser.render import watchdog
from autoparser.errors import TemplateError
ran = []
def slow_young_collection(phase, info):  # young collections do not pause the budget (_on_collection)
    if phase == "start" and info.get("generation") == 0 and not ran:
        ran.append(time.monotonic())
        until = time.thread_time() + 1.0
        while time.thread_time() < until:
            pass
gc.callbacks.append(slow_young_collection)
start = time.monotonic()
try:
    with watchdog.budget(0.1, "collector"):
        gc.collect(0)
        back = time.monotonic()
        while True:
            pass
except TemplateError as e:
    print(e, round(back - start, 2), round(time.monotonic() - back, 2))
"""


def test_a_stop_inside_a_gc_callback_prints_nothing(tmp_path):
    """Python prints an exception raised inside a gc callback (or ``__del__``, a weakref callback) as
    "Exception ignored in: …" and drops it. When the watchdog's stop landed there, the CLI's one error line
    came second to that traceback (a test_hostile run under load). The stop is ours: it is dropped without a
    word, and the watchdog stops the work again at its next poll, not half a second later."""
    script = tmp_path / "stop_in_gc.py"
    script.write_text(_STOP_IN_GC)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         cwd=Path(autoparser.__file__).parent.parent)
    assert run.stderr == "", run.stderr
    said, in_collection, after = run.stdout.rsplit(maxsplit=2)
    assert said == "collector took longer than 0.1 s to render"  # the budget's own words
    assert float(in_collection) < 0.9, "the stop did not end the collection's callback"
    assert float(after) < 0.3, "the stop after the collection came late"


def test_budget_stops_memory_growth(monkeypatch):
    monkeypatch.setattr(watchdog, "MAX_GROWTH", 64 << 20)
    hoard = []
    with pytest.raises(TemplateError, match="more than 64 MB"):
        with watchdog.budget(30, "hoarder"):
            while True:
                hoard.append(bytearray(1 << 20))
    assert len(hoard) < 1024
    hoard.clear()


def test_lone_render_has_its_own_budget(monkeypatch):
    monkeypatch.setattr(watchdog, "TIME_BUDGET", 0.3)
    r = Renderer(_text(CASES["loop"]), where="t.jinja")
    start = time.monotonic()
    with pytest.raises(TemplateError, match="t.jinja: template took longer than 0.3 s"):
        r.render([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("src, message", [
    ("{{ '%2000000000d' % 1 }}", "field width"),
    ("{{ '%*d' % (2000000000, 1) }}", "field width"),
    ("{{ '{:>{}}'.format('a', 2000000000) }}", "field width"),
    ("{{ '{x:>2000000000}'.format_map({'x': 1}) }}", "field width"),
    ("{{ '%2000000000d'|format(1) }}", "field width"),
    ("{{ 'a'.zfill(2000000000) }}", "builds a value of"),
    ("{{ ('\t' * 1000000).expandtabs(1000000) }}", "builds a value of"),
    ("{% set s = 'a' * 1000000 %}{{ s.replace('a', s) }}", "builds a value of"),
    ("{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}", "builds a value of"),
    ("{% set s = 'a' * 1000000 %}{{ s.join([s] * 3) }}", "builds a sequence of"),
    ("{% set s = 'a' * 1000 %}{{ range(100000)|join(s) }}", "builds a joined string of"),
    ("{{ 'a\nb'|indent(2000000000) }}", "builds a value of"),
    ("{{ [1]|batch(2000000000, 'x')|list }}", "builds a value of"),
    ("{{ [1, 2]|tojson(indent=2000000000) }}", "builds a value of"),
    ("{{ (10 ** 20000) ** 64 }}", "integer over"),
    ("{% set s = 'a' * 600000 %}{{ s + s }}", "over 1048576 characters"),
    ("{% set s = 'a' * 1000000 %}{% set x %}{% for i in range(100) %}{{ s }}{% endfor %}{% endset %}{{ x|length }}", "renders over"),
    ("{% macro m(s) %}{% for i in range(100) %}{{ s }}{% endfor %}{% endmacro %}{{ m('a' * 1000000)|length }}", "renders over"),
    ("{% set s = 'a' * 1000000 %}{{ ([s] * 2)|string }}", "builds a sequence of"),
    ("{% set l = [] %}{% for i in range(60) %}{% set _ = l.extend(l + [1]) %}{% endfor %}", "collection|over 1048576"),
    ("{% set ns = namespace(a=[1], b=[1]) %}{% for i in range(80) %}{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}"
     "{% endfor %}{{ ns.a == ns.b }}", "over 1048576"),  # 2**80 comparisons in C, were the nesting allowed
    ("{% set ns = namespace(prev='ab') %}{% for i in range(30) %}{% set e = {} %}{% set _ = dict(e) %}"
     "{% set _ = dict.update(e, a=ns.prev, b=ns.prev) %}{% set ns.prev = e %}{% endfor %}{{ ns.prev }}", "collection of"),  # dict.update mutates unseen: 2**30 paths in str()
])
def test_single_c_level_operations_are_refused(src, message):
    """Each of these is one C call the watchdog could not interrupt: gigabytes or minutes if let through.
    Refused within the budget's wall cut-off (a loaded CI box runs the CLI cases alongside)."""
    start = time.monotonic()
    with pytest.raises(TemplateError, match=message):
        Renderer(src).render([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < watchdog.TIME_BUDGET * watchdog.WALL_FACTOR


CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "templates"
CONVERSATION = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi {x} <b>"},
                {"role": "assistant", "content": "ok", "reasoning_content": "hmm"}, {"role": "user", "content": "again"}]
ORDINARY = ("{{ bos_token }}{% set ns = namespace(t='') %}{% for m in messages %}{% set ns.t = ns.t ~ m.content %}"
            "{{ '<|' ~ m.role ~ '|>' }}{{ m.content|trim|replace('x', 'y') }}{{ '%s:%d' % ('n', loop.index) }}"
            "{{ '{:>4}'.format(loop.index) }}{{ m|tojson(indent=2) }}{{ ([m.content] * 2)|join(',') }}{{ [m] }}{% endfor %}"
            "{{ [[1], [2, 3]]|sum(start=[]) }}{{ 2 ** 10 }}{{ ns.t|length }}{{ 'a'.ljust(5) }}|{{ range(3)|join('-') }}")


def test_guards_render_as_transformers_does():
    """The guards only refuse; whatever renders renders exactly as transformers' own renderer does."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from autoparser.verify import VERIFY_TOOLS

    sources = [ORDINARY] + [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.jinja"))]
    compared = 0
    for src in sources:
        for tools in (None, VERIFY_TOOLS):
            kw = {"bos_token": "<s>", "eos_token": "</s>"}
            try:
                want = render_jinja_template([CONVERSATION], tools=tools, chat_template=src, add_generation_prompt=True, **kw)[0][0]
            except Exception:  # noqa: BLE001 - templates transformers cannot render (Kimi's list.append...)
                continue
            assert Renderer(src, kw, markup=True).render(CONVERSATION, tools=tools, add_generation_prompt=True) == want
            compared += 1
    assert compared >= 2


def test_a_template_that_mutates_its_inputs_changes_nothing_outside():
    """The mutable sandbox lets a template append to lists: it gets copies, so the probe tools every
    analysis shares (and whose weights are remembered) stay as they were, and later renders see them so."""

    before = json.dumps(probes.TOOLS)
    src = ("{% set _ = tools.append({'x': 'y' * 10}) %}{% set _ = tools[0]['function'].update({'name': 'hacked'}) %}"
           "{% set _ = messages.append(messages[0]) %}{{ tools | length }} {{ messages | length }}")
    r = Renderer(src)
    assert r.render([{"role": "user", "content": "hi"}], tools=probes.TOOLS) == "3 2" and r.mutable
    assert json.dumps(probes.TOOLS) == before
    assert Renderer("{{ tools | length }} {{ tools[0].function.name }}").render([], tools=probes.TOOLS) == "2 fn_alpha"


# -- templates that recurse through macros, on a loaded machine ---------------------------------------------

RECURSIVE = sorted((Path(__file__).resolve().parent / "data" / "hostile").glob("recursive-*.jinja"))
_PINNED_RENDER = """
import json, os, sys, time
from autoparser.render import Renderer
from autoparser.errors import TemplateError
os.sched_setaffinity(0, {int(sys.argv[1])})  # after the imports: only the renders share the busy CPU
out = {}
for path in sys.argv[2:]:
    start, said = time.monotonic(), "rendered"
    try:
        Renderer(open(path, encoding="utf-8").read()).render([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    except TemplateError as e:
        said = e.message
    out[os.path.basename(path)] = [time.monotonic() - start, said]
print(json.dumps(out))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="pins processes to one CPU (Linux)")
def test_recursive_macros_stop_within_twice_the_budget_under_load():
    """The budget the error states is kept within 2x in wall time however loaded the machine: each render
    shares its CPU with two busy loops (a third of a core). Before, the wall cut-off was 5x the budget
    (a template that recursed through macros was stopped after 7-16 s on a 2 s budget), and the young
    collections of a template building lists of lists moved the deadlines on as well."""
    import os
    import subprocess

    budget_s = 1.0
    cpu = sorted(os.sched_getaffinity(0))[-1]
    spin = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        env = {**os.environ, "AUTOPARSER_TIME_BUDGET": str(budget_s), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        run = subprocess.run([sys.executable, "-c", _PINNED_RENDER, str(cpu), *map(str, RECURSIVE)], capture_output=True, text=True,
                             env=env, timeout=120)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert set(got) == {p.name for p in RECURSIVE} and len(got) == 4
    for name, (seconds, said) in got.items():
        assert re.search(r"took longer than 1 s|recursed too deeply", said), (name, said)
        assert seconds < 2 * budget_s, f"{name}: stopped after {seconds:.2f} s on a {budget_s:g} s budget ({said})"
