"""Hub model ids: what is downloaded, precedence, every failure as one SourceError, offline from the cache.

The Hub is ``fake_hub`` (a real HTTP server, see conftest.py); huggingface_hub itself is not mocked.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import corpus_template

from autoparser import infer_result
from autoparser.errors import SourceError
from autoparser.sources.hub import CACHED_WAIT, HUB_FILES, HUB_WAIT, resolve

QWEN_CONFIG = {"eos_token": {"content": "<|im_end|>", "special": True, "__type": "AddedToken"}, "pad_token": "<|endoftext|>",
               "bos_token": None}


@pytest.fixture
def qwen3():
    return corpus_template("Qwen-Qwen3-0.6B")


def test_infer_hub_model_cli(hub_env, fake_hub, qwen3):
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG,
                                    "model.safetensors": b"\0" * 4096})
    r = hub_env.run("infer", "test-org/qwen3")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got == infer_result(qwen3, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}).template
    assert {"thinking", "content"} <= set(got["fields"])
    fetched = {path.rsplit("/", 1)[-1] for method, path in fake_hub.requests}
    assert fetched <= {*HUB_FILES, "tool_use.jinja"}  # only the template and token files, never weights
    assert fake_hub.downloads() and all(p.endswith(("tokenizer_config.json", "chat_template.jinja")) for p in fake_hub.downloads())


def test_the_tokens_a_model_stops_on_come_from_its_generation_config(hub_env, fake_hub):
    """Llama 3.2 stops on ``<|eom_id|>`` after a ``<|python_tag|>`` call (generation_config.json lists it with
    ``<|end_of_text|>`` beside the ``<|eot_id|>`` its template writes). Read from the Hub with the token files,
    it ends the call: before, the call's arguments came back as their text with the token in it."""
    from transformers.utils.chat_parsing import parse_response

    from autoparser.cli.parse import PLACEHOLDER_USER, generation_prompt
    from autoparser.sources.template_source import STOP_TOKENS

    llama = corpus_template("meta-llama-Llama-3.2-3B-Instruct")
    names = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>"}
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
              "added_tokens_decoder": {str(i): {"content": t, "special": True} for i, t in names.items()}}
    fake_hub.add("meta/llama32", {"chat_template.jinja": llama, "tokenizer_config.json": config,
                                  "generation_config.json": {"eos_token_id": [128001, 128008, 128009]}})
    src = resolve("meta/llama32")
    assert src.special_tokens[STOP_TOKENS] == "<|end_of_text|>\n<|eom_id|>"
    res = infer_result(src.template, src.special_tokens)
    prefix = generation_prompt(src.template, src.special_tokens, tools=None, user_message=PLACEHOLDER_USER)
    for text in ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
                 '{"name": "get_weather", "parameters": {"city": "Paris"}}<|end_of_text|>'):
        msg = parse_response(text, res.template, prefix=prefix)
        assert msg["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}, msg
        assert not msg.get("content"), msg
    assert parse_response("Hello.<|end_of_text|>", res.template, prefix=prefix)["content"] == "Hello."


def test_precedence_and_special_tokens(hub_env, fake_hub):
    config = {"chat_template": "config {{ bos_token }}", "bos_token": {"content": "<s>", "__type": "AddedToken"}}
    fake_hub.add("o/all", {"tokenizer_config.json": config, "chat_template.json": {"chat_template": "json"},
                           "chat_template.jinja": "jinja", "special_tokens_map.json": {"eos_token": "</s>", "bos_token": "<x>"}})
    fake_hub.add("o/json", {"tokenizer_config.json": config, "chat_template.json": {"chat_template": "json"}})
    fake_hub.add("o/config", {"tokenizer_config.json": config})
    fake_hub.add("o/jinja-only", {"chat_template.jinja": "only"})
    src = resolve("o/all")
    assert (src.template, src.where) == ("jinja", "hf://o/all/chat_template.jinja")
    assert src.special_tokens == {"bos_token": "<s>", "eos_token": "</s>"}  # tokenizer_config wins over the map
    assert resolve("o/json").template == "json"
    src = resolve("o/config")
    assert (src.template, src.special_tokens, src.where) == ("config {{ bos_token }}", {"bos_token": "<s>"}, "hf://o/config/tokenizer_config.json")
    assert (resolve("o/jinja-only").template, resolve("o/jinja-only").special_tokens) == ("only", {})


def test_named_template_and_revision(hub_env, fake_hub):
    commit = fake_hub.add("o/named", {"chat_template.jinja": "default",
                                      "additional_chat_templates/tool_use.jinja": "tools"})
    src = resolve("o/named", name="tool_use")
    assert (src.template, src.name, src.where) == ("tools", "tool_use", "hf://o/named/additional_chat_templates/tool_use.jinja")
    src = resolve("o/named", revision=commit, name="default")
    assert (src.template, src.where) == ("default", f"hf://o/named@{commit}/chat_template.jinja")
    src = resolve("o/named", revision=commit)  # no name: the template requests with tools get, the default beside it
    assert (src.template, src.name, src.plain) == ("tools", "tool_use", "default")


@pytest.mark.parametrize("case, model, revision, message", [
    ("missing repo", "test-org/nope", None, "no such model on the Hub"),
    ("gated repo", "test-org/gated", None, "gated"),
    ("unknown revision", "test-org/ok", "v9", "revision 'v9' not found"),
    ("no files", "test-org/empty", None, "has no chat template"),
    ("config without template", "test-org/nochat", None, "no chat template"),
])
def test_hub_errors_are_one_source_error(hub_env, fake_hub, case, model, revision, message):
    fake_hub.add("test-org/gated", {"chat_template.jinja": "x"}, gated=True)
    fake_hub.add("test-org/ok", {"chat_template.jinja": "x"})
    fake_hub.add("test-org/empty", {"README.md": "nothing here"})
    fake_hub.add("test-org/nochat", {"tokenizer_config.json": {"eos_token": "</s>"}})
    with pytest.raises(SourceError) as err:
        resolve(model, revision=revision)
    assert message in err.value.message
    assert err.value.where == (f"{model}@{revision}" if revision else model)
    assert "\n" not in str(err.value)


def test_local_paths_still_win_and_typos_are_not_hub_ids(hub_env, fake_hub, tmp_path):
    (tmp_path / "t.jinja").write_text("local")
    assert resolve(str(tmp_path / "t.jinja")).template == "local"
    for typo in ("models/missing.jinja", "./nope", "a/b/c", "not a model id!"):
        with pytest.raises(SourceError, match="no such file or directory"):
            resolve(typo)
    assert fake_hub.requests == []


def test_cli_error_is_one_line(hub_env, fake_hub):
    r = hub_env.run("infer", "test-org/nope")
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if "PyTorch" not in line]
    assert lines == ["autoparser: error: test-org/nope: no such local path, and no such model on the Hub (a private model needs HF_TOKEN)"]


