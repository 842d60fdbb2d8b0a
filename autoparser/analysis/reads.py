"""What a template's source reads, found without running it: its reasoning switches and budgets (variables
it reads, never sets, whose names speak of thinking), the other names it reads from the render context, and the
names it reads only where the generation prompt is added. The analysis renders the modes these name; the
prober (``probes``) renders the conversations."""

from __future__ import annotations

import functools
import re

# Other names a template may read its reasoning switch under (``thinking``, ``enable_reasoning``,
# ``reasoning_effort``, ``thinking_mode``…): any variable it reads, never sets, whose name says so.
_SWITCH_NAME = re.compile(r"think|reason", re.I)
MAX_SWITCH_MODES = 16
# A bare name (not an attribute, key or string) speaking of thinking or reasoning, other than
# enable_thinking: parsing the template to read its variables costs a third of a compile, so it is done
# only where such a name appears at all.
_SWITCH_READ = re.compile(r"(?<![\w.'\"])(?!enable_thinking\b)[A-Za-z_]\w*(?:think|reason)\w*(?![\w'\"])|(?<![\w.'\"])(?:think|reason)\w*(?![\w'\"])", re.I)


_SWITCH_WORD = re.compile(r"think|reason", re.I)  # what every match of ``_SWITCH_READ`` holds


def _reads_switch(source: str) -> bool:
    """``_SWITCH_READ.search(source)``, tried only at the start of each word holding "think" or "reason":
    a match starts a word (nothing word-like before it) and runs on inside it to the name, so it can start
    nowhere else. The search itself tried its lookbehind at every position of the template."""
    for m in _SWITCH_WORD.finditer(source):
        i = m.start()
        while i > 0 and (source[i - 1].isalnum() or source[i - 1] == "_"):  # back to the word's start (``\w``)
            i -= 1
        if _SWITCH_READ.match(source, i):
            return True
    return False


def _tree(source: str):
    """The template's syntax tree (reading names and attribute chains runs no template code): the one the
    sandbox just compiled it from (``syntax_tree``), parsed here only when the sandbox keeps none."""
    from ..render.sandbox import syntax_tree

    tree = syntax_tree(source)
    return tree if tree is not None else _parsed(source)


@functools.lru_cache(maxsize=8)
def _parsed(source: str):
    """A parse of its own, remembered per source, for a template whose tree the sandbox no longer keeps
    (too long to cache, or compiled several templates ago)."""
    import jinja2

    from ..render.sandbox import _GenerationTag

    return jinja2.Environment(extensions=[_GenerationTag, "jinja2.ext.loopcontrols"]).parse(source)


def _attribute_chains(source: str, first: str) -> list[tuple[str, ...]]:
    """Attribute chains the template spells starting at ``first`` (``x.context.body`` -> ("context",
    "body")), longest first, from the parsed template (nothing runs)."""
    from jinja2 import nodes

    try:
        ast = _tree(source)
    except Exception:  # noqa: BLE001 - the sandbox's compile reports a template that does not parse
        return []
    chains: list[tuple[str, ...]] = []
    for node in ast.find_all(nodes.Getattr):
        path, n = [], node
        while isinstance(n, nodes.Getattr):
            path.append(n.attr)
            n = n.node
        path.reverse()
        if first in path:
            chain_ = tuple(path[path.index(first):])
            if len(chain_) > 1 and chain_ not in chains:
                chains.append(chain_)
    return sorted(chains, key=len, reverse=True)


def _read_before_set(ast) -> set[str]:
    """Names whose first use, in evaluation order, is a read: what the template takes from the render
    context (a name set before it is read is the template's own). One walk, where ``jinja2.meta`` runs a
    second code generator (ten times the cost); an assignment's value and a loop's iterable are walked
    before their targets."""
    from jinja2 import nodes

    first: dict[str, str] = {}
    stack = [ast]
    pop, push, extend = stack.pop, stack.append, stack.extend
    name_t, assign_t, for_t = nodes.Name, nodes.Assign, nodes.For  # exact classes: jinja subclasses none of them
    while stack:
        n = pop()
        t = type(n)
        if t is name_t:
            if n.name not in first:
                first[n.name] = n.ctx
            continue
        if t is assign_t:
            push(n.target)
            push(n.node)
            continue
        if t is for_t:
            kids = [n.iter, n.target, *n.body, *n.else_] + ([n.test] if n.test is not None else [])
        else:
            kids = list(n.iter_child_nodes())
        kids.reverse()
        extend(kids)
    return {name for name, ctx in first.items() if ctx == "load"}


