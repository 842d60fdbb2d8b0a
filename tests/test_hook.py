"""The tokenizer-load hook and the result cache, on a real (tiny) tokenizer saved and reloaded by transformers."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from conftest import corpus_template, make_tokenizer

import autoparser
from autoparser import cache

SHIPPED = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>", "content": "text"}}}
CONVERSATION = [{"role": "user", "content": "What is two plus two?"}]
REPLY = {"role": "assistant", "content": "It is four.", "reasoning_content": "Two plus two makes four."}


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A private result cache, the hook off afterwards."""
    monkeypatch.setenv("AUTOPARSER_CACHE_DIR", str(tmp_path / "autoparser-cache"))
    cache.clear_memory()
    yield
    autoparser.disable()
    cache.clear_memory()


def saved(tmp_path, chat_template, response_template=None, name="tok"):
    path = tmp_path / name
    make_tokenizer(chat_template, response_template).save_pretrained(path)
    return path


def check_parses(tok):
    """Render a reply with the model's own template, cut at the end-of-turn token as generation stops, parse it."""
    prompt = tok.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    full = tok.apply_chat_template([*CONVERSATION, REPLY], tokenize=False)
    assert full.startswith(prompt)
    reply = full[len(prompt):]
    reply = reply[: reply.index(tok.eos_token) + len(tok.eos_token)]
    parsed = tok.parse_response(reply, prefix=prompt)
    assert parsed["content"] == REPLY["content"]
    assert parsed["thinking"] == REPLY["reasoning_content"]


def test_enable_attaches_on_autotokenizer_load(tmp_path):
    from transformers import AutoTokenizer

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"))
    assert AutoTokenizer.from_pretrained(path).response_template is None
    autoparser.enable()
    autoparser.enable()  # idempotent
    tok = AutoTokenizer.from_pretrained(path)
    assert tok.response_template is not None
    check_parses(tok)
    autoparser.disable()
    assert AutoTokenizer.from_pretrained(path).response_template is None


def test_the_tokens_a_model_stops_on_end_the_turn(tmp_path):
    """generation_config.json names the tokens a model stops on (``eos_token_id``): a generation decoded with its
    special tokens ends with one of them, here Qwen's ``<|endoftext|>`` beside its ``<|im_end|>``. The CLI (the
    model directory) and the hook (the tokenizer loaded from it) read them alike, so they infer one template, and
    the token ends the reply instead of reaching the content. Fails on the commit before: the content kept it."""
    from transformers import AutoTokenizer

    from autoparser.hook import _special_tokens
    from autoparser.sources.local import load_dir
    from autoparser.sources.template_source import STOP_TOKENS

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"))
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    (path / "generation_config.json").write_text(json.dumps({"eos_token_id": ids, "pad_token_id": ids[1]}))
    src = load_dir(path)
    assert src.special_tokens[STOP_TOKENS] == "<|endoftext|>"  # the eos_token itself is no other stop token
    assert _special_tokens(tok)[STOP_TOKENS] == "<|endoftext|>"
    autoparser.enable()
    tok = AutoTokenizer.from_pretrained(path)
    assert tok.response_template == autoparser.infer_result(src.template, src.special_tokens).template
    prompt = tok.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    parsed = tok.parse_response("<think>\nSum.\n</think>\n\nIt is four.<|endoftext|>", prefix=prompt)
    assert (parsed["thinking"], parsed["content"]) == ("Sum.", "It is four.")
    (path / "generation_config.json").write_text("{not json")  # a broken one adds nothing and breaks nothing
    assert STOP_TOKENS not in load_dir(path).special_tokens