def test_offline_served_from_cache_after_online_run(hub_env, fake_hub, qwen3):
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG})
    online = hub_env.run("infer", "test-org/qwen3")
    assert online.returncode == 0, online.stderr
    fake_hub.stop()
    hub_env.offline()
    offline = hub_env.run("infer", "test-org/qwen3")
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == online.stdout
    src = resolve("test-org/qwen3")  # in-process too, and a file known to be absent (chat_template.json) is no problem
    assert src.template == qwen3 and src.special_tokens == {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    with pytest.raises(SourceError, match="offline mode is on") as err:
        resolve("test-org/never-downloaded")
    assert err.value.where == "test-org/never-downloaded"
    r = hub_env.run("infer", "test-org/never-downloaded")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "test-org/never-downloaded: not in the local Hugging Face cache" in r.stderr


def test_second_resolve_uses_cached_files(hub_env, fake_hub, qwen3):
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG})
    resolve("test-org/qwen3")
    before = len(fake_hub.requests)
    resolve("test-org/qwen3")
    # one HEAD to learn the current commit; the rest is pinned to it and read from the cache
    assert fake_hub.requests[before:] == [("HEAD", "/test-org/qwen3/resolve/main/tokenizer_config.json")]


# -- a Hub that cannot be reached: seconds, one line, the cache answers ------------------------------------------

