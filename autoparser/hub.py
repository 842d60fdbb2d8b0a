"""Resolve a SOURCE argument: a local path, else a Hub model id (see ``resolve``)."""

from __future__ import annotations

from pathlib import Path

from .errors import SourceError
from .source import TemplateSource, load_path


def resolve(source: str, revision: str | None = None, name: str | None = None) -> TemplateSource:
    if Path(source).exists():
        return load_path(source, name)
    raise SourceError("no such file or directory (Hub ids are not supported yet)", source)
