"""Renderings remembered under fewer switches: a switch the template reads only inside its generation
prompt cannot change a rendering without it, and the sandbox's shortcuts give what jinja would."""

from __future__ import annotations

from autoparser.analysis.probes import Prober
from autoparser.analysis.reads import prompt_only_names
from autoparser.render import Renderer

GEN_ONLY = ("{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% if enable_thinking is false %}<think></think>{% endif %}{% endif %}")


def test_switch_read_only_in_the_generation_prompt():
    assert prompt_only_names(GEN_ONLY) == {"enable_thinking"}
    also_in_system = "{% if enable_thinking %}/think{% endif %}" + GEN_ONLY
    assert prompt_only_names(also_in_system) == frozenset()
    guarded_and = "{{ 'x' if add_generation_prompt and enable_thinking }}{% if add_generation_prompt and reasoning %}y{% endif %}"
    assert prompt_only_names(guarded_and) == {"enable_thinking", "reasoning"}
    in_else = "{% if add_generation_prompt %}a{% else %}{{ enable_thinking }}{% endif %}"
    assert prompt_only_names(in_else) == frozenset()
    assigned = "{% set add_generation_prompt = true %}{% if add_generation_prompt %}{{ enable_thinking }}{% endif %}"
    assert prompt_only_names(assigned) == frozenset()


def test_conversation_rendered_once_for_modes_that_only_change_the_prompt():
    pr = Prober(Renderer(GEN_ONLY))
    assert len(pr.modes) == 2  # the switch changes the generation prompt
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    before = pr.r.renders
    outs = {pr.render(msgs, gen=False, mode=mode) for mode in pr.modes}
    assert len(outs) == 1 and pr.r.renders == before + 1
    prompts = {pr.render(msgs[:1], gen=True, mode=mode) for mode in pr.modes}
    assert len(prompts) == 2


def test_builtin_methods_and_constant_tools_render_as_jinja_does():
    import jinja2.sandbox

    src = ("{{ messages[0].content.strip().upper() }}|{{ messages[0].content.format(1) }}|{{ tools | tojson }}|"
           "{{ tools[0] | tojson(indent=2) }}|{{ messages[0].content.__class__ }}|{{ messages.append }}|"
           "{% set ns = namespace(a=1, f='{0.__class__}' | attr('format')) %}{{ ns.a }}{{ ns._x }}{{ ns.f(1) }}|"
           "{% for i in [1, 2] %}{{ loop.index }}{{ loop.last }}{{ loop.__class__ }}{% endfor %}")
    from autoparser.analysis.probes import TOOLS

    msgs = [{"role": "user", "content": " a{} "}]
    plain = jinja2.sandbox.ImmutableSandboxedEnvironment()
    plain.filters["tojson"] = lambda x, indent=None: __import__("json").dumps(x, ensure_ascii=False, indent=indent)
    want = plain.from_string(src).render(messages=msgs, tools=TOOLS)
    r = Renderer(src)
    assert r.render(msgs, tools=TOOLS) == want
    assert r.render(msgs, tools=TOOLS) == want  # the remembered verdicts and serialisations give the same
