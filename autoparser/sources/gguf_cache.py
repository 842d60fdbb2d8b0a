"""The part of a Hub GGUF header autoparser reads, kept on disk, so a GGUF repo it has read once is read again
without the network, and with one question to the Hub while its commit stays the same.

The Hugging Face cache holds whole files, and a GGUF file is many GB of which ``gguf.read_metadata`` reads only
the first few MB by byte ranges; what it keeps of them is small (the chat templates, a few token ids and their
texts). That is what is kept here, one JSON file per way of asking (repo, revision, file or quantisation),
under ``files.cache_dir()/gguf``, with the commit it was read at and the file chosen. A file that is unreadable,
corrupt or of another format is a miss; writing it is best effort (a read-only cache loses nothing).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..files import cache_dir, write_atomic
from .gguf import TOKENS_KEY, token_ids

FORMAT = 1


def _path(asked: list[str]) -> Path:
    return cache_dir() / "gguf" / (hashlib.sha256(json.dumps(asked).encode()).hexdigest()[:32] + ".json")


def _asked(repo_id: str, revision: str | None, file: str | None, quant: str | None) -> list[str]:
    return [repo_id, revision or "", file or "", quant or ""]


def _scalar(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def recall(repo_id: str, revision: str | None, file: str | None, quant: str | None) -> tuple[str | None, str, dict] | None:
    """(the commit it was read at, or None where the Hub named none; the file chosen; its metadata as
    ``read_metadata`` gives it) for a GGUF repo asked this way before, or None."""
    asked = _asked(repo_id, revision, file, quant)
    try:
        entry = json.loads(_path(asked).read_text(encoding="utf-8"))
        if entry.get("format") != FORMAT or entry.get("asked") != asked:
            return None
        commit, chosen, kept, tokens = entry["commit"], entry["file"], entry["meta"], entry["tokens"]
        if not (commit is None or isinstance(commit, str)) or not isinstance(chosen, str) or not chosen:
            return None
        if not isinstance(kept, dict) or not all(isinstance(k, str) and _scalar(v) for k, v in kept.items()):
            return None
        meta = dict(kept)
        meta[TOKENS_KEY] = {int(i): bytes.fromhex(text) for i, text in tokens.items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return commit, chosen, meta


def keep(repo_id: str, revision: str | None, file: str | None, quant: str | None, commit: str | None, chosen: str,
         meta: dict) -> None:
    """Remember what ``source_from_metadata`` reads of ``meta``: its string and integer keys (the templates, the
    token ids, the shard number) and the texts of the special and stop tokens those ids name."""
    kept = {k: v for k, v in meta.items() if k != TOKENS_KEY and _scalar(v)}
    ids = token_ids(meta)
    tokens = {str(i): text.hex() for i, text in meta.get(TOKENS_KEY, {}).items() if i in ids}
    asked = _asked(repo_id, revision, file, quant)
    entry = {"format": FORMAT, "asked": asked, "commit": commit, "file": chosen, "meta": kept, "tokens": tokens}
    try:
        write_atomic(_path(asked), json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError:
        pass
