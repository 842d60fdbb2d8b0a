"""Speed of inference, parsing and the tokenizer-load hook on the corpus templates (issue 6).

    python benchmarks/bench.py [--repeats N] [--only SUBSTR ...] [--sections infer,stages,parse,hook,grammar,batch] [-v]

Prints these tables:
  infer  per template: cold (template never compiled in this process, no result cached), analysis (the
         same after the one-time compile), warm (result cache hit in memory, and on disk with the memory
         level cleared), cold infer + verify (what ``infer`` costs: every verification stage); medians of
         ``--repeats`` runs, with corpus medians and totals. ``jinja2`` times transformers' own compile of
         the same sources (what any consumer of the template pays once) in the same run: cold infer +
         verify has its target as a ratio to it (<= 2x, median and corpus total), which a loaded or slower
         machine moves far less than either time.
  stages (only when asked) CPU time of each stage of cold infer + verify over the corpus: the sandbox's
         compile, the analysis, verification, and within it the round trip's renders, one-shot and streamed
         parses and the realistic-output stage.
  parse  per emitted template, on the template's own rendering of a long turn (50 KB of reasoning and
         content) and of 100 tool calls: throughput of ``parse_response`` and of a streaming
         ``ResponseParser`` fed in 1-4 character chunks; for the model families that transformers ships
         a hand-written template for (``_RESPONSE_TEMPLATE_FALLBACKS``), the same text parsed with that
         template and the ratio (hand-written time / emitted time: >= 1 means ours is as fast);
  hold   the most characters the streaming parser held back at any point, next to the template's
         longest delimiter (literal, or the longest text a delimiter pattern matched);
  hook   ``AutoTokenizer.from_pretrained`` of a small local tokenizer without the hook, with it on an
         empty cache, and with a warm cache (memory, disk); plus ``attach`` alone.
  batch  throughput of ``autoparser batch``'s analysis (infer + verify of each distinct template) over
         corpus + wild in its worker pool (``--workers``, default 2): templates per second, the pool's
         start-up (a worker imports transformers) counted apart.

Timings are wall clock on whatever else the machine is doing: the load average is printed first.
Cold runs are in-process (imports and regex caches stay warm); tests never assert timings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autoparser import batch, cache, hook, pipeline  # noqa: E402
from autoparser.analysis import diff, reads  # noqa: E402
from autoparser.emit import template as emit_template  # noqa: E402
from autoparser.render import Renderer, budget, sandbox  # noqa: E402
from autoparser.verify import realistic  # noqa: E402
from autoparser.verify import roundtrip as verify_mod  # noqa: E402
from autoparser.errors import AutoparserError  # noqa: E402
from autoparser.analysis.probes import Prober, assistant  # noqa: E402
from autoparser.verify.parsing import chunks  # noqa: E402
from autoparser.verify.roundtrip import VERIFY_TOOLS, _generation  # noqa: E402

CORPUS = Path(os.environ.get("AUTOPARSER_CORPUS", "/work/shared/corpus/templates"))
WILD = Path(os.environ.get("AUTOPARSER_WILD", str(CORPUS.parent / "wild" / "templates")))
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
# Which transformers fallback a corpus template's model would get (its config's model_type).
FAMILY = {
    "Qwen-Qwen2.5-7B-Instruct": "qwen2",
    "Qwen-QwQ-32B": "qwen2",
    "Qwen-Qwen3-0.6B": "qwen3",
    "Qwen3.5-4B": "qwen3_5",
    "google-gemma-4-31B-it": "gemma4",
    "google-gemma-4-31B-it-interleaved": "gemma4",
}


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f}"


CLOCK = time.perf_counter  # --clock cpu: this process's CPU time (its threads' too), for a shared machine


def median_time(fn, repeats: int, setup=None) -> float:
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return statistics.median(times)


PAIRED = 11  # alternating pairs of runs behind a ratio


def paired_ratio(fa, fb, repeats: int) -> tuple[float, float]:
    """(median over pairs of time(fb) / time(fa), best time of fb), the two run back to
    back ``repeats`` times. A ratio of two medians taken minutes apart on a shared machine moves by
    10-20%, and one of two bests by 5-10% (a hand-written template against a copy of itself measured
    0.89-1.03); a pair's two runs share the machine's state, so the median of pair ratios held that
    copy within 1.00 +- 0.03."""
    ta, tb = [], []
    for _ in range(repeats):
        for f, ts in ((fa, ta), (fb, tb)):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
    return statistics.median(b / a for a, b in zip(ta, tb)), min(tb)


def corpus(only: list[str]) -> list[tuple[str, str]]:
    files = sorted(glob.glob(str(CORPUS / "*.jinja")))
    out = [(Path(f).stem, Path(f).read_text(encoding="utf-8")) for f in files]
    return [(n, s) for n, s in out if not only or any(o in n for o in only)]


# -- 1. infer ---------------------------------------------------------------------------------------------


def forget_all() -> None:
    """Everything a previous run left in this process: compiled and parsed templates (the parse tree goes
    with the compile), remembered results, verify's probers (their renders, cases and parses), the realistic
    stage's marker patterns, and the marker scans of rendered texts."""
    sandbox._compiled_cached.cache_clear()
    sandbox._TREES.clear()
    sandbox._CONSTANT_JSON.clear()  # the probe tools' serialisations
    for env in (sandbox._ImmutableEnv, sandbox._MutableEnv):
        env._safe_attrs.clear()  # the sandbox's verdicts on builtin types' attributes
    reads._parsed.cache_clear()
    reads.prompt_only_names.cache_clear()
    reads._reasoning_switches.cache_clear()
    reads.context_reads.cache_clear()
    reads._switch_constants.cache_clear()
    emit_template._LOADED.clear()  # emitted templates' compiled forms
    pipeline.forget()  # the in-process memo would answer a repeat
    verify_mod._PROBERS.clear()
    realistic._patterns.cache_clear()  # the realistic stage's marker patterns
    for name in ("_marker_spans", "_cuts", "_cuts_from"):
        f = getattr(diff, name, None)
        if f is not None:
            f.cache_clear()


