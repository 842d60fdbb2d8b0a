"""Inference results cached by template hash, so loading a tokenizer does not re-run the analysis.

Two levels: a dict in this process, and one small JSON file per template under ``$AUTOPARSER_CACHE_DIR``
(default: the user cache dir, e.g. ``~/.cache/autoparser``). Each file records a fingerprint of the
autoparser code that produced it, so a changed analyzer never serves stale results. A file that is
unreadable, corrupt or from other code is a miss and gets rewritten; cache I/O never raises. Failures are
remembered in memory only (a time-budget failure on a busy machine must not stick).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import sys
import threading
from pathlib import Path

from .api import template_hash
from .errors import AutoparserError

FORMAT = 1
logger = logging.getLogger("autoparser")
_memory: dict[str, dict] = {}
_failures: dict[str, AutoparserError] = {}
_lock = threading.Lock()
_fingerprint: str | None = None


def cache_dir() -> Path:
    """``$AUTOPARSER_CACHE_DIR``, else the platform's user cache directory + ``autoparser``."""
    env = os.environ.get("AUTOPARSER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "autoparser" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "autoparser"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autoparser"


def code_fingerprint() -> str:
    """Hash of the package's own source and workaround data: results are only valid for the code that made them."""
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256(str(FORMAT).encode())
        pkg = Path(__file__).resolve().parent
        files = sorted(pkg.rglob("*.py"))
        try:
            from importlib import resources

            data = resources.files("autoparser.workarounds_data")
            files += sorted((Path(str(p)) for p in data.iterdir() if p.name.endswith(".json")), key=str)
        except (ImportError, OSError, TypeError):
            pass
        for p in files:
            try:
                h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
            except OSError:
                h.update(p.name.encode() + b"\0?\0")
        _fingerprint = h.hexdigest()[:16]
    return _fingerprint


def _key(chat_template: str, special_tokens: dict | None, reasoning_field: str) -> str:
    key = template_hash(chat_template, special_tokens)
    return key if reasoning_field == "thinking" else f"{key}-{reasoning_field}"


def _path(key: str) -> Path:
    return cache_dir() / f"{key}.json"


def _valid(entry: object, key: str) -> bool:
    return (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
            and entry.get("code") == code_fingerprint() and isinstance(entry.get("response_template"), dict))


def lookup(key: str) -> dict | None:
    """The cached entry for ``key`` (memory, then disk), or None."""
    entry = _memory.get(key)
    if entry is not None:
        return entry
    try:
        entry = json.loads(_path(key).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not _valid(entry, key):
        return None
    _memory[key] = entry
    return entry


def store(key: str, entry: dict) -> None:
    """Remember ``entry`` in memory and, best effort, on disk (atomically)."""
    _memory[key] = entry
    try:
        from .output import write_atomic

        write_atomic(_path(key), json.dumps(entry, ensure_ascii=False, indent=1) + "\n")
    except OSError as e:
        logger.debug("autoparser: cannot write cache entry %s: %s", key, e)


def cached_entry(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None,
                 reasoning_field: str = "thinking") -> dict:
    """The cache entry for a template, inferring (and storing) it on a miss. Raises ``AutoparserError``."""
    key = _key(chat_template, special_tokens, reasoning_field)
    entry = lookup(key)
    if entry is not None:
        return entry
    failure = _failures.get(key)
    if failure is not None:
        raise type(failure)(failure.message, where or failure.where)
    from .api import infer_result

    with _lock:  # one analysis at a time: its time budget is wall-clock and its memory guard process-wide
        entry = lookup(key)
        if entry is not None:
            return entry
        try:
            res = infer_result(chat_template, special_tokens, where=where, reasoning_field=reasoning_field)
        except AutoparserError as e:
            _failures[key] = e
            raise
        a = res.analysis
        entry = {"format": FORMAT, "key": key, "hash": res.hash, "code": code_fingerprint(),
                 "reasoning_field": reasoning_field, "response_template": res.template,
                 "reasoning": a.reasoning.mode, "tools": a.tools.format, "content": a.content.mode,
                 "warnings": list(res.warnings)}
        store(key, entry)
        return entry


def cached_infer(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None,
                 reasoning_field: str = "thinking") -> dict:
    """The response_template for a chat template, from the cache when possible (a fresh copy each call)."""
    entry = cached_entry(chat_template, special_tokens, where=where, reasoning_field=reasoning_field)
    return copy.deepcopy(entry["response_template"])


def clear_memory() -> None:
    """Forget the in-process level (tests; or after editing the analyzer in a live session)."""
    _memory.clear()
    _failures.clear()
