"""Outputs written in the format as a model writes it, beside the template's own renderings.

A template's rendering of a call in history is often lossy: values printed unquoted
(``[f(city=Paris)]``), a list or dict printed as Python inside quotes, arguments glued with no separator
(``f(a="x"b=1)``). A model writes the format properly: its values are the format's literals (JSON, or
Python literals properly quoted) and its separators the ones the format allows. A tool-call case that
fails only that way is judged again on the output written so, and is a ``limit`` (the template's history
is lossy, the format is not) when that parses back; the field is kept with the limit stated.

Written only where it cannot hide a wrong field: the format is known exactly (``analysis.layout``, the
same statement of the format the grammar writers read; a format it refuses stays judged on the renderings
alone), and the parse of the template's own text already found the expected calls by name, in order, with
everything else in the message right: only argument values differ. The calls are written in place of
the rendered ones (from the first call's opener to the end-of-turn marker), so the text around them is
the template's own."""

from __future__ import annotations

import dataclasses
import json

import regex as re

from ..analysis.layout import NAME, Layout, NoGrammar, layout
from ..analysis.model import Analysis

# What a case with lossy calls says (verdict ``limits``, one warning).
LOSSY = ("the template renders tool-call argument values in history lossily (unquoted, unescaped, printed as Python "
         "or glued): calls a model writes in the format parse, text written as the template renders history would not")
# What the emitted parser itself cannot read back in a format, whoever writes it (docs/FORMATS.md §7b,
# argument values): a pythonic string whose escapes JSON cannot read as Python does (single-quoted, an escape
# JSON lacks, two apostrophes) is kept as written, escapes included.
PY_ESCAPED = ("pythonic string arguments written with escapes in single quotes (or with an escape JSON lacks, or "
              "two apostrophes) come back as written, escapes included")


def format_limits(lay: Layout) -> dict[str, str]:
    """JSON kinds of values (``roundtrip._kinds``) the format's parser cannot read back as a model writes them."""
    return {"escaped": PY_ESCAPED} if lay.kind == "pythonic" and not lay.py_json else {}


def format_layout(a: Analysis) -> Layout | None:
    """The format as a model writes it, or None when it is not known exactly. The kinds of values the
    analysis found unreadable (``Tools.unreadable``, listed in ``uncovered`` too) are a limit of the
    rendering, not of the format, so they do not make it unknown; anything else uncovered does."""
    t = a.tools
    unreadable = {why for _, why in t.unreadable}
    if any(u not in unreadable for u in t.uncovered):
        return None
    try:
        return layout(dataclasses.replace(a, tools=dataclasses.replace(t, uncovered=())), reasoning_open=False)
    except NoGrammar:
        return None


def _py(value, quote: str) -> str:
    """A Python/JSON literal as a model writes it in a pythonic call: strings in the template's quote
    (JSON-escaped where they hold it, a backslash or a control character), everything else as JSON."""
    if isinstance(value, str):
        if quote == "'" and not any(ch in value for ch in "'\\") and value.isprintable():
            return f"'{value}'"
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _header(lay: Layout, name: str, index: int, call_id: str) -> str | None:
    """A tag format's call header with the name, index or id where the layout has them."""
    out = []
    for item in lay.header:
        if item == NAME:
            out.append(name)
        elif isinstance(item, tuple):
            if re.fullmatch(item[1], str(index)):
                out.append(str(index))
            elif call_id and re.fullmatch(item[1], call_id):
                out.append(call_id)
            else:
                return None
        else:
            out.append(item)
    return "".join(out)


def _set(obj: dict, path: tuple, value) -> None:
    for k in path[:-1]:
        obj = obj.setdefault(k, {})
    obj[path[-1]] = value


def _object(lay: Layout, name: str, args: dict, call_id: str) -> dict:
    """A JSON call object with the name, arguments and id at the layout's paths, the key the template
    writes first first."""
    obj: dict = {}
    paths = [(lay.name_path, name), (lay.args_path, args)] + ([(lay.id_path, call_id)] if lay.id_path and call_id else [])
    paths.sort(key=lambda p: p[0][:1] != (lay.first_key,))
    for path, value in paths:
        _set(obj, path, value)
    return obj


