"""docs/MODELS.md, "what works for which model": every template the project is checked on (corpus, wild,
wild2) with its verdict, tool-call format and reasoning mode, and every real-output family with its score.

    python benchmarks/models_page.py            # rewrite docs/MODELS.md
    python benchmarks/models_page.py --check    # exit 1 with a diff when the page is stale

Verdicts come from ``benchmarks/verdicts.py`` (``one``: ``infer`` as a user runs it), formats and modes from
the same run's analysis, scores from ``benchmarks/real_outputs.py``'s machinery (the real-output test
module: its cases, its inference, its comparison). Rows are sorted and nothing depends on the clock, so
one command regenerates the page and the same tree gives the same page. ``tests/test_models_page.py``
checks the corpus' verdict, format and reasoning columns against the page (cheap: the pipeline's memo).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import verdicts  # noqa: E402 - beside this file

PAGE = HERE.parent / "docs" / "MODELS.md"
SETS = {"corpus": verdicts.SHARED / "templates", "wild": verdicts.SHARED / "wild" / "templates", "wild2": verdicts.SHARED / "wild2" / "templates"}
PEER = verdicts.SHARED / "peer"


def templates() -> list[tuple[str, str]]:
    return [(which, str(p)) for which, d in SETS.items() for p in sorted(d.glob("*.jinja"))]


def row(job: tuple[str, str]) -> dict:
    """One template: its verdict (as ``infer`` gives it) and what the analysis found."""
    import autoparser

    which, path = job
    out = verdicts.one(job)
    analysis = None
    if out["status"] in ("full", "degraded", "refused"):
        src, tokens = Path(path).read_text(encoding="utf-8"), verdicts.TOKENS[which]
        try:  # the verdict's run left the result in the pipeline's memo; a refused template has only its analysis
            analysis = autoparser.infer_result(src, tokens).analysis if out["status"] != "refused" else autoparser.analyze(src, tokens)
        except autoparser.AutoparserError:
            pass
    return {"set": which, "name": out["name"], "verdict": verdict_cell(out), "tools": tools_cell(analysis), "reasoning": reasoning_cell(analysis)}


def verdict_cell(out: dict) -> str:
    """full | degraded (what was left out or is not covered) | refused | error."""
    status = out["status"]
    v = out.get("verdict") or {}
    if status == "degraded":
        parts = [f"{f} left out" for f in v.get("dropped") or []] + [f"{u} not covered" for u in v.get("uncovered") or []]
        return f"degraded ({', '.join(parts)})" if parts else "degraded"
    return "error" if status == "crash" else status


def tools_cell(a) -> str:
    if a is None:
        return "—"
    t = a.tools
    if t.format == "NONE":
        return "none (calls not rendered)" if t.unseen else "none"
    return t.family if t.family in ("pythonic", "channels", "recipient", "nameless", "unknown") else f"{t.format} ({t.family})"


def reasoning_cell(a) -> str:
    return "—" if a is None else a.reasoning.mode


# ------------------------------------------------------------------------------------------ real outputs

def _real_outputs_module():
    import importlib.util

    sys.path.insert(0, str(HERE.parent / "tests"))
    spec = importlib.util.spec_from_file_location("_real_outputs", HERE.parent / "tests" / "test_real_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_cases(H) -> list[dict]:
    """The peer suite (../shared/corpus/peer) as real-output cases, for a test module that does not load it
    itself yet: complete outputs of families with a template, with the family's render switches (and its
    thinking switch where the case expects reasoning), compared whole (SGLang's ``match`` is not applied)."""
    import csv

    fams = {}
    for cols in csv.reader((PEER / "families.tsv").read_text(encoding="utf-8").splitlines(), delimiter="\t"):
        if not cols or cols[0].startswith("#") or cols[0] == "family" or len(cols) < 2 or not cols[1].endswith(".jinja"):
            continue
        cols += [""] * 6
        fams[cols[0]] = {"template": os.path.relpath(verdicts.SHARED.parent / cols[1], H.CORPUS / "templates"),
                         "render": json.loads(cols[4] or "{}"), "think": json.loads(cols[5] or '{"enable_thinking": true}')}
    out = []
    for n, line in enumerate((PEER / "cases.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        case = json.loads(line)
        fam = fams.get(case["family"])
        if fam is None or case.get("partial"):
            continue
        kwargs = {**fam["render"], **(case.get("render_kwargs") or {})}
        case = {**case, "id": f"peer-{case['family']}-{n}", "template": fam["template"], "_suite": "peer"}
        reasoning = (case["expected"].get("reasoning") or "").strip() or "reasoning" in case["source"]["path"]
        case["prompt"] = {"kwargs": {**kwargs, **fam["think"]}} if reasoning else {"text": _closed_prompt(H, case, kwargs, fam["think"])}
        out.append(case)
    return out


def _closed_prompt(H, case: dict, kwargs: dict, think: dict) -> str:
    """The prompt a peer's tool parser sees (peer README): reasoning closed. The plain prompt when it leaves no
    reasoning open, else the thinking-off one, else the plain one with the reasoning's end written after it."""
    import autoparser

    path, tokens = str(H.template_file(case)), tuple(sorted(H.tokens_for(case).items()))
    try:
        r = autoparser.infer_result(Path(path).read_text(encoding="utf-8"), dict(tokens)).analysis.reasoning
    except autoparser.AutoparserError:
        r = None
    tools = json.dumps(case.get("tools") or [], sort_keys=True)
    tries = [kwargs, {**kwargs, **{k: False for k, v in think.items() if v is True}}]
    prompts = []
    for kw in tries:
        try:
            prompts.append(H._prefix(path, tokens, tools, json.dumps(kw, sort_keys=True), None))
        except Exception:  # noqa: BLE001 - a template that refuses the switch: the plain prompt stands
            pass
    if not prompts:
        return ""
    opened = lambda p: bool(r and r.start.strip() and p.rstrip().endswith(r.start.strip()))  # noqa: E731
    return next((p for p in prompts if not opened(p)), prompts[0] + (r.end if r else ""))


def real_outputs() -> tuple[dict, dict, str]:
    """({template path: Counter(pass, total)}, {family: {"template", "dev", "peer"}}, how peer cases were scored)."""
    H = _real_outputs_module()
    cases = H.load_cases()
    how = "as `tests/test_real_outputs.py` scores them"
    if PEER.is_dir() and not any(c.get("_suite") == "peer" for c in cases):
        cases += peer_cases(H)
        how = "by `benchmarks/models_page.py::peer_cases` (whole messages compared; SGLang's `match` not applied)"
    per_template, per_family = defaultdict(Counter), {}
    for case in cases:
        passed = H.run_case(case)["status"] == "pass"
        path = str(Path(H.template_file(case)).resolve())
        per_template[path].update(passed=int(passed), total=1)
        suite = "peer" if case.get("_suite") == "peer" else "dev"
        fam = per_family.setdefault(H.family(case), {"templates": set(), "dev": Counter(), "peer": Counter()})
        fam["templates"].add(template_label(path))
        fam[suite].update(passed=int(passed), total=1)
    return per_template, per_family, how


def template_label(path: str) -> str:
    p = Path(path)
    which = next((w for w, d in SETS.items() if p.parent == d.resolve()), p.parent.name)
    return f"{which}/{p.stem}"


def score(c: Counter | None) -> str:
    return f"{c['passed']}/{c['total']}" if c and c["total"] else "—"


# ------------------------------------------------------------------------------------------------ page

def page(rows: list[dict], per_template: dict, per_family: dict, how: str) -> str:
    out = ["# What works for which model", "",
           "Generated by `python benchmarks/models_page.py` from the templates the project is checked on; do not edit by hand",
           "(`--check` exits 1 with a diff when this page is stale). **verdict**: what `infer` hands out (full; degraded, with what",
           "was left out or is not covered; refused: no template; error: the template cannot be analysed). **tool calls**: the",
           "format the analysis found (docs/FORMATS.md §5). **reasoning**: the reasoning mode (§3). **real outputs**: outputs",
           "real models wrote for this template's family, parsed with the template `infer` emits (`tests/data/real_outputs`",
           f"and `../shared/corpus/peer`; peer cases scored {how}), passed/total.", ""]
    totals = Counter(r["verdict"].split(" ")[0] for r in rows)
    out += ["| set | templates | full | degraded | refused | error |", "| --- | --- | --- | --- | --- | --- |"]
    for which in SETS:
        c = Counter(r["verdict"].split(" ")[0] for r in rows if r["set"] == which)
        out.append(f"| {which} | {sum(c.values())} | {c['full']} | {c['degraded']} | {c['refused']} | {c['error']} |")
    out.append(f"| all | {len(rows)} | {totals['full']} | {totals['degraded']} | {totals['refused']} | {totals['error']} |")
    dev = sum((f["dev"] for f in per_family.values()), Counter())
    peer = sum((f["peer"] for f in per_family.values()), Counter())
    out += ["", f"Real outputs: {score(dev)} of the team's cases, {score(peer)} of the peer suite's, over {len(per_family)} families.", ""]
    for which, d in SETS.items():
        sel = sorted((r for r in rows if r["set"] == which), key=lambda r: r["name"].lower())
        out += [f"## {which} ({len(sel)} templates, `{d.relative_to(verdicts.SHARED.parent)}`)", "",
                "| template | verdict | tool calls | reasoning | real outputs |", "| --- | --- | --- | --- | --- |"]
        for r in sel:
            real = score(per_template.get(str((d / f"{r['name']}.jinja").resolve())))
            out.append(f"| {r['name']} | {r['verdict']} | {r['tools']} | {r['reasoning']} | {real} |")
        out.append("")
    out += [f"## Real-output families ({len(per_family)})", "", "| family | template | team's cases | peer suite |", "| --- | --- | --- | --- |"]
    for fam in sorted(per_family, key=str.lower):
        f = per_family[fam]
        out.append(f"| {fam} | {', '.join(sorted(f['templates']))} | {score(f['dev'])} | {score(f['peer'])} |")
    return "\n".join(out) + "\n"


def generate(workers: int = 2) -> str:
    with ProcessPoolExecutor(workers) as ex:
        rows = list(ex.map(row, templates()))
    return page(rows, *real_outputs())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when docs/MODELS.md is stale")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    text = generate(args.workers)
    if args.check:
        old = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if old == text:
            print(f"{PAGE.relative_to(HERE.parent)} is up to date")
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "docs/MODELS.md", "generated"))
        print("stale: regenerate with python benchmarks/models_page.py", file=sys.stderr)
        return 1
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(HERE.parent)}: {text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
