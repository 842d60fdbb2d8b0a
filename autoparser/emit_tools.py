"""The ``tool_calls`` field: one builder per tool format. Part of the emitter."""

from __future__ import annotations

from .analysis.model import Analysis


def tool_field(a: Analysis) -> tuple[dict | None, list[str]]:
    return None, [f"tool calls ({a.tools.format}) are not emitted yet"]
