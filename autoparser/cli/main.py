"""``autoparser infer | verify | batch | grammar | parse | serve``: thin layers over the pipeline. Errors are one line on stderr.

The pipeline (and with it transformers, seconds to import) is imported inside each command, after its
arguments and files are read: ``--help``, ``--version`` and a mistyped flag answer at once."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from .files import load_response_template, write_output
from .source import SOURCE_HELP, TOKEN_HELP, source_from_args
from .. import __version__
from ..errors import AutoparserError
from ..output import one_line, record
from ..sources.template_source import TEMPLATE_HELP

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
    src = source_from_args(args)
    from ..pipeline import infer_source

    with _naming(src.where):
        res, src = infer_source(src, reasoning_field=args.reasoning_field, verify=not args.no_verify)
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
        write_output(args.output, record(template, res.verdict))
    else:
        sys.stdout.write(json.dumps(template, indent=2, ensure_ascii=False) + "\n")
    if args.serve:
        from ..serve import guidance

        model = "MODEL" if Path(args.source).is_file() else args.source
        for line in guidance(template, args.serve, model, verdict=res.verdict, analysis=res.analysis):
            print(f"serve: {line}", file=sys.stderr)
    return 1 if args.strict and res.verdict and res.verdict["status"] != "full" else 0


def _cmd_verify(args) -> int:
    rt = load_response_template(args.response_template) if args.response_template else None
    src = source_from_args(args)
    from ..pipeline import infer_source, judge

    with _naming(src.where):
        if src.plain is not None:  # the template ``infer`` analyses: a tools template, or the default in its place
            src = infer_source(src)[1]
        template, report, verdict = judge(src.template, rt, src.special_tokens)
    if args.json:  # the shape ``infer -o`` writes
        sys.stdout.write(record(template, verdict))
    else:
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


def _cmd_serve(args) -> int:
    import shlex

    from ..launch import plan, run

    p = plan(args.engine, args.model, args.engine_args)
    print(p.line(), file=sys.stderr, flush=True)
    if args.dry_run:
        print(shlex.join([p.engine, *p.argv]))
        return 0
    try:
        return run(p)
    except AutoparserError:
        raise
    except Exception:  # noqa: BLE001 - the engine's own failure, told as the engine tells it, not as ours
        import traceback

        traceback.print_exc()
        return 1



def add_source_arguments(p) -> None:
    """SOURCE and what selects the template in it, shared by infer and verify."""
    p.add_argument("source", help=SOURCE_HELP)
    p.add_argument("--template", help=TEMPLATE_HELP)
    p.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    p.add_argument("--token", action="append", metavar="NAME=VALUE", help=TOKEN_HELP)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autoparser", description="Infer a transformers response_template from a chat template.",
                                epilog="Errors are one line on stderr: exit status 2 for input that cannot be used (a file, a "
                                       "model, a template), 3 for an internal error. COMMAND --help describes each command.")
    p.add_argument("--version", action="version", version=f"autoparser {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    i = sub.add_parser("infer", help="print the response_template for a template file, model dir or Hub model id")
    add_source_arguments(i)
    i.add_argument("-o", "--output", metavar="FILE", help="write {response_template, verdict} as JSON here ('-': stdout) "
                   "instead of the bare response_template on stdout")
    i.add_argument("--explain", action="store_true", help="print each comparison and conclusion on stderr")
    i.add_argument("--no-verify", action="store_true", help="skip the round trip on the template's own renderings (on by default: "
                   "fields that do not round-trip are left out, and a template whose content does not is refused)")
    i.add_argument("--verify", action="store_true", help="the default; accepted for old scripts")
    i.add_argument("--strict", action="store_true", help="exit 1 when a field had to be left out")
    i.add_argument("--serve", choices=["vllm", "sglang"], help="print the server flags that fit the template (on stderr)")
    i.add_argument("--reasoning-field", default="thinking", choices=["thinking", "reasoning_content"],
                   help="the message key reasoning is parsed into (default thinking; reasoning_content is transformers' older name)")
    i.set_defaults(func=_cmd_infer)
    v = sub.add_parser("verify", help="round-trip a response_template on the chat template's renderings")
    add_source_arguments(v)
    v.add_argument("--response-template", metavar="FILE", help="JSON file to verify instead of the inferred one: a response_template "
                   "object, or the record `infer -o` writes")
    v.add_argument("--json", action="store_true", help="print {response_template, verdict} shaped as `infer -o` writes it, "
                   "instead of the report with the first failing case")
    v.set_defaults(func=_cmd_verify)
    s = sub.add_parser("serve", help="run vLLM's or SGLang's OpenAI-compatible server with the inferred template and the flags that fit it",
                       description="Infer (and verify) the model's response_template, attach it to the tokenizers the engine loads in every "
                       "process (nothing of the checkpoint is written), add the parser flags `infer --serve` prints unless you gave your own, "
                       "say in one line what was chosen, and run the engine's own server in this process.")
    s.add_argument("--dry-run", action="store_true", help="print the line and the engine command, start nothing")
    s.add_argument("engine", choices=["vllm", "sglang"], help="the engine whose OpenAI-compatible server runs")
    s.add_argument("model", help="what the engine serves: a Hub model id or a local model directory")
    s.add_argument("engine_args", nargs=argparse.REMAINDER, help="passed to the engine as they are (yours win over the flags added)")
    s.set_defaults(func=_cmd_serve)
    from ..batch import add_arguments as add_batch_arguments

    add_batch_arguments(sub.add_parser("batch", help="infer templates for many models", description=BATCH_DESCRIPTION))
    from .grammar import add_arguments as add_grammar_arguments

    add_grammar_arguments(sub.add_parser("grammar", help="print a constrained-decoding grammar in the template's own tool-call format"))
    from .parse import add_arguments as add_parse_arguments

    add_parse_arguments(sub.add_parser("parse", help="parse a model's output with the inferred response_template; print the message as JSON"))
    return p


BATCH_DESCRIPTION = ("Infer a response_template for each model of a list. Exit status: 0 all done, 1 a model failed (or was "
                     "degraded, with --strict), 2 the list could not be read or holds no model.")


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
