"""``--serve`` guidance, the grammar form that goes with it, the added tokens a grammar writes as tokens,
and the one-call restriction read from the verdict. The claims about what vLLM accepts are checked
against vLLM's own code by ``benchmarks/engines.py`` (and tests/test_engines.py where vLLM is installed);
here: that what we print and build follows from the template the way those claims say."""

from __future__ import annotations

import json

import pytest

from autoparser.grammar.build import build, single_call_only
from autoparser.grammar.tokens import added_tokens, added_tokens_from
from autoparser.serve import grammar_form, guidance, request_shapes
from autoparser.verify import VERIFY_TOOLS

CALLS = {"fields": {"content": {}, "tool_calls": {}}}
THINK_CALLS = {"fields": {"thinking": {}, "content": {}, "tool_calls": {}}}
PLAIN = {"fields": {"content": {}}}

QWEN = """{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>
{{ m.reasoning_content }}
</think>

{% endif %}{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
<think>
{% endif %}"""


def test_vllm_flags_follow_the_fields():
    lines = guidance(THINK_CALLS, "vllm", "m")
    assert ("vllm serve m --reasoning-parser hf --enable-auto-tool-choice --tool-call-parser hf "
            "--structured-outputs-config '{\"enable_in_reasoning\": true}'") in lines
    assert "vllm serve m --enable-auto-tool-choice --tool-call-parser hf" in guidance(CALLS, "vllm", "m")
    text = "\n".join(lines)
    assert 'tool_choice="auto"' in text and "parallel_tool_calls=false" in text and "--serve vllm" in text
    plain = "\n".join(guidance(PLAIN, "vllm", "m"))
    assert "vllm serve m\n" in plain + "\n" and "--tool-call-parser" not in plain.split("\n")[1]
    assert 'must send tool_choice="none"' in plain


def test_sglang_flags():
    lines = guidance(CALLS, "sglang", "m")
    assert "python -m sglang.launch_server --model-path m --reasoning-parser response_template --tool-call-parser response_template" in lines
    assert any("must not send tools" in line for line in guidance(PLAIN, "sglang", "m"))


def test_request_shapes_say_what_vllm_refuses():
    shapes = {name: ok for name, _, ok in request_shapes(THINK_CALLS, "start: x", VERIFY_TOOLS)}
    assert shapes["tools, tool_choice=auto, grammar"] and shapes["tools, tool_choice=none"]
    assert not any(ok for name, ok in shapes.items() if "refused" in name)
    assert sum("refused" in n for n in shapes) == 3
    plain = request_shapes(PLAIN, None, VERIFY_TOOLS)
    assert [ok for name, _, ok in plain if "tool_choice=auto" in name] == [False]


def test_grammar_form_matches_the_flags():
    assert grammar_form(THINK_CALLS, "vllm") == {"after_reasoning": False}  # enable_in_reasoning: from the first token
    assert grammar_form(THINK_CALLS, "sglang") == {"after_reasoning": False}  # SGLang's gate needs a literal end token
    assert grammar_form(CALLS, "vllm") == {"after_reasoning": False}
    assert grammar_form(THINK_CALLS, None) == {}


def test_after_reasoning_form_starts_after_the_end():
    """With reasoning open in the prompt, the served form starts where vLLM's gate opens (after the end
    marker): it accepts the reply from there and not the reasoning itself."""
    import autoparser

    pytest.importorskip("llguidance")
    from grammar_support import byte_tokenizer
    import llguidance
    import llguidance.hf

    res = autoparser.infer_result(QWEN, {})
    hf = byte_tokenizer(["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"])
    tok, vocab = llguidance.hf.from_tokenizer(hf), hf.get_added_vocab()

    def ok(g, text):
        m = llguidance.LLMatcher(tok, llguidance.grammar_from("lark", g), log_level=0)
        assert not m.is_error(), m.get_error()
        return all(m.consume_token(t) for t in hf.encode(text, add_special_tokens=False)) and m.is_accepting()

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'
    full = build(res.analysis, VERIFY_TOOLS, reasoning_open=True, tokens=vocab)
    served = build(res.analysis, VERIFY_TOOLS, reasoning_open=True, tokens=vocab, after_reasoning=True)
    assert ok(full, "plan\n</think>\n\n" + call) and not ok(full, call)
    assert ok(served, call) and not ok(served, "plan\n</think>\n\n" + call)
    assert "<[" in served and '"<tool_call>"' not in served


def test_single_call_from_verdict():
    assert not single_call_only(None) and not single_call_only({"status": "full"})
    assert single_call_only({"tool_capabilities": {"parallel": "fail"}})
    assert single_call_only({"tool_capabilities": {"parallel": "absent"}})
    assert not single_call_only({"tool_capabilities": {"parallel": "pass"}})
    lines = guidance(CALLS, "vllm", "m", verdict={"tool_capabilities": {"parallel": "fail"}})
    assert any("--no-parallel" in line for line in lines)


