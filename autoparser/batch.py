"""``autoparser batch MODELS -o OUTDIR``: a response_template for each of many models, plus a summary.

Sources are resolved (downloaded) on threads; each distinct template (by ``template_hash``) is analysed
once, in worker processes when ``--workers`` > 1 (the analysis is CPU-bound and its time budget is
wall-clock, so threads would starve each other). Every file is written atomically, and each finished model
gets a small record in ``OUTDIR/.autoparser-batch/``: a rerun skips models whose output still matches
its record, so a killed run resumes where it stopped. One model failing never stops the others.

Each template is verified (``autoparser.verdict``) unless ``--no-verify``: a model is full, degraded (which
fields were left out) or refused (why); failed means its template could not be fetched.

``-o -`` writes no files: each model's summary row, with its response_template, is one JSON line on stdout
as it finishes (nothing to resume from). An empty list is an error: more likely a wrong file than a request.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .files import write_atomic
from .output import record, unwrap, with_key
from .errors import AutoparserError, SourceError, VerificationError
from .sources.template_source import TEMPLATE_HELP

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

STATE_DIR = ".autoparser-batch"
RESERVED = {"summary"}


def add_arguments(p) -> None:
    p.add_argument("models", help="file with one Hub model id or local model directory per line ('-' for stdin; blank lines and "
                   "# comments ignored; a list with no model is an error, exit status 2)")
    p.add_argument("-o", "--output-dir", required=True, help="where <model>.json, summary.json and summary.md go; '-': no files, "
                   "each model's summary row with its response_template as one JSON line on stdout")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1), help="parallel workers (default: min(4, CPUs))")
    p.add_argument("--write", action="store_true", help="also store each template in a LOCAL model dir's tokenizer_config.json "
                   "(key response_template; the rest of the file is kept as it was)")
    p.add_argument("--no-verify", action="store_true", help="skip the round trip of each template on its chat template's renderings")
    p.add_argument("--verify", action="store_true", help="the default; accepted for old scripts")
    p.add_argument("--strict", action="store_true", help="exit 1 when a template had fields left out")
    p.add_argument("--force", action="store_true", help="recompute models whose output already exists")
    p.add_argument("--template", help=TEMPLATE_HELP)
    p.add_argument("--reasoning-field", default="thinking", choices=["thinking", "reasoning_content"],
                   help="the message key reasoning is parsed into (default thinking; reasoning_content is transformers' older name)")
    p.set_defaults(func=run)


@dataclass
class Item:
    model: str
    name: str  # output file stem
    rec: dict = field(default_factory=dict)  # its summary row
    template: dict | None = None  # the response_template, kept for ``-o -`` (no file holds it)


# -- input and names ---------------------------------------------------------------------------------------------

def read_models(spec: str) -> list[str]:
    """Model lines from a file or stdin: stripped, without blanks, comments and repeats."""
    try:
        text = sys.stdin.read() if spec == "-" else Path(spec).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"cannot read the model list: {getattr(e, 'strerror', None) or e}", spec) from None
    out: list[str] = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line and line not in out:
            out.append(line)
    return out


def safe_names(models: list[str]) -> list[str]:
    """File stems: ``org--name`` for Hub ids, ``dirname-<hash>`` for local paths; unique, case-insensitively."""
    names, seen = [], set()
    for m in models:
        digest = hashlib.sha1(m.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if Path(m).exists():
            base = f"{Path(os.path.abspath(m)).name or 'root'}-{digest}"
        else:
            base = m.replace("/", "--")
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")[:120] or digest
        if base.lower() in seen or base.lower() in RESERVED:
            base = f"{base}-{digest}"
        seen.add(base.lower())
        names.append(base)
    return names


# -- work done in workers ----------------------------------------------------------------------------------------

def _resolve(model: str, template_name: str | None):
    from .sources.hub import resolve

    return resolve(model, name=template_name)


def analyse(template: str, special_tokens: dict, where: str, verify: bool, reasoning_field: str,
            plain: str | None = None, name: str | None = None) -> dict:
    """Infer (and verify) one template (a tools template with the default it must also read: ``plain``, as
    ``pipeline.infer_source``); a plain dict so it crosses process boundaries. Never raises."""
    t0 = time.monotonic()
    try:
        from .pipeline import infer_source
        from .sources.template_source import TemplateSource

        src = TemplateSource(template, special_tokens, where, name, plain=plain)
        res, _ = infer_source(src, reasoning_field=reasoning_field, verify=verify)
    except VerificationError as e:
        return {"ok": False, "refused": True, "error": _one_line(e), "verdict": e.verdict}
    except AutoparserError as e:
        return {"ok": False, "refused": True, "error": _one_line(e)}
    except Exception as e:  # noqa: BLE001 - one model must not stop the batch
        return {"ok": False, "error": f"internal error: {type(e).__name__}: {_one_line(e)}"}
    a = res.analysis
    return {"ok": True, "template": res.template, "hash": res.hash, "reasoning": a.reasoning.mode, "tools": a.tools.format,
            "content": a.content.mode, "warnings": list(res.warnings), "verdict": res.verdict, "seconds": round(time.monotonic() - t0, 3)}


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# -- outputs and resume ------------------------------------------------------------------------------------------

def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _previous(outdir: Path, it: Item, args) -> dict | None:
    """The record of an earlier run if its output is intact and answers the same question, else None."""
    try:
        rec = json.loads((outdir / STATE_DIR / f"{it.name}.json").read_text(encoding="utf-8"))
        text = (outdir / f"{it.name}.json").read_text(encoding="utf-8")
        json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not (isinstance(rec, dict) and rec.get("model") == it.model and rec.get("output_sha256") == _sha(text)):
        return None
    if rec.get("reasoning_field") != args.reasoning_field or rec.get("template_name") != args.template:
        return None
    if not args.no_verify and not rec.get("verify"):
        return None
    return rec


def _remove_stale_temporaries(outdir: Path) -> None:
    """``write_atomic`` leftovers of a killed run (one batch per OUTDIR at a time)."""
    for folder in (outdir, outdir / STATE_DIR):
        for tmp in folder.glob(".*.json.*.tmp"):
            try:
                tmp.unlink()
            except OSError:
                pass


def _write_config(model: str, template: dict) -> str | None:
    """Store ``template`` as ``response_template`` in a local model dir's tokenizer_config.json, where
    ``from_pretrained`` reads it. The user's file is edited, not rewritten: every other byte stays (``with_key``),
    and the new text replaces it atomically. Returns an error message, or None when done."""
    path = Path(model) / "tokenizer_config.json"
    try:
        text = path.read_bytes().decode("utf-8")  # bytes: line endings stay as the file has them
        bom, text = ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)
        config = json.loads(text)
    except FileNotFoundError:
        return f"--write: {path} does not exist"
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"--write: cannot read {path}: {e}"
    if not isinstance(config, dict):
        return f"--write: {path} is not a JSON object"
    if config.get("response_template") == template:
        return None
    if config.get("response_template") is not None:
        return f"--write: {path} already has a different response_template (left unchanged)"
    try:
        write_atomic(path, bom + with_key(text, "response_template", template))
    except ValueError as e:
        return f"--write: cannot edit {path}: {e}"
    except OSError as e:
        return f"--write: cannot write {path}: {e.strerror or e}"
    return None


def _maybe_write(it: Item, template: dict, args) -> None:
    if not args.write or it.rec.get("written"):
        return
    if not Path(it.model).is_dir():
        it.rec["written"] = None  # --write is for local model directories
        return
    error = _write_config(it.model, template)
    if error:
        it.rec["status"], it.rec["error"] = "failed", error
    else:
        it.rec["written"] = str(Path(it.model) / "tokenizer_config.json")


def _finish(outdir: Path | None, it: Item, res: dict, args, first: str | None) -> None:
    """Record a model's outcome; on success write its output, then its resume record (``outdir`` None: keep the
    template for the JSON line instead)."""
    if not res["ok"]:
        it.rec.update(status="failed", verdict="refused" if res.get("refused") else "failed", error=res["error"], verify=res.get("verdict"))
        return
    v = res["verdict"]
    it.rec.update(status="ok", verdict=v["status"] if v else "unverified", dropped=v["dropped"] if v else [], hash=res["hash"],
                  reasoning=res["reasoning"], tools=res["tools"], content=res["content"], warnings=res["warnings"], verify=v,
                  analysed=first is None, same_template_as=first)
    if outdir is None:
        it.template = res["template"]
        _maybe_write(it, res["template"], args)
        return
    text = record(res["template"], v)
    try:
        write_atomic(outdir / f"{it.name}.json", text)
        from .emit import served

        _maybe_write(it, served(res["template"]), args)  # tokenizer_config.json is what vLLM and SGLang load
        state = {**it.rec, "output_sha256": _sha(text), "reasoning_field": args.reasoning_field, "template_name": args.template}
        if it.rec["status"] == "ok":
            write_atomic(outdir / STATE_DIR / f"{it.name}.json", json.dumps(state, indent=1, ensure_ascii=False) + "\n")
    except OSError as e:
        it.rec.update(status="failed", error=f"cannot write output: {e.strerror or e}")


# -- summary -----------------------------------------------------------------------------------------------------

def _left_out(rec: dict) -> str:
    """The fields left out and the tool-call capabilities not covered (their text arrives as content)."""
    uncovered = ((rec.get("verify") or {}).get("uncovered")) or []
    return ", ".join(list(rec.get("dropped") or []) + [f"tool calls ({u})" for u in uncovered])


def _why(rec: dict) -> str:
    """The summary's last column: what was left out and the first diverging case, or why it was refused."""
    v = rec.get("verify") or {}
    if rec.get("verdict") == "degraded":
        return f"without {_left_out(rec)}: {v.get('first_failure')}"
    if rec.get("status") == "pending":
        return "unfinished"
    return rec.get("error") or ", ".join(v.get("limits") or [])


