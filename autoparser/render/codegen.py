"""The sandbox's parse and code generation: jinja's parser with the tree's lookups recorded in its last walk
(``_attach``), and jinja's code generator without compile-time evaluation and with literals weighed once.
Part of the sandbox: the generated code is jinja's."""

from __future__ import annotations

import weakref
from typing import Any

import jinja2
import jinja2.nodes
import jinja2.parser
from jinja2.compiler import CodeGenerator

from .weights import _ATOMS, MAX_OUTPUT


class _Parser(jinja2.parser.Parser):
    def parse(self) -> jinja2.nodes.Template:
        root = jinja2.nodes.Template(self.subparse(), lineno=1)
        _attach(root, self.environment)
        return root


def _no_children(exclude=None, only=None):
    return iter(())


class _Children(list):
    """A node's children, read once: its ``iter_child_nodes``. One object per inner node (a closure per node
    cost more in the garbage collector's passes than the visitors saved). It knows its node by a weak
    reference: a strong one made every inner node a reference cycle, so a tree the sandbox let go of (it
    keeps the last few) lived on, whole, until a full collection found it."""

    __slots__ = ("node",)

    def __call__(self, exclude=None, only=None):
        if exclude is None and only is None:
            return iter(self)
        return jinja2.nodes.Node.iter_child_nodes(self.node(), exclude, only)


def _attach(root: jinja2.nodes.Template, environment) -> None:
    """What jinja's parser does last (every node gets the environment), in the same walk as what makes the
    code generator's searches cheap: it searches the tree for kinds of node chat templates rarely hold, the
    whole template three times (extends, blocks, imports) and each for loop's subtree twice (blocks, and
    names to find an assignment to ``loop``). The walk records which kinds occur; a search for a kind that
    never occurs returns nothing at once. Every frame's symbol visitor walks its subtree through each node's
    ``iter_child_nodes`` (a generator over a generator of fields): each node's children are read here once.
    Same generated code; every search and walk gives what it gives without."""
    kinds, searched, loop_store, filters, tests = set(), [root], False, set(), set()
    node_class, for_class, assign_class, name_class = jinja2.nodes.Node, jinja2.nodes.For, jinja2.nodes.Assign, jinja2.nodes.Name
    filter_class, test_class = jinja2.nodes.Filter, jinja2.nodes.Test
    stack = [root]
    pop = stack.pop
    while stack:
        n = pop()
        n.environment = environment
        t = type(n)
        kinds.add(t)
        if t is for_class or t is assign_class:
            searched.append(n)
        elif t is name_class:
            if n.ctx == "store" and n.name == "loop":
                loop_store = True
        elif t is filter_class:
            filters.add(n.name)
        elif t is test_class:
            tests.add(n.name)
        children = _Children()
        add = children.append
        for f in t.fields:  # the children, as ``Node.iter_child_nodes`` finds them
            v = getattr(n, f, None)
            if isinstance(v, node_class):
                add(v)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, node_class):
                        add(x)
        if children:
            stack += children
            children.node = weakref.ref(n)
            n.iter_child_nodes = children
        else:  # a leaf (names, constants, text): half the nodes; one shared answer, nothing kept
            n.iter_child_nodes = _no_children

    if jinja2.nodes.Block not in kinds:  # the code generator's search for them stops at blocks
        root.sandbox_dependencies = (filters, tests)  # (``_CodeGenerator.pull_dependencies``)
    answers: dict[type, bool] = {}

    def absent(node_type) -> bool:  # asked at every for loop and assignment: answered once per kind
        hit = answers.get(node_type)
        if hit is None:
            hit = answers[node_type] = not any(issubclass(k, node_type) for k in kinds)
        return hit

    for n in searched:
        def find_all(node_type, _node=weakref.ref(n), _loop=type(n) is for_class):  # weakly, as ``_Children``
            if absent(node_type) or (_loop and node_type is name_class and not loop_store):
                return iter(())  # a for loop searches its names only for a store to ``loop``
            node = _node()
            return type(node).find_all(node, node_type)

        n.find_all = find_all