def bench_infer(templates, repeats: int, verbose: bool) -> dict:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    tmp = Path(tempfile.mkdtemp(prefix="autoparser-bench-"))
    os.environ["AUTOPARSER_CACHE_DIR"] = str(tmp)
    rows, failed = [], []
    print(f"\n== infer (ms, median of {repeats}) ==")
    print(f"{'template':44} {'cold':>8} {'analysis':>8} {'warm mem':>8} {'warm disk':>9} {'jinja2':>8} {'+verify':>8}  renders")
    for name, src in templates:
        def cold(verify=False):
            forget_all()
            pipeline.infer_result(src, TOKENS, verify=verify)

        try:
            t_cold = median_time(cold, repeats)
            t_analysis = median_time(lambda: pipeline.infer_result(src, TOKENS, verify=False), repeats, setup=pipeline.forget)
            t_verified = median_time(lambda: cold(verify=True), repeats)
        except AutoparserError as e:
            failed.append((name, e.message))
            continue
        cache.clear_memory()
        cache.cached_infer(src, TOKENS)  # stores the entry (memory and disk)
        t_mem = median_time(lambda: cache.cached_infer(src, TOKENS), max(repeats, 20))
        t_disk = median_time(lambda: cache.cached_infer(src, TOKENS), max(repeats, 20), setup=cache.clear_memory)
        t_jinja = median_time(lambda: _compile_jinja_template.__wrapped__(src), repeats)
        if verbose:
            print(f"{'':44} cold + verify / jinja2 = {t_verified / t_jinja:.2f}")
        renders = next((m.group(1) for line in pipeline.analyze(src, TOKENS).log if (m := regex.match(r"(\d+) renders", line))), "")
        rows.append((name, t_cold, t_analysis, t_mem, t_disk, t_jinja, t_verified))
        print(f"{name[:44]:44} {ms(t_cold)} {ms(t_analysis)} {ms(t_mem)} {ms(t_disk):>9} {ms(t_jinja)} {ms(t_verified)}  {renders}")
    shutil.rmtree(tmp, ignore_errors=True)
    cache.clear_memory()
    for name, why in failed:
        print(f"{name[:44]:44} failed: {why[:90]}")
    cols = list(zip(*[r[1:] for r in rows])) if rows else [[0.0]] * 6
    med = [statistics.median(c) for c in cols]
    tot = [sum(c) for c in cols]
    print(f"{'median':44} " + " ".join(ms(v) if i != 3 else f"{ms(v):>9}" for i, v in enumerate(med)))
    print(f"{'total':44} " + " ".join(ms(v) if i != 3 else f"{ms(v):>9}" for i, v in enumerate(tot)))
    return {"cold_median": med[0], "cold_total": tot[0], "analysis_median": med[1], "warm_mem_median": med[2],
            "warm_disk_median": med[3], "jinja_median": med[4], "jinja_total": tot[4], "verified_median": med[5],
            "verified_total": tot[5], "n": len(rows)}