def _cell(value) -> str:
    return str(value or "").replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def write_summary(outdir: Path, items: list[Item], totals: dict) -> None:
    rows = [it.rec for it in items]
    write_atomic(outdir / "summary.json", json.dumps({"totals": totals, "models": rows}, indent=2, ensure_ascii=False) + "\n")
    lines = ["# autoparser batch", "",
             f"{totals['models']} models: {_totals_line(totals)}; {totals['resumed']} resumed; "
             f"{totals['analysed']} templates analysed"
             + (f"; {totals['unfinished']} unfinished (interrupted)." if totals["unfinished"] else "."), "",
             "| model | template hash | reasoning style | tool format | verdict | why |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        output = f"[{_cell(r['model'])}]({r['output']})" if r.get("status") == "ok" else _cell(r["model"])
        lines.append(f"| {output} | {_cell(r.get('hash'))} | {_cell(r.get('reasoning'))} | {_cell(r.get('tools'))} "
                     f"| {_cell(r.get('verdict'))} | {_cell(_why(r))} |")
    write_atomic(outdir / "summary.md", "\n".join(lines) + "\n")


def _totals_line(totals: dict) -> str:
    parts = [f"{totals[k]} {k}" for k in ("full", "degraded", "unverified", "refused") if totals[k] or k in ("full", "refused")]
    return ", ".join(parts + [f"{totals['failed'] - totals['refused']} failed"])


# -- progress ----------------------------------------------------------------------------------------------------

class Progress:
    """A tqdm bar on a terminal; otherwise (logs, CI) one line per model. With ``lines`` (``-o -``) each
    finished model's summary row and response_template also go to stdout as one JSON line."""

    def __init__(self, total: int, lines: bool = False):
        self.total, self.count, self.bar, self.lines = total, 0, None, lines
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="model", desc="autoparser batch", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def step(self, it: Item) -> None:
        self.count += 1
        r = it.rec
        if self.lines:
            sys.stdout.write(json.dumps({**r, "response_template": it.template}, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        if r["status"] == "ok":
            how = "resumed" if r.get("resumed") else "analysed" if r.get("analysed") else f"same template as {r.get('same_template_as')}"
            line = f"{r.get('verdict')} ({how}; reasoning {r.get('reasoning')}, tools {r.get('tools')})"
            if r.get("verdict") == "degraded":
                line += f"; without {_left_out(r)}"
        else:
            line = f"{'REFUSED' if r.get('verdict') == 'refused' else 'FAILED'}: {r.get('error')}"
        if self.bar is not None:
            if r["status"] != "ok":
                self.bar.write(f"{it.model}: {line}", file=sys.stderr)
            self.bar.update(1)
        else:
            print(f"[{self.count}/{self.total}] {it.model}: {line}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- the run -----------------------------------------------------------------------------------------------------

def run(args) -> int:
    if args.workers < 1:
        raise AutoparserError("--workers must be at least 1", "batch")
    models = read_models(args.models)
    if not models:
        raise SourceError("the model list is empty (one Hub model id or local model directory per line; blank lines and # comments "
                          "are skipped)", "stdin" if args.models == "-" else args.models)
    outdir = None if args.output_dir == "-" else Path(args.output_dir)
    if outdir is not None:
        try:
            (outdir / STATE_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SourceError(f"cannot create the output directory: {e.strerror or e}", str(outdir)) from None
        _remove_stale_temporaries(outdir)
    items = [Item(m, n, {"model": m, "output": f"{n}.json" if outdir else None, "status": "pending"}) for m, n in zip(models, safe_names(models))]
    progress = Progress(len(items), lines=outdir is None)
    todo = []
    for it in items:
        prev = None if args.force or outdir is None else _previous(outdir, it, args)
        if prev is None:
            todo.append(it)
            continue
        it.rec = {k: v for k, v in prev.items() if k not in ("output_sha256", "reasoning_field", "template_name")}
        it.rec.update(resumed=True)
        if args.write and not it.rec.get("written"):
            _maybe_write(it, unwrap(json.loads((outdir / f"{it.name}.json").read_text(encoding="utf-8"))), args)
        progress.step(it)
    stats = {"analysed": 0}
    try:
        _process(todo, outdir, args, progress, stats)
    finally:
        analysed = stats["analysed"]
        progress.close()
        ok = sum(it.rec["status"] == "ok" for it in items)
        verdicts = {k: sum(it.rec.get("verdict") == k for it in items) for k in ("full", "degraded", "unverified", "refused")}
        totals = {"models": len(items), "ok": ok, **verdicts, "failed": sum(it.rec["status"] == "failed" for it in items),
                  "resumed": sum(bool(it.rec.get("resumed")) for it in items), "analysed": analysed,
                  "unfinished": sum(it.rec["status"] == "pending" for it in items)}
        if outdir is not None:
            write_summary(outdir, items, totals)
    print(f"autoparser batch: {_totals_line(totals)}, {totals['resumed']} resumed; analysed {analysed} distinct template(s)"
          + (f"; summary in {outdir / 'summary.md'}" if outdir is not None else ""), file=sys.stderr)
    return 1 if totals["failed"] or (args.strict and totals["degraded"]) else 0


def _process(todo: list[Item], outdir: Path | None, args, progress: Progress, stats: dict) -> None:
    """Resolve on threads, analyse each distinct template once (counted in ``stats["analysed"]``)."""
    if not todo:
        return
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait  # here, not at the top: ``batch --help``
    from concurrent.futures.process import BrokenProcessPool  # loads neither these nor transformers

    from .pipeline import template_hash

    workers = min(args.workers, len(todo))
    try:  # our own bar is enough; per-file download bars would tear it
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:
        pass
    io = ThreadPoolExecutor(workers, thread_name_prefix="autoparser-resolve")
    cpu = _new_pool(workers) if workers > 1 else None
    resolving: dict[Future, Item] = {io.submit(_resolve, it.model, args.template): it for it in todo}
    analysing: dict[Future, tuple[str, object]] = {}  # future -> (hash, the pool it ran on)
    waiting: dict[str, list[Item]] = {}  # hash -> models whose template is being analysed
    done_hashes: dict[str, tuple[dict, str]] = {}  # hash -> (result, first model)
    first_of: dict[str, str] = {}
    pending = set(resolving)

    def submit(src, h):
        stats["analysed"] += 1
        job = (src.template, src.special_tokens, src.where, not args.no_verify, args.reasoning_field, src.plain, src.name)
        if cpu is None:
            fut: Future = Future()
            fut.set_result(analyse(*job))
        else:
            fut = cpu.submit(analyse, *job)
        analysing[fut] = (h, cpu)
        pending.add(fut)

    stopped = True  # until the loop ends normally: an interrupt or an error stops the workers at once
    try:
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                pending.discard(fut)
                if fut in resolving:
                    it = resolving.pop(fut)
                    try:
                        src = fut.result()
                        # (a tools template checked against its default is one analysis with both)
                        h = template_hash(src.template if src.plain is None else f"{src.template}\0default\0{src.plain}", src.special_tokens)
                    except AutoparserError as e:
                        it.rec.update(status="failed", verdict="failed", error=e.message if e.where == it.model else _one_line(e))
                        progress.step(it)
                        continue
                    except Exception as e:  # noqa: BLE001
                        it.rec.update(status="failed", verdict="failed", error=f"internal error: {type(e).__name__}: {_one_line(e)}")
                        progress.step(it)
                        continue
                    it.rec["source"] = src.where
                    if h in done_hashes:
                        res, first = done_hashes[h]
                        _finish(outdir, it, res, args, first)
                        progress.step(it)
                    elif h in waiting:
                        waiting[h].append(it)
                    else:
                        waiting[h] = [it]
                        first_of[h] = it.model
                        submit(src, h)
                else:
                    h, pool = analysing.pop(fut)
                    try:
                        res = fut.result()
                    except BrokenProcessPool:
                        res = {"ok": False, "error": "the analysis worker process died (out of memory or a crash)"}
                        if pool is cpu:  # everything queued on it fails too; later templates get a new pool
                            _close(cpu)
                            cpu = _new_pool(workers)
                    done_hashes[h] = (res, first_of[h])
                    for k, it in enumerate(waiting.pop(h)):
                        _finish(outdir, it, res, args, None if k == 0 else first_of[h])
                        progress.step(it)
        stopped = False
    finally:
        io.shutdown(wait=False, cancel_futures=True)
        if cpu is not None:
            _close(cpu, stop=stopped)


def _close(pool: ProcessPoolExecutor, stop: bool = False) -> None:
    """Shut a worker pool down and wait for its manager thread to end. Left running (``wait=False``), that
    thread closes its wakeup pipe while the interpreter's exit hook (``concurrent.futures.process._python_exit``)
    writes to it without a lock: "Exception ignored in: <module 'threading'> ... OSError: [Errno 9] Bad file
    descriptor" at the end of some runs. ``stop`` (an interrupt): the workers are terminated first, so the
    wait is short (the pool then counts as broken, which is what its manager thread cleans up after)."""
    if stop:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):  # no public way before Python 3.14
            try:
                proc.terminate()
            except (OSError, ValueError):
                pass
    pool.shutdown(wait=True, cancel_futures=True)


def _new_pool(workers: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init)


def _worker_init() -> None:
    """Ctrl-C is the parent's to handle (it writes the summary); workers just get shut down."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
