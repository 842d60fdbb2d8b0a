"""Message normalisation shared by the tests that compare parsed messages with expected ones written by
other projects (llama.cpp's cases, the real-output set): arguments as JSON values, calls as name,
arguments and (where written) id, whatever shape the source gives them in."""

from __future__ import annotations

import json
from typing import Any


def json_args(v: Any) -> Any:
    """Arguments given as a JSON string read as their value; anything else as it is."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def norm_calls(calls: Any) -> list[dict]:
    """Each call as ``{"name", "arguments"[, "id"]}``: flat or under ``function``, one call or a list;
    absent arguments are ``{}``; an entry that is no object is kept, marked malformed."""
    out = []
    for tc in calls if isinstance(calls, list) else ([] if calls is None else [calls]):
        if not isinstance(tc, dict):
            out.append({"malformed": repr(tc)})
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
        item = {"name": fn.get("name"), "arguments": json_args(fn.get("arguments"))}
        if item["arguments"] is None:
            item["arguments"] = {}
        if tc.get("id") not in (None, ""):
            item["id"] = tc["id"]
        out.append(item)
    return out