# -- 1b. where cold infer + verify spends its time ------------------------------------------------------------

# (module, attribute, label): each stage's CPU time, counted once however deep it nests in itself.
STAGES = (
    ("autoparser.render.sandbox", "_compiled_cached", "compile (the sandbox's jinja2 compile)"),
    ("autoparser.pipeline", "_analyze", "analysis, compile included"),
    ("autoparser.pipeline", "settle", "verification, every stage"),
    ("autoparser.verify.roundtrip", "_cases", "  round trip: cases (renders of probe conversations)"),
    ("autoparser.verify.parsing._Parsing", "one_shot", "  parse one-shot (round trip and realistic)"),
    ("autoparser.verify.parsing._Parsing", "streamed", "  parse streamed (round trip)"),
    ("autoparser.verify.realistic", "check", "  realistic-output stage (its parses included)"),
)


def bench_stages(templates, repeats: int) -> dict:
    """CPU time per stage of cold infer + verify over the templates (``forget_all`` before each), from
    wrappers around the stage functions, median of ``repeats`` passes. Wrapping adds a few microseconds
    a call; the totals are what to compare, not the last digit."""
    import importlib

    acc: dict[str, float] = {}
    active: list[str] = []
    saved = []
    for mod_name, attr, label in STAGES:
        owner_name, _, cls = mod_name.partition(".verify.parsing._")
        owner = importlib.import_module(mod_name) if not cls else getattr(importlib.import_module(owner_name + ".verify.parsing"), "_" + cls)
        f = getattr(owner, attr)

        def timed(*a, _f=f, _label=label, **k):
            t = time.process_time()
            active.append(_label)
            try:
                return _f(*a, **k)
            finally:
                active.pop()
                if _label not in active:
                    acc[_label] = acc.get(_label, 0.0) + time.process_time() - t

        if hasattr(f, "cache_clear"):
            timed.cache_clear = f.cache_clear
        saved.append((owner, attr, f))
        setattr(owner, attr, timed)
    runs = []
    try:
        for _ in range(repeats):
            acc.clear()
            t = time.process_time()
            for _name, src in templates:
                forget_all()
                try:
                    pipeline.infer_result(src, TOKENS, verify=True)
                except AutoparserError:
                    pass
            runs.append((time.process_time() - t, dict(acc)))
    finally:
        for owner, attr, f in saved:
            setattr(owner, attr, f)
    total, stages = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    print(f"\n== where cold infer + verify goes (CPU s over {len(templates)} templates, the median of {repeats} passes) ==")
    print(f"{'all of it':58} {total:7.3f}")
    for _m, _a, label in STAGES:
        print(f"{label:58} {stages.get(label, 0.0):7.3f}   {stages.get(label, 0.0) / max(len(templates), 1) * 1e3:6.2f} ms/template")
    return {"total": total, **stages}


# -- 2./3. parse throughput and hold-back ------------------------------------------------------------------

WORDS = ("the model considers each step carefully, checks the arithmetic (2 + 2 = 4) and writes code such as "
         "print({'a': [1, 2]}) before moving on; results: 95% done, 'quoted' and \"double quoted\" text.\n")


def filler(n: int, seed: str) -> str:
    text, i, total = [], 0, 0
    while total < n:
        piece = f"{seed} {i}: {WORDS}"
        text.append(piece)
        total += len(piece)
        i += 1
    return "".join(text)[:n]


