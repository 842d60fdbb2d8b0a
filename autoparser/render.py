"""Render chat templates the way transformers' ``apply_chat_template`` does, but bounded.

Chat templates are untrusted code. We compile them in jinja2's immutable sandbox with
transformers' settings (trim/lstrip blocks, loop controls, ``{% generation %}``, ``tojson``,
``raise_exception``, ``strftime_now``), fall back to the mutable sandbox only when a template
needs ``list.append`` (transformers itself cannot render those), and bound every render by
wall time, memory growth and output size so a hostile template fails with a clear error.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from .errors import TemplateError

MAX_OUTPUT = 1 << 20  # characters one render may produce
MAX_TEMPLATE = 4 << 20  # characters of template source we accept
MAX_GROWTH = 512 << 20  # bytes of resident memory a render may add
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


class RenderTimeout(BaseException):
    """Injected into the rendering thread by the watchdog; BaseException so templates can't swallow it."""


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}…{% endgeneration %}`` renders its body, as transformers' tracker does."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _bounded(base: type) -> type:
    class Bounded(base):
        # String/list repetition and addition are the cheap ways to balloon memory.
        intercepted_binops = frozenset({"*", "**", "+"})

        def call_binop(self, context, operator, left, right):
            if operator == "**" and isinstance(right, int) and right > 64:
                raise TemplateError("template computes an exponent beyond 64")
            if operator == "*":
                size = 0
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                        size = len(seq) * n
                if size > MAX_OUTPUT:
                    raise TemplateError(f"template builds a sequence of {size} items (limit {MAX_OUTPUT})")
            if operator == "+" and isinstance(left, (str, list)) and isinstance(right, (str, list)):
                if len(left) + len(right) > MAX_OUTPUT:
                    raise TemplateError(f"template builds a value over {MAX_OUTPUT} characters")
            return super().call_binop(context, operator, left, right)

    return Bounded


_ImmutableEnv = _bounded(ImmutableSandboxedEnvironment)
_MutableEnv = _bounded(SandboxedEnvironment)


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


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


def _environment(mutable: bool) -> jinja2.Environment:
    env = (_MutableEnv if mutable else _ImmutableEnv)(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = dict
    env.globals["namespace"] = _Namespace
    return env


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@contextmanager
def budget(seconds: float, what: str = "template"):
    """Bound the enclosed work by wall time and memory growth.

    A watchdog thread injects ``RenderTimeout`` into this thread when the deadline passes or resident
    memory grows by more than ``MAX_GROWTH``; jinja's compiled code is Python, so the exception lands at
    the next bytecode. Nested budgets are no-ops (the outer one governs).
    """
    if getattr(_local, "active", False):
        yield
        return
    _local.active = True
    target = threading.get_ident()
    done = threading.Event()
    fired: list[str] = []
    lock = threading.Lock()
    start_rss = _rss()
    deadline = time.monotonic() + seconds

    def watch():
        while not done.wait(0.005):
            reason = None
            if time.monotonic() > deadline:
                reason = f"{what} took longer than {seconds:g} s to render"
            elif start_rss and _rss() - start_rss > MAX_GROWTH:
                reason = f"{what} used more than {MAX_GROWTH >> 20} MB of memory while rendering"
            if reason:
                with lock:
                    if done.is_set():
                        return
                    fired.append(reason)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(RenderTimeout))
                return

    watcher = threading.Thread(target=watch, daemon=True, name="autoparser-watchdog")
    watcher.start()
    try:
        try:
            yield
        finally:
            with lock:
                done.set()
    except RenderTimeout:
        raise TemplateError(fired[0] if fired else f"{what} exceeded its budget") from None
    finally:
        _local.active = False


_local = threading.local()


def alias_reasoning(messages: list[dict]) -> list[dict]:
    """Give reasoning under every name templates read, as transformers does before rendering."""
    out = []
    for m in messages:
        r = next((m[k] for k in REASONING_KEYS if m.get(k) is not None), None)
        out.append({"thinking": r, **m, "reasoning_content": r} if r is not None else m)
    return out


class Renderer:
    """A compiled chat template plus the special tokens it reads; compile once, render many."""

    def __init__(self, source: str, special_tokens: dict[str, str] | None = None, *, where: str | None = None):
        if not isinstance(source, str):
            raise TemplateError(f"chat template must be a string, got {type(source).__name__}", where)
        if not source.strip():
            raise TemplateError("chat template is empty", where)
        if len(source) > MAX_TEMPLATE:
            raise TemplateError(f"chat template is {len(source)} characters (limit {MAX_TEMPLATE})", where)
        self.source = source
        self.where = where
        self.special_tokens = {k: v for k, v in (special_tokens or {}).items() if isinstance(v, str)}
        self.mutable = False
        self.renders = 0
        self._compiled = self._compile(mutable=False)

    def _compile(self, mutable: bool):
        try:
            return _environment(mutable).from_string(self.source)
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(f"Jinja syntax error at line {e.lineno}: {e.message}", self.where) from None
        except RecursionError:
            raise TemplateError("template nests too deeply to compile", self.where) from None
        except Exception as e:  # noqa: BLE001 - the compiler is fed untrusted text
            raise TemplateError(f"template does not compile: {type(e).__name__}: {e}", self.where) from None

    def render(self, messages: list[dict], *, tools: list[dict] | None = None, add_generation_prompt: bool = False, **kwargs: Any) -> str:
        """Render; raises ``TemplateError`` (with the template's own message) if the template refuses."""
        context = {**self.special_tokens, **kwargs}
        msgs = alias_reasoning(messages)
        self.renders += 1
        try:
            try:
                out = self._compiled.render(messages=msgs, tools=tools, documents=None, add_generation_prompt=add_generation_prompt, **context)
            except jinja2.exceptions.SecurityError:
                if self.mutable:
                    raise
                # Templates that mutate lists (list.append) need the mutable sandbox; still sandboxed.
                self.mutable = True
                self._compiled = self._compile(mutable=True)
                out = self._compiled.render(messages=msgs, tools=tools, documents=None, add_generation_prompt=add_generation_prompt, **context)
        except TemplateError as e:
            raise TemplateError(e.message, self.where) from None
        except (RenderTimeout, KeyboardInterrupt):
            raise
        except jinja2.exceptions.TemplateError as e:
            raise TemplateError(f"template raised: {e}", self.where) from None
        except RecursionError:
            raise TemplateError("template recursed too deeply", self.where) from None
        except MemoryError:
            raise TemplateError("template ran out of memory", self.where) from None
        except Exception as e:  # noqa: BLE001 - untrusted code may raise anything
            raise TemplateError(f"template failed: {type(e).__name__}: {e}", self.where) from None
        if len(out) > MAX_OUTPUT:
            raise TemplateError(f"template rendered {len(out)} characters (limit {MAX_OUTPUT})", self.where)
        return out
