"""Score the real-output development set (tests/data/real_outputs and ../shared/corpus/peer) with the templates ``infer`` emits today.

    python benchmarks/real_outputs.py            # the table: cases, passed, per deviation, per family, per cause
    python benchmarks/real_outputs.py -v         # also every failing case with its reason
    python benchmarks/real_outputs.py -f qwen    # only families whose name contains this
    python benchmarks/real_outputs.py -s peer    # only one suite: dev (tests/data/real_outputs) or peer
    python benchmarks/real_outputs.py --update   # rewrite tests/real_outputs_known_failing.json from this run
    python benchmarks/real_outputs.py --json out.json   # per-case results

Shares loading, inference cache, parsing and comparison with tests/test_real_outputs.py. Statuses:
``pass``; ``fail`` (the message differs); ``raise`` (transformers' parser raised); ``stream`` (one-shot
right, streamed in chunks differs); ``infer`` (no template). The peer suite (vLLM's and SGLang's parser
tests, scored as its README says) is reported apart as well as in the total; its cases cut off mid-output
(``partial``) are counted apart from well-formed and deviant. Rerun with ``--update`` after the emitter
changes (the test fails both on a new failure and on a listed case that passes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the test module's own helpers (message_norm)
_spec = importlib.util.spec_from_file_location("_real_outputs", HERE.parent / "tests" / "test_real_outputs.py")
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)

STATUSES = ("pass", "fail", "raise", "stream", "infer")


def _table(title: str, rows: dict[str, Counter], by_size: bool = True) -> None:
    print(f"\n{title:<32} {'cases':>5} {'pass':>5} {'%':>5}  " + " ".join(f"{s:>6}" for s in STATUSES[1:]))
    for key in sorted(rows, key=lambda k: (-sum(rows[k].values()), k)) if by_size else sorted(rows):
        c = rows[key]
        n = sum(c.values())
        if not n:
            continue
        print(f"{key:<32} {n:>5} {c['pass']:>5} {100 * c['pass'] / n:>5.0f}  " + " ".join(f"{c[s]:>6}" for s in STATUSES[1:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-f", "--family", help="only families whose name contains this")
    ap.add_argument("-s", "--suite", choices=["dev", "peer"], help="only this suite")
    ap.add_argument("--update", action="store_true", help="rewrite tests/real_outputs_known_failing.json")
    ap.add_argument("--json", help="write per-case results here ('-' = stdout)")
    args = ap.parse_args(argv)

    cases = H.load_cases()
    if args.family:
        cases = [c for c in cases if args.family.lower() in H.family(c).lower()]
    if args.suite:
        cases = [c for c in cases if c["_suite"] == args.suite]
    if not cases:
        print("no cases (is ../shared/corpus present?)", file=sys.stderr)
        return 1
    results = [H.run_case(c) for c in cases]
    by_dev, by_fam, by_src, groups = defaultdict(Counter), defaultdict(Counter), defaultdict(Counter), defaultdict(Counter)
    for c, r in zip(cases, results):
        suite = c["_suite"]
        if suite == "dev":
            by_dev[r["deviation"]][r["status"]] += 1
        by_fam[f"{suite}:{r['family']}"][r["status"]] += 1
        src = c["_file"].split(":")[0] if suite == "dev" else "peer:" + c["source"]["repo"].split("/")[-1]
        by_src[src][r["status"]] += 1
        groups[f"{suite} {r['group']}"][r["status"]] += 1
        if r["group"] != "partial":
            groups[f"all {r['group']}"][r["status"]] += 1
        groups[f"{suite} (all)"][r["status"]] += 1
    groups["all (with partial)"] = Counter(r["status"] for r in results)
    _table("total", groups, by_size=False)
    _table("per deviation (dev suite)", by_dev)
    _table("per family", by_fam)
    _table("per source", by_src)
    causes = Counter(H.cause(r) if r["status"] != "raise" else r["why"].split(":")[0] for r in results if r["status"] != "pass")
    print("\nfailure causes:")
    for why, n in causes.most_common():
        print(f"  {n:>4}  {why}")
    known = H.load_known()
    failing = {r["id"]: f"[{r['deviation']}] {H.cause(r)}" for r in results if r["status"] != "pass"}
    if not args.family and not args.suite:
        new = sorted(set(failing) - set(known))
        fixed = sorted(set(known) - set(failing))
        print(f"\nknown-failing list: {len(known)} listed; {len(new)} failing but not listed; {len(fixed)} listed but passing")
    if args.verbose:
        for c, r in zip(cases, results):
            if r["status"] != "pass":
                print(f"\n{r['id']} [{r['deviation']}] {H.cause(r)}\n  output:   {c['output']!r}\n"
                      f"  expected: {json.dumps(r['expected'], ensure_ascii=False)}\n  got:      {json.dumps(r['got'], ensure_ascii=False)}")
    if args.json:
        text = json.dumps(results, indent=1, ensure_ascii=False)
        (sys.stdout.write(text + "\n") if args.json == "-" else Path(args.json).write_text(text + "\n", encoding="utf-8"))
    if args.update:
        if args.family or args.suite:
            print("--update needs the whole set (no -f, no -s)", file=sys.stderr)
            return 2
        data = {"_comment": "cases of tests/data/real_outputs and ../shared/corpus/peer (ids peer-…) that fail with today's emitter, with the reason; "
                            "regenerate with: python benchmarks/real_outputs.py --update"}
        # a listed reason that the cause still starts with keeps its hand-written explanation (after " — " or ": ")
        data.update({k: known[k] if known.get(k, "").startswith((v + " — ", v + ": ")) else v for k, v in sorted(failing.items())})
        H.KNOWN_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {H.KNOWN_FILE} ({len(failing)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
