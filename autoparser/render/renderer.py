"""Render chat templates the way transformers' ``apply_chat_template`` does, but bounded: compiled once in
the sandbox (``sandbox``), every compile and render under a budget (``watchdog``)."""

from __future__ import annotations

import copy
import re
from typing import Any

import jinja2

from ..errors import TemplateError
from ..sources.template_source import STOP_TOKENS
from . import watchdog
from .sandbox import MAX_OUTPUT, MAX_TAGS, MAX_TEMPLATE, _compiled, weighing
from .watchdog import RenderTimeout, budget

REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


_UNDEFINED = re.compile(r"'(\w+)' is undefined")


def undefined_name(error: TemplateError) -> str | None:
    """The variable a template read that the render did not give (``'bos_token' is undefined``), else None:
    a special token renders empty and a tools alias gets the tools, as transformers passes them."""
    m = _UNDEFINED.search(error.message)
    return m.group(1) if m else None


def alias_reasoning(messages: list[dict]) -> list[dict]:
    """Give reasoning under every name templates read, as transformers does before rendering."""
    out = []
    for m in messages:
        r = next((m[k] for k in REASONING_KEYS if m.get(k) is not None), None)
        out.append({"thinking": r, **m, "reasoning_content": r} if r is not None else m)
    return out


class Renderer:
    """A compiled chat template plus the special tokens it reads; compile once, render many."""

    def __init__(self, source: str, special_tokens: dict[str, str] | None = None, *, where: str | None = None,
                 markup: bool = False):
        """``markup``: render ``safe`` as transformers does (a prompt handed to a user), not as plain text (what
        the analysis reads: ``sandbox._unmarked``)."""
        if not isinstance(source, str):
            raise TemplateError(f"chat template must be a string, got {type(source).__name__}", where)
        if not source.strip():
            raise TemplateError("chat template is empty", where)
        if len(source) > MAX_TEMPLATE:
            raise TemplateError(f"chat template is {len(source)} characters (limit {MAX_TEMPLATE})", where)
        tags = source.count("{{") + source.count("{%")
        if tags > MAX_TAGS:
            raise TemplateError(f"chat template has {tags} tags (limit {MAX_TAGS})", where)
        self.source = source
        self.where = where
        self.special_tokens = {k: v for k, v in (special_tokens or {}).items() if isinstance(v, str)}
        self._context = {k: v for k, v in self.special_tokens.items() if k != STOP_TOKENS}  # what a template reads
        self.mutable = False
        self.markup = markup
        self.renders = 0
        self._compiled = self._compile(mutable=False)

    def _compile(self, mutable: bool):
        try:
            with budget(watchdog.TIME_BUDGET, "template", doing="compile"):
                return _compiled(self.source, mutable)
        except TemplateError as e:
            raise TemplateError(e.message, self.where) from None
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(f"Jinja syntax error at line {e.lineno}: {e.message}", self.where) from None
        except RecursionError:
            raise TemplateError("template nests too deeply to compile", self.where) from None
        except Exception as e:  # noqa: BLE001 - the compiler is fed untrusted text
            raise TemplateError(f"template does not compile: {type(e).__name__}: {e}", self.where) from None

    def render(self, messages: list[dict], *, tools: list[dict] | None = None, add_generation_prompt: bool = False, **kwargs: Any) -> str:
        """Render; raises ``TemplateError`` (with the template's own message) if the template refuses."""
        context = {**self._context, **kwargs}
        msgs = alias_reasoning(messages)
        self.renders += 1
        try:
            if watchdog.active():  # the caller's budget governs
                out = self._render(msgs, tools, add_generation_prompt, context)
            else:
                with budget(watchdog.TIME_BUDGET, "template"):
                    out = self._render(msgs, tools, add_generation_prompt, context)
        except TemplateError as e:
            raise TemplateError(e.message, self.where) from None
        if len(out) > MAX_OUTPUT:
            raise TemplateError(f"template rendered {len(out)} characters (limit {MAX_OUTPUT})", self.where)
        return out

    def _render(self, msgs, tools, add_generation_prompt, context) -> str:
        try:
            try:
                out = self._render_once(msgs, tools, add_generation_prompt, context)
            except jinja2.exceptions.SecurityError:
                if self.mutable:
                    raise
                # Templates that mutate lists (list.append) need the mutable sandbox; still sandboxed.
                self.mutable = True
                self._compiled = self._compile(mutable=True)
                out = self._render_once(msgs, tools, add_generation_prompt, context)
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
        return out

    def _render_once(self, msgs, tools, add_generation_prompt, context) -> str:
        if self.mutable:  # the caller's messages and tools (shared probe constants) stay as they were
            msgs, tools = copy.deepcopy((msgs, tools))
        with weighing(self.mutable, self.markup):  # immutable: nothing can change them, what was weighed once stays true
            return self._compiled.render(messages=msgs, tools=tools, documents=None, add_generation_prompt=add_generation_prompt, **context)
