"""Does any text make an emitted template's parser raise, or a stream read it otherwise than one-shot? Verdicts and
mutated parses over corpus + wild + wild2.

    python benchmarks/mutations.py            # verdict counts, parses, raises (one-shot + streamed), by mutation
    python benchmarks/mutations.py -v         # also the first raise per template
    python benchmarks/mutations.py --json out.json

For every template ``infer`` hands out (full or degraded), each verified rendering (verify's own cases) is
mutated the ways real outputs break: cut at eight points (a token limit mid-call), a space before each
marker, a newline before or after it, each marker doubled or dropped, a brace or bracket removed, text and
``</s>`` after the turn. Each mutated text is parsed with transformers' ``parse_response`` and streamed through
``ResponseParser``; a parse that raises is counted, and so is a stream whose message differs from the one-shot
parse (``differ``: the chunking must never change what a text means). The mutations are deterministic, so a
before/after pair is comparable.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import autoparser  # noqa: E402
from autoparser.analysis.diff import MARKER  # noqa: E402
from autoparser.verify import VERIFY_TOOLS, verify  # noqa: E402
from autoparser.verify.parsing import stream_parse  # noqa: E402
from transformers.utils.chat_parsing import parse_response  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def mutate(text: str):
    """(kind, mutated text) pairs, deterministic."""
    n = len(text)
    for k in range(1, 8):
        yield "cut", text[: n * k // 8]
    spans = [m.span() for m in MARKER.finditer(text)][:6]
    for s, e in spans:
        yield "space before marker", text[:s] + " " + text[s:]
        yield "newline before marker", text[:s] + "\n" + text[s:]
        yield "newline after marker", text[:e] + "\n" + text[e:]
        yield "marker doubled", text[:e] + text[s:e] + text[e:]
        yield "marker dropped", text[:s] + text[e:]
    for ch in "{}[]":
        i = text.find(ch)
        if i >= 0:
            yield "brace removed", text[:i] + text[i + 1 :]
        j = text.rfind(ch)
        if j >= 0 and j != i:
            yield "brace removed", text[:j] + text[j + 1 :]
    yield "text after turn", text + "\nAnything else?"
    yield "stray eos after turn", text + "</s>"


def run(verbose: bool = False) -> dict:
    paths = [p for d in ("templates", "wild/templates", "wild2/templates") for p in sorted((CORPUS / d).glob("*.jinja"))]
    if not paths:
        sys.exit(f"corpus not found at {CORPUS}")
    statuses: Counter = Counter()
    parses = raises = 0
    by_kind: Counter = Counter()
    by_kind_raise: Counter = Counter()
    by_kind_differ: Counter = Counter()
    differs: dict = {}
    firsts = {}
    realistic: Counter = Counter()
    for path in paths:
        name = f"{path.parent.parent.name}/{path.stem}"  # wild/…, wild2/…, corpus/…
        src = path.read_text(encoding="utf-8")
        try:
            res = autoparser.infer_result(src, TOKENS, where=path.name)
        except autoparser.VerificationError:
            statuses["refused"] += 1
            continue
        except autoparser.AutoparserError:
            statuses["error"] += 1
            continue
        statuses[res.verdict["status"]] += 1
        for k, v in (res.verdict.get("realistic") or {}).items():
            realistic[(k, v if isinstance(v, str) else v.get("status"))] += 1
        report = verify(src, res.template, TOKENS, analysis=res.analysis)
        seen = set()
        for case in report.cases:
            if case.status not in ("pass", "limit") or (case.prompt, case.generated) in seen:
                continue
            seen.add((case.prompt, case.generated))
            for kind, text in mutate(case.generated):
                got = {}
                for how in ("one-shot", "streamed"):
                    parses += 1
                    by_kind[kind] += 1
                    try:
                        if how == "one-shot":
                            got[how] = parse_response(text, res.template, prefix=case.prompt, tools=VERIFY_TOOLS)
                        else:
                            got[how] = stream_parse(res.template, text, case.prompt, VERIFY_TOOLS)
                    except Exception as e:  # noqa: BLE001 - counting raises is the point
                        raises += 1
                        by_kind_raise[kind] += 1
                        firsts.setdefault(name, f"{kind} ({how}): {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                if len(got) == 2 and got["one-shot"] != got["streamed"]:
                    by_kind_differ[kind] += 1
                    differs.setdefault(name, f"{kind}: {text[:160]!r}")
    out = {"verdicts": dict(statuses), "parses": parses, "raises": raises, "templates_raising": len(firsts),
           "streams_differ": sum(by_kind_differ.values()), "templates_differing": len(differs),
           "by_mutation": {k: [by_kind_raise[k], by_kind_differ[k], by_kind[k]] for k in by_kind},
           "realistic": {f"{k}={v}": n for (k, v), n in sorted(realistic.items())}}
    print(f"verdicts: {dict(statuses)}")
    print(f"parses: {parses}  raises: {raises}  templates raising: {len(firsts)}  "
          f"streamed != one-shot: {sum(by_kind_differ.values())} (templates: {len(differs)})")
    print(f"  {'mutation':24} {'raises':>6} {'differ':>6} / parses")
    for k in by_kind:
        print(f"  {k:24} {by_kind_raise[k]:6} {by_kind_differ[k]:6} / {by_kind[k]}")
    if realistic:
        print("realistic stage (variant=result: templates):")
        for (k, v), n in sorted(realistic.items()):
            print(f"  {k:28} {v:8} {n}")
    if verbose:
        for name, why in firsts.items():
            print(f"{name}: {why}")
        for name, why in differs.items():
            print(f"{name}: streamed != one-shot: {why}")
    out["first_raise"] = firsts
    out["first_differ"] = differs
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    result = run(args.v)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
