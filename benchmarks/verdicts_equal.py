"""Every template's full verdict over corpus + wild + wild2, dumped and compared: what verify detects must not change
when verify gets faster (issue 20).

    python benchmarks/verdicts_equal.py dump OUT.json      # before and after a change
    python benchmarks/verdicts_equal.py compare A.json B.json

For each template it records what ``infer`` hands out (the verdict dict, the emitted template, the
warnings, or the error with its verdict) and the undegraded report as the tests judge it (corpus with the
tokens tests/test_corpus.py uses, wild without, as tests/test_wild.py): each case's name, mode, history,
status, how, fields, expected and error, plus the one-shot parse. The streamed parse of a failing case is
left out: it only has to differ from the expectation, and which wrong text a chunking produces is not
something verify reports. ``compare`` exits 1 on any difference and prints the first few.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("AUTOPARSER_SHARED", ROOT.parent / "shared"))
if not (SHARED / "corpus").is_dir():
    SHARED = Path("/work/shared")
CORPUS = SHARED / "corpus" / "templates"
WILD = SHARED / "corpus" / "wild" / "templates"
WILD2 = SHARED / "corpus" / "wild2" / "templates"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def templates() -> list[tuple[str, str, dict | None]]:
    out = [(f"corpus/{p.stem}", p.read_text(encoding="utf-8"), TOKENS) for p in sorted(CORPUS.glob("*.jinja"))]
    out += [(f"wild/{p.stem}", p.read_text(encoding="utf-8"), None) for p in sorted(WILD.glob("*.jinja"))]
    return out + [(f"wild2/{p.stem}", p.read_text(encoding="utf-8"), None) for p in sorted(WILD2.glob("*.jinja"))]


def one(src: str, tokens: dict | None) -> dict:
    from autoparser import pipeline
    from autoparser.errors import AutoparserError, VerificationError
    from autoparser.verify import roundtrip, verify

    rec: dict = {}
    try:
        res = pipeline.infer_result(src, tokens)
        rec["infer"] = {"verdict": res.verdict, "template": res.template, "warnings": list(res.warnings)}
    except VerificationError as e:
        rec["infer"] = {"error": e.message, "verdict": e.verdict}
    except AutoparserError as e:
        rec["infer"] = {"error": e.message}
    try:
        res = pipeline.infer_result(src, tokens, verify=False)
    except AutoparserError as e:
        rec["undegraded"] = {"error": e.message}
        return rec
    roundtrip._PROBERS.clear()  # cold, as the tests' own verify would be in a fresh process
    report = verify(src, res.template, tokens, analysis=res.analysis)
    cases = []
    for c in report.cases:
        d = {k: getattr(c, k) for k in ("name", "mode", "history", "status", "how", "fields", "expected", "error", "parsed")}
        if c.status == "pass":
            d["streamed"] = c.streamed
        cases.append(d)
    rec["undegraded"] = {"summary": report.summary(), "cases": cases}
    return rec


def dump(path: str) -> None:
    out = {}
    for name, src, tokens in templates():
        out[name] = json.loads(json.dumps(one(src, tokens), ensure_ascii=False, default=repr))
    Path(path).write_text(json.dumps(out, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    statuses: dict[str, int] = {}
    for rec in out.values():
        v = rec["infer"].get("verdict") or {}
        s = v.get("status", "error")
        statuses[s] = statuses.get(s, 0) + 1
    print(f"{len(out)} templates -> {path}: {statuses}")


def compare(a: str, b: str) -> int:
    x = json.loads(Path(a).read_text(encoding="utf-8"))
    y = json.loads(Path(b).read_text(encoding="utf-8"))
    diffs = [n for n in sorted(set(x) | set(y)) if x.get(n) != y.get(n)]
    verdicts = [n for n in diffs if (x.get(n) or {}).get("infer") != (y.get(n) or {}).get("infer")]
    print(f"{len(set(x) | set(y))} templates; verdicts (infer) differ: {len(verdicts)}; full records differ: {len(diffs)}")
    for n in diffs[:5]:
        for part in ("infer", "undegraded"):
            if (x.get(n) or {}).get(part) != (y.get(n) or {}).get(part):
                print(f"  {n} [{part}]\n    A {json.dumps((x.get(n) or {}).get(part), ensure_ascii=False)[:600]}\n"
                      f"    B {json.dumps((y.get(n) or {}).get(part), ensure_ascii=False)[:600]}")
    return 1 if diffs else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "dump":
        dump(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
