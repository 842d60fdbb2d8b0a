"""The user's files as every command reads and writes them: ``-`` is stdin or stdout, and a file that
cannot be used is one ``AutoparserError`` line before any analysis starts (tools that are not a list of
tool objects, a response_template that is not an object)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import AutoparserError
from ..files import write_atomic
from ..output import unwrap


def read_text(path: str, what: str) -> str:
    """A UTF-8 file, or stdin for ``-``."""
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode("utf-8")
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AutoparserError(f"cannot read {what}: {getattr(e, 'strerror', None) or e}", "stdin" if path == "-" else path) from None


def _read_json(path: str, what: str) -> object:
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as e:
        raise AutoparserError(f"cannot read {what}: not JSON ({e})", path) from None
    except RecursionError:
        raise AutoparserError(f"cannot read {what}: JSON nests too deeply", path) from None


def load_tools(path: str) -> list:
    """A tools file: a JSON list of tools, or an object with a ``tools`` list (a request body)."""
    tools = _read_json(path, "tools")
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise AutoparserError("cannot read tools: want a JSON list of tool objects", path)
    return tools


_JSON_TYPES = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def load_response_template(path: str) -> dict:
    """A response_template file: the bare template, or the record ``infer -o`` writes. Anything but an object
    transformers' loader accepts is refused here, in one line, rather than as a failure of every case."""
    data = unwrap(_read_json(path, "response template"))
    if not isinstance(data, dict):
        raise AutoparserError(f"not a response_template: want a JSON object, got {_JSON_TYPES.get(type(data), type(data).__name__)}", path)
    from transformers.utils.chat_parsing.response_templates import load_response_template as transformers_loads

    try:
        transformers_loads(data)
    except Exception as e:  # noqa: BLE001 - the loader is third-party: whatever it refuses is one line
        raise AutoparserError(f"not a response_template transformers accepts: {e}", path) from None
    return data


def write_output(path: str, text: str) -> None:
    """``text`` to the file (atomically) or, for ``-``, to stdout."""
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        write_atomic(path, text)
    except OSError as e:
        raise AutoparserError(f"cannot write: {e.strerror or e}", path) from None
