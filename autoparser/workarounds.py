"""Workarounds: what the diffs cannot find, kept as data apart from the analysis.

Each ``workarounds/*.json`` file holds one object (or a list of them)::

    {"name": "...", "why": "one line", "match": ["substring of the template source", ...],
     "when": {"reasoning.mode": "NONE"}, "set": {"reasoning.end": "</think>"}}

``match`` substrings must all occur in the template source; ``when`` (optional) compares analysis
fields before the change; ``set`` overrides analysis fields (dotted paths into the Analysis).
"""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .analysis.model import Analysis
from .errors import WorkaroundError

_KEYS = {"name", "why", "match", "when", "set"}


@dataclasses.dataclass(frozen=True)
class Workaround:
    name: str
    why: str
    match: tuple[str, ...]
    when: tuple[tuple[str, object], ...]
    set: tuple[tuple[str, object], ...]


def _get(obj, path: str):
    for part in path.split("."):
        if not dataclasses.is_dataclass(obj) or not hasattr(obj, part):
            raise KeyError(path)
        obj = getattr(obj, part)
    return obj


def _replace(obj, path: list[str], value):
    head, *rest = path
    if not dataclasses.is_dataclass(obj) or not any(f.name == head for f in dataclasses.fields(obj)):
        raise KeyError(head)
    current = getattr(obj, head)
    if rest:
        value = _replace(current, rest, value)
    elif isinstance(current, tuple) and isinstance(value, list):
        value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return dataclasses.replace(obj, **{head: value})


def _validate(raw: object, where: str) -> Workaround:
    if not isinstance(raw, dict):
        raise WorkaroundError("each workaround must be a JSON object", where)
    unknown = set(raw) - _KEYS
    if unknown:
        raise WorkaroundError(f"unknown keys {sorted(unknown)}", where)
    for key in ("name", "why"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise WorkaroundError(f"'{key}' must be a non-empty string", where)
    match = raw.get("match")
    if isinstance(match, str):
        match = [match]
    if not (isinstance(match, list) and match and all(isinstance(m, str) and m for m in match)):
        raise WorkaroundError("'match' must be a non-empty list of non-empty strings", where)
    for key in ("when", "set"):
        if not isinstance(raw.get(key, {}), dict):
            raise WorkaroundError(f"'{key}' must be an object", where)
    if not raw.get("set"):
        raise WorkaroundError("'set' must override at least one field", where)
    probe = Analysis(*(f.type and _default(f.name) for f in dataclasses.fields(Analysis)[:4]))
    for path in list(raw.get("when", {})) + list(raw["set"]):
        try:
            _get(probe, path)
        except KeyError:
            raise WorkaroundError(f"unknown analysis field {path!r}", where) from None
    return Workaround(raw["name"], raw["why"], tuple(match), tuple(raw.get("when", {}).items()), tuple(raw["set"].items()))


def _default(name: str):
    from .analysis import model

    return {"turn": model.Turn, "reasoning": model.Reasoning, "content": model.Content, "tools": model.Tools}[name]()


def load_file(path: Path) -> list[Workaround]:
    where = str(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise WorkaroundError(f"cannot read: {e}", where) from None
    except json.JSONDecodeError as e:
        raise WorkaroundError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", where) from None
    items = raw if isinstance(raw, list) else [raw]
    return [_validate(item, where) for item in items]


def _shipped_dir() -> Path:
    try:
        p = Path(str(resources.files("autoparser.workarounds_data")))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "workarounds"


@lru_cache(maxsize=8)
def load_dir(directory: str | None = None) -> tuple[Workaround, ...]:
    d = Path(directory) if directory else _shipped_dir()
    out: list[Workaround] = []
    for path in sorted(d.glob("*.json")) if d.is_dir() else []:
        out += load_file(path)
    return tuple(out)


def apply(analysis: Analysis, source: str, workarounds: tuple[Workaround, ...]) -> Analysis:
    applied = list(analysis.workarounds)
    log = list(analysis.log)
    for w in workarounds:
        if not all(m in source for m in w.match):
            continue
        if any(_get(analysis, k) != v for k, v in w.when):
            continue
        for path, value in w.set:
            analysis = _replace(analysis, path.split("."), value)
        applied.append(w.name)
        log.append(f"workaround {w.name}: {w.why} -> set {dict(w.set)}")
    return dataclasses.replace(analysis, workarounds=tuple(applied), log=tuple(log))
