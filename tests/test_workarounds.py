"""Workarounds are data: a file under a workarounds dir changes the analysis of matching templates."""

import json

import pytest

import autoparser
from autoparser.analysis import workarounds

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_workaround_file_changes_analysis(tmp_path):
    base = autoparser.analyze(CHATML, workarounds_dir=str(tmp_path))
    assert base.reasoning.mode == "NONE"
    (tmp_path / "think.json").write_text(json.dumps({
        "name": "chatml-think",
        "why": "this template family emits <think> reasoning it never renders",
        "match": ["<|im_start|>"],
        "when": {"reasoning.mode": "NONE"},
        "set": {"reasoning.mode": "TAG_BASED", "reasoning.start": "<think>", "reasoning.end": "</think>"},
    }))
    workarounds.load_dir.cache_clear()
    fixed = autoparser.analyze(CHATML, workarounds_dir=str(tmp_path))
    assert fixed.reasoning.start == "<think>" and fixed.workarounds == ("chatml-think",)
    tmpl = autoparser.infer_result(CHATML, workarounds_dir=str(tmp_path)).template
    from transformers.utils.chat_parsing import parse_response

    out = parse_response("<think>hm</think>Hi<|im_end|>", tmpl, prefix="<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n")
    assert out == {"role": "assistant", "thinking": "hm", "content": "Hi"}


def test_non_matching_workaround_is_ignored(tmp_path):
    (tmp_path / "w.json").write_text(json.dumps({"name": "x", "why": "y", "match": ["NOT IN SOURCE"], "set": {"reasoning.start": "<x>"}}))
    workarounds.load_dir.cache_clear()
    assert autoparser.analyze(CHATML, workarounds_dir=str(tmp_path)).workarounds == ()


@pytest.mark.parametrize("bad", ["{", "[1]", '{"name": "x", "why": "y", "match": [], "set": {"a": 1}}', '{"name": "x", "why": "y", "match": ["a"], "set": {"reasoning.nope": 1}}'])
def test_malformed_workaround_is_one_clear_error(tmp_path, bad):
    (tmp_path / "bad.json").write_text(bad)
    workarounds.load_dir.cache_clear()
    with pytest.raises(autoparser.WorkaroundError) as e:
        autoparser.analyze(CHATML, workarounds_dir=str(tmp_path))
    assert "bad.json" in str(e.value)
