"""Inference results cached by template hash, so loading a tokenizer does not re-run the analysis.

Two levels: a dict in this process, and one small JSON file per template under ``$AUTOPARSER_CACHE_DIR``
(default: the user cache dir, e.g. ``~/.cache/autoparser``). Each file records a fingerprint of the
autoparser code that produced it, so a changed analyzer never serves stale results. A file that is
unreadable, corrupt or from other code is a miss and gets rewritten; cache I/O never raises. Failures are
remembered in memory only (a time-budget failure on a busy machine must not stick); a refusal by verification
is deterministic, so it is stored like a result (no template, its verdict), and a warm load of any template
costs a file read, not an analysis.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
from pathlib import Path

from .files import cache_dir, write_atomic
from .pipeline import template_hash
from .errors import AutoparserError, VerificationError

FORMAT = 2  # 2: entries carry the verdict; refusals are entries without a template
logger = logging.getLogger("autoparser")
_memory: dict[str, dict] = {}
_failures: dict[str, AutoparserError] = {}
_lock = threading.Lock()
_fingerprint: str | None = None


def code_fingerprint() -> str:
    """Hash of the package's own source and workaround data, and of the transformers release whose parser
    verified them: results are only valid for the code that made them (a verdict is a fact about one
    parser; 5.24 holds matches 5.23 committed)."""
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256(str(FORMAT).encode())
        try:
            from importlib.metadata import version

            h.update(b"transformers " + version("transformers").encode() + b"\0")
        except Exception:  # noqa: BLE001 - metadata missing (a vendored copy): the source hash still applies
            h.update(b"transformers ?\0")
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
    if not (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key and entry.get("code") == code_fingerprint()):
        return False
    verdict = entry.get("verdict")
    refused = isinstance(verdict, dict) and verdict.get("status") == "refused" and entry.get("response_template") is None
    return refused or (isinstance(entry.get("response_template"), dict) and isinstance(verdict, dict))


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
        write_atomic(_path(key), json.dumps(entry, ensure_ascii=False, indent=1) + "\n")
    except OSError as e:
        logger.debug("autoparser: cannot write cache entry %s: %s", key, e)


def cached_entry(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None,
                 reasoning_field: str = "thinking") -> dict:
    """The cache entry for a template, inferring (and storing) it on a miss. Raises ``AutoparserError``
    (``VerificationError`` for a refused template, from the cache too)."""
    key = _key(chat_template, special_tokens, reasoning_field)
    entry = lookup(key)
    if entry is not None:
        return _refuse(entry, where)
    failure = _failures.get(key)
    if failure is not None:
        raise type(failure)(failure.message, where or failure.where)
    from .pipeline import infer_result

    with _lock:  # one analysis at a time: its time budget is wall-clock and its memory guard process-wide
        entry = lookup(key)
        if entry is not None:
            return _refuse(entry, where)
        head = {"format": FORMAT, "key": key, "hash": template_hash(chat_template, special_tokens), "code": code_fingerprint(),
                "reasoning_field": reasoning_field}
        try:
            res = infer_result(chat_template, special_tokens, where=where, reasoning_field=reasoning_field)
        except VerificationError as e:
            store(key, {**head, "response_template": None, "verdict": e.verdict, "message": e.message})
            raise
        except AutoparserError as e:
            _failures[key] = e
            raise
        a = res.analysis
        entry = {**head, "response_template": res.template, "verdict": res.verdict,
                 "reasoning": a.reasoning.mode, "tools": a.tools.format, "content": a.content.mode,
                 "warnings": list(res.warnings)}
        store(key, entry)
        return entry


def _refuse(entry: dict, where: str | None) -> dict:
    """``entry``, unless it records a refusal: then its ``VerificationError``."""
    if entry.get("response_template") is None:
        raise VerificationError(entry.get("message") or f"no verified response_template: {entry['verdict'].get('reason')}",
                                where, copy.deepcopy(entry["verdict"]))
    return entry


def source_entry(src, *, reasoning_field: str = "thinking"):
    """(the cache entry, the source it is for) as ``pipeline.infer_source`` chooses between a source's tools
    template and its default (``pipeline.prefer_tools``); each template's entry from the cache."""
    from .pipeline import prefer_tools

    def entry(s):
        return cached_entry(s.template, s.special_tokens, where=s.where, reasoning_field=reasoning_field)

    return prefer_tools(src, entry, lambda e: e["response_template"], reasoning_field)


def cached_infer(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None,
                 reasoning_field: str = "thinking") -> dict:
    """The response_template for a chat template, from the cache when possible (a fresh copy each call)."""
    entry = cached_entry(chat_template, special_tokens, where=where, reasoning_field=reasoning_field)
    return copy.deepcopy(entry["response_template"])


def clear_memory() -> None:
    """Forget the in-process level, ``infer_result``'s memo included (tests; or after editing the analyzer
    in a live session)."""
    from .pipeline import forget

    _memory.clear()
    _failures.clear()
    forget()
