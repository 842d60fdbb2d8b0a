"""Weighing template values before C code prints, joins or serialises them: how many characters a value would
produce, counted in Python (so the watchdog can stop the walk) and remembered for values declared constant.
Part of the sandbox."""

from __future__ import annotations

import itertools
import threading
from collections.abc import MappingView
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.utils

from ..errors import TemplateError

MAX_OUTPUT = 1 << 20  # characters one render (or any value it builds) may hold


def _limit(n: int, what: str = "a value") -> None:
    if n > MAX_OUTPUT:
        raise TemplateError(f"template builds {what} of {n} characters (limit {MAX_OUTPUT})")


def _weight(x: Any, limit: int = MAX_OUTPUT) -> int:
    """Roughly how many characters ``str(x)`` would produce, counting no further than past ``limit``.

    Containers are cheap to build by reference (``[s] * 1000`` holds one string) but printing, joining or
    serialising them is one C call; this walk is Python, so the watchdog can stop it, and it stops early.
    During a render, complete walks are remembered by identity (the same messages and tools are weighed at
    every macro call and method result); a mutating method call forgets them all (``_forget``). Walks that
    meet a namespace are not remembered: its attributes change without a call."""
    if type(x) in _ATOMS:
        return len(x) if type(x) is str else 8
    memo = getattr(_local, "memo", None)
    if memo is not None:
        hit = memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
    t = type(x)
    if t is _Namespace:  # namespaces are made often (every ``namespace(...)`` call's result is weighed)
        d, t = object.__getattribute__(x, "_Namespace__attrs"), None  # never remembered: set changes them
    else:
        d = x
    if type(d) is dict and len(d) <= 16:  # most weighed values are messages: small dicts of atoms
        total = 2 + 2 * len(d)
        for k, v in d.items():
            tk, tv = type(k), type(v)
            if tk not in _ATOMS or tv not in _ATOMS:
                break
            total += (len(k) if tk is str else 8) + (len(v) if tv is str else 8)
        else:
            if total <= limit:  # else the walk below gives the count it stops at
                if memo is not None and t is dict:
                    if len(memo) >= 4096:
                        memo.clear()
                    memo[id(x)] = (x, total)
                return total
    total, stack, keep = 0, [x], memo is not None
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str or isinstance(v, (str, bytes)):
            total += len(v)
            continue
        if memo is not None and v is not x and (t is dict or t is list):
            hit = memo.get(id(v))
            if hit is not None and hit[0] is v:
                total += hit[1]
                if total > limit:
                    break
                continue
        if (t is dict or t is list or t is tuple) and len(v) <= 64:  # count atoms here, stack only containers
            if t is dict:
                total += 2 + 2 * len(v)
                items = itertools.chain.from_iterable(v.items())
            else:
                total += 2 + len(v)
                items = v
            for e in items:
                te = type(e)
                if te is str:
                    total += len(e)
                elif te in _ATOMS:
                    total += 8
                else:
                    stack.append(e)
        elif t is dict or isinstance(v, dict):
            total += 2 + 2 * len(v)
            push(itertools.islice(itertools.chain.from_iterable(v.items()), limit))
        elif t is list or isinstance(v, (list, tuple, set, frozenset, MappingView)):
            total += 2 + len(v)
            push(itertools.islice(v, limit))
        elif isinstance(v, jinja2.utils.Namespace):
            stack.append(getattr(v, "_Namespace__attrs", None))
            keep = False
        else:
            total += 8
        if total > limit:
            break
    if keep and total <= limit and not stack:  # complete: exact
        if len(memo) >= 4096:
            memo.clear()
        memo[id(x)] = (x, total)  # holding x keeps its id from being reused
    return total


_local = threading.local()  # this thread's weights memo while it renders (``weighing``)
_CONSTANT_WEIGHTS: dict[int, tuple[Any, int]] = {}
_CONSTANT_JSON: dict[tuple, str] = {}  # (id of a constant, tojson's options) -> its serialisation (``_tojson``)


def constant(value: Any) -> Any:
    """Declare ``value`` (probe tools, passed to every render) never mutated by anyone: its containers are
    weighed once per process instead of at every render. Immutable-sandbox renders are seeded with the
    weights (nothing there can change a container); mutable-sandbox renders get a copy and no seed."""
    order, stack = [], [value]
    while stack:  # every container, parents before children
        v = stack.pop()
        if type(v) in (dict, list):
            order.append(v)
            stack.extend(v.values() if type(v) is dict else v)
    _local.memo = {}
    try:
        for v in reversed(order):  # children first, so each parent's walk reuses them
            _local.memo[id(v)] = (v, _weight(v))
        _CONSTANT_WEIGHTS.update(_local.memo)
    finally:
        _local.memo = None
    return value


def _forget() -> None:
    """A template called a method that may mutate a list, dict or set: remembered weights may be stale."""
    memo = getattr(_local, "memo", None)
    if memo:
        memo.clear()


_ATOMS = frozenset({str, int, float, bool, type(None)})


class _Namespace(jinja2.utils.Namespace):
    """Namespaces refuse underscore attributes, as transformers' do."""

    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} is not allowed")