@functools.lru_cache(maxsize=8)
def context_reads(source: str) -> frozenset[str]:
    """``_read_before_set`` of the parsed template, walked once per source: the reasoning switches and
    the context names of one analysis both ask (two walks of the whole tree were 1% of a cold infer)."""
    return frozenset(_read_before_set(_tree(source)))


_GEN = "add_generation_prompt"


def _implies_gen(test) -> bool:
    """Whether ``test`` can only be true when ``add_generation_prompt`` is (``add_generation_prompt``,
    ``add_generation_prompt is defined and add_generation_prompt``)."""
    from jinja2 import nodes

    if isinstance(test, nodes.Name):
        return test.name == _GEN and test.ctx == "load"
    if isinstance(test, nodes.And):
        return _implies_gen(test.left) or _implies_gen(test.right)
    return False


def _unless_given(test) -> bool:
    """``add_generation_prompt is not defined`` (``not … is defined``, ``… is undefined``): a default
    the template sets for a caller that gives none; every rendering here gives it."""
    from jinja2 import nodes

    if isinstance(test, nodes.Not):
        t = test.node
        return isinstance(t, nodes.Test) and t.name == "defined" and isinstance(t.node, nodes.Name) and t.node.name == _GEN
    return isinstance(test, nodes.Test) and test.name == "undefined" and isinstance(test.node, nodes.Name) and test.node.name == _GEN


@functools.lru_cache(maxsize=8)
def prompt_only_names(source: str) -> frozenset[str]:
    """Names the template reads only where ``add_generation_prompt`` is true: in the body of an ``if``
    whose test requires it, the right side of an ``and`` whose left side does, the first branch of an
    inline ``if`` on it. A rendering without the generation prompt cannot depend on them (Jinja reads
    variables by literal name only), so the thinking switches of a template that reads them only there
    (``{% if add_generation_prompt %}…{% if enable_thinking %}<think>``) change no other rendering.
    Nothing when the template assigns ``add_generation_prompt`` itself (other than a default for a caller
    that gives none, which never runs here: ``_unless_given``) or uses blocks, includes or imports
    (whose bodies run elsewhere); read off the parsed template, nothing runs."""
    try:
        ast = _tree(source)
    except Exception:  # noqa: BLE001 - the sandbox's compile reports a template that does not parse
        return frozenset()
    unguarded: set[str] = set()
    guarded: set[str] = set()
    # What the walk finds is sets (or, at a stop, nothing), so the order of the visits does not matter: the
    # nodes outside any guard are walked first, setting aside what a guard holds, then everything set aside
    # (where every node is guarded, so nothing is set apart from it again), each off a plain stack.
    under: list = []
    if not _loads([ast], under, unguarded) or not _loads(under, under, guarded):
        return frozenset()
    return frozenset(guarded - unguarded - {_GEN})


def _loads(stack: list, under: list, found: set[str]) -> bool:
    """Walk ``stack`` adding the names each node loads to ``found``; a node only ``add_generation_prompt``
    lets run (an ``if`` body, the right of an ``and``, an inline ``if``'s first branch) goes to ``under``
    instead. False at what ends the question (a block, include or import; a template that sets the switch).
    It dispatches on the exact class (none of these has a subclass in jinja): it visits every node of the
    template, and a chain of isinstance tests per node was most of its time."""
    from jinja2 import nodes

    stop = {nodes.Block, nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport}
    name_t, if_t, and_t, cond_t = nodes.Name, nodes.If, nodes.And, nodes.CondExpr
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        n = pop()
        t = type(n)
        if t is name_t:
            if n.ctx == "load":
                found.add(n.name)
            elif n.name == _GEN:
                return False
            continue
        if t in stop:
            return False
        if t is if_t:
            if not _unless_given(n.test):  # else its body never runs: the switch is always given
                push(n.test)
                (under if _implies_gen(n.test) else stack).extend(n.body)
            extend(n.elif_)
            extend(n.else_)
        elif t is and_t:
            push(n.left)
            (under if _implies_gen(n.left) else stack).append(n.right)
        elif t is cond_t:
            push(n.test)
            (under if _implies_gen(n.test) else stack).append(n.expr1)
            if n.expr2 is not None:
                push(n.expr2)
        else:
            extend(n.iter_child_nodes())
    return True