def test_padding_after_a_batched_reply_is_no_text(tmp_path):
    """A batched generation decoded whole pads a short reply after its end with the tokenizer's pad token
    (Qwen's ``<|endoftext|>``): padding is never text, after an answer or after a call. Fails on the commit
    before: the pad tokens came back as content."""
    from transformers import AutoTokenizer

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"))
    autoparser.enable()
    tok = AutoTokenizer.from_pretrained(path)
    prompt = tok.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    pads = tok.pad_token * 3
    parsed = tok.parse_response(f"<think>\nSum.\n</think>\n\nIt is four.{tok.eos_token}{pads}", prefix=prompt)
    assert (parsed["thinking"], parsed["content"]) == ("Sum.", "It is four.")
    call = '<think>\n\n</think>\n\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 2}}\n</tool_call>'
    parsed = tok.parse_response(f"{call}{tok.eos_token}{pads}", prefix=prompt)
    assert parsed["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 2}}
    assert not parsed.get("content"), parsed


def test_batch_write_then_plain_load(hub_env, tmp_path):
    from transformers import AutoTokenizer

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"))
    before = json.loads((path / "tokenizer_config.json").read_text())
    (tmp_path / "models.txt").write_text(f"{path}\n")
    r = hub_env.run("batch", "models.txt", "-o", "out", "--write", "--workers", "1")
    assert r.returncode == 0, r.stderr
    after = json.loads((path / "tokenizer_config.json").read_text())
    assert {k: v for k, v in after.items() if k != "response_template"} == before
    assert not autoparser.hook.enabled()
    tok = AutoTokenizer.from_pretrained(path)
    assert tok.response_template == after["response_template"]
    check_parses(tok)
    row = json.loads((tmp_path / "out" / "summary.json").read_text())["models"][0]
    assert row["written"] == str(path / "tokenizer_config.json")


def test_shipped_response_template_is_kept(tmp_path):
    from transformers import AutoTokenizer

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"), response_template=SHIPPED)
    autoparser.enable()
    assert AutoTokenizer.from_pretrained(path).response_template == SHIPPED


def test_broken_template_warns_once_and_loads(tmp_path, caplog):
    from transformers import AutoTokenizer

    path = saved(tmp_path, "{% for %}")
    autoparser.enable()
    with caplog.at_level(logging.WARNING, logger="autoparser"):
        tok = AutoTokenizer.from_pretrained(path)
    ours = [r for r in caplog.records if r.name == "autoparser"]
    assert len(ours) == 1 and ours[0].levelno == logging.WARNING and "syntax error" in ours[0].getMessage().lower()
    assert tok.response_template is None and tok.chat_template == "{% for %}"
    assert tok("a b").input_ids  # the tokenizer works


def test_attach_named_templates_and_none():
    qwen3 = corpus_template("Qwen-Qwen3-0.6B")
    tok = make_tokenizer({"default": qwen3, "tool_use": "{{ 'tools' }}"})
    assert autoparser.attach(tok) is tok
    assert tok.response_template == autoparser.attach(make_tokenizer(qwen3)).response_template
    plain = make_tokenizer(None)
    assert autoparser.attach(plain).response_template is None
    only_named = make_tokenizer({"tool_use": qwen3})  # no default: transformers renders every request with it
    assert autoparser.attach(only_named).response_template == autoparser.attach(make_tokenizer(qwen3)).response_template


def test_cache_hits_are_fast_and_survive_corruption(tmp_path, monkeypatch):
    import autoparser.pipeline

    qwen3 = corpus_template("Qwen-Qwen3-0.6B")
    calls = []
    real = autoparser.pipeline.infer_result
    monkeypatch.setattr(autoparser.pipeline, "infer_result", lambda *a, **k: calls.append(1) or real(*a, **k))
    tokens = {"eos_token": "<|im_end|>"}
    first = cache.cached_infer(qwen3, tokens)
    t0 = time.perf_counter()
    for _ in range(100):
        assert cache.cached_infer(qwen3, tokens) == first
    assert (time.perf_counter() - t0) / 100 < 0.001
    files = list(cache.cache_dir().glob("*.json"))
    assert len(files) == 1 and files[0].stem == autoparser.template_hash(qwen3, tokens)
    cache.clear_memory()
    assert cache.cached_infer(qwen3, tokens) == first and len(calls) == 1  # from disk
    for junk in ("{not json", '{"format": 1}', json.dumps({**json.loads(files[0].read_text()), "code": "other"})):
        files[0].write_text(junk)
        cache.clear_memory()
        assert cache.cached_infer(qwen3, tokens) == first  # ignored and rewritten
        assert json.loads(files[0].read_text())["response_template"] == first
    assert len(calls) == 4
    copy = cache.cached_infer(qwen3, tokens)
    copy["fields"].clear()
    assert cache.cached_infer(qwen3, tokens) == first  # callers get their own copy


PROSE_CALLS = Path(__file__).resolve().parents[1] / "models" / "prose-calls.jinja"


def test_degraded_template_attached_with_one_warning(tmp_path, caplog):
    """Tool calls the analysis cannot read (models/prose-calls.jinja writes them as prose): the attached
    template parses content and reasoning, tool-call text stays in content, and one warning says so; a warm
    load (memory, then disk) says it again without inferring again."""
    from transformers import AutoTokenizer

    path = saved(tmp_path, PROSE_CALLS.read_text(encoding="utf-8"))
    autoparser.enable()
    with caplog.at_level(logging.WARNING, logger="autoparser"):
        tok = AutoTokenizer.from_pretrained(path)
    ours = [r for r in caplog.records if r.name == "autoparser"]
    assert len(ours) == 1 and "tool_calls" in ours[0].getMessage() and "first failure" in ours[0].getMessage()
    assert set(tok.response_template["fields"]) == {"thinking", "content"}
    check_parses(tok)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    reply = {"role": "assistant", "content": "Let me look.", "reasoning_content": "Weather needed.", "tool_calls": [call]}
    prompt = tok.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    text = tok.apply_chat_template([*CONVERSATION, reply], tokenize=False)[len(prompt):]
    parsed = tok.parse_response(text[: text.index("<|im_end|>") + len("<|im_end|>")], prefix=prompt)
    assert parsed["thinking"] == "Weather needed." and "tool_calls" not in parsed
    assert parsed["content"].startswith("Let me look.") and "Calling get_weather with city set to Paris." in parsed["content"]
    entry = json.loads(next(cache.cache_dir().glob("*.json")).read_text())
    assert entry["verdict"]["status"] == "degraded" and entry["verdict"]["dropped"] == ["tool_calls"]
    cache.clear_memory()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="autoparser"):
        assert AutoTokenizer.from_pretrained(path).response_template == tok.response_template
    assert len([r for r in caplog.records if r.name == "autoparser"]) == 1