def _static_weight(node: jinja2.nodes.Node) -> float:
    """What ``_weight`` gives the value of a literal made only of constants (and such literals); infinite
    for anything else. Iterative: literals nest as deep as the parser allows."""
    total, stack = 0, [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is jinja2.nodes.Const:
            v = n.value
            if type(v) not in _ATOMS:
                return float("inf")
            total += len(v) if type(v) is str else 8
        elif t is jinja2.nodes.List or (t is jinja2.nodes.Tuple and n.ctx == "load"):
            total += 2 + len(n.items)
            stack.extend(n.items)
        elif t is jinja2.nodes.Dict:
            total += 2 + 2 * len(n.items)
            stack.extend(x for pair in n.items for x in (pair.key, pair.value))
        else:
            return float("inf")
    return total


_VISITORS: dict[type, Any] = {}  # node class -> the code generator's method for it (False: none)


class _CodeGenerator(CodeGenerator):
    """jinja's code generator minus compile-time evaluation (it would run outside the budget and the guards),
    with ``~`` operands checked before they are joined."""

    def visit(self, node, *args, **kwargs):
        # jinja's visitor builds the method's name and looks it up at each of a template's ~2000 nodes.
        f = _VISITORS.get(type(node))
        if f is None:
            f = _VISITORS[type(node)] = getattr(_CodeGenerator, f"visit_{type(node).__name__}", None) or False
        if f:
            return f(self, node, *args, **kwargs)
        return self.generic_visit(node, *args, **kwargs)

    def visit_Template(self, node, frame=None):
        self._dependencies = (node.body, getattr(node, "sandbox_dependencies", None))
        super().visit_Template(node, frame)

    def pull_dependencies(self, nodes):
        # The template's filters and tests, bound once at its start: their names were gathered by the parse's
        # last walk (``_attach``), where jinja walks the tree again. Those this environment has are bound
        # directly (its filters and tests never change once it is made); jinja's own code, which defers a
        # missing one's error to its use, is kept for any template naming one it lacks.
        body, names = getattr(self, "_dependencies", (None, None))
        env = self.environment
        if nodes is not body or names is None or not (names[0] <= env.filters.keys() and names[1] <= env.tests.keys()):
            return super().pull_dependencies(nodes)
        for id_map, found, kind in ((self.filters, names[0], "filters"), (self.tests, names[1], "tests")):
            for name in sorted(found):
                if name not in id_map:
                    id_map[name] = self.temporary_identifier()
                self.writeline(f"{id_map[name]} = environment.{kind}[{name!r}]")

    def _output_child_to_const(self, node, frame, finalize):
        # Template text, and a literal printed as it is (``{{- '<|im_start|>' }}``, most of a chat template's
        # output): what the render would print, worked out here as jinja does for it (the literal through the
        # sandbox's ``finalize``, which gives it back unchanged), so it joins the text around it in one
        # ``yield``. Anything else is computed at render time, under the budget and the guards.
        if type(node) is jinja2.nodes.Const:
            eval_ctx = frame.eval_ctx
            if eval_ctx.volatile or eval_ctx.autoescape or type(node.value) not in _ATOMS or type(node.value) is str and len(node.value) > MAX_OUTPUT:
                raise jinja2.nodes.Impossible()
        elif not isinstance(node, jinja2.nodes.TemplateData):
            raise jinja2.nodes.Impossible()
        return super()._output_child_to_const(node, frame, finalize)

    def visit_Concat(self, node, frame):
        if frame.eval_ctx.volatile:
            func_name = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            func_name = "markup_join"
        else:
            func_name = "str_join"
        self.write(f"{func_name}(environment.concat_parts((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write(")))")

    # Literals: ``[x, x]`` nested 80 deep is a tiny object that ``==`` or ``in`` walks 2**80 times in C.
    # A literal of constants (``('user', 'system')``) is a fresh tree whose weight the source fixes: it is
    # weighed once here instead of at every evaluation.
    def _checked_literal(self, visit, node, frame):
        if _static_weight(node) <= MAX_OUTPUT:
            return visit(node, frame)
        self.write("environment.checked(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node, frame):
        self._checked_literal(super().visit_List, node, frame)

    def visit_Dict(self, node, frame):
        self._checked_literal(super().visit_Dict, node, frame)

    def visit_Tuple(self, node, frame):
        if node.ctx != "load":  # assignment targets stay names
            return super().visit_Tuple(node, frame)
        self._checked_literal(super().visit_Tuple, node, frame)
