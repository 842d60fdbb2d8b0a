"""Constrained decoding from the same analysis: ``layout`` (what a turn may hold), ``lark`` (llguidance's
Lark), ``structural_tag`` (xgrammar's triggered tags), ``build`` (for verified templates only).

``autoparser.grammar`` is the function below (the package's modules are reached by their full names)."""

from .build import grammar

__all__ = ["grammar"]
