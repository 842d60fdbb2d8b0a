"""Verdict counts over the corpus and the wild sets (wild2: the templates of the peer suite's families): full / degraded / refused per set, the per-field
verdicts of every template that is not full, and the tool-call capabilities.

    python benchmarks/verdicts.py [--only NAME ...] [--all] [--json out.json]

Counts the verdict (what a user gets), not verify: a degraded template passes verify. Runs the templates
in subprocesses (one per core) so one slow template does not hold up the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "corpus"
SETS = {"corpus": SHARED / "templates", "wild": SHARED / "wild" / "templates", "wild2": SHARED / "wild2" / "templates",
        "models": HERE.parent / "models"}
TOKENS = {"corpus": {"bos_token": "<s>", "eos_token": "</s>"}, "wild": {}, "wild2": {}, "models": {}}


def one(job: tuple[str, str]) -> dict:
    import autoparser
    from autoparser.errors import VerificationError

    which, path = job
    src = Path(path).read_text(encoding="utf-8")
    out = {"set": which, "name": Path(path).stem}
    try:
        res = autoparser.infer_result(src, TOKENS[which])
    except VerificationError as e:
        return {**out, "status": "refused", "verdict": e.verdict, "why": e.message}
    except autoparser.AutoparserError as e:
        return {**out, "status": "error", "why": e.message}
    except Exception as e:  # noqa: BLE001 - a crash is a result to show
        return {**out, "status": "crash", "why": f"{type(e).__name__}: {e}"}
    v = res.verdict or {}
    out = {**out, "status": v.get("status", "?"), "verdict": v, "warnings": list(res.warnings)}
    if "tool_calls" in (v.get("dropped") or []):
        # Did single calls round-trip with the field as first emitted? (the field must not be lost then)
        from autoparser.verify.capabilities import capabilities
        from autoparser.verify.roundtrip import verify

        raw = autoparser.infer_result(src, TOKENS[which], verify=False)
        if "tool_calls" in raw.template.get("fields", {}):
            out["single_before_drop"] = capabilities(verify(src, raw.template, TOKENS[which], analysis=raw.analysis))["single"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--all", action="store_true", help="show every template, not only those not full")
    ap.add_argument("--json")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    jobs = [(w, str(p)) for w, d in SETS.items() for p in sorted(d.glob("*.jinja"))
            if not args.only or any(o in p.stem for o in args.only)]
    with ProcessPoolExecutor(args.workers) as ex:
        rows = list(ex.map(one, jobs))
    for which in SETS:
        c = Counter(r["status"] for r in rows if r["set"] == which)
        print(f"{which:7s} " + "  ".join(f"{k} {c[k]}" for k in ("full", "degraded", "refused", "error", "crash") if c[k]) + f"  (of {sum(c.values())})")
    caps = Counter()
    for r in rows:
        for k, v in ((r.get("verdict") or {}).get("tool_capabilities") or {}).items():
            caps[(k, v)] += 1
    if caps:
        print("capabilities: " + ", ".join(f"{k} {v} {n}" for (k, v), n in sorted(caps.items())))
    lost = [r["name"] for r in rows if r.get("single_before_drop") == "pass"]
    print(f"tool_calls dropped although single calls round-trip: {len(lost)}" + (f" ({', '.join(lost)})" if lost else ""))
    print()
    for r in rows:
        if r["status"] == "full" and not args.all:
            continue
        v = r.get("verdict") or {}
        fields = " ".join(f"{k}={x}" for k, x in (v.get("fields") or {}).items() if x != "absent")
        caps = " ".join(f"{k}={x}" for k, x in (v.get("tool_capabilities") or {}).items() if x != "absent")
        print(f"{r['set']:6s} {r['name'][:44]:44s} {r['status']:8s} {fields}  {caps}")
        why = r.get("why") or v.get("first_failure") or ""
        if r["status"] != "full" and why:
            print(f"       {why[:220]}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False, default=str), encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main()
