"""``autoparser grammar SOURCE --tools TOOLS.json``: print a constrained-decoding grammar (Lark for
llguidance, or an xgrammar structural_tag) in the template's own tool-call format. A template whose
format cannot be constrained is one line on stderr and exit status 2 (NoGrammar is an AutoparserError).

Markers that are added tokens of the model's tokenizer are written as tokens: the tokenizer comes from
the source (a model directory or Hub id: its tokenizer.json / tokenizer_config.json) or ``--tokenizer``;
a bare template file has none, and one line on stderr says that markers are matched as text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import AutoparserError
from .source import SOURCE_HELP, TOKEN_HELP
from .files import load_tools
from ..sources.template_source import TEMPLATE_HELP


def add_arguments(p) -> None:
    p.add_argument("source", help=SOURCE_HELP)
    p.add_argument("--tools", required=True, help="JSON file: a list of OpenAI-style tools ({'type': 'function', 'function': {...}})")
    p.add_argument("--tool-choice", default="auto", help="auto | required | none | a tool name")
    p.add_argument("--no-parallel", action="store_true", help="allow one call only")
    p.add_argument("--format", default="lark", choices=["lark", "structural-tag"], help="lark: llguidance's Lark text (default); "
                   "structural-tag: an xgrammar structural_tag (JSON) for response_format")
    p.add_argument("--reasoning-open", choices=["yes", "no"], help="whether the prompt leaves reasoning open (default: as the generation prompt does)")
    p.add_argument("--serve", choices=["vllm", "sglang"], help="the form for a server run with the flags `infer --serve` prints "
                   "(both then apply the grammar from the first token: it covers reasoning)")
    p.add_argument("--after-reasoning", action="store_true", help="the form that starts where reasoning ends, for an engine that applies the grammar only after a literal reasoning end")
    p.add_argument("--tokenizer", help="tokenizer.json, tokenizer_config.json or a directory with them: markers that are its added tokens are written as tokens")
    p.add_argument("--template", help=TEMPLATE_HELP)
    p.add_argument("--revision", help="Hub revision")
    p.add_argument("--token", action="append", metavar="NAME=VALUE", help=TOKEN_HELP)
    p.set_defaults(func=run)


def source_tokens(args) -> dict | None:
    """The added tokens of ``--tokenizer``, else of the source's own tokenizer files (a model directory,
    a GGUF file, or a Hub id's cached snapshot); None when there is no tokenizer (a bare template file)."""
    from ..grammar.tokens import added_tokens
    from ..sources import gguf
    from ..sources.local import gguf_in, is_gguf

    if args.tokenizer:
        return added_tokens(args.tokenizer)
    src = Path(args.source)
    if src.is_dir():
        if any((src / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
            return added_tokens(src)
        return gguf.added_tokens(found) if (found := gguf_in(src)) else None
    if src.exists():
        if is_gguf(src):  # its control and user-defined tokens
            return gguf.added_tokens(src)
        return added_tokens(src) if src.name in ("tokenizer.json", "tokenizer_config.json") else None
    try:  # a Hub id: resolve() fetched tokenizer_config.json into the cache
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(args.source, "tokenizer_config.json", revision=args.revision)
    except Exception:  # noqa: BLE001 - an unusual id or cache: no tokenizer, said on stderr
        hit = None
    return added_tokens(hit) if isinstance(hit, str) else None


def run(args) -> int:
    from .source import source_from_args

    tools = load_tools(args.tools)
    src = source_from_args(args)
    from ..pipeline import infer_source  # after the source: a Hub id that cannot be reached fails before transformers loads
    from ..serve import grammar_form
    from ..grammar.build import build, check_verified, single_call_only

    opened = None if args.reasoning_open is None else args.reasoning_open == "yes"
    tokens = source_tokens(args)
    if tokens is None and args.format == "lark":
        print("grammar: no tokenizer (a bare template file; see --tokenizer): markers are matched as text", file=sys.stderr)
    try:
        res, used = infer_source(src)
        for note in used.notes if used is not src else ():  # the default template analysed in place of the tools one
            print(f"grammar: {note}", file=sys.stderr)
        src = used
        check_verified(res, src.template, src.special_tokens)
        parallel = not args.no_parallel
        if parallel and single_call_only(res.verdict):
            print("grammar: parallel tool calls do not round-trip through this template: one call only", file=sys.stderr)
            parallel = False
        form = grammar_form(res.template, args.serve)
        after = args.after_reasoning or form.get("after_reasoning", False)
        extra = {"tokens": tokens, "after_reasoning": after} if args.format == "lark" else {}
        out = build(res.analysis, tools, tool_choice=args.tool_choice, parallel=parallel, format=args.format, reasoning_open=opened, **extra)
    except AutoparserError as e:
        if e.where is None:
            e.where = src.where
        raise
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return 0
