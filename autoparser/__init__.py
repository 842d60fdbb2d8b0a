"""autoparser: infer a transformers ``response_template`` from a model's own chat template.

The public names are loaded on first use (PEP 562): the pipeline imports transformers, which takes seconds,
and ``autoparser --help`` or ``autoparser.errors`` should not pay for it."""

from __future__ import annotations

import importlib

from .errors import AnalysisError, AutoparserError, SourceError, TemplateError, VerificationError, WorkaroundError
from .grammar import grammar  # bound here so that the subpackage ``autoparser.grammar`` never shadows the function

__version__ = "0.1.0"  # pyproject reads it from here

_LAZY = {
    "infer": ".pipeline", "infer_result": ".pipeline", "analyze": ".pipeline", "Result": ".pipeline", "template_hash": ".pipeline",
    "attach": ".hook", "enable": ".hook", "disable": ".hook",
}

__all__ = ["__version__", "infer", "grammar", "infer_result", "analyze", "Result", "template_hash", "AutoparserError", "AnalysisError",
           "SourceError", "TemplateError", "VerificationError", "WorkaroundError", "attach", "enable", "disable"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'autoparser' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
