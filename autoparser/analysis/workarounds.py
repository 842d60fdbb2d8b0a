"""Workarounds: what the diffs cannot find, kept as data apart from the analysis.

Each ``workarounds/*.json`` file holds one object (or a list of them)::

    {"name": "...", "why": "one line", "match": ["substring of the template source", ...],
     "when": {"reasoning.mode": "NONE"}, "set": {"reasoning.end": "</think>"}}

``match`` substrings must all occur in the template source; ``when`` (optional) compares analysis
fields before the change; ``set`` overrides analysis fields (dotted paths into the Analysis). Values
are checked against the field's type when the file is loaded, so a typo fails there, naming the file,
not later inside the emitter. ``$AUTOPARSER_WORKAROUNDS_DIR`` replaces the shipped directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .model import Analysis
from ..errors import WorkaroundError

_KEYS = {"name", "why", "match", "when", "set"}
ENV_DIR = "AUTOPARSER_WORKAROUNDS_DIR"
MAX_FILE = 1 << 20


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
    return dataclasses.replace(obj, **{head: value})


def _tuples(value):
    """JSON lists as the tuples the analysis holds (``string_delims`` is a tuple of pairs)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _typed(path: str, value, current, where: str):
    """``value`` converted to the type of the field it replaces or is compared with, or a clear error."""
    if dataclasses.is_dataclass(current):
        raise WorkaroundError(f"{path!r} is a group of fields; name one of them (e.g. {path + '.' + dataclasses.fields(current)[0].name!r})", where)
    value = _tuples(value)
    if isinstance(current, tuple):
        ok = isinstance(value, tuple) and all(isinstance(v, str) or (isinstance(v, tuple) and all(isinstance(x, str) for x in v)) for v in value)
        want = "a list of strings"
    else:
        ok = type(value) is type(current)
        want = {bool: "true or false", str: "a string"}.get(type(current), type(current).__name__)
    if not ok:
        raise WorkaroundError(f"{path!r} must be {want}, got {json.dumps(value if not isinstance(value, tuple) else list(value))[:60]}", where)
    return value


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
    checked = {}
    for key in ("when", "set"):
        items = []
        for path, value in raw.get(key, {}).items():
            try:
                current = _get(probe, path)
            except KeyError:
                raise WorkaroundError(f"unknown analysis field {path!r}", where) from None
            items.append((path, _typed(path, value, current, where)))
        checked[key] = tuple(items)
    return Workaround(raw["name"], raw["why"], tuple(match), checked["when"], checked["set"])


def _default(name: str):
    from . import model

    return {"turn": model.Turn, "reasoning": model.Reasoning, "content": model.Content, "tools": model.Tools}[name]()


def load_file(path: Path) -> list[Workaround]:
    where = str(path)
    try:
        if path.stat().st_size > MAX_FILE:
            raise WorkaroundError(f"file is over {MAX_FILE} bytes", where)
        raw = json.loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as e:
        raise WorkaroundError(f"cannot read: {e.strerror or e}", where) from None
    except UnicodeDecodeError as e:
        raise WorkaroundError(f"file is not UTF-8 (byte {e.start})", where) from None
    except json.JSONDecodeError as e:
        raise WorkaroundError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", where) from None
    except RecursionError:
        raise WorkaroundError("JSON nests too deeply", where) from None
    if isinstance(raw, list):
        if not raw:
            raise WorkaroundError("the list of workarounds is empty", where)
        return [_validate(item, f"{where}: workaround {i}") for i, item in enumerate(raw)]
    return [_validate(raw, where)]


def _shipped_dir() -> Path:
    try:
        p = Path(str(resources.files("autoparser.workarounds_data")))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "workarounds"  # a source checkout


def load_dir(directory: str | None = None) -> tuple[Workaround, ...]:
    """The workarounds in ``directory``, else ``$AUTOPARSER_WORKAROUNDS_DIR``, else the shipped ones."""
    return _load_dir(directory or os.environ.get(ENV_DIR) or None)


@lru_cache(maxsize=8)
def _load_dir(directory: str | None) -> tuple[Workaround, ...]:
    if directory is not None and not Path(directory).is_dir():
        raise WorkaroundError("workarounds directory does not exist", str(directory))
    d = Path(directory) if directory else _shipped_dir()
    out: list[Workaround] = []
    seen: dict[str, Path] = {}
    for path in sorted(d.glob("*.json")) if d.is_dir() else []:
        for w in load_file(path):
            if w.name in seen:
                raise WorkaroundError(f"workaround name {w.name!r} is already used in {seen[w.name].name}", str(path))
            seen[w.name] = path
            out.append(w)
    return tuple(out)


load_dir.cache_clear = _load_dir.cache_clear  # type: ignore[attr-defined]


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
