"""Layout -> an xgrammar ``structural_tag`` (``response_format`` in vLLM and SGLang).

The ``triggered_tags`` form: free text until a trigger, then one tag per tool (literal ``begin``, JSON
arguments by schema, literal ``end``); ``at_least_one`` for required, ``stop_after_first`` for one
call. It states only calls whose header is literal text and whose arguments are a JSON object, each
call standing alone (no section around the calls, no array): other formats get the Lark grammar."""

from __future__ import annotations

from .layout import NAME, Layout, NoGrammar, parameters


def _json_object_tag(lay: Layout, fn: dict) -> dict:
    if lay.name_path != ("name",) or len(lay.args_path) != 1 or lay.id_path or lay.first_key not in ("", "name"):
        raise NoGrammar("call objects with other keys than a leading name and its arguments need the Lark grammar")
    begin = f'{lay.call_start}{{"name": "{fn["name"]}", "{lay.args_path[0]}": '
    return {"begin": begin, "content": {"type": "json_schema", "json_schema": parameters(fn)}, "end": "}" + lay.call_end}


def _header_tag(lay: Layout, fn: dict) -> dict:
    if any(isinstance(item, tuple) and item != NAME for item in lay.header):
        raise NoGrammar("the call header carries an id or index, which a literal begin cannot state")
    begin = "".join(fn["name"] if item == NAME else item for item in lay.header)
    return {"begin": begin, "content": {"type": "json_schema", "json_schema": parameters(fn)}, "end": lay.call_end}


def structural_tag(lay: Layout, fns: list[dict], *, tool_choice: str = "auto", parallel: bool = True) -> dict:
    if lay.section_start or lay.section_end or lay.separator:
        raise NoGrammar("calls sit in a section (or between separators), which triggered tags cannot state; use the Lark grammar")
    if lay.kind == "json" and lay.call_start:
        tags = [_json_object_tag(lay, fn) for fn in fns]
    elif lay.kind == "tagged_json":
        tags = [_header_tag(lay, fn) for fn in fns]
    else:
        raise NoGrammar(f"{lay.kind} calls need the Lark grammar (a structural tag states literal headers with JSON arguments)")
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