def test_refused_template_attaches_nothing_with_one_warning(tmp_path, caplog):
    """Content that does not round-trip: no template, one warning with the reason, also from the disk cache."""
    from transformers import AutoTokenizer

    # The reply is written twice, the second time cut short: no parser can give back the content.
    src = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{{ m.content }}|{{ m.content[:3] }}"
           "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    path = saved(tmp_path, src)
    autoparser.enable()
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="autoparser"):
            tok = AutoTokenizer.from_pretrained(path)
        ours = [r for r in caplog.records if r.name == "autoparser"]
        assert len(ours) == 1 and "no verified response_template" in ours[0].getMessage(), [r.getMessage() for r in ours]
        assert tok.response_template is None
        cache.clear_memory()
    entry = json.loads(next(cache.cache_dir().glob("*.json")).read_text())
    assert entry["response_template"] is None and entry["verdict"]["status"] == "refused"


def test_cached_results_belong_to_one_transformers_release(monkeypatch):
    """A verdict is a fact about one parser (5.24 holds matches 5.23 committed): a cached template verified
    under another transformers release is not reused."""
    import importlib.metadata

    from autoparser import cache

    monkeypatch.setattr(cache, "_fingerprint", None)
    here = cache.code_fingerprint()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1" if name == "transformers" else real(name))
    monkeypatch.setattr(cache, "_fingerprint", None)
    assert cache.code_fingerprint() != here


def test_engine_processes_attach_the_served_form(tmp_path):
    """In an engine's processes (the plugin's ``served=True``) the attached template has no ``join`` or
    ``repeats`` on text fields, which vLLM's and SGLang's validators refuse; a library load keeps them
    (text on both sides of a call reaches transformers' message)."""
    from transformers import AutoTokenizer

    from autoparser.emit import served

    path = saved(tmp_path, corpus_template("Qwen-Qwen3-0.6B"))
    autoparser.enable()
    library = AutoTokenizer.from_pretrained(path).response_template
    assert library["fields"]["content"].get("join") is not None
    autoparser.disable()
    autoparser.hook.enable(served=True)
    tok = AutoTokenizer.from_pretrained(path)
    fields = tok.response_template["fields"]
    assert tok.response_template == served(library)
    assert not any(k in f for f in (fields["content"], fields["thinking"]) for k in ("join", "repeats"))
    check_parses(tok)
