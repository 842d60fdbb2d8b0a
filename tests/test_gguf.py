"""A model held as GGUF (llama.cpp, Ollama, LM Studio): the chat template and special tokens are read from the
file's metadata, from a local file, a directory of them, or a Hub repo of GGUF files only (by byte ranges: the
header, never the weights). A broken or hostile header is one line, never a traceback or a huge read. Parses
with transformers' own ``parse_response``."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from autoparser.errors import SourceError
from autoparser.sources.gguf import REMOTE_BLOCK, added_tokens
from autoparser.pipeline import infer_source
from autoparser.sources import hub as hub_source
from autoparser.sources.hub import HUB_WAIT, resolve
from autoparser.sources.local import load_path
from autoparser.sources.template_source import STOP_TOKENS, TemplateSource

from gguf_file import gguf_bytes, model_metadata

ROOT = Path(__file__).resolve().parents[1]
TOOLS = (ROOT / "models" / "chatml-think.jinja").read_text(encoding="utf-8")  # ChatML turns, Hermes-style calls
DEFAULT = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
VOCAB = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "Hello", "Ġworld"]
IDS = {"eos": 2, "padding": 0, "eot": 0}  # as Qwen's converted files: <|im_end|> ends a turn, <|endoftext|> too
PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _file(path: Path, template=TOOLS, weights: int = 4096, **meta) -> Path:
    path.write_bytes(gguf_bytes({**model_metadata(template, VOCAB, **IDS), **meta}, tensor_bytes=weights))
    return path


def test_a_gguf_file_gives_its_template_and_the_tokens_its_ids_name(tmp_path):
    src = load_path(_file(tmp_path / "model-Q4_K_M.gguf"))
    assert src.template == TOOLS
    assert src.special_tokens == {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", STOP_TOKENS: "<|endoftext|>"}
    res, _ = infer_source(src)
    assert res.template == infer_source(TemplateSource(TOOLS, dict(src.special_tokens)))[0].template
    msg = parse_response(CALL + "<|im_end|>", res.template, prefix=PROMPT)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [("get_weather", {"city": "Paris"})]
    # the token the model stops on, which the template never writes, ends the reply: no text of its own
    assert parse_response("Hello world<|endoftext|>", res.template, prefix=PROMPT)["content"] == "Hello world"


def test_the_cli_infers_from_a_gguf_file_as_from_its_template(tmp_path):
    gguf = _file(tmp_path / "m.gguf")
    (tmp_path / "t.jinja").write_text(TOOLS, encoding="utf-8")
    run = lambda *a: subprocess.run([sys.executable, "-m", "autoparser", "infer", *a], capture_output=True, text=True, cwd=ROOT)
    got = run(str(gguf))
    want = run(str(tmp_path / "t.jinja"), "--token", "eos_token=<|im_end|>", "--token", "pad_token=<|endoftext|>",
               "--token", "stop_tokens=<|endoftext|>")
    assert got.returncode == 0 and want.returncode == 0, got.stderr + want.stderr
    assert json.loads(got.stdout) == json.loads(want.stdout)


def test_big_endian_files_read_alike(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS), big_endian=True))
    assert load_path(path).template == TOOLS
    assert load_path(path).special_tokens["eos_token"] == "<|im_end|>"


def test_named_templates_are_chosen_as_a_configs_list_is(tmp_path):
    path = _file(tmp_path / "m.gguf", [{"name": "default", "template": DEFAULT}, {"name": "tool_use", "template": TOOLS}])
    src = load_path(path)
    assert (src.name, src.template, src.plain) == ("tool_use", TOOLS, DEFAULT)
    res, used = infer_source(src)
    assert used is src and parse_response(CALL, res.template, prefix=PROMPT)["tool_calls"]
    assert (load_path(path, "default").template, load_path(path, "default").plain) == (DEFAULT, None)
    with pytest.raises(SourceError, match=r"no chat template named 'rag' \(has 'default', 'tool_use'"):
        load_path(path, "rag")


def test_a_directory_of_gguf_files_reads_the_first_shard_and_skips_the_vision_projector(tmp_path):
    _file(tmp_path / "model-00001-of-00002.gguf", **{"split.no": 0, "split.count": 2})
    (tmp_path / "model-00002-of-00002.gguf").write_bytes(gguf_bytes({"split.no": 1, "split.count": 2}))
    (tmp_path / "mmproj-model-f16.gguf").write_bytes(gguf_bytes({"general.architecture": "clip"}))
    src = load_path(tmp_path)
    assert src.template == TOOLS and src.where.endswith("model-00001-of-00002.gguf")
    with pytest.raises(SourceError, match="shard 2 of a split GGUF model: the chat template is in the first shard"):
        load_path(tmp_path / "model-00002-of-00002.gguf")


def test_a_blob_without_a_suffix_is_known_by_its_magic(tmp_path):
    blob = _file(tmp_path / "sha256-0123abcd")  # how Ollama stores a model
    assert load_path(blob).template == TOOLS


def _header(version=3, n_keys=1) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, 0, n_keys)


def _key(name: str, kind: int) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", kind)


BROKEN = {
    "truncated": (lambda: gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS))[:300], "ends inside its metadata"),
    "not gguf": (lambda: b"PK\x03\x04 a zip file", "not a GGUF file"),
    "empty": (lambda: b"", "ends inside its metadata"),
    "version 1": (lambda: _header(version=1), "GGUF version 1 is not supported"),
    "version 9": (lambda: _header(version=9), "newer than this reader"),
    "a string of a terabyte": (lambda: _header() + _key("tokenizer.chat_template", 8) + struct.pack("<Q", 1 << 40),
                               "string length of 1099511627776 is over the limit"),
    "an array of a terabyte": (lambda: _header() + _key("tokenizer.ggml.tokens", 9) + struct.pack("<IQ", 8, 1 << 40),
                               "array length of 1099511627776 is over the limit"),
    "a key count of a terabyte": (lambda: _header(n_keys=1 << 40), "metadata key count"),
    "an unknown value type": (lambda: _header() + _key("x", 99), "unknown type 99"),
    "arrays nested 100000 deep": (lambda: _header() + _key("x", 9) + struct.pack("<IQ", 9, 1) * 100000, "nest over 8 deep"),
    "a template not UTF-8": (lambda: _header() + _key("tokenizer.chat_template", 8) + struct.pack("<Q", 2) + b"\xff\xfe",
                             "not UTF-8"),
    "no template": (lambda: gguf_bytes({"general.architecture": "llama"}), "has no chat template"),
    "a template that is a number": (lambda: gguf_bytes({"tokenizer.chat_template": 7}), "has no chat template"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_gguf_is_one_line(tmp_path, case):
    make, message = BROKEN[case]
    path = tmp_path / "m.gguf"
    path.write_bytes(make())
    with pytest.raises(SourceError, match=message) as err:
        load_path(path)
    assert err.value.where == str(path) and "\n" not in str(err.value)


def test_any_damage_to_a_header_is_a_source_error_or_nothing(tmp_path):
    """Seeded mutations of a real header (bytes overwritten, cut, dropped): reading never raises anything but
    SourceError, and what reads is a template."""
    good = gguf_bytes(model_metadata([{"name": "default", "template": DEFAULT}, {"name": "tool_use", "template": TOOLS}],
                                     VOCAB, **IDS))
    rng, path, outcomes = random.Random(7), tmp_path / "m.gguf", set()
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            how = rng.random()
            if how < 0.5:
                data[at] = rng.randrange(256)
            elif how < 0.8:
                data[at:at + 8] = struct.pack("<Q", rng.choice([0, 1, 2**31, 2**63, rng.randrange(2**64)]))
            else:
                del data[at:at + rng.randint(1, 64)]
        path.write_bytes(bytes(data[:rng.randrange(len(data) + 1)] if rng.random() < 0.2 else data))
        try:
            src = load_path(path)
        except SourceError as e:
            assert "\n" not in str(e)
            outcomes.add("error")
        else:
            assert isinstance(src.template, str)
            outcomes.add("read")
    assert outcomes == {"error", "read"}


def test_the_cli_says_one_line_for_a_broken_gguf(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(BROKEN["an array of a terabyte"][0]())
    r = subprocess.run([sys.executable, "-m", "autoparser", "infer", str(path)], capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in r.stderr.splitlines() if "PyTorch" not in line]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"autoparser: error: {path}: GGUF array length"), r.stderr


WEIGHTS = 16 << 20  # a model file far bigger than its header (a block of which is read)


@pytest.mark.parametrize("ranges", [True, False], ids=["byte ranges", "a server that ignores ranges"])
def test_a_hub_repo_of_gguf_files_is_read_from_the_header_alone(hub_env, fake_hub, ranges):
    fake_hub.ranges = ranges
    data = gguf_bytes({**model_metadata([{"name": "default", "template": DEFAULT}, {"name": "tool_use", "template": TOOLS}],
                                        VOCAB, **IDS)}, tensor_bytes=WEIGHTS)
    fake_hub.add("test-org/model-GGUF", {"README.md": "quantised", "mmproj-F16.gguf": gguf_bytes({"general.architecture": "clip"}),
                                         "model-Q8_0.gguf": data, "model-Q4_K_M.gguf": data})
    src = resolve("test-org/model-GGUF")
    assert (src.template, src.plain, src.name) == (TOOLS, DEFAULT, "tool_use")
    assert src.special_tokens["eos_token"] == "<|im_end|>" and src.where == "hf://test-org/model-GGUF/model-Q4_K_M.gguf"
    if ranges:
        assert fake_hub.sent <= REMOTE_BLOCK, fake_hub.sent  # one block holding the header, not the weights
    res, _ = infer_source(src)
    assert parse_response(CALL, res.template, prefix=PROMPT)["tool_calls"]


def test_a_hub_repo_with_no_template_and_no_gguf_says_so(hub_env, fake_hub):
    fake_hub.add("test-org/weights", {"README.md": "x", "model.safetensors": b"\0" * 64})
    with pytest.raises(SourceError, match=r"has no chat template on the Hub \(.*or \.gguf file\)"):
        resolve("test-org/weights")


def test_a_hub_config_without_a_template_beside_gguf_files_takes_the_gguf_template(hub_env, fake_hub):
    fake_hub.add("test-org/with-config", {"tokenizer_config.json": {"eos_token": "<|im_end|>"},
                                          "model-Q4_0.gguf": gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS))})
    src = resolve("test-org/with-config")
    assert src.template == TOOLS and src.where == "hf://test-org/with-config/model-Q4_0.gguf"


def test_a_gguf_repo_not_kept_is_one_line_offline(hub_env, fake_hub):
    fake_hub.add("test-org/only-gguf", {"model-Q4_0.gguf": gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS))})
    hub_env.offline()
    with pytest.raises(SourceError, match="not in the local Hugging Face cache, and offline mode is on"):
        resolve("test-org/only-gguf")  # nothing known of it
    hub_env.offline(False)
    resolve("test-org/only-gguf")
    shutil.rmtree(hub_env.cache_dir / "gguf")  # the HF cache knows it has no template files; autoparser's was cleared
    hub_env.offline()
    with pytest.raises(SourceError, match="offline mode is on .*read once where the Hub is reachable; or point at a "
                                          "downloaded .gguf file") as err:
        resolve("test-org/only-gguf")
    assert "\n" not in str(err.value)


def _gguf_reads(fake_hub, repo: str) -> int:
    return sum(1 for p in fake_hub.downloads(repo) if p.endswith(".gguf"))


@pytest.mark.parametrize("asked", ["test-org/only-gguf", "test-org/only-gguf:Q4_0"])
def test_a_gguf_header_read_once_is_kept(hub_env, fake_hub, asked, closed_port):
    """What a Hub GGUF header says is kept (``sources/gguf_cache.py``): read again with one question to the Hub while
    its commit is the same, and offline or with the Hub unreachable, with a note saying so. Before: read from the Hub
    each time, and offline one line saying to point at a downloaded file."""
    fake_hub.add("test-org/only-gguf", {"model-Q4_0.gguf": gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS), tensor_bytes=WEIGHTS)})
    first = resolve(asked)
    assert first.template == TOOLS and _gguf_reads(fake_hub, "test-org/only-gguf") == 1 and not first.notes
    again = resolve(asked)  # the same commit: no byte of the GGUF read again
    assert again == first and _gguf_reads(fake_hub, "test-org/only-gguf") == 1
    hub_env.offline()
    offline = resolve(asked)
    assert (offline.template, offline.special_tokens, offline.where) == (first.template, first.special_tokens, first.where)
    assert offline.notes and "offline mode is on (HF_HUB_OFFLINE): using the GGUF header read from the Hub before" in offline.notes[0]
    hub_env.offline(False)
    hub_env.point_at(closed_port)
    unreachable = resolve(asked)
    assert unreachable.template == TOOLS and "the Hub did not answer" in unreachable.notes[0]
    hub_env.point_at(fake_hub.url)
    hub_source._silent.clear()
    fake_hub.add("test-org/only-gguf", {"model-Q4_0.gguf": gguf_bytes(model_metadata(DEFAULT, VOCAB, **IDS))})
    assert resolve(asked).template == DEFAULT and _gguf_reads(fake_hub, "test-org/only-gguf") == 2  # a new commit: read again


def test_the_cli_infers_a_gguf_repo_offline_once_read(hub_env, fake_hub):
    """The user's path: ``autoparser infer ORG/NAME-GGUF`` online, then with ``HF_HUB_OFFLINE=1``: the same template,
    exit 0, and one note on stderr saying where the header came from."""
    fake_hub.add("test-org/only-gguf", {"model-Q4_0.gguf": gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS))})
    online = hub_env.run("infer", "test-org/only-gguf")
    hub_env.offline()
    offline = hub_env.run("infer", "test-org/only-gguf")
    assert online.returncode == offline.returncode == 0, (online.stderr, offline.stderr)
    assert json.loads(offline.stdout) == json.loads(online.stdout)
    assert "using the GGUF header read from the Hub before" in offline.stderr and "Traceback" not in offline.stderr


def test_a_kept_header_that_is_damaged_is_read_again(hub_env, fake_hub):
    fake_hub.add("test-org/only-gguf", {"model-Q4_0.gguf": gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS))})
    resolve("test-org/only-gguf")
    kept = list((hub_env.cache_dir / "gguf").glob("*.json"))
    assert len(kept) == 1
    for damage in ("{", '{"format": 1}', json.dumps({**json.loads(kept[0].read_text()), "tokens": {"x": "zz"}}), ""):
        kept[0].write_text(damage)
        assert resolve("test-org/only-gguf").template == TOOLS
    assert json.loads(kept[0].read_text())["meta"]["tokenizer.chat_template"] == TOOLS  # written again whole
    kept[0].write_text("{")
    hub_env.offline()
    with pytest.raises(SourceError, match="offline mode is on"):
        resolve("test-org/only-gguf")


def test_the_grammar_writes_the_ggufs_control_tokens_as_tokens(tmp_path, capsys):
    from autoparser.cli.main import main

    gguf = _file(tmp_path / "m.gguf")
    (tmp_path / "t.jinja").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": {
        str(i): {"content": t, "special": True} for i, t in enumerate(VOCAB) if t.startswith("<")}}), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps([{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]), encoding="utf-8")
    tokens = ["--token", "eos_token=<|im_end|>", "--token", "pad_token=<|endoftext|>", "--token", "stop_tokens=<|endoftext|>"]
    assert main(["grammar", str(gguf), "--tools", str(tmp_path / "tools.json")]) == 0
    got = capsys.readouterr()
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), *tokens,
                 "--tokenizer", str(tmp_path / "tokenizer_config.json")]) == 0
    want = capsys.readouterr()
    assert "no tokenizer" not in got.err and got.out == want.out
    assert "<[2]>" in got.out  # <|im_end|> by its id: a token, never its text spelt out


def test_keys_of_an_unexpected_type_are_read_past(tmp_path):
    meta = {**model_metadata(TOOLS, VOCAB, **IDS), "tokenizer.ggml.token_type": ["3", "3"], "tokenizer.ggml.eos_token_id": "2"}
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf_bytes(meta))
    src = load_path(path)
    assert src.template == TOOLS and "eos_token" not in src.special_tokens  # an id that is no number names nothing
    assert added_tokens(path) == {}


# ----------------------------------------------------------------------------------------------- Ollama's store
def _pull(models: Path, manifest: tuple[str, ...], data: bytes | None) -> str:
    """What ``ollama pull`` leaves: the GGUF as a content-addressed blob, a manifest naming it among other layers."""
    digest = hashlib.sha256(data or b"").hexdigest()
    (models / "blobs").mkdir(parents=True, exist_ok=True)
    if data is not None:
        (models / "blobs" / f"sha256-{digest}").write_bytes(data)
    (models / "blobs" / "sha256-template").write_text("{{ .Prompt }}")  # Ollama's Go template: never read
    path = models.joinpath("manifests", *manifest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256-template"},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data or b"")}]}))
    return digest


@pytest.mark.parametrize("name, manifest", [
    ("qwen3", ("registry.ollama.ai", "library", "qwen3", "latest")),
    ("qwen3:8b", ("registry.ollama.ai", "library", "qwen3", "8b")),
    ("someone/tuned:q4", ("registry.ollama.ai", "someone", "tuned", "q4")),
    ("hf.co/org/Model-GGUF:Q4_K_M", ("hf.co", "org", "Model-GGUF", "Q4_K_M")),
])
def test_a_model_ollama_pulled_is_read_from_its_store(tmp_path, monkeypatch, name, manifest):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    _pull(tmp_path, manifest, gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS)))
    src = resolve(f"ollama:{name}")
    assert (src.template, src.where, src.special_tokens["eos_token"]) == (TOOLS, f"ollama:{name}", "<|im_end|>")


def test_ollama_names_that_cannot_be_read_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "nowhere"))
    with pytest.raises(SourceError, match="no Ollama model store at .*set OLLAMA_MODELS"):
        resolve("ollama:qwen3")
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    _pull(tmp_path, ("registry.ollama.ai", "library", "gone", "latest"), None)
    for name, message in [("qwen3", r"not pulled: no manifest at .*\(ollama pull qwen3\)"),
                          ("gone", "its model layer .* is missing"), ("../../etc/passwd", "is not an Ollama model name"),
                          ("", "is not an Ollama model name")]:
        with pytest.raises(SourceError, match=message) as err:
            resolve(f"ollama:{name}")
        assert "\n" not in str(err.value)
    with pytest.raises(SourceError, match="--revision names a Hub revision"):
        resolve("ollama:qwen3", revision="main")


# --------------------------------------------------------------------------- a quantisation tag, a Hub page's URL
def _gguf_repo(fake_hub) -> None:
    data = gguf_bytes(model_metadata(TOOLS, VOCAB, **IDS), tensor_bytes=4096)
    fake_hub.add("test-org/model-GGUF", {"README.md": "q", "model-IQ4_XS.gguf": data, "model-Q8_0.gguf": data,
                                         "Q4_K_M/model-Q4_K_M-00001-of-00002.gguf": data,
                                         "Q4_K_M/model-Q4_K_M-00002-of-00002.gguf": gguf_bytes({"split.no": 1})})
    fake_hub.add("test-org/plain", {"chat_template.jinja": TOOLS, "tokenizer_config.json": {"eos_token": "<|im_end|>"}})


def test_a_quantisation_tag_names_the_gguf_file_read(hub_env, fake_hub):
    _gguf_repo(fake_hub)
    assert resolve("test-org/model-GGUF:q8_0").where == "hf://test-org/model-GGUF/model-Q8_0.gguf"
    assert resolve("test-org/model-GGUF:Q4_K_M").where == "hf://test-org/model-GGUF/Q4_K_M/model-Q4_K_M-00001-of-00002.gguf"
    assert resolve("hf.co/test-org/model-GGUF:Q8_0").where == "hf://test-org/model-GGUF/model-Q8_0.gguf"  # as Ollama names it
    assert resolve("hf.co/test-org/plain").template == TOOLS
    with pytest.raises(SourceError, match=r"has no .gguf file named for 'Q4_XS' \(has model-IQ4_XS.gguf, "):
        resolve("test-org/model-GGUF:Q4_XS")  # a whole word of the name, not a part of IQ4_XS


def test_a_hub_pages_url_names_its_model_revision_or_gguf_file(hub_env, fake_hub):
    _gguf_repo(fake_hub)
    hub = fake_hub.url
    assert resolve(f"{hub}/test-org/plain").template == TOOLS
    assert resolve(f"{hub}/test-org/plain/tree/main").template == TOOLS
    assert resolve(f"{hub}/test-org/plain/blob/main/chat_template.jinja?plain=1").where == "hf://test-org/plain@main/chat_template.jinja"
    assert resolve(f"{hub}/test-org/model-GGUF/blob/main/model-Q8_0.gguf").where == "hf://test-org/model-GGUF@main/model-Q8_0.gguf"
    assert resolve(f"{hub}/test-org/model-GGUF/resolve/main/model-IQ4_XS.gguf").template == TOOLS
    for url, message in [("https://huggingface.co/datasets/org/data", "is a dataset's URL, not a model's"),
                         ("https://example.com/org/name", "is not a Hugging Face Hub URL"),
                         (f"{hub}/test-org/plain/commits/main", "is not a model's Hub URL"),
                         (f"{hub}/test-org", "is not a model's Hub URL")]:
        with pytest.raises(SourceError, match=message) as err:
            resolve(url)
        assert err.value.where == url
    with pytest.raises(SourceError, match="names revision 'main', and --revision 'v2'"):
        resolve(f"{hub}/test-org/plain/tree/main", revision="v2")


@pytest.mark.parametrize("endpoint", ["closed_port", "silent_hub"])
def test_an_unreachable_hub_is_one_line_within_seconds_for_a_quantisation_too(hub_env, endpoint, request):
    hub_env.point_at(request.getfixturevalue(endpoint))
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="cannot reach the Hub") as err:
        resolve("test-org/model-GGUF:Q8_0")
    assert time.monotonic() - t0 < HUB_WAIT + 3 and err.value.where == "test-org/model-GGUF:Q8_0"
