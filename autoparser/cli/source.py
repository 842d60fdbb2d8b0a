"""The source every subcommand reads: SOURCE, --revision, --template and --token from its arguments."""

from __future__ import annotations

import dataclasses
import sys

from ..errors import AutoparserError
from ..sources.template_source import STOP_TOKENS

SOURCE_HELP = (".jinja file, tokenizer_config.json, chat_template.json, .gguf file, model directory, ollama:NAME[:TAG], "
               "Hub id (ORG/NAME, ORG/NAME:QUANT for one GGUF) or Hub URL")
TOKEN_HELP = ("a special token the template reads, e.g. eos_token='</s>', or stop_tokens='<|eom_id|>': another token the model "
              "stops on (repeatable; model dirs and Hub ids bring theirs, from generation_config.json)")


def tokens(src, pairs: list[str] | None) -> dict:
    """The source's special tokens plus ``--token NAME=VALUE`` (a bare .jinja file carries none); each
    ``stop_tokens`` given adds one to those the source brought."""
    out = dict(src.special_tokens or {})
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise AutoparserError(f"--token wants NAME=VALUE, got {pair!r}")
        name = name.strip()
        if name == STOP_TOKENS and out.get(name):
            value = "\n".join(dict.fromkeys([*out[name].split("\n"), value]))
        out[name] = value
    return out


def source_from_args(args):
    """Resolve the source (file, model dir or Hub id) with the special tokens the user added; its notes
    (a Hub model read from the cache because the Hub did not answer) go to stderr."""
    from ..sources.hub import resolve

    src = resolve(args.source, revision=args.revision, name=args.template)
    for note in src.notes:
        print(f"autoparser: note: {args.source}: {note}", file=sys.stderr)
    return dataclasses.replace(src, special_tokens=tokens(src, args.token))