def write_calls(lay: Layout, calls: list[dict]) -> str | None:
    """The calls (``[{"name", "arguments", "id"}]``) as a model writes them in this format, from the
    section opener to its end, or None where the layout does not say how."""
    dump = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    if lay.kind in ("json", "json_array"):
        objs = [_object(lay, c["name"], c["arguments"], c.get("id") or "") for c in calls]
        if lay.kind == "json_array":
            return lay.call_start + "[" + ", ".join(map(dump, objs)) + "]" + lay.call_end
        sep = (lay.separator or "") + "\n"
        return sep.join(lay.call_start + dump(o) + lay.call_end for o in objs)
    if lay.kind == "json_key":
        return lay.call_start + "[" + ", ".join(dump({c["name"]: c["arguments"]}) for c in calls) + "]" + lay.call_end
    parts = []
    for i, c in enumerate(calls):
        head = _header(lay, c["name"], i, c.get("id") or "")
        if head is None:
            return None
        args = c["arguments"]
        if lay.kind == "tagged_json":
            body = dump(args)
        elif lay.kind == "pythonic":
            body = ", ".join(f"{k}={dump(v) if lay.py_json else _py(v, lay.py_quote)}" for k, v in args.items())
        elif lay.kind == "tagged_kv":
            sep = lay.arg_separator or ""
            body = sep.join(f"{lay.key_prefix}{k}{lay.key_suffix}{v if isinstance(v, str) else dump(v)}{lay.value_suffix}" for k, v in args.items())
        else:  # dialects and headed replies: their quoting is the analysis' own finding, not written here
            return None
        parts.append(head + body + lay.call_end)
    if lay.kind == "pythonic":  # a Python list's comma, or the template's own separator (a newline)
        sep = ", " if lay.separator in ("", ",") else lay.separator
    else:
        sep = lay.separator or "\n"
    return lay.section_start + sep.join(parts) + lay.section_end


def _region(lay: Layout, text: str, names: list[str], after: int, before: int | None) -> tuple[int, int] | None:
    """Where the rendered calls stand in ``text``: from the first call's opener (the section or call
    opener, the header's first literal, or the JSON value holding the first name) to the end-of-turn
    marker after the last call's name (or the content written after them), through the section's or the
    last call's closer."""
    first = text.find(names[0], after)
    if first < 0:
        return None
    last = first
    for n in names[1:]:
        last = text.find(n, last + 1)
        if last < 0:
            return None
    openers = [lay.section_start, lay.call_start, lay.lead]
    if lay.header and isinstance(lay.header[0], str):
        openers.append(lay.header[0])
    if lay.kind.startswith("json"):
        openers += ["[", "{"]
    found = [text.rfind(o, after, first + (len(o) if o and names[0].startswith(o) else 0)) for o in openers if o]
    found = [i for i in found if i >= 0]
    start = min(found) if found else first
    if lay.kind == "pythonic" and not lay.section_start:
        start = first
    ends = [i for i in (text.find(e, last) for e in lay.ends if e) if i >= 0]
    if before is not None and before > last:  # content the template writes after the calls
        ends.append(before)
    end = min(ends) if ends else len(text)
    if lay.section_end and lay.section_end in text[last:end]:
        end = text.rfind(lay.section_end, last, end) + len(lay.section_end)
    elif lay.call_end and lay.call_end in text[last:end]:
        end = text.rfind(lay.call_end, last, end) + len(lay.call_end)
    end = start + len(text[start:end].rstrip())
    return start, end


def written(a: Analysis, lay: Layout, text: str, expected: dict) -> str | None:
    """``text`` (a rendering of a turn with calls) with its calls written as a model writes them, or None."""
    calls = expected.get("tool_calls") or []
    if not calls:
        return None
    after, before = 0, None
    for key in ("thinking", "content"):
        v = expected.get(key)
        if v and v in text:
            at = text.find(v)
            if key == "content" and at > text.find(calls[0]["name"]) >= 0:
                before = at  # written after the calls
            else:
                after = max(after, at + len(v))
    where = _region(lay, text, [c["name"] for c in calls], after, before)
    body = write_calls(lay, calls)
    if where is None or body is None:
        return None
    start, end = where
    return text[:start] + body + text[end:]
