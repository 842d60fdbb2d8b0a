"""Results and error lines as the CLI and the batch runner write them, which must not import each other."""

from __future__ import annotations

import re

MAX_ERROR = 400  # characters of one error line (templates raise messages of any size)


def one_line(text: object) -> str:
    """An error message as one printable line: templates and file names may carry newlines or escapes."""
    text = re.sub(r"\s*[\r\n]+\s*", " | ", str(text).strip())
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…"


def record(template: dict, verdict: dict | None) -> str:
    """What ``infer -o`` and ``batch`` write: the response_template with the verdict on it. Readers take
    ``["response_template"]`` (``unwrap``); tokenizer_config.json gets the bare template."""
    import json

    return json.dumps({"response_template": template, "verdict": verdict}, indent=2, ensure_ascii=False) + "\n"


def unwrap(data: object) -> object:
    """The response_template inside a record written by ``record``, or ``data`` itself (a bare template)."""
    if isinstance(data, dict) and "response_template" in data and "fields" not in data:
        return data["response_template"]
    return data


def with_key(text: str, key: str, value: object) -> str:
    """The JSON object ``text`` with top-level ``key`` set to ``value``, every other byte unchanged: a value of
    ``key`` already there (the last, as JSON readers take it) is replaced where it stands, else the member is
    added after the last one. The new text follows the file's own style (indent unit, line ending,
    separators, ASCII escapes). ValueError when ``text`` is not one JSON object or the edit would not read back."""
    import json

    members, close = _members(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    ascii_only = text.isascii() and "\\u" in text  # a file that escapes its non-ASCII characters
    indent = _indent(text, members, close)
    if indent is None:  # all on one line: keep its separators
        colon = ": " if re.search(r'"[ \t]*:[ \t]', text) else ":"
        comma = ", " if re.search(r",[ \t]", text) else ","
        rendered = json.dumps(value, ensure_ascii=ascii_only, separators=(comma, colon))
        lead, tail = (comma if members else ""), ""
    else:
        colon = ": "
        rendered = json.dumps(value, ensure_ascii=ascii_only, indent=indent).replace("\n", newline + indent)
        lead, tail = ("," if members else "") + newline + indent, ""
    same = [m for m in members if m[0] == key]
    if same:
        _, _, start, end = same[-1]
        out = text[:start] + rendered + text[end:]
    else:
        at = members[-1][3] if members else text.index("{") + 1  # an empty object's own line break stays before its brace
        out = text[:at] + lead + json.dumps(key, ensure_ascii=ascii_only) + colon + rendered + tail + text[at:]
    if json.loads(out) != {**json.loads(text), key: value}:
        raise ValueError("the edited file would not read back as the same object with the new key")
    return out


_WS = re.compile(r"[ \t\n\r]*")


def _members(text: str) -> tuple[list[tuple[str, int, int, int]], int]:
    """(key, key start, value start, value end) of each top-level member of the JSON object ``text``, and
    where its closing brace is."""
    import json

    decoder = json.JSONDecoder()
    i = _WS.match(text, 0).end()
    if text[i:i + 1] != "{":
        raise ValueError("not a JSON object")
    i = _WS.match(text, i + 1).end()
    members: list[tuple[str, int, int, int]] = []
    if text[i:i + 1] == "}":
        return members, i
    while True:
        if text[i:i + 1] != '"':
            raise ValueError(f"expected a key at character {i}")
        key_start = i
        key, i = decoder.raw_decode(text, i)
        i = _WS.match(text, i).end()
        if text[i:i + 1] != ":":
            raise ValueError(f"expected ':' at character {i}")
        i = _WS.match(text, i + 1).end()
        _, end = decoder.raw_decode(text, i)
        members.append((key, key_start, i, end))
        i = _WS.match(text, end).end()
        if text[i:i + 1] == "}":
            return members, i
        if text[i:i + 1] != ",":
            raise ValueError(f"expected ',' or '}}' at character {i}")
        i = _WS.match(text, i + 1).end()


def _indent(text: str, members: list, close: int) -> str | None:
    """The indent unit of a pretty-printed object: the blanks before its first key on that key's own line;
    None when the object is written on one line (two spaces for an empty object spread over lines)."""
    if not members:
        return "  " if "\n" in text[text.index("{"):close] else None
    start = members[0][1]
    line_start = text.rfind("\n", 0, start) + 1
    if line_start == 0 or text[line_start:start].strip(" \t"):
        return None
    return text[line_start:start] or None