def many_calls(n: int) -> list[dict]:
    """``n`` tool calls alternating between the verify tools, with ids."""
    calls = []
    for i in range(n):
        if i % 2:
            args = {"query": f"select * from t where id = {i}", "limit": i, "tags": ["a", f"t{i}"]}
            calls.append({"id": f"call{i:05d}", "type": "function", "function": {"name": "run_query", "arguments": args}})
        else:
            args = {"city": f"City {i}", "days": i % 7, "metric": bool(i % 3)}
            calls.append({"id": f"call{i:05d}", "type": "function", "function": {"name": "get_weather", "arguments": args}})
    return calls


def long_messages() -> dict[str, dict]:
    calls = many_calls(100)
    return {
        "50KB text": assistant(filler(25_000, "Answer"), reasoning=filler(25_000, "Thought")),
        "100 calls": assistant(None, calls=calls),
    }


def generation_for(src: str, result, m: dict):
    """(prompt, text) of the template's own rendering of ``m``: the mode that renders the most of it."""
    pr = Prober(Renderer(src, TOKENS))
    best = None
    with budget(60.0, "benchmark rendering"):
        for mode in pr.modes:
            g = _generation(pr, result.analysis, [{"role": "user", "content": "Go."}], m, mode)
            if g is not None and (best is None or len(g[1]) > len(best[1])):
                best = g
    return best


def delimiters(template: dict, text: str) -> int:
    """The longest delimiter: literal opens/closes, or the longest text a delimiter pattern matches in ``text``."""
    longest = 0
    for f in template.get("fields", {}).values():
        for key in ("open", "close"):
            v = f.get(key)
            for lit in ([v] if isinstance(v, str) else v or []):
                longest = max(longest, len(lit))
            pat = f.get(f"{key}_pattern")
            if pat:
                longest = max([longest] + [len(m.group(0)) for m in regex.finditer(pat, text)])
    return longest


def one_shot(template, prompt, text):
    from transformers.utils.chat_parsing import parse_response

    return parse_response(text, template, prefix=prompt, tools=VERIFY_TOOLS)


def streamed(template, prompt, text) -> tuple[dict, int]:
    """The streamed message and the most characters held back after any feed (buffer not yet emitted)."""
    from transformers.utils.chat_parsing import ResponseParser

    p = ResponseParser(template, prefix=prompt, tools=VERIFY_TOOLS)
    held = 0
    for piece in chunks(text):
        p.feed(piece)
        held = max(held, len(p._buffer) - p._pos)
    msg, _ = p.finalize()
    return msg, held


def normal(msg: dict) -> dict:
    """Field names differ (the fallbacks use ``reasoning_content``); compare the rest."""
    out = dict(msg)
    if "reasoning_content" in out:
        out["thinking"] = out.pop("reasoning_content")
    return out