def test_added_tokens_from_files(tmp_path):
    from grammar_support import byte_tokenizer

    hf = byte_tokenizer(["<tool_call>", "</tool_call>"])
    hf.save_pretrained(tmp_path)
    got = added_tokens(tmp_path)
    assert got["<tool_call>"] == hf.convert_tokens_to_ids("<tool_call>") and "</tool_call>" in got
    assert added_tokens_from({"added_tokens_decoder": {"7": {"content": "<x>"}}}) == {"<x>": 7}
    assert added_tokens_from({"added_tokens": [{"id": 3, "content": "<y>"}]}) == {"<y>": 3}


def test_cli_writes_tokens(tmp_path, capsys):
    """A model directory brings its tokenizer: markers that are added tokens come out as tokens; a bare
    template file says in one line that markers are matched as text."""
    from autoparser.cli.main import main
    from grammar_support import byte_tokenizer

    hf = byte_tokenizer(["<tool_call>", "</tool_call>", "<|im_end|>", "<think>", "</think>"])
    model = tmp_path / "model"
    hf.save_pretrained(model)
    (model / "chat_template.jinja").write_text(QWEN)
    (tmp_path / "tools.json").write_text(json.dumps(VERIFY_TOOLS))
    ids = hf.get_added_vocab()
    assert main(["grammar", str(model), "--tools", str(tmp_path / "tools.json"), "--serve", "vllm"]) == 0
    out, err = capsys.readouterr()
    assert f"<[{ids['<tool_call>']}]>" in out and '"<tool_call>"' not in out and "matched as text" not in err
    assert out.splitlines()[1].startswith("start: think body")  # vLLM applies it from the first token: reasoning included
    assert main(["grammar", str(model), "--tools", str(tmp_path / "tools.json"), "--after-reasoning"]) == 0
    assert capsys.readouterr()[0].splitlines()[1] == "start: body"  # after a literal reasoning end: the reply itself
    (tmp_path / "t.jinja").write_text(QWEN)
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json")]) == 0
    out, err = capsys.readouterr()
    assert '"<tool_call>"' in out and err.strip() == "grammar: no tokenizer (a bare template file; see --tokenizer): markers are matched as text"
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), "--tokenizer", str(model / "tokenizer.json")]) == 0
    assert f"<[{ids['</tool_call>']}]>" in capsys.readouterr().out
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), "--tokenizer", str(tmp_path / "nope")]) == 2
    assert "no such tokenizer" in capsys.readouterr().err


def test_hub_source_brings_its_added_tokens(hub_env, fake_hub, tmp_path):
    """A Hub id: the tokenizer_config.json the source fetched carries ``added_tokens_decoder``; the grammar
    writes those markers as tokens (no tokenizer.json or weights downloaded)."""
    config = {"chat_template": QWEN, "eos_token": "<|im_end|>",
              "added_tokens_decoder": {"151657": {"content": "<tool_call>", "special": False},
                                       "151658": {"content": "</tool_call>", "special": False},
                                       "151645": {"content": "<|im_end|>", "special": True}}}
    fake_hub.add("test-org/tok", {"tokenizer_config.json": config})
    (tmp_path / "tools.json").write_text(json.dumps(VERIFY_TOOLS))
    r = hub_env.run("grammar", "test-org/tok", "--tools", str(tmp_path / "tools.json"))
    assert r.returncode == 0, r.stderr
    assert "<[151657]>" in r.stdout and "<[151658]>" in r.stdout and '"<tool_call>"' not in r.stdout
    assert "matched as text" not in r.stderr


def test_serve_says_when_a_format_has_no_grammar():
    """A format the grammar writers refuse (here: gpt-oss, whose content beside calls goes to the reasoning channel) gets one line saying so, and neither a
    grammar command nor enable_in_reasoning; a format with a grammar gets no such line."""
    from pathlib import Path

    import autoparser

    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "templates"
    headed = corpus / "openai-gpt-oss-120b.jinja"
    if not headed.is_file():
        pytest.skip(f"corpus not found at {corpus}")
    res = autoparser.infer_result(headed.read_text(encoding="utf-8"), {"bos_token": "<s>", "eos_token": "</s>"})
    for server in ("vllm", "sglang"):
        lines = guidance(res.template, server, "m", analysis=res.analysis)
        said = [line for line in lines if line.startswith("no grammar for this tool-call format")]
        assert len(said) == 1 and "reasoning channel" in said[0]
        assert not any("autoparser grammar" in line or "enable_in_reasoning" in line for line in lines)
    qwen = autoparser.infer_result(QWEN, {})
    assert not any(line.startswith("no grammar") for line in guidance(qwen.template, "vllm", "m", analysis=qwen.analysis))
