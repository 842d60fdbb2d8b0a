"""``autoparser infer | verify | batch``: thin layers over the pipeline. Errors are one line on stderr."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import AutoparserError

_UMASK = os.umask(0)
os.umask(_UMASK)


def _resolve(source: str, revision: str | None, name: str | None):
    from .hub import resolve

    return resolve(source, revision=revision, name=name)


def write_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file and rename, so a killed run never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:  # mkstemp makes 0600 files: keep the replaced file's mode, else the umask's default
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_UMASK)
        except OSError:
            pass
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def _naming(where: str):
    """Errors raised without a ``where`` (``verify()`` takes none) name the source the user gave."""
    try:
        yield
    except AutoparserError as e:
        if e.where is None:
            e.where = where
        raise


def _tokens(src, pairs: list[str]) -> dict:
    """The source's special tokens plus ``--token NAME=VALUE`` (a bare .jinja file carries none)."""
    tokens = dict(src.special_tokens or {})
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise AutoparserError(f"--token wants NAME=VALUE, got {pair!r}")
        tokens[name.strip()] = value
    return tokens


def _cmd_infer(args) -> int:
    from .api import infer_result

    src = _resolve(args.source, args.revision, args.template)
    src = dataclasses.replace(src, special_tokens=_tokens(src, args.token))
    with _naming(src.where):
        res = infer_result(src.template, src.special_tokens, where=src.where, reasoning_field=args.reasoning_field)
        if args.explain:
            for line in res.analysis.log:
                print(line, file=sys.stderr)
        for w in res.warnings:
            print(f"warning: {src.where}: {w}", file=sys.stderr)
        out = dict(res.template)
        status = 0
        if args.verify:
            from .verify import verify

            report = verify(src.template, res.template, src.special_tokens, analysis=res.analysis, reasoning_field=args.reasoning_field)
            status = _say_verdict(report)
    text = json.dumps(out, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as e:
            raise AutoparserError(f"cannot write: {e.strerror or e}", args.output) from None
    else:
        sys.stdout.write(text)
    return status


def _cmd_verify(args) -> int:
    from .verify import verify

    src = _resolve(args.source, args.revision, args.template)
    src = dataclasses.replace(src, special_tokens=_tokens(src, args.token))
    rt = None
    if args.response_template:
        try:
            rt = json.loads(Path(args.response_template).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise AutoparserError(f"cannot read response template: {e}", args.response_template) from None
        if isinstance(rt, dict) and "response_template" in rt and "fields" not in rt:
            rt = rt["response_template"]
    with _naming(src.where):
        report = verify(src.template, rt, src.special_tokens)
    print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    return _say_verdict(report)


def _say_verdict(report) -> int:
    """The verdict on stderr (counts, per field, each limit, the first failure); the exit status."""
    summary = report.summary()
    print(f"verify: {'passed' if report.passed else 'FAILED'} {summary['counts']} {summary['fields']}", file=sys.stderr)
    for why in summary["limits"]:
        print(f"verify: {why}", file=sys.stderr)
    if summary["first_failure"]:
        print(f"verify: first failure: {summary['first_failure']}", file=sys.stderr)
    return 0 if report.passed else 1


def _cmd_batch(args) -> int:
    from .batch import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autoparser", description="Infer a transformers response_template from a chat template.")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("infer", help="print the response_template for a template file, model dir or Hub model id")
    i.add_argument("source", help=".jinja file, tokenizer_config.json, chat_template.json, model directory or Hub id")
    i.add_argument("--template", help="named chat template to use (e.g. tool_use)")
    i.add_argument("--revision", help="Hub revision")
    i.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    i.add_argument("--explain", action="store_true", help="print each comparison and conclusion on stderr")
    i.add_argument("--verify", action="store_true", help="round-trip the result on the template's own renderings")
    i.add_argument("--reasoning-field", default="thinking", choices=["thinking", "reasoning_content"])
    token_help = "a special token the template reads, e.g. eos_token='</s>' (repeatable; model dirs and Hub ids bring theirs)"
    i.add_argument("--token", action="append", metavar="NAME=VALUE", help=token_help)
    i.set_defaults(func=_cmd_infer)
    v = sub.add_parser("verify", help="round-trip a response_template on the chat template's renderings")
    v.add_argument("source")
    v.add_argument("--template")
    v.add_argument("--revision")
    v.add_argument("--response-template", help="JSON file to verify instead of the inferred one")
    v.add_argument("--token", action="append", metavar="NAME=VALUE", help=token_help)
    v.set_defaults(func=_cmd_verify)
    b = sub.add_parser("batch", help="infer templates for many models")
    try:
        from .batch import add_arguments
    except ImportError:
        add_arguments = None
    if add_arguments:
        add_arguments(b)
    b.set_defaults(func=_cmd_batch)
    return p


MAX_ERROR = 400  # characters of one error line (templates raise messages of any size)


def one_line(text: object) -> str:
    """An error message as one printable line: templates and file names may carry newlines or escapes."""
    text = re.sub(r"\s*[\r\n]+\s*", " | ", str(text).strip())
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…"


def _error(text: str) -> None:
    try:
        print(f"autoparser: {one_line(text)}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except AutoparserError as e:
        _error(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:  # stdout closed early (| head): not an error worth a traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except MemoryError:
        _error("error: out of memory")
        return 3
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        _error(f"internal error: {type(e).__name__}: {e}")
        return 3


if __name__ == "__main__":
    sys.exit(main())
