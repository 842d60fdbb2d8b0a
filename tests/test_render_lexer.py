"""The sandbox tokenizes and parses with its own shortcuts (``render/lexer.py``, ``codegen._attach``); what
comes out must be what jinja's own lexer and parser give: the same tokens (type, value, line), the same
tree, and the same syntax error (message and line) at the same point, on real templates, on edge cases of
jinja's whitespace control, raw blocks and comments, and on systematic mutations of each."""

from __future__ import annotations

from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.lexer
import jinja2.nodes as nodes
import jinja2.parser
import pytest

from autoparser.render import Renderer, sandbox
from autoparser.render.lexer import Lexer

from conftest import CORPUS, REPO_ROOT

EDGES = [
    "", "a", "x\r\ny\rz\n\n", "{#", "{# never closed", "{#- c -#}\n  x", "  {# c #}\n", "{% raw %}", "{% raw %}x",
    "{%- raw -%}\n x {%- endraw -%}\n", "{% raw -%}  a  {%- endraw %}", "a\n  {% raw %}\n  b\n  {% endraw %}\n",
    "{{ x", "{{ (x }}", "{{ x) }}", "{{ [x) }}", "{{ {'a': 1}}}", "{{ {'a': {'b': 2}}}}x", "{{ a } }}", "{% if (a %}{% endif %}",
    "{{ 'a\\nb' }}", "{{ '\\N{foo}' }}", "{{ 'a", "{{ \"a\\\"b\" }}", "{{ 'x\ny' }}\n{{ z }",
    "{{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1.5e3 }} {{ 1e5 }} {{ 2.5 }} {{ 1__0 }} {{ 0b2 }} {{ 07 }}",
    "  {% if x %}\n  a\n  {% endif %}  \n", "a  {%+ if x %}b{% endif %}", "a \n {%- if x -%} \n b {{- c -}} \n d",
    "text {{- x }}\n\t{%+ y %}", "\n\n{%+ x %}", "  {{ x }}\n  {% if y %}z{% endif %}", "{{ a\n+\nb }}\n{{ c", "{{ x\u00e9 }}",
    "{{ \u00b2 }}", "{{ a$ }}", "{{ a ~ b }}{{ a // b ** c }}{{ a != b }}{{ [1, 2][1:] }}", "{% for x in y %}{{ loop.index }}{% endfor %}\n",
    "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }}", "{% macro m(a, b=2) %}{{ caller() }}{% endmacro %}{% call m(1) %}x{% endcall %}",
    "{% generation %}{{ x }}{% endgeneration %}", "{% block b %}{{ y|upper }}{% endblock %}", "{{ x|nope }}", "{% if x is nope %}{% endif %}",
    "{{ 9" + "9" * 5000 + " }}", "{% for %}", "{% endfor %}", "{% if x %}", "{{ }}", "{% %}", "}}", "%}", "{{ x }}}}",
]


def _reference():
    """The sandbox's environment class with jinja's own lexer and parser put back."""

    class Reference(sandbox._ImmutableEnv):
        lexer = property(jinja2.lexer.get_lexer)

        def _parse(self, source, name, filename):
            return jinja2.parser.Parser(self, source, name, filename).parse()

    return Reference(trim_blocks=True, lstrip_blocks=True, extensions=[sandbox._GenerationTag, jinja2.ext.loopcontrols],
                     optimized=False, finalize=sandbox._check)


def _sources() -> list[str]:
    paths = sorted((REPO_ROOT / "models").glob("*.jinja"))
    for sub in ("templates", "wild/templates"):
        paths += sorted((CORPUS / sub).glob("*.jinja"))
    return [p.read_text(encoding="utf-8") for p in paths] + EDGES


def _mutations(src: str, step: int) -> list[str]:
    """Cuts, dropped characters and inserted delimiters at every ``step``-th position of the first 2000
    characters (the rest of the template follows each)."""
    src, out = src[:2000], []
    for i in range(0, len(src) + 1, step):
        out += [src[:i], src[:i] + src[i + 1:]]
        out += [src[:i] + piece + src[i:] for piece in ("{{", "}}", "{%", "%}", "{#", "#}", "-", "(", "]", "'", "\n", "{% raw %}")]
    return out


