"""``autoparser grammar SOURCE --tools TOOLS.json``: print a constrained-decoding grammar (Lark for
llguidance, or an xgrammar structural_tag) in the template's own tool-call format. A template whose
format cannot be constrained is one line on stderr and exit status 2 (NoGrammar is an AutoparserError)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import AutoparserError


def add_arguments(p) -> None:
    p.add_argument("source", help=".jinja file, tokenizer_config.json, chat_template.json, model directory or Hub id")
    p.add_argument("--tools", required=True, help="JSON file: a list of OpenAI-style tools ({'type': 'function', 'function': {...}})")
    p.add_argument("--tool-choice", default="auto", help="auto | required | none | a tool name")
    p.add_argument("--no-parallel", action="store_true", help="allow one call only")
    p.add_argument("--format", default="lark", choices=["lark", "structural-tag"])
    p.add_argument("--reasoning-open", choices=["yes", "no"], help="whether the prompt leaves reasoning open (default: as the generation prompt does)")
    p.add_argument("--template", help="named chat template to use (e.g. tool_use)")
    p.add_argument("--revision", help="Hub revision")
    p.add_argument("--token", action="append", metavar="NAME=VALUE", help="a special token the template reads, e.g. eos_token='</s>'")
    p.set_defaults(func=run)


def _load_tools(path: str) -> list:
    try:
        tools = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AutoparserError(f"cannot read tools: {e}", path) from None
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    return tools


def run(args) -> int:
    from ..pipeline import infer_result
    from .source import source_from_args
    from ..grammar.build import build, check_verified

    tools = _load_tools(args.tools)
    src = source_from_args(args)
    opened = None if args.reasoning_open is None else args.reasoning_open == "yes"
    try:
        res = infer_result(src.template, src.special_tokens, where=src.where)
        check_verified(res, src.template, src.special_tokens)
        out = build(res.analysis, tools, tool_choice=args.tool_choice, parallel=not args.no_parallel, format=args.format, reasoning_open=opened)
    except AutoparserError as e:
        if e.where is None:
            e.where = src.where
        raise
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return 0
