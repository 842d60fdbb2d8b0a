"""``autoparser parse SOURCE [FILE|-] [--prompt FILE] [--tools FILE]``: parse one model output with the
response_template inferred (and verified) for SOURCE and print the message as JSON, so a user can check
what a real generation parses to without writing code. The prefix transformers needs (the prompt, which
may open a reasoning block) is the user's own prompt when given, else the template's generation prompt
for a one-message conversation: a prompt that left ``<think>`` open changes what the output means."""

from __future__ import annotations

import json
import sys

from ..errors import AutoparserError
from .source import SOURCE_HELP, TOKEN_HELP
from .files import load_tools, read_text
from ..sources.template_source import TEMPLATE_HELP

PLACEHOLDER_USER = "Hello"


def add_arguments(p) -> None:
    p.add_argument("source", help=SOURCE_HELP)
    p.add_argument("output", nargs="?", default="-", help="file holding the model's output text ('-' or absent: stdin)")
    p.add_argument("--prompt", help="file holding the rendered prompt the model continued (default: the template's "
                   "generation prompt for one user message)")
    p.add_argument("--tools", help="JSON file: the OpenAI-style tools of the request (types the arguments; also "
                   "rendered into the default prompt)")
    p.add_argument("--thinking", choices=["on", "off"], help="render the default prompt with enable_thinking on or off")
    p.add_argument("--template", help=TEMPLATE_HELP)
    p.add_argument("--revision", help="Hub revision")
    p.add_argument("--token", action="append", metavar="NAME=VALUE", help=TOKEN_HELP)
    p.set_defaults(func=run)


def generation_prompt(chat_template: str, special_tokens: dict | None = None, *, tools: list | None = None,
                      where: str | None = None, user_message: str = PLACEHOLDER_USER, **kwargs) -> str:
    """The template's prompt for one user message with the generation prompt added (``kwargs`` are the
    template's own switches, e.g. ``enable_thinking``): the prefix a model's output continues when the
    user did not give the real prompt (sandboxed render)."""
    from ..render import Renderer, undefined_name

    from ..errors import TemplateError

    renderer = Renderer(chat_template, special_tokens, where=where, markup=True)  # the prompt as transformers renders it
    messages = [{"role": "user", "content": user_message}]
    missing: dict[str, str] = {}
    while True:
        try:
            try:
                return renderer.render(messages, tools=tools or None, add_generation_prompt=True, **kwargs, **missing)
            except TemplateError:
                if tools:
                    raise
                # tool-use templates iterate ``tools`` unguarded: without tools they render with an empty list
                return renderer.render(messages, tools=[], add_generation_prompt=True, **kwargs, **missing)
        except TemplateError as e:
            # A special token the caller did not give renders empty, as the analysis renders it (``'' + bos_token``
            # raised here while ``infer`` read the same template, warning that it rendered empty).
            name = undefined_name(e)
            if not name or not name.endswith("_token") or name in missing or len(missing) >= 4:
                raise
            missing[name] = ""


def parse_output(response_template: dict, text: str, prefix: str, tools: list | None = None) -> dict:
    """transformers' own parser on ``text``; a raise inside it becomes one line naming the cause."""
    from transformers.utils.chat_parsing import parse_response

    try:
        return parse_response(text, response_template, prefix=prefix, tools=tools or None)
    except Exception as e:  # noqa: BLE001 - the executor is third-party: any failure is reported, not a traceback
        raise AutoparserError(f"transformers' parser raised on this output: {type(e).__name__}: {e}") from None


def run(args) -> int:
    from .source import source_from_args

    tools = load_tools(args.tools) if args.tools else None
    text = read_text(args.output, "output")
    prompt = read_text(args.prompt, "prompt") if args.prompt else None
    src = source_from_args(args)
    from ..pipeline import infer_source  # after the source: a Hub id that cannot be reached fails before transformers loads

    try:
        res, used = infer_source(src)
        for note in used.notes if used is not src else ():  # the default template analysed in place of the tools one
            print(f"warning: {src.where}: {note}", file=sys.stderr)
        src = used
        if prompt is None:
            switches = {} if args.thinking is None else {"enable_thinking": args.thinking == "on"}
            prompt = generation_prompt(src.template, src.special_tokens, tools=tools, where=src.where, **switches)
        msg = parse_output(res.template, text, prompt, tools)
    except AutoparserError as e:
        if e.where is None:
            e.where = src.where
        raise
    for why in (res.verdict or {}).get("limits", []):
        print(f"verify: {why}", file=sys.stderr)
    for field in (res.verdict or {}).get("dropped", []):
        print(f"verify: field {field!r} left out of the inferred template (it did not round-trip)", file=sys.stderr)
    sys.stdout.write(json.dumps(msg, indent=2, ensure_ascii=False) + "\n")
    return 0