def bench_parse(templates, repeats: int, verbose: bool) -> dict:
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    fallbacks = {t: spec for types, spec in _RESPONSE_TEMPLATE_FALLBACKS.items() for t in types}
    print(f"\n== parse (MB/s, median of {repeats}; next to a hand-written template, the best of {PAIRED} "
          f"alternating runs; ratio = hand-written time / emitted time, median of the {PAIRED} pairs; a/a = the "
          f"same for the hand-written template against a copy of itself: the noise) ==")
    print(f"{'template':40} {'text':9} {'KB':>5} {'one-shot':>8} {'stream':>7} {'hand 1s':>7} {'hand st':>7} "
          f"{'ratio 1s':>8} {'ratio st':>8} {'a/a 1s':>6} {'a/a st':>6} {'held':>5} {'delim':>5}")
    msgs = long_messages()
    ratios, noise, holds, over, by_design = [], [], [], [], []
    for name, src in templates:
        try:
            res = pipeline.infer_result(src, TOKENS)
        except AutoparserError:
            continue
        template = res.template
        hand = fallbacks.get(FAMILY.get(name, ""))
        gens = {}
        for label, m in msgs.items():
            try:
                g = generation_for(src, res, m)
            except AutoparserError:
                g = None
            if g is not None and len(g[1]) >= 1000:  # shorter: the template does not render this message
                gens[label] = g
        # A pattern delimiter is as long as the longest text it matches in either rendering.
        longest = max((delimiters(template, g[1]) for g in gens.values()), default=0)
        for label, (prompt, text, _how) in gens.items():
            kb = len(text) / 1e3
            t1 = median_time(lambda: one_shot(template, prompt, text), repeats)
            ts = median_time(lambda: streamed(template, prompt, text), repeats)
            ours, held = streamed(template, prompt, text)
            holds.append(held)
            if held > longest:
                # Reasoning with only an end marker holds the stream until that marker decides what the
                # text is (the emitter warns so); the format cannot reclassify text already streamed.
                if any("held back until" in w for w in res.warnings):
                    by_design.append(f"{name} ({label}): {held} > {longest}, reasoning has only an end marker")
                else:
                    over.append(f"{name} ({label}): {held} > {longest}")
            line = f"{name[:40]:40} {label:9} {kb:5.0f} {kb / 1e3 / t1:8.2f} {kb / 1e3 / ts:7.2f}"
            if hand is not None:
                copy = json.loads(json.dumps(hand))  # an equal template that shares no object with it
                r1, h1 = paired_ratio(lambda: one_shot(template, prompt, text), lambda: one_shot(hand, prompt, text), PAIRED)
                rs, hs = paired_ratio(lambda: streamed(template, prompt, text), lambda: streamed(hand, prompt, text), PAIRED)
                a1 = paired_ratio(lambda: one_shot(copy, prompt, text), lambda: one_shot(hand, prompt, text), PAIRED)[0]
                as_ = paired_ratio(lambda: streamed(copy, prompt, text), lambda: streamed(hand, prompt, text), PAIRED)[0]
                theirs, hheld = streamed(hand, prompt, text)
                same = "" if normal(theirs) == normal(ours) else "  (parses differ)"
                ratios.append((r1, rs))
                noise += [a1, as_]
                line += f" {kb / 1e3 / h1:7.2f} {kb / 1e3 / hs:7.2f} {r1:8.2f} {rs:8.2f} {a1:6.2f} {as_:6.2f}"
                line += f" {held:5d} {longest:5d}  hand-written held {hheld}{same}"
            else:
                line += f" {'':7} {'':7} {'':8} {'':8} {'':6} {'':6} {held:5d} {longest:5d}"
            print(line)
    if ratios:
        print(f"{'ratio (min over hand-written families)':40} one-shot {min(r[0] for r in ratios):.2f}, "
              f"stream {min(r[1] for r in ratios):.2f}; median {statistics.median(r[0] for r in ratios):.2f} / "
              f"{statistics.median(r[1] for r in ratios):.2f}; a/a (noise) {min(noise):.2f}-{max(noise):.2f}")
    print(f"hold-back: max {max(holds) if holds else 0} characters; over the longest delimiter: {len(over)}")
    for o in over:
        print(f"  {o}")
    for o in by_design:
        print(f"  by design: {o}")
    return {"ratio_min": min((min(r) for r in ratios), default=None), "noise_min": min(noise, default=None),
            "held_over": len(over)}


# -- 4. batch throughput -----------------------------------------------------------------------------------


def _started(seconds: float) -> int:
    """A worker's first task: the imports every template's analysis needs, then a pause, so that each
    worker of the pool gets one."""
    from autoparser import pipeline  # noqa: F401
    from transformers.utils.chat_parsing import parse_response  # noqa: F401

    time.sleep(seconds)
    return os.getpid()


