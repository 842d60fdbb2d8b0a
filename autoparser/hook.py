"""Give tokenizers a ``response_template`` at load time.

``attach(tokenizer)`` infers one from the tokenizer's own chat template (through the cache) when the model
ships none, verified (see ``autoparser.verdict``): a template with fields left out is attached with one
logged warning, a refused one not at all (one warning); ``enable()`` makes every later ``from_pretrained`` (``AutoTokenizer`` included: it ends in
``PreTrainedTokenizerBase.from_pretrained`` of the concrete class) call it. A failure must never break
tokenizer loading, so it is one logged warning and the tokenizer is returned unchanged.
"""

from __future__ import annotations

import functools
import logging
import threading

from .errors import AutoparserError
from .sources.local import SPECIAL_TOKEN_KEYS

logger = logging.getLogger("autoparser")
_lock = threading.Lock()
_original = None  # the classmethod object we replaced, while enabled


def _special_tokens(tokenizer) -> dict[str, str]:
    """The same keys ``source.special_tokens_from_config`` reads, so hashes match the CLI's."""
    out = {}
    for key in SPECIAL_TOKEN_KEYS:
        try:
            value = getattr(tokenizer, key, None)
        except Exception:  # noqa: BLE001 - some tokenizers raise for unset tokens
            value = None
        if isinstance(value, str):
            out[key] = value
        elif value is not None and isinstance(getattr(value, "content", None), str):
            out[key] = value.content
    return out


def attach(tokenizer):
    """Set ``tokenizer.response_template`` from its chat template unless it already has one; returns it."""
    try:
        if getattr(tokenizer, "response_template", None) is not None:
            return tokenizer
        template = getattr(tokenizer, "chat_template", None)
        if isinstance(template, dict):
            template = template.get("default")
        if not isinstance(template, str) or not template.strip():
            return tokenizer
        import copy

        from .cache import cached_entry
        from .verify.verdict import describe

        where = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
        entry = cached_entry(template, _special_tokens(tokenizer), where=str(where))
        tokenizer.response_template = copy.deepcopy(entry["response_template"])
        if entry["verdict"]["status"] == "degraded":
            logger.warning("autoparser attached a response_template for %s without some fields: %s", where, describe(entry["verdict"]))
    except Exception as e:  # noqa: BLE001 - never break tokenizer loading
        name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
        why = e.message if isinstance(e, AutoparserError) else f"{type(e).__name__}: {e}"
        logger.warning("autoparser could not infer a response_template for %s: %s", name, why)
    return tokenizer


def enable() -> None:
    """Patch tokenizer loading so every ``from_pretrained`` result goes through ``attach``. Idempotent."""
    global _original
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    with _lock:
        if _original is not None:
            return
        original = PreTrainedTokenizerBase.__dict__["from_pretrained"]
        func = original.__func__

        @functools.wraps(func)
        def from_pretrained(cls, *args, **kwargs):
            return attach(func(cls, *args, **kwargs))

        from_pretrained.__autoparser__ = True
        PreTrainedTokenizerBase.from_pretrained = classmethod(from_pretrained)
        _original = original


def disable() -> None:
    """Undo ``enable``. Idempotent."""
    global _original
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    with _lock:
        if _original is None:
            return
        PreTrainedTokenizerBase.from_pretrained = _original
        _original = None


def enabled() -> bool:
    return _original is not None
