"""Stage 1: render untrusted chat templates in a bounded sandbox (``sandbox``: the guards and the
environment, with ``codegen`` and ``weights``; ``watchdog``: time and memory budgets; ``renderer``: ``Renderer``)."""

from . import watchdog
from .renderer import REASONING_KEYS, Renderer, alias_reasoning, undefined_name
from .weights import constant
from .watchdog import budget

__all__ = ["REASONING_KEYS", "Renderer", "alias_reasoning", "budget", "constant", "undefined_name", "watchdog"]
