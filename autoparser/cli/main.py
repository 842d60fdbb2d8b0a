"""``autoparser infer | verify | batch | grammar | parse``: thin layers over the pipeline. Errors are one line on stderr."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from .source import source_from_args
from ..errors import AutoparserError
from ..output import one_line, record, unwrap, write_atomic

@contextmanager
def _naming(where: str):
    """Errors raised without a ``where`` (``verify()`` takes none) name the source the user gave."""
    try:
        yield
    except AutoparserError as e:
        if e.where is None:
            e.where = where
        raise


def _cmd_infer(args) -> int:
    from ..pipeline import infer_result

    src = source_from_args(args)
    with _naming(src.where):
        res = infer_result(src.template, src.special_tokens, where=src.where, reasoning_field=args.reasoning_field, verify=not args.no_verify)
    if args.explain:
        for line in res.analysis.log:
            print(line, file=sys.stderr)
    for w in res.warnings:
        print(f"warning: {src.where}: {w}", file=sys.stderr)
    for why in (res.verdict or {}).get("limits", []):
        print(f"verify: {why}", file=sys.stderr)
    template = res.template
    if args.serve:  # the form the engines accept at startup (no join on text fields; they join regions themselves)
        from ..emit import served

        template = served(res.template)
    if args.output:
        try:
            write_atomic(args.output, record(template, res.verdict))
        except OSError as e:
            raise AutoparserError(f"cannot write: {e.strerror or e}", args.output) from None
    else:
        sys.stdout.write(json.dumps(template, indent=2, ensure_ascii=False) + "\n")
    if args.serve:
        from ..serve import guidance

        model = "MODEL" if Path(args.source).is_file() else args.source
        for line in guidance(template, args.serve, model, verdict=res.verdict, analysis=res.analysis):
            print(f"serve: {line}", file=sys.stderr)
    return 1 if args.strict and res.verdict and res.verdict["status"] != "full" else 0


def _cmd_verify(args) -> int:
    from ..pipeline import verify

    src = source_from_args(args)
    rt = None
    if args.response_template:
        try:
            rt = json.loads(Path(args.response_template).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise AutoparserError(f"cannot read response template: {e}", args.response_template) from None
        rt = unwrap(rt)
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
    elif summary["reason"]:
        print(f"verify: {summary['reason']}", file=sys.stderr)
    return 0 if report.passed else 1


def _cmd_batch(args) -> int:
    from ..batch import run

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
    i.add_argument("--no-verify", action="store_true", help="skip the round trip on the template's own renderings (on by default: "
                   "fields that do not round-trip are left out, and a template whose content does not is refused)")
    i.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old scripts
    i.add_argument("--strict", action="store_true", help="exit 1 when a field had to be left out")
    i.add_argument("--serve", choices=["vllm", "sglang"], help="print the server flags that fit the template (on stderr)")
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
        from ..batch import add_arguments
    except ImportError:
        add_arguments = None
    if add_arguments:
        add_arguments(b)
    b.set_defaults(func=_cmd_batch)
    from .grammar import add_arguments as add_grammar_arguments

    add_grammar_arguments(sub.add_parser("grammar", help="print a constrained-decoding grammar in the template's own tool-call format"))
    from .parse import add_arguments as add_parse_arguments

    add_parse_arguments(sub.add_parser("parse", help="parse a model's output with the inferred response_template; print the message as JSON"))
    return p


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
