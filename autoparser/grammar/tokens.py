"""The added tokens of a tokenizer, read from its files without loading it (no transformers, no
download beyond what the source already fetched): ``tokenizer.json``'s ``added_tokens`` and
``tokenizer_config.json``'s ``added_tokens_decoder``. A grammar writes a marker that is one of them
in llguidance's token syntax, since llguidance treats every added token as special."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import AutoparserError
from ..sources.local import added_token_texts

FILES = ("tokenizer.json", "tokenizer_config.json")


def added_tokens_from(data: dict) -> dict[str, int]:
    """Text -> id from a parsed tokenizer.json or tokenizer_config.json (either may hold them)."""
    out: dict[str, int] = {}
    for i, text in added_token_texts(data).items():
        out.setdefault(text, i)
    return out


def added_tokens(path: str | Path) -> dict[str, int]:
    """The added tokens in a tokenizer file or a directory holding one; {} when it has none."""
    p = Path(path)
    files = [p / f for f in FILES] if p.is_dir() else [p]
    out: dict[str, int] = {}
    for f in files:
        if not f.is_file():
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise AutoparserError(f"cannot read tokenizer: {e}", str(f)) from None
        if isinstance(data, dict):
            for text, i in added_tokens_from(data).items():
                out.setdefault(text, i)
    if not p.exists():
        raise AutoparserError("no such tokenizer file or directory", str(p))
    return out
