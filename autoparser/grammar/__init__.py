"""Constrained decoding from the same analysis: ``layout`` (what a turn may hold), ``lark`` (llguidance's
Lark), ``structural_tag`` (xgrammar's triggered tags), ``tokens`` (a tokenizer's added tokens, which
llguidance matches only by their token syntax), ``build`` (for verified templates only).

``autoparser.grammar`` is the function below (the package's modules are reached by their full names)."""

from __future__ import annotations


def grammar(chat_template: str, tools: list, **options):
    """``autoparser.grammar.build.grammar`` (its docstring gives the options). Loaded on the first call:
    ``import autoparser`` binds this name, and the CLI's start-up should not pay for the grammar writers."""
    from .build import grammar as build_grammar

    return build_grammar(chat_template, tools, **options)


__all__ = ["grammar"]