def bench_batch(templates, workers: int, only: bool) -> dict:
    """``autoparser batch``'s analysis (``batch.analyse``: infer + verify, never raising) of every corpus
    template (with the tokens the tests give) and every wild one (without; skipped with ``--only``) in
    batch's own process pool."""
    jobs = [(name, src, TOKENS) for name, src in templates]
    if not only:
        jobs += [(Path(f).stem, Path(f).read_text(encoding="utf-8"), {}) for f in sorted(glob.glob(str(WILD / "*.jinja")))]
    print(f"\n== batch: {len(jobs)} templates, {workers} worker processes ==")
    t0 = time.perf_counter()
    pool = batch._new_pool(workers)
    try:
        pids: set[int] = set()
        for _ in range(10):  # until every worker has started (they import transformers, seconds each)
            pids |= set(pool.map(_started, [0.5] * workers))
            if len(pids) >= workers:
                break
        t1 = time.perf_counter()
        futures = [pool.submit(batch.analyse, src, tokens, name, True, "thinking") for name, src, tokens in jobs]
        results = [f.result() for f in futures]
        t2 = time.perf_counter()
    finally:
        pool.shutdown()
    verdicts: dict[str, int] = {}
    for r in results:
        v = (r.get("verdict") or {}).get("status") or ("error" if not r.get("ok") else "unverified")
        verdicts[v] = verdicts.get(v, 0) + 1
    n, busy = len(jobs), t2 - t1
    startup = t1 - t0  # up to the warm-up tasks' pauses (0.5 s a round) more than the pool needed
    print(f"pool start-up ({len(pids)} workers up): {startup:.2f} s; {n} templates in {busy:.2f} s: {n / busy:.1f} templates/s "
          f"({n / (busy + startup):.1f}/s with start-up); verdicts {verdicts}")
    return {"workers": workers, "n": n, "seconds": busy, "startup": startup, "per_second": n / busy,
            "per_second_startup": n / (busy + startup), "verdicts": verdicts}


# -- 5. the tokenizer-load hook ---------------------------------------------------------------------------


