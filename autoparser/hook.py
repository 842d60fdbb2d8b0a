"""Give tokenizers a ``response_template`` at load time.

``attach(tokenizer)`` infers one from the tokenizer's own chat template (through the cache) when the model
ships none, verified (see ``autoparser.verdict``): a template with fields left out is attached with one
logged warning, a refused one not at all (one warning); ``enable()`` makes every later ``from_pretrained`` (``AutoTokenizer`` included: it ends in
``PreTrainedTokenizerBase.from_pretrained`` of the concrete class) call it. A failure must never break
tokenizer loading, so it is one logged warning and the tokenizer is returned unchanged.

``AUTOPARSER_HOOK`` carries the choice into processes we do not start ourselves: an engine's workers
(spawned, so a patch in the parent does not reach them) import autoparser, through vLLM's plugin
loading or as the re-imported main module, and ``enable_from_env`` turns the hook on there.
``AUTOPARSER_HOOK=said`` is on too, for processes started after the operator was told the verdict in one
line (``autoparser serve``): they attach without repeating it.
"""

from __future__ import annotations

import functools
import logging
import os
import threading

from .errors import AutoparserError
from .sources.local import read_generation_config
from .sources.template_source import SPECIAL_TOKEN_KEYS, STOP_TOKENS, stop_tokens_from

logger = logging.getLogger("autoparser")
_lock = threading.Lock()
_original = None  # the classmethod object we replaced, while enabled
_quiet = False  # the verdict was already said (``AUTOPARSER_HOOK=said``): attach without repeating it
_served = False  # attach the form the engines accept (``emit.served``): on in an engine's processes (``plugin``)
ENV = "AUTOPARSER_HOOK"
ON = ("1", "true", "yes", "on")
SAID = "said"


def _special_tokens(tokenizer) -> dict[str, str]:
    """The same keys ``source.special_tokens_from_config`` reads, and the stop tokens ``load_dir`` reads, so
    hashes match the CLI's."""
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
    if stops := _stop_tokens(tokenizer, out.get("eos_token")):
        out[STOP_TOKENS] = stops
    return out


def _stop_tokens(tokenizer, eos_token: str | None) -> str | None:
    """``STOP_TOKENS`` as the CLI reads them, from the generation_config.json beside the tokenizer: its
    directory, or the HF cache of its Hub model (never the network: loading a tokenizer does not fetch it,
    loading the model does)."""
    name = getattr(tokenizer, "name_or_path", None)
    if not isinstance(name, str) or not name:
        return None
    from pathlib import Path

    path = Path(name) / "generation_config.json"
    if not path.is_file():
        from .sources.hub import cached_file

        try:
            path = cached_file(name, "generation_config.json")
        except Exception:  # noqa: BLE001 - a name that is no repo id
            path = None
    gen = read_generation_config(path) if path else None
    if gen is None:
        return None
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids = {i: str(getattr(t, "content", t)) for i, t in decoder.items() if isinstance(i, int)}
    return stop_tokens_from(gen, ids, eos_token)


def _source(tokenizer):
    """The tokenizer's chat template as a source, or None when it has none: of named templates, the one
    transformers renders requests with tools with (``sources.template_source.TOOLS_TEMPLATE``), the default kept to check
    against, as the CLI reads a model directory."""
    from .sources.template_source import TOOLS_TEMPLATE, TemplateSource, with_tools_template

    template = getattr(tokenizer, "chat_template", None)
    where = str(getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__)
    named = template if isinstance(template, dict) else {}
    template = named.get("default") if named else template
    tools = named.get(TOOLS_TEMPLATE)
    if not isinstance(tools, str) or not tools.strip():
        tools = None
    if not isinstance(template, str) or not template.strip():
        template = None
    if template is None and tools is None:
        return None
    src = TemplateSource(template or tools, _special_tokens(tokenizer), where)
    return with_tools_template(src, tools, where) if tools is not None else src


def attach(tokenizer):
    """Set ``tokenizer.response_template`` from its chat template unless it already has one; returns it."""
    try:
        if getattr(tokenizer, "response_template", None) is not None:
            return tokenizer
        src = _source(tokenizer)
        if src is None:
            return tokenizer
        import copy

        from .cache import source_entry
        from .verify.verdict import describe

        where = src.where
        entry, used = source_entry(src)
        for note in used.notes if used is not src and not _quiet else ():  # the default analysed in place of the tools template
            logger.warning("autoparser: %s: %s", where, note)
        template = copy.deepcopy(entry["response_template"])
        if _served:  # vLLM and SGLang refuse ``join`` on text fields, and join region chunks themselves
            from .emit import served

            template = served(template)
        tokenizer.response_template = template
        if entry["verdict"]["status"] == "degraded" and not _quiet:
            logger.warning("autoparser attached a response_template for %s without some fields: %s", where, describe(entry["verdict"]))
    except Exception as e:  # noqa: BLE001 - never break tokenizer loading
        name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
        why = e.message if isinstance(e, AutoparserError) else f"{type(e).__name__}: {e}"
        (logger.debug if _quiet and isinstance(e, AutoparserError) else logger.warning)("autoparser could not infer a response_template for %s: %s", name, why)
    return tokenizer


def asked(environ=None) -> str | None:
    """What ``AUTOPARSER_HOOK`` asks for: ``"on"``, ``"said"`` (on, the verdict already told) or None (off)."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    return SAID if value == SAID else "on" if value in ON else None


def enable_from_env(environ=None, served: bool = False) -> bool:
    """``enable()`` where ``AUTOPARSER_HOOK`` asks for it; whether the hook is now on. Never raises: a
    process that cannot patch tokenizer loading still serves, with one logged warning."""
    how = asked(environ)
    if how is None:
        return enabled()
    try:
        enable(quiet=how == SAID, served=served)
    except Exception as e:  # noqa: BLE001 - an engine's process must start whatever happens here
        logger.warning("autoparser could not hook tokenizer loading: %s: %s", type(e).__name__, e)
    return enabled()


def enable(quiet: bool = False, served: bool = False) -> None:
    """Patch tokenizer loading so every ``from_pretrained`` result goes through ``attach``. Idempotent.
    ``quiet``: a degraded or refused template is logged at debug level (the operator was told already).
    ``served``: attach the engines' form of the template (an engine process: its validator refuses the
    library form's ``join``), which keeps only a text field's last region in transformers itself."""
    global _original, _quiet, _served
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    _quiet, _served = quiet, served
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
    global _original, _quiet, _served
    _quiet = _served = False
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    with _lock:
        if _original is None:
            return
        PreTrainedTokenizerBase.from_pretrained = _original
        _original = None


def enabled() -> bool:
    return _original is not None