def _tokens(lexer, src: str) -> list:
    out = []
    try:
        out.extend(tuple(t) for t in lexer.tokenize(src, "t", "t.jinja"))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        out.append((type(e).__name__, str(e), getattr(e, "lineno", None), getattr(e, "name", None), getattr(e, "filename", None)))
    return out


def _dump(n):
    if isinstance(n, nodes.Node):
        return (type(n).__name__, n.lineno, n.environment is not None, [(f, _dump(getattr(n, f, None))) for f in n.fields])
    if isinstance(n, list):
        return [_dump(x) for x in n]
    return repr(n)


def _parsed(env, src: str):
    try:
        tree = env.parse(src)
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e), getattr(e, "lineno", None))
    walked = [type(x).__name__ for x in tree.find_all(nodes.Node)]
    searched = [(type(x).__name__, [type(y).__name__ for y in x.find_all((nodes.Name, nodes.Block, nodes.Extends))]) for x in tree.find_all((nodes.For, nodes.Assign))]
    return _dump(tree), walked, searched


def test_tokens_are_jinjas():
    env = sandbox._environment(False)
    assert isinstance(env.lexer, Lexer) and env.lexer.fast
    theirs = jinja2.lexer.Lexer(env)
    srcs = _sources()
    cases = srcs + [m for s in srcs[:30] for m in _mutations(s, 40)]
    raised = 0
    for src in cases:
        expected = _tokens(theirs, src)
        raised += expected[-1][0] == "TemplateSyntaxError" if expected else 0
        assert _tokens(env.lexer, src) == expected, src[:200]
    assert raised > 100  # the mutations reach the lexer's errors


def test_trees_and_syntax_errors_are_jinjas():
    ours, theirs = sandbox._environment(False), _reference()
    srcs = _sources()
    raised = 0
    for src in srcs + [m for s in srcs[:12] for m in _mutations(s, 50)]:
        expected = _parsed(theirs, src)
        raised += isinstance(expected[0], str)
        assert _parsed(ours, src) == expected, src[:200]
    assert raised > 100


def test_children_read_once_answer_as_jinja():
    tree = sandbox._environment(False).parse("{% for m in messages %}{{ m.role|upper }}{% endfor %}{% call f() %}x{% endcall %}")
    for n in tree.find_all(nodes.Node):
        for exclude, only in ((None, None), (("call",), None), (None, ("body",)), (("body",), ("body", "test"))):
            assert list(n.iter_child_nodes(exclude, only)) == list(nodes.Node.iter_child_nodes(n, exclude, only))


@pytest.mark.parametrize("src, out", [
    ("{% if false %}{{ x|nope }}{% endif %}ok", "ok"),  # a missing filter fails where it runs, as in jinja
    ("{% if true %}{{ 'a'|nope }}{% endif %}", "No filter named 'nope' found."),
    ("{{ 'a'|nope }}", "line 1: No filter named 'nope'."),
    ("{% if 1 is nope %}{% endif %}", "No test named 'nope' found."),
    ("{% block b %}{{ 'x'|upper }}{% endblock %}{{ 'Y'|lower }}{{ 3 is odd }}", "Xytrue"),
    ("{{ [3, 1]|sort|join(',') }}{{ 'a' is string }}", "1,3True"),
])
def test_filters_and_tests_bound_at_the_start_behave_as_jinjas(src, out):
    try:
        got = Renderer(src).render([{"role": "user", "content": "x"}])
    except Exception as e:  # noqa: BLE001
        got = str(e)
    assert out.lower() in got.lower()


def test_a_tree_let_go_of_is_freed_at_once():
    """The parse's last walk links each node and its children without a reference cycle: a tree the sandbox
    stops keeping is freed when let go of, not left (whole) for a full garbage collection to find. Failed
    before the children knew their node weakly (every inner node was a cycle)."""
    import gc
    import weakref

    src = "{% for m in messages %}{% set x = m.role %}{% if x == 'user' %}{{ m.content|trim }}{% endif %}{% endfor %}{% call f() %}y{% endcall %}"
    was = gc.isenabled()
    gc.disable()
    try:
        tree = sandbox._environment(False).parse(src)
        assert any(True for _ in tree.find_all(nodes.Name))  # the searches and children it was given work
        assert [type(c).__name__ for c in tree.body[0].iter_child_nodes(only=("body",))] == ["Assign", "If"]
        ref = weakref.ref(tree)
        del tree
        assert ref() is None
    finally:
        if was:
            gc.enable()