def reasoning_switches(source: str) -> list[dict]:
    """Fresh copies of ``_reasoning_switches``: the analysis' prober and verify's ask for the same source."""
    return [dict(m) for m in _reasoning_switches(source)]


@functools.lru_cache(maxsize=8)
def _reasoning_switches(source: str) -> tuple[dict, ...]:
    """Modes for the reasoning switches a template reads other than ``enable_thinking``: each variable
    read from the render context (jinja2.meta on the parsed template, not run) whose name speaks of
    thinking or reasoning, set to True, False and every string the template compares it with
    (``reasoning_effort == 'high'``). Parsing runs no template code."""
    modes: list[dict] = []
    for name, consts in _switch_constants(source):
        if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in consts):
            continue  # a number (a thinking budget), not a switch: False would read as a budget of 0
        modes += [{name: v} for v in dict.fromkeys([True, False] + [v for v in consts if isinstance(v, str)])]
    return tuple(modes[:MAX_SWITCH_MODES])


def reasoning_budgets(source: str) -> list[str]:
    """The names of thinking budgets the template reads (``thinking_budget``: a think/reason name it compares
    with numbers), which ``reasoning_switches`` leaves out. A budget of 0 may close the block in the prompt
    (Seed-OSS), which says the other budgets leave the block to the model (``reasoning._lone_close``)."""
    return [name for name, consts in _switch_constants(source)
            if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in consts)]


@functools.lru_cache(maxsize=8)
def _switch_constants(source: str) -> tuple[tuple[str, tuple], ...]:
    """Each think/reason name the template reads from its context, with the constants it compares it with."""
    from jinja2 import nodes

    if not _reads_switch(source):  # no bare name of that kind: nothing to parse for (most templates)
        return ()
    try:
        ast = _tree(source)
        names = sorted(n for n in context_reads(source) if _SWITCH_NAME.search(n) and n not in ("enable_thinking", "messages"))
    except Exception:  # noqa: BLE001 - a template the sandbox cannot compile fails there, with its own message
        return ()
    out = []
    compares = list(ast.find_all(nodes.Compare)) if names else []  # one walk for every name
    for name in names:
        consts = []
        for cmp in compares:
            operands = [cmp.expr] + [o.expr for o in cmp.ops]
            if any(isinstance(o, nodes.Name) and o.name == name for o in operands):
                consts += [o.value for o in operands if isinstance(o, nodes.Const)]
                consts += [i.value for o in operands if isinstance(o, (nodes.List, nodes.Tuple)) for i in o.items if isinstance(i, nodes.Const)]
                consts += [i for o in operands if isinstance(o, nodes.Const) and isinstance(o.value, (list, tuple)) for i in o.value]  # folded
        out.append((name, tuple(v for v in consts if not isinstance(v, (list, tuple)))))
    return tuple(out)


# What every template reads from the render context that is no switch of its own: the conversation, the
# generation flag, special tokens and the sandbox's globals.
_STANDARD_NAMES = frozenset({
    "messages", "tools", "documents", "add_generation_prompt", "enable_thinking", "bos_token", "eos_token", "unk_token",
    "pad_token", "raise_exception", "strftime_now", "namespace", "dict", "range", "lipsum", "cycler", "joiner", "loop",
    "true", "false", "none", "True", "False", "None", "tool", "message"})
MAX_CONTEXT_NAMES = 16


def context_names(source: str) -> list[str]:
    """The other names a template reads from the render context (``builtin_tools``, ``date_string``,
    ``custom_tools``), sorted, at most ``MAX_CONTEXT_NAMES``: the parsed template is read, nothing runs."""
    try:
        names = context_reads(source)
    except Exception:  # noqa: BLE001 - a template the sandbox cannot compile fails there, with its own message
        return []
    return sorted(n for n in names if n not in _STANDARD_NAMES and not n.endswith("_token"))[:MAX_CONTEXT_NAMES]
