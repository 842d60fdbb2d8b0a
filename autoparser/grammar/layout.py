"""The turn's layout lives in ``analysis.layout`` (verify writes calls in the format from it too); the
grammar writers and their callers keep importing it from here."""

from ..analysis.layout import KNOWN_TOOL_FIELDS, NAME, Layout, NoGrammar, header_items, layout, marker_texts, parameters, select_tools

__all__ = ["KNOWN_TOOL_FIELDS", "NAME", "Layout", "NoGrammar", "header_items", "layout", "marker_texts", "parameters", "select_tools"]
