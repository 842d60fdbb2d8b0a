"""Tool-call analysis (T1-T7, A1-A2)."""

from __future__ import annotations

from ..probes import Prober
from .model import Content, Reasoning, Tools, Turn


def analyze_tools(pr: Prober, turn: Turn, r: Reasoning, c: Content, log: list[str]) -> Tools:
    return Tools()