def _only_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "PyTorch" not in line]


@pytest.mark.parametrize("endpoint", ["closed_port", "silent_hub"])
def test_unreachable_hub_is_one_line_within_seconds(hub_env, endpoint, request):
    """No cache: huggingface_hub alone retried each file for about a minute, printing each retry; here the Hub
    is asked once, given HUB_WAIT seconds, and the user reads one line that says what to do."""
    hub_env.point_at(request.getfixturevalue(endpoint))
    t0 = time.monotonic()
    with pytest.raises(SourceError) as err:
        resolve("test-org/qwen3")
    assert time.monotonic() - t0 < HUB_WAIT + 3
    assert "cannot reach the Hub" in err.value.message and "HF_HUB_OFFLINE=1" in err.value.message
    assert "local model directory" in err.value.message and err.value.where == "test-org/qwen3"
    r = hub_env.run("infer", "test-org/qwen3", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = _only_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("autoparser: error: test-org/qwen3: cannot reach the Hub"), r.stderr


@pytest.mark.parametrize("endpoint", ["closed_port", "silent_hub"])
def test_unreachable_hub_cached_model_answers_from_the_cache(hub_env, fake_hub, qwen3, endpoint, request):
    """A model fetched once is read from the cache when the Hub does not answer, within CACHED_WAIT (it waited
    10 s per file for a silent Hub), with one note saying so."""
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG})
    online = hub_env.run("infer", "test-org/qwen3")
    assert online.returncode == 0, online.stderr
    hub_env.point_at(request.getfixturevalue(endpoint))
    t0 = time.monotonic()
    src = resolve("test-org/qwen3")
    assert time.monotonic() - t0 < CACHED_WAIT + 1.5
    assert src.template == qwen3 and src.special_tokens == {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    assert len(src.notes) == 1 and "did not answer" in src.notes[0] and "HF_HUB_OFFLINE=1" in src.notes[0]
    r = hub_env.run("infer", "test-org/qwen3", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == online.stdout
    notes = [line for line in r.stderr.splitlines() if line.startswith("autoparser: note:")]
    assert len(notes) == 1 and "using the cached copy" in notes[0], r.stderr
    assert "Retrying" not in r.stderr and "Traceback" not in r.stderr


def test_current_cache_needs_one_question(hub_env, fake_hub, qwen3):
    """With the Hub up and the cache current, one HEAD and nothing else; a new commit on the Hub is fetched."""
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG})
    resolve("test-org/qwen3")
    before = len(fake_hub.requests)
    assert resolve("test-org/qwen3").notes == ()
    assert [m for m, _ in fake_hub.requests[before:]] == ["HEAD"]
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": "new {{ messages }}", "tokenizer_config.json": QWEN_CONFIG})
    assert resolve("test-org/qwen3").template == "new {{ messages }}"
    hub_env.offline()
    assert resolve("test-org/qwen3").template == "new {{ messages }}"  # the cache's main moved on too


def test_a_silent_hub_is_waited_for_once(hub_env, silent_hub):
    """Many models in one process (batch): after the Hub gave no answer, the next ones do not wait again."""
    hub_env.point_at(silent_hub)
    t0 = time.monotonic()
    for model in ("org/a", "org/b", "org/c"):
        with pytest.raises(SourceError, match="cannot reach the Hub"):
            resolve(model)
    assert time.monotonic() - t0 < 2 * HUB_WAIT


def test_hf_hub_etag_timeout_sets_the_wait(hub_env, silent_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "1")
    hub_env.point_at(silent_hub)  # reloads huggingface_hub's settings, the timeout's too
    with pytest.raises(SourceError, match=r"no answer within 1 s"):
        resolve("org/model")