def tiny_tokenizer(path: Path, chat_template: str) -> None:
    """A real fast tokenizer (WordLevel over a tiny vocabulary), the one tests/test_hook.py builds."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import make_tokenizer

    make_tokenizer(chat_template).save_pretrained(path)


def bench_hook(repeats: int) -> dict:
    from transformers import AutoTokenizer

    src = (CORPUS / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    tmp = Path(tempfile.mkdtemp(prefix="autoparser-bench-"))
    path = tmp / "tok"
    tiny_tokenizer(path, src)
    n = max(repeats, 25)
    load = lambda: AutoTokenizer.from_pretrained(path)  # noqa: E731
    hook.disable()
    load()

    def interleaved(setup=None) -> tuple[float, float]:
        """Medians of loads without and with the hook, alternating so both see the same machine load."""
        off, on = [], []
        for _ in range(n):
            hook.disable()
            off.append(median_time(load, 1))
            hook.enable()
            on.append(median_time(load, 1, setup=setup))
        hook.disable()
        return statistics.median(off), statistics.median(on)

    def empty_cache():
        os.environ["AUTOPARSER_CACHE_DIR"] = str(Path(tempfile.mkdtemp(dir=tmp)))
        cache.clear_memory()
        sandbox._compiled_cached.cache_clear()

    hook.enable()
    try:
        cold = median_time(load, repeats, setup=empty_cache)
        assert load().response_template is not None
    finally:
        hook.disable()
    base, mem = interleaved()
    base_disk, disk = interleaved(setup=cache.clear_memory)
    tok = load()

    def attach():
        tok.response_template = None
        hook.attach(tok)

    t_attach = median_time(attach, n)
    print("\n== hook: AutoTokenizer.from_pretrained of a tiny local tokenizer (ms, median) ==")
    print(f"{'without hook':30} {ms(base)}")
    for label, t, b in (("hook, empty cache", cold, base), ("hook, warm (memory)", mem, base), ("hook, warm (disk)", disk, base_disk)):
        print(f"{label:30} {ms(t)}   overhead {ms(t - b)}")
    print(f"{'attach() alone, warm memory':30} {ms(t_attach)}")
    shutil.rmtree(tmp, ignore_errors=True)
    return {"hook_mem": mem - base, "hook_disk": disk - base_disk, "attach": t_attach}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=[], help="corpus template name substrings")
    ap.add_argument("--sections", default="infer,parse,hook,grammar,batch")
    ap.add_argument("--workers", type=int, default=2, help="worker processes for the batch section")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="what median times measure: wall clock, or CPU time of this process (steadier on a shared "
                         "machine, where other load slows jinja2's compile and our renders unequally)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--json", help="also write the summary numbers here")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    import transformers

    sections = set(args.sections.split(","))
    templates = corpus(args.only)
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    print(f"{len(templates)} templates from {CORPUS}; {args.clock} clock; load average {load[0]:.2f} on {os.cpu_count()} CPUs; "
          f"python {sys.version.split()[0]}, transformers {transformers.__version__}")
    summary: dict = {}
    if "infer" in sections:
        summary["infer"] = bench_infer(templates, args.repeats, args.verbose)
    if "stages" in sections:
        summary["stages"] = bench_stages(templates, args.repeats)
    if "parse" in sections:
        summary["parse"] = bench_parse(templates, args.repeats, args.verbose)
    if "hook" in sections:
        summary["hook"] = bench_hook(args.repeats)
    if "batch" in sections:
        summary["batch"] = bench_batch(templates, args.workers, bool(args.only))
    if "grammar" in sections:
        from bench_grammar import bench_grammar

        summary["grammar"] = bench_grammar(templates, args.repeats, args.verbose, TOKENS)
    # (label, measured, limit, unit, machine-bound); the ratio is the one target to meet from above. A
    # machine-bound target was set in time on llama.cpp's
    # reference machine, so it is also checked scaled by how much slower jinja2's compile is here than
    # there (13.6 ms median for the corpus), the one workload measured on both.
    checks, par = [], False
    s = summary.get("infer")
    if s:
        checks += [
            ("analysis after compile, median <= 3.5 ms", s["analysis_median"], 3.5e-3, "ms", True),
            ("cold infer, median < 20 ms", s["cold_median"], 20e-3, "ms", True),
            ("cold infer, corpus < 1.5 s", s["cold_total"], 1.5, "s", True),
            ("cold infer + verify / jinja2 compile, median <= 2x", s["verified_median"] / s["jinja_median"], 2.0, "ratio", False),
            ("cold infer + verify / jinja2 compile, corpus <= 2x", s["verified_total"] / s["jinja_total"], 2.0, "ratio", False),
            ("warm infer (memory) < 1 ms", s["warm_mem_median"], 1e-3, "ms", False),
            ("warm infer (disk) < 1 ms", s["warm_disk_median"], 1e-3, "ms", False),
        ]
    p = summary.get("parse")
    if p and p["ratio_min"] is not None:
        checks.append(("parse ratio vs hand-written >= 1.0 (min)", p["ratio_min"], 1.0, "x", False))
        par = p["ratio_min"] < 1.0 and p["noise_min"] is not None and p["ratio_min"] >= p["noise_min"]
    if p:
        checks.append(("hold-back <= longest delimiter", p["held_over"], 0, "over", False))
    if "hook" in summary:
        checks.append(("hook overhead, warm cache < 2 ms", summary["hook"]["hook_mem"], 2e-3, "ms", False))
    scale = s["jinja_median"] / 13.6e-3 if s else None
    if checks:
        print("\n== targets ==" + (f" (scaled: x{scale:.2f}, this machine's jinja2 compile median over llama.cpp's "
                                   f"reference 13.6 ms)" if scale else ""))
        for label, value, limit, unit, bound in checks:
            shown = {"ms": lambda v: f"{v * 1e3:8.2f} ms", "s": lambda v: f"{v:8.2f} s ", "x": lambda v: f"{v:8.2f}   ",
                     "ratio": lambda v: f"{v:8.2f} x ", "over": lambda v: f"{v:8d} over"}[unit]
            met = (lambda lim: value >= lim) if unit == "x" else (lambda lim: value <= lim)
            status = "met " if met(limit) else "par " if unit == "x" and par else "MISS"
            line = f"{status} {label:44} {shown(value)}"
            if status == "par ":
                line += f"   parity: within the noise (hand-written vs a copy of itself measured down to {p['noise_min']:.2f})"
            if bound and scale:
                line += f"   scaled {'met ' if met(limit * scale) else 'MISS'} (limit here {shown(limit * scale).strip()})"
            print(line)
    if s:
        print(f"(transformers' jinja2 compile of the same sources here: median {ms(s['jinja_median']).strip()} ms, "
              f"total {s['jinja_total']:.2f} s; on llama.cpp's reference machine: 13.6 ms, 0.88 s; cold infer + verify "
              f"here: median {ms(s['verified_median']).strip()} ms, total {s['verified_total']:.2f} s)")
    b = summary.get("batch")
    if b:
        print(f"(batch, {b['workers']} workers: {b['n']} templates (corpus + wild) at {b['per_second']:.1f} templates/s "
              f"once the pool is up, {b['per_second_startup']:.1f}/s with its {b['startup']:.1f} s start-up)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
