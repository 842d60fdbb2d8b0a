"""The sandbox chat templates compile in: guards, the code generator and the environment.

Chat templates are untrusted code. We compile them in jinja2's immutable sandbox with
transformers' settings (trim/lstrip blocks, loop controls, ``{% generation %}``, ``tojson``,
``raise_exception``, ``strftime_now``), fall back to the mutable sandbox only when a template
needs ``list.append`` (transformers itself cannot render those), and bound every render by
wall time, memory growth (``watchdog``) and output size so a hostile template fails with a clear error.

The watchdog can only interrupt Python bytecode, so the guards below also refuse, before
they run, the single C-level operations that would allocate or compute without bound (``'a'.ljust(10**9)``,
huge integer products, printing a list that holds one string a thousand times), and compile-time constant
folding is off so nothing runs outside the budget.

Compiling is most of what a cold ``infer`` costs besides verification, so the sandbox tokenizes with its own
lexer (``lexer``: jinja's tokens, fewer steps) and, in the parse's last walk (``codegen._attach``), records what
jinja's code generator would otherwise search the tree for again and again; the generated code is jinja's.
Values are weighed before C code prints or joins them (``weights``).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
from jinja2.utils import _PassArg
from markupsafe import Markup

from ..errors import TemplateError
from .codegen import _CodeGenerator, _Parser
from .lexer import lexer_for
from .weights import _ATOMS, _CONSTANT_JSON, _CONSTANT_WEIGHTS, MAX_OUTPUT, _forget, _limit, _local, _Namespace, _weight


MAX_TEMPLATE = 4 << 20  # characters of template source we accept
MAX_TAGS = 10_000  # {{ }} and {% %} tags: compiling costs ~50 us and ~15 kB per tag (real templates: < 400)
MAX_INT_BITS = 1 << 16  # integers a template computes (big products are C loops the watchdog cannot stop)
CACHE_SOURCE = 256 << 10  # compiled templates are cached for sources up to this many characters


class _QuietTorchBanner(logging.Filter):
    """transformers logs "PyTorch was not found" at import; autoparser never needs PyTorch."""

    def filter(self, record):
        return "PyTorch was not found" not in str(record.msg)


# Installed before transformers is imported (render is imported ahead of the emitter); filters are
# per logger and transformers keeps them when it configures its root logger.
logging.getLogger("transformers").addFilter(_QuietTorchBanner())


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}…{% endgeneration %}`` renders its body, as transformers' tracker does."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


# -- guards: refuse what would run unbounded in C ---------------------------------------------------------


_DICT_ATTRS = frozenset(dir(dict))  # what ``getattr`` finds on a dict before its keys


def _check(x: Any, what: str = "a value") -> Any:
    t = type(x)
    if t is str:  # the common cases first: this runs on every call, argument, filter and output
        if len(x) > MAX_OUTPUT:
            _limit(len(x), what)
        return x
    if t in _ATOMS:
        return x
    if isinstance(x, str):
        _limit(len(x), what)
    elif not isinstance(x, (int, float, type(None))):
        n = _weight(x)
        if n > MAX_OUTPUT:
            raise TemplateError(f"template builds {what} of over {MAX_OUTPUT} characters")
    return x


def _output_limited_join(pieces) -> str:
    """``Environment.concat``: renders, ``{% set %}`` blocks and macro bodies stop at ``MAX_OUTPUT``.

    Pieces are gathered a batch at a time (references only; producing them is template code the watchdog
    can stop) and measured in C, so output that never ends stops at the limit, not at the time budget."""
    if type(pieces) is not list:
        out: list = []
        n, it = 0, iter(pieces)
        while batch := list(itertools.islice(it, 256)):
            n += sum(map(len, batch))
            if n > MAX_OUTPUT:
                raise TemplateError(f"template renders over {MAX_OUTPUT} characters")
            out += batch
        return "".join(out)
    if sum(map(len, pieces)) > MAX_OUTPUT:
        raise TemplateError(f"template renders over {MAX_OUTPUT} characters")
    return "".join(pieces)


_PRINTF_WIDE = re.compile(r"%(?:\([^)]*\))?[#0 +\-]*(?:\d{7,}|\*|\d*\.(?:\d{7,}|\*))")
_FORMAT_WIDE = re.compile(r"\{[^{}]*:[^{}]*?(?:\d{7,}|\{)")


def _check_format(fmt: Any, args: Any, wide: re.Pattern) -> None:
    """Widths and precisions of a million or more, written or passed as ``*``/``{}``, are refused."""
    if not isinstance(fmt, str):
        return
    m = wide.search(fmt)
    if m is None:
        return
    values = args.values() if isinstance(args, dict) else args if isinstance(args, (tuple, list)) else (args,)
    if re.search(r"\d{7,}", m.group(0)) or any(isinstance(v, int) and abs(v) > MAX_OUTPUT for v in values):
        raise TemplateError(f"template formats with a field width over {MAX_OUTPUT}")


def _replace_size(s: str, old: Any, new: Any, count: Any = -1) -> int:
    if not (isinstance(old, str) and isinstance(new, str)) or len(new) <= len(old):
        return len(s)
    n = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        n = min(n, count)
    return len(s) + n * (len(new) - len(old))


def _str_method(s: str, name: str, args: tuple, kwargs: dict) -> tuple:
    """Size checks for the str methods whose result can dwarf their inputs; may materialise join's input."""
    arg = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill"):
        width = kwargs.get("width", arg)
        if isinstance(width, int):
            _limit(width)
    elif name == "expandtabs":
        tab = kwargs.get("tabsize", 8 if arg is None else arg)
        if isinstance(tab, int):
            _limit(len(s) * max(tab, 1))
    elif name == "replace" and len(args) >= 2:
        _limit(_replace_size(s, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count", -1)))
    elif name == "join" and len(args) == 1:
        items = list(itertools.islice(arg, MAX_OUTPUT + 1)) if not isinstance(arg, (list, tuple, str)) else arg
        _limit(_weight(items) + len(s) * max(len(items) - 1, 0))
        args = (items,)
    return args


# Keywords jinja's generated code adds to calls made in a loop or block: ``Context.call`` pops them before the
# call (they derive the context a ``pass_context`` callable sees), so they are no argument to weigh.
_CALL_SCOPE = frozenset({"_loop_vars", "_block_vars"})
_MACRO = jinja2.runtime.Macro
_PLAIN = frozenset({str, dict, list, tuple, int, float, bool})  # builtin types no template can subclass
_FORMATS = frozenset({"format", "format_map"})  # wrapped at every access (``wrap_str_format``)
_BUILTIN_METHOD = type("".strip)
_LOOP = jinja2.runtime.LoopContext
_METHOD_DESCRIPTOR = type(dict.update)  # ``dict`` is a template global: ``dict.update(d, x)`` mutates d
_GROWING = frozenset({"append", "extend", "insert", "update", "setdefault", "add"})
_PURE = frozenset({"get", "items", "keys", "values", "copy", "count", "index", "isdisjoint", "issubset", "issuperset",
                   "union", "intersection", "difference", "symmetric_difference"})  # methods that mutate nothing


def _filter_checks() -> dict:
    """Pre-checks for filters whose output can dwarf their input; same parameter names as jinja's."""

    def center(value, width=80):
        if isinstance(width, int):
            _limit(width)

    def indent(s, width=4, first=False, blank=False):
        w = width if isinstance(width, int) else len(str(width))
        _limit(len(str(s)) + max(w, 0) * (str(s).count("\n") + 1))

    def format(value, *args, **kwargs):
        _check_format(value, kwargs or args, _PRINTF_WIDE)

    def replace(s, old, new, count=None):
        _limit(_replace_size(str(s), old, new, -1 if count is None else count))

    def batch(value, linecount, fill_with=None):
        if isinstance(linecount, int) and fill_with is not None:
            _limit(linecount)

    def join(value, d="", attribute=None):  # the items were weighed as the input
        _limit(len(str(d)) * max(len(value) - 1, 0), "a joined string")

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        if indent:  # x was weighed as the input; indentation multiplies it
            _limit(_weight(x) * (1 + (indent if isinstance(indent, int) else len(str(indent)))))

    return {"center": center, "indent": indent, "format": format, "replace": replace, "batch": batch, "join": join, "tojson": tojson}


_FILTER_CHECKS = _filter_checks()


def _linear_sum(orig):
    """``|sum(start=[])`` is quadratic in C; lists (or tuples) of lists sum the same way in linear time."""

    @functools.wraps(orig)
    def do_sum(environment, iterable, attribute=None, start=0):
        if attribute is None and type(start) in (list, tuple):
            items = list(itertools.islice(iterable, MAX_OUTPUT + 1))
            if all(type(i) is type(start) for i in items):
                _limit(len(start) + sum(len(i) for i in items), "a sum")
                return start + type(start)(itertools.chain.from_iterable(items))
            iterable = items
        return orig(environment, iterable, attribute, start)

    return do_sum


# Filters that never turn their input into text nor amplify it (their outputs hold the input's own items):
# neither input nor output needs weighing. Every other filter is weighed on the way in and out.
_STRUCTURAL = frozenset({"attr", "count", "d", "default", "dictsort", "first", "groupby", "items", "last", "length",
                         "list", "map", "max", "min", "reject", "rejectattr", "reverse", "select", "selectattr", "slice",
                         "sort", "unique", "abs", "bool", "float", "int", "round"})


def _guard_filter(name: str, f):
    if name in _STRUCTURAL:
        return f
    skip = 0 if _PassArg.from_obj(f) is None else 1
    pre = _FILTER_CHECKS.get(name)

    @functools.wraps(f)
    def guarded(*args, **kwargs):
        if len(args) > skip:
            value = args[skip]
            if name == "join" and not isinstance(value, (str, list, tuple)):
                value = list(itertools.islice(value, MAX_OUTPUT + 1))
                args = (*args[:skip], value, *args[skip + 1 :])
            _check(value, f"the input of |{name}")
            if pre is not None:
                pre(*args[skip:], **kwargs)
        return _check(f(*args, **kwargs), f"the output of |{name}")

    return guarded


def _concat_parts(parts: tuple) -> tuple:
    n = 0
    for p in parts:
        n += len(p) if type(p) is str else _weight(p)
    _limit(n, "a string")
    return parts


def _bounded(base: type) -> type:
    class Bounded(base):
        code_generator_class = _CodeGenerator
        concat = staticmethod(_output_limited_join)
        concat_parts = staticmethod(_concat_parts)
        checked = staticmethod(_check)
        # Repetition, addition, formatting and big-integer products are the cheap ways to balloon.
        intercepted_binops = frozenset({"*", "**", "+", "%"})
        _safe_attrs: dict = {}  # (exact type in _PLAIN, attribute) -> what is_safe_attribute says, per class

        @property
        def lexer(self):
            return lexer_for(self)

        def _parse(self, source, name, filename):
            return _Parser(self, source, name, filename).parse()

        def make_globals(self, d):
            # A template's globals: jinja's are a ChainMap over the environment's, which every render copies
            # into its context key by key (a Python-level lookup per global, a twentieth of a short render).
            # This environment's globals are all set when it is made (``_environment``) and never change,
            # so a dict of the same keys and values, in the same order, is what the ChainMap would give.
            return {**self.globals, **(d or {})}

        def call_binop(self, context, operator, left, right):
            if type(left) is str and type(right) is str and operator == "+":  # nine in ten: ``'<|' + role``
                if len(left) + len(right) > MAX_OUTPUT:
                    raise TemplateError(f"template builds a value over {MAX_OUTPUT} characters")
                return left + right  # the sandbox's binop_table['+'] is operator.add
            ints = isinstance(left, int) and isinstance(right, int)
            if operator == "**" and ints and right > 0 and abs(left) > 1 and left.bit_length() * right > MAX_INT_BITS:
                raise TemplateError(f"template computes an integer over {MAX_INT_BITS} bits")
            if operator == "*":
                if ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                    raise TemplateError(f"template computes an integer over {MAX_INT_BITS} bits")
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and n > 0:
                        size = _weight(seq, MAX_OUTPUT // n + 1) * n
                        if size > MAX_OUTPUT:
                            raise TemplateError(f"template builds a sequence of {size} items (limit {MAX_OUTPUT})")
            if operator == "+" and type(left) is str and type(right) is str:
                if len(left) + len(right) > MAX_OUTPUT:
                    raise TemplateError(f"template builds a value over {MAX_OUTPUT} characters")
            elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                if _weight(left) + _weight(right) > MAX_OUTPUT:
                    raise TemplateError(f"template builds a value over {MAX_OUTPUT} characters")
            if operator == "%" and isinstance(left, str):
                _check(right, "a format argument")
                _check_format(left, right, _PRINTF_WIDE)
            return _check(super().call_binop(context, operator, left, right))

        def handle_exception(self, source=None):
            # Jinja rewrites the traceback to point into the template, parsing its line table each time
            # (~1 ms for a large template); errors here become one-line messages, so compile errors (with
            # their line) keep it and render errors are raised as they are.
            if isinstance(sys.exc_info()[1], jinja2.TemplateSyntaxError):
                return super().handle_exception(source)
            raise  # noqa: PLE0704 - re-raises the exception being handled, as jinja's caller expects

        def getattr(self, obj, attribute):
            # ``message.content``: a dict has no such attribute, so jinja's lookup raises AttributeError and
            # then reads the key; read it at once (an exception per field cost a third of some renders).
            t = type(obj)
            if t is dict and attribute not in _DICT_ATTRS:
                try:
                    return obj[attribute]
                except KeyError:
                    return self.undefined(obj=obj, name=attribute)
            if t in _PLAIN and attribute not in _FORMATS:
                # ``content.strip``, ``messages.items``: for these exact types the sandbox's verdict on an
                # attribute depends on the type and the name alone (no value, no subclass), so it is asked
                # once per environment class and name, not at every access (a tenth of some renders).
                safe = self._safe_attrs.get((t, attribute))
                if safe is not None:
                    try:
                        value = getattr(obj, attribute)
                    except AttributeError:
                        return super().getattr(obj, attribute)
                    return value if safe else self.unsafe_undefined(obj, attribute)
                value = super().getattr(obj, attribute)
                try:
                    self._safe_attrs[(t, attribute)] = self.is_safe_attribute(obj, attribute, getattr(obj, attribute))
                except AttributeError:
                    pass
                return value
            if t is _Namespace or t is _LOOP:
                # ``ns.found``, ``loop.last``: the same holds for namespaces and loops (neither a function, a
                # type nor a known mutable); their values are the template's own, so a ``str.format`` among
                # them is still wrapped.
                safe = self._safe_attrs.get((t, attribute))
                if safe is None:
                    value = super().getattr(obj, attribute)
                    if len(self._safe_attrs) >= 4096:  # namespace attributes are the templates' own names
                        self._safe_attrs.clear()
                    try:
                        self._safe_attrs[(t, attribute)] = self.is_safe_attribute(obj, attribute, getattr(obj, attribute))
                    except AttributeError:
                        pass
                    return value
                try:
                    value = getattr(obj, attribute)
                except AttributeError:
                    return super().getattr(obj, attribute)
                if type(value) not in _ATOMS:  # only a bound format/format_map is wrapped: never a str, a number, None
                    fmt = self.wrap_str_format(value)
                    if fmt is not None:
                        return fmt
                return value if safe else self.unsafe_undefined(obj, attribute)
            return super().getattr(obj, attribute)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - jinja's signature
            for a in args:
                if type(a) is not str or len(a) > MAX_OUTPUT:
                    _check(a, "an argument")
            if kwargs:
                for k, a in kwargs.items():
                    if k not in _CALL_SCOPE:
                        _check(a, "an argument")
            if type(__obj) is _MACRO:  # the template's own code, safe to call; its output was limited by concat
                kwargs.pop("_loop_vars", None)
                kwargs.pop("_block_vars", None)
                return __obj(*args, **kwargs)
            owner, margs = getattr(__obj, "__self__", None), args
            if owner is None and type(__obj) is _METHOD_DESCRIPTOR and args and isinstance(args[0], (list, dict, set)):
                owner, margs = args[0], args[1:]  # ``dict.update(d, ...)``: the unbound method names its object first
            if owner is not None:
                name = getattr(__obj, "__name__", "")
                if isinstance(owner, str):
                    args = _str_method(owner, name, args, kwargs)
                elif isinstance(owner, (list, dict, set)) and name not in _PURE:
                    _forget()
                    if name in _GROWING:
                        added = (*margs, *(a for k, a in kwargs.items() if k not in _CALL_SCOPE))
                        _limit(_weight(owner) + sum(_weight(a) for a in added), "a collection")
                if type(__obj) is _BUILTIN_METHOD and type(owner) in _PLAIN:
                    # ``content.strip()``: what jinja's call would do for a builtin's method (no pass_context
                    # marker, never flagged unsafe: builtins take no attributes), without asking it each time.
                    kwargs.pop("_loop_vars", None)
                    kwargs.pop("_block_vars", None)
                    try:
                        return _check(__obj(*args, **kwargs))
                    except StopIteration:
                        return __self.undefined("value was undefined because a callable raised a StopIteration exception")
            return _check(super().call(__context, __obj, *args, **kwargs))

        def wrap_str_format(self, value):
            wrapper = super().wrap_str_format(value)
            if wrapper is None:
                return None
            fmt, is_map = value.__self__, value.__name__ == "format_map"

            def checked(*args, **kwargs):
                _check_format(fmt, args[0] if is_map and args else (*args, *kwargs.values()), _FORMAT_WIDE)
                return _check(wrapper(*args, **kwargs))

            return functools.update_wrapper(checked, value)

    return Bounded


_ImmutableEnv = _bounded(ImmutableSandboxedEnvironment)
_MutableEnv = _bounded(SandboxedEnvironment)


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """transformers' ``tojson``; iterators (``tools|map(...)`` is a generator) serialise as lists, within
    ``MAX_OUTPUT`` all told, where transformers raises. Anything it serialises comes out the same.
    A ``constant`` (the probe tools, serialised by most templates at every render) is serialised once
    per set of options: nobody changes it, and a mutable-sandbox render only ever sees a copy."""
    hit = _CONSTANT_WEIGHTS.get(id(x))
    if hit is not None and hit[0] is x:
        key = (id(x), ensure_ascii, indent, separators, sort_keys)
        try:
            out = _CONSTANT_JSON.get(key)
        except TypeError:  # unhashable options (separators as a list)
            key = out = None
        if out is None:
            out = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
            if key is not None:
                if len(_CONSTANT_JSON) >= 1024:
                    _CONSTANT_JSON.clear()
                _CONSTANT_JSON[key] = out
        return out
    seen = [0]

    def as_list(o):
        if not isinstance(o, Iterator):
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
        items = list(itertools.islice(o, MAX_OUTPUT + 1))
        seen[0] += _weight(items)
        _limit(seen[0] * (1 + (indent if isinstance(indent, int) and indent > 0 else len(indent or ""))), "a value")
        return items

    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys, default=as_list)


def _unmarked(value):
    """``safe``, as plain text unless a render asks for transformers' own (``Renderer(markup=True)``). With autoescape
    off (transformers renders so) ``safe``'s only effect is that the ``Markup`` it returns HTML-escapes whatever is
    added to it: ``'{"name": "' + name + '", "arguments": ' + arguments|safe`` renders ``{&#34;name&#34;: …`` (Mistral's
    v3 and v7 templates in mistral-common). That escaping is an artifact of history's rendering, never the format a
    model writes (its tokenizer encodes the calls' JSON, not the template's entities), so the analysis and verify
    read the text unescaped; a prompt handed to a user is rendered as transformers renders it."""
    return Markup(value) if getattr(_local, "markup", False) else str(value)


def _strftime_now(fmt):
    return datetime.now().strftime(fmt)


_GUARDED: dict[tuple, Any] = {}  # (filter name, jinja's function) -> its guarded form


def _guarded_filters(filters: dict) -> dict:
    """jinja's filters with ours for ``tojson`` and ``sum``, each guarded (``_guard_filter``). A guard keeps no
    state of its own (the environment reaches a filter as an argument), so one per function serves every
    environment: wrapping all of them again was a third of making an environment, at every compile."""
    filters = {**filters, "tojson": _tojson, "sum": filters["sum"], "safe": _unmarked}
    out = {}
    for name, f in filters.items():
        g = _GUARDED.get((name, f))
        if g is None:
            g = _guard_filter(name, _linear_sum(f) if name == "sum" else f)
            if len(_GUARDED) < 1024:
                _GUARDED[(name, f)] = g
        out[name] = g
    return out


def _environment(mutable: bool) -> jinja2.Environment:
    env = (_MutableEnv if mutable else _ImmutableEnv)(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
        optimized=False,  # constant folding would evaluate filters at compile time, unguarded
        finalize=_check,  # every {{ value }} before str() turns it into text
    )
    env.filters = _guarded_filters(env.filters)
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = dict
    env.globals["namespace"] = _Namespace
    return env


@functools.lru_cache(maxsize=32)
def _compiled_cached(source: str, mutable: bool) -> jinja2.Template:
    env = _environment(mutable)
    tree = env.parse(source)
    template = env.from_string(tree)
    if not mutable:
        with _TREES_LOCK:
            _TREES[source] = tree
            while len(_TREES) > TREES_KEPT:
                _TREES.pop(next(iter(_TREES)))
    return template


# The parse trees of the last few templates compiled: the analysis reads names and attribute chains off
# them right after the compile (``syntax_tree``). Only a few: a tree takes about three times the memory
# of the compiled template it came from.
TREES_KEPT = 4
_TREES: dict[str, jinja2.nodes.Template] = {}
_TREES_LOCK = threading.Lock()


def syntax_tree(source: str):
    """The parse tree the sandbox compiled ``source`` from when it is one of the last few compiled (no
    second parse for reading the names a template spells), else None. The code generator only adds
    shortcuts to its nodes (``_attach``): every search and walk gives what it gives on a
    fresh parse."""
    with _TREES_LOCK:
        return _TREES.get(source)


def _compiled(source: str, mutable: bool) -> jinja2.Template:
    """Compiling costs 5-50 ms and a render ~0.1 ms: analysis, verify and the hook share one compile per source."""
    if len(source) > CACHE_SOURCE:
        return _environment(mutable).from_string(source)
    return _compiled_cached(source, mutable)


@contextmanager
def weighing(mutable: bool, markup: bool = False):
    """The weights memo for one render: seeded with the constants' weights where nothing can change a
    container (immutable sandbox), empty where the render works on its own copies (mutable sandbox); and
    whether ``safe`` marks text as transformers' does (``_unmarked``)."""
    _local.memo = {} if mutable else dict(_CONSTANT_WEIGHTS)
    _local.markup = markup
    try:
        yield
    finally:
        _local.memo = None
        _local.markup = False
