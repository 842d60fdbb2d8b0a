"""Constrained decoding from the same analysis: ``layout`` (what a turn may hold), ``lark`` (llguidance's
Lark), ``structural_tag`` (xgrammar's triggered tags), ``tokens`` (a tokenizer's added tokens, which
llguidance matches only by their token syntax), ``build`` (for verified templates only).

``autoparser.grammar`` is the function below (the package's modules are reached by their full names)."""

from .build import grammar

__all__ = ["grammar"]
