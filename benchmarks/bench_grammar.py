"""The ``grammar`` section of bench.py: time to write the Lark grammar (and the structural tag) from a
template's analysis, per template, with the corpus median and total; templates refused are counted
with their reasons. Inference is not timed here (the ``infer`` section does)."""

from __future__ import annotations

import statistics
import time
from collections import Counter

from autoparser import pipeline
from autoparser.grammar.build import build
from autoparser.errors import AutoparserError
from autoparser.grammar.layout import NoGrammar
from autoparser.verify import VERIFY_TOOLS


def bench_grammar(templates, repeats: int, verbose: bool, tokens: dict) -> dict:
    times: dict[str, float] = {}
    refused: Counter = Counter()
    for name, src in templates:
        try:
            analysis = pipeline.infer_result(src, tokens).analysis
            build(analysis, VERIFY_TOOLS)
        except NoGrammar as e:
            refused[str(e).split(":")[0][:70]] += 1
            continue
        except AutoparserError:
            refused["does not infer"] += 1
            continue
        runs = []
        for _ in range(max(repeats, 1)):
            t0 = time.perf_counter()
            build(analysis, VERIFY_TOOLS)
            runs.append(time.perf_counter() - t0)
        times[name] = statistics.median(runs)
        if verbose:
            print(f"  {name:50} {times[name] * 1e3:8.3f} ms")
    med = statistics.median(times.values()) if times else 0.0
    total = sum(times.values())
    print(f"\n== grammar: Lark grammar from the analysis (ms, median of {repeats}) ==")
    print(f"{len(times)} grammars; median {med * 1e3:.3f} ms, corpus total {total * 1e3:.1f} ms")
    for why, n in refused.most_common():
        print(f"  refused {n:3}: {why}")
    return {"grammar_median": med, "grammar_total": total, "grammars": len(times), "refused": sum(refused.values())}
