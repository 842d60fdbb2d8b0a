"""Layout -> an xgrammar ``structural_tag`` (``response_format`` in vLLM and SGLang).

The ``triggered_tags`` form: free text until a trigger, then a tag (literal ``begin``, JSON by schema,
literal ``end``); ``at_least_one`` for required, ``stop_after_first`` for one call. It states only
calls whose opener is literal text and whose body is one JSON object, each call standing alone (no
section around the calls, no array): other formats get the Lark grammar.

``begin`` and ``end`` carry the template's own layout byte for byte (``<tool_call>\\n`` …
``\\n</tool_call>``: the whitespace the template renders inside the markers), since a tag that omits it
is accepted by both engines and then pushes the model off its own format. Whitespace outside the
markers is free text between tags. Object-per-call formats get one tag whose JSON is the whole call
object (an anyOf over the tools), as the template renders it; header formats one tag per tool.

A lead before calls (``call_lead``) is never stated: one found by diff is the separator between calls
(declined with the separators), and the optional lead of a call with no marker (``Layout.lead``, Llama
3.1's ``<|python_tag|>``) has no literal trigger to begin a tag at, as such calls have none."""

from __future__ import annotations

from .lark import call_schema
from .layout import NAME, Layout, NoGrammar, parameters


def _json_object_tag(lay: Layout, fns: list[dict]) -> dict:
    schemas = [call_schema(lay, fn) for fn in fns]
    begin, end = lay.call_start_raw.lstrip(), lay.call_end_raw.rstrip()
    return {"begin": begin, "content": {"type": "json_schema", "json_schema": schemas[0] if len(schemas) == 1 else {"anyOf": schemas}}, "end": end}


def _header_tag(lay: Layout, fn: dict) -> dict:
    if any(isinstance(item, tuple) and item != NAME for item in lay.header):
        raise NoGrammar("the call header carries an id or index, which a literal begin cannot state")
    begin = "".join(fn["name"] if item == NAME else item for item in lay.header)
    return {"begin": begin, "content": {"type": "json_schema", "json_schema": parameters(fn)}, "end": lay.call_end_raw.rstrip()}


def structural_tag(lay: Layout, fns: list[dict], *, tool_choice: str = "auto", parallel: bool = True) -> dict:
    if lay.lead:  # only calls with no marker of their own have one, and a triggered tag needs a literal trigger
        raise NoGrammar(f"calls may start with the lead {lay.lead!r} or with no marker at all, which triggered tags cannot state; use the Lark grammar")
    if lay.section_start or lay.section_end or lay.separator.strip():
        raise NoGrammar("calls sit in a section (or between separators), which triggered tags cannot state; use the Lark grammar")
    if lay.kind == "json" and lay.call_start:
        tags = [_json_object_tag(lay, fns)]
    elif lay.kind == "tagged_json":
        tags = [_header_tag(lay, fn) for fn in fns]
    else:
        raise NoGrammar(f"{lay.kind} calls need the Lark grammar (a structural tag states literal openers with JSON)")
    if tool_choice == "none":
        raise NoGrammar("tool_choice none needs no structural tag")
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": [lay.trigger],
            "tags": tags,
            "at_least_one": tool_choice != "auto",
            "stop_after_first": not parallel,
        },
    }
