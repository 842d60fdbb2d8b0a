"""``autoparser batch``: failures isolated, identical templates analysed once, resume, offline reruns."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import corpus_template

from autoparser import output
from autoparser.batch import read_models, safe_names

QWEN_CONFIG = {"eos_token": "<|im_end|>"}


def _summary(outdir):
    data = json.loads((outdir / "summary.json").read_text())
    return data["totals"], {row["model"]: row for row in data["models"]}


def test_batch_mixed_outcomes(hub_env, fake_hub, tmp_path):
    qwen3 = corpus_template("Qwen-Qwen3-0.6B")
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": qwen3, "tokenizer_config.json": QWEN_CONFIG})
    fake_hub.add("test-org/qwen3-copy", {"tokenizer_config.json": {**QWEN_CONFIG, "chat_template": qwen3}})
    fake_hub.add("test-org/nochat", {"tokenizer_config.json": QWEN_CONFIG})
    fake_hub.add("test-org/broken", {"chat_template.jinja": "{% for %}"})
    (tmp_path / "models.txt").write_text("# a comment\ntest-org/qwen3\n\ntest-org/missing\ntest-org/nochat  # no template\n"
                                         "test-org/broken\ntest-org/qwen3-copy\ntest-org/qwen3\n")
    out = tmp_path / "out"
    r = hub_env.run("batch", "models.txt", "-o", "out", "--workers", "2")
    assert r.returncode == 1, r.stderr  # some failed
    assert "Traceback" not in r.stderr
    totals, rows = _summary(out)
    assert list(rows) == ["test-org/qwen3", "test-org/missing", "test-org/nochat", "test-org/broken", "test-org/qwen3-copy"]
    assert totals == {"models": 5, "ok": 2, "full": 2, "degraded": 0, "unverified": 0, "refused": 1, "failed": 3, "resumed": 0,
                      "analysed": 2, "unfinished": 0}  # qwen3 once, broken once (refused: it does not compile)
    assert "no such model on the Hub" in rows["test-org/missing"]["error"]
    assert "no chat template" in rows["test-org/nochat"]["error"]
    assert "syntax error" in rows["test-org/broken"]["error"].lower()
    a, b = rows["test-org/qwen3"], rows["test-org/qwen3-copy"]
    assert a["hash"] == b["hash"] and {a["analysed"], b["analysed"]} == {True, False}
    assert (a if not a["analysed"] else b)["same_template_as"] in rows
    assert a["reasoning"] == "TAG_BASED"
    r1 = json.loads((out / "test-org--qwen3.json").read_text())
    assert r1 == json.loads((out / "test-org--qwen3-copy.json").read_text()) and "thinking" in r1["response_template"]["fields"]
    assert r1["verdict"]["status"] == "full" and a["verdict"] == "full" and rows["test-org/broken"]["verdict"] == "refused"
    assert rows["test-org/missing"]["verdict"] == "failed"
    assert sorted(p.name for p in out.glob("*.json")) == ["summary.json", "test-org--qwen3-copy.json", "test-org--qwen3.json"]
    md = (out / "summary.md").read_text()
    assert "| model | template hash | reasoning style | tool format | verdict | why |" in md
    assert f"| {a['hash']} | TAG_BASED |" in md and "test-org/missing" in md


def test_batch_resume_after_interruption(hub_env, fake_hub, tmp_path):
    templates = {name: corpus_template(name) for name in ("Qwen-Qwen3-0.6B", "google-gemma-2-2b-it", "HuggingFaceTB-SmolLM3-3B")}
    for name, text in templates.items():
        fake_hub.add(f"org/{name}", {"chat_template.jinja": text})
    (tmp_path / "models.txt").write_text("".join(f"org/{name}\n" for name in templates))
    out = tmp_path / "out"
    first = hub_env.run("batch", "models.txt", "-o", "out", "--workers", "1")
    assert first.returncode == 0, first.stderr
    names = [f"org--{name}.json" for name in templates]
    mtimes = {n: os.stat(out / n).st_mtime_ns for n in names}
    # as a killed run leaves things: one output missing, one cut short, a write_atomic temporary lying around
    (out / names[0]).unlink()
    (out / names[1]).write_text((out / names[1]).read_text()[:20])
    (out / f".{names[0]}.x1y2z3.tmp").write_text('{"half": ')
    second = hub_env.run("batch", "-", "-o", "out", "--workers", "1", input=(tmp_path / "models.txt").read_text())
    assert second.returncode == 0, second.stderr
    totals, rows = _summary(out)
    assert totals["resumed"] == 1 and totals["analysed"] == 2 and totals["ok"] == 3
    assert rows["org/HuggingFaceTB-SmolLM3-3B"]["resumed"] and os.stat(out / names[2]).st_mtime_ns == mtimes[names[2]]
    assert not rows["org/Qwen-Qwen3-0.6B"].get("resumed") and not rows["org/google-gemma-2-2b-it"].get("resumed")
    assert json.loads((out / names[1]).read_text())["response_template"]["fields"]  # rewritten whole
    assert not list(out.glob("*.tmp"))


def test_batch_offline_rerun_from_hf_cache(hub_env, fake_hub, tmp_path):
    fake_hub.add("test-org/qwen3", {"chat_template.jinja": corpus_template("Qwen-Qwen3-0.6B"), "tokenizer_config.json": QWEN_CONFIG})
    (tmp_path / "models.txt").write_text("test-org/qwen3\ntest-org/never-seen\n")
    online = hub_env.run("batch", "models.txt", "-o", "online", "--workers", "1")
    assert online.returncode == 1, online.stderr
    fake_hub.stop()
    hub_env.offline()
    offline = hub_env.run("batch", "models.txt", "-o", "offline", "--workers", "1")
    assert offline.returncode == 1, offline.stderr
    _, rows = _summary(tmp_path / "offline")
    assert rows["test-org/qwen3"]["status"] == "ok"
    assert "offline mode" in rows["test-org/never-seen"]["error"]
    assert (tmp_path / "offline" / "test-org--qwen3.json").read_text() == (tmp_path / "online" / "test-org--qwen3.json").read_text()


def test_read_models_and_names(monkeypatch, tmp_path):
    monkeypatch.setattr("sys.stdin", io.StringIO("# header\n  org/a  \n\norg/b # note\norg/a\n"))
    assert read_models("-") == ["org/a", "org/b"]
    (tmp_path / "m").mkdir()
    names = safe_names(["Org/Model", "org/model", "summary", str(tmp_path / "m")])
    assert names[0] == "Org--Model" and names[1].startswith("org--model-") and names[2].startswith("summary-")
    assert names[3].startswith("m-") and len({n.lower() for n in names}) == 4
    assert safe_names(["Org/Model", "org/model"]) == names[:2]  # stable across runs


def test_batch_verify_records_limits_and_failures(hub_env, fake_hub, tmp_path):
    """``--verify`` records each model's verdict: Python-literal arguments are a limit, said in the record
    and the summary, and the run still passes."""
    literals = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{{ m.content or '' }}"
                "{%- for c in m.tool_calls or [] %}<tool_call>\n<function={{ c.function.name }}>\n{% for k, v in c.function.arguments.items() %}"
                "<parameter={{ k }}>{{ v }}</parameter>\n{% endfor %}</function>\n</tool_call>{% endfor %}"
                "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    fake_hub.add("org/literals", {"chat_template.jinja": literals})
    (tmp_path / "models.txt").write_text("org/literals\n")
    r = hub_env.run("batch", "models.txt", "-o", "out", "--verify")
    assert r.returncode == 0, r.stderr
    _, rows = _summary(tmp_path / "out")
    v = rows["org/literals"]["verify"]
    assert v["status"] == "full" and v["counts"]["limit"] == 2 and "list arguments are rendered as Python repr" in v["limits"][0]
    assert "| full | not covered: list arguments are rendered as Python repr" in (tmp_path / "out" / "summary.md").read_text()


def test_batch_summary_full_degraded_refused(hub_env, fake_hub, tmp_path):
    """Per model full / degraded (which fields, first failure) / refused (why), and totals; --strict fails
    the run on a degraded model; --no-verify records no verdict."""
    from pathlib import Path

    models = Path(__file__).resolve().parents[1] / "models"
    refused = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{{ m.content }}|{{ m.content[:3] }}"
               "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    fake_hub.add("org/full", {"chat_template.jinja": (models / "chatml-think.jinja").read_text()})
    fake_hub.add("org/degraded", {"chat_template.jinja": (models / "prose-calls.jinja").read_text()})
    fake_hub.add("org/refused", {"chat_template.jinja": refused})
    (tmp_path / "models.txt").write_text("org/full\norg/degraded\norg/refused\n")
    r = hub_env.run("batch", "models.txt", "-o", "out", "--workers", "1")
    assert r.returncode == 1 and "1 full, 1 degraded, 1 refused, 0 failed" in r.stderr, r.stderr
    totals, rows = _summary(tmp_path / "out")
    assert (totals["full"], totals["degraded"], totals["refused"], totals["failed"]) == (1, 1, 1, 1)
    assert rows["org/degraded"]["verdict"] == "degraded" and rows["org/degraded"]["dropped"] == ["tool_calls"]
    assert "no verified response_template" in rows["org/refused"]["error"]
    assert rows["org/refused"]["verify"]["status"] == "refused"
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "| degraded | without tool_calls: " in md and "| refused | " in md
    assert not (tmp_path / "out" / "org--refused.json").exists()
    record = json.loads((tmp_path / "out" / "org--degraded.json").read_text())
    assert record["verdict"]["dropped"] == ["tool_calls"] and "tool_calls" not in record["response_template"]["fields"]
    (tmp_path / "models.txt").write_text("org/full\norg/degraded\n")
    assert hub_env.run("batch", "models.txt", "-o", "out", "--workers", "1").returncode == 0  # degraded is fine (resumed)
    strict = hub_env.run("batch", "models.txt", "-o", "out", "--workers", "1", "--strict")
    assert strict.returncode == 1
    unverified = hub_env.run("batch", "models.txt", "-o", "out2", "--workers", "1", "--no-verify")
    assert unverified.returncode == 0 and "2 unverified" in unverified.stderr
    assert json.loads((tmp_path / "out2" / "org--degraded.json").read_text())["verdict"] is None


# -- scripting, the user's files, a clean exit -------------------------------------------------------------------

MODELS = Path(__file__).resolve().parents[1] / "models"


def _model_dir(root: Path, name: str, config_text: str = '{"eos_token": "</s>"}\n') -> Path:
    """A local model directory holding one of the team's templates."""
    d = root / name
    d.mkdir()
    (d / "chat_template.jinja").write_text((MODELS / f"{name}.jinja").read_text(encoding="utf-8"), encoding="utf-8")
    (d / "tokenizer_config.json").write_bytes(config_text.encode("utf-8"))
    return d


def _batch(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autoparser", "batch", *args], capture_output=True, text=True, cwd=cwd, input=stdin,
                          timeout=300)


@pytest.mark.parametrize("listing", ["", "\n\n", "# only comments\n   # and blanks\n\n"])
def test_batch_empty_list_says_so(tmp_path, listing):
    """An empty list (or only comments) exited 0 in silence; it is one line and exit status 2, and no output
    directory is made."""
    (tmp_path / "empty.txt").write_text(listing)
    r = _batch("empty.txt", "-o", "out", cwd=tmp_path)
    lines = [line for line in r.stderr.splitlines() if "PyTorch" not in line]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("autoparser: error: empty.txt: the model list is empty"), r.stderr
    assert not (tmp_path / "out").exists()
    r = _batch("-", "-o", "out", cwd=tmp_path, stdin=listing)
    assert r.returncode == 2 and "stdin: the model list is empty" in r.stderr


def test_batch_output_dash_is_json_lines_on_stdout(tmp_path):
    _model_dir(tmp_path, "chatml-think")
    (tmp_path / "models.txt").write_text("./chatml-think\n./missing-dir\n")
    r = _batch("models.txt", "-o", "-", "--workers", "1", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # one model failed
    rows = {row["model"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert set(rows) == {"./chatml-think", "./missing-dir"}
    ok = rows["./chatml-think"]
    assert ok["status"] == "ok" and ok["verdict"] == "full" and "thinking" in ok["response_template"]["fields"]
    assert rows["./missing-dir"]["status"] == "failed" and rows["./missing-dir"]["response_template"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chatml-think", "models.txt"]  # no "-" directory, no summary


CONFIG_STYLES = {
    "four spaces, unsorted keys, non-ASCII": '{\n    "model_max_length": 131072,\n    "eos_token": "</s>",\n    "added_tokens_decoder": {\n'
                                            '        "0": {"content": "<unk>", "special": true}\n    },\n    "note": "Zürich —",\n'
                                            '    "bos_token": "<s>"\n}\n',
    "tabs, CRLF, no final newline": '{\r\n\t"z_last": [1, 2.50, 3e2],\r\n\t"a_first": {\r\n\t\t"nested": null\r\n\t}\r\n}',
    "one line, escaped": '{"b":"\\u00fc","a":1}',
    "key present as null": '{\n  "response_template": null,\n  "eos_token": "</s>"\n}\n',
    "byte order mark": '\ufeff{\n  "eos_token": "</s>"\n}\n',
}


@pytest.mark.parametrize("style", list(CONFIG_STYLES))
def test_batch_write_keeps_the_rest_of_tokenizer_config(tmp_path, style):
    """``--write`` re-serialised the user's file (keys sorted, indent changed); now only response_template
    changes: removing that member gives back the original bytes."""
    original = CONFIG_STYLES[style]
    d = _model_dir(tmp_path, "chatml-think", original)
    (tmp_path / "models.txt").write_text("./chatml-think\n")
    r = _batch("models.txt", "-o", "out", "--workers", "1", "--write", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    written = (d / "tokenizer_config.json").read_bytes().decode("utf-8")
    config = json.loads(written.removeprefix("\ufeff"))
    template = json.loads((tmp_path / "out" / "chatml-think-" f"{_stem_hash('./chatml-think')}.json").read_text())["response_template"]
    from autoparser.emit import served

    # the form vLLM and SGLang accept (they load tokenizer_config.json): the library form without join
    assert config == {**json.loads(original.removeprefix("\ufeff")), "response_template": served(template)}
    assert _without_member(written, "response_template") == _without_member(original, "response_template")
    assert sorted(p.name for p in d.iterdir()) == ["chat_template.jinja", "tokenizer_config.json"]  # no temporary left


def _stem_hash(model: str) -> str:
    import hashlib

    return hashlib.sha1(model.encode()).hexdigest()[:8]


def _without_member(text: str, key: str) -> str:
    """``text`` with the member ``key`` (and the separator before it) cut out, the rest as it was."""
    bom, text = ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)
    return bom + _cut(text, key)


def _cut(text: str, key: str) -> str:
    members, _ = output._members(text)
    found = [m for m in members if m[0] == key]
    if not found:
        return text
    _, start, _, end = found[-1]
    index = members.index(found[-1])
    if index:  # cut from the end of the previous value
        return text[:members[index - 1][3]] + text[end:]
    rest = output._WS.match(text, end).end()
    return text[:start] + text[rest + 1:].lstrip(" \t\r\n") if text[rest] == "," else text[:start] + text[end:]


@pytest.mark.parametrize("text", ['{"a": 1}', '{\n  "a": {\n    "b": [1, 2]\n  }\n}\n', "{}", "{\n}\n", '{"a": 1, "a": 2}',
                                  '{\r\n\t"x": "\\u00e9"\r\n}'])
def test_with_key_changes_one_member(text):
    value = {"fields": {"content": {"content": "text"}}, "note": "é"}
    out = output.with_key(text, "response_template", value)
    assert json.loads(out) == {**json.loads(text), "response_template": value}
    assert out.startswith(text[: text.rindex("}")].rstrip()) or text.strip() in ("{}", "{\n}")
    assert output.with_key(out, "response_template", value) == out  # replacing in place is stable
    assert output.with_key(out, "response_template", 1).count("response_template") == 1
    for bad in ("[1]", '"x"', "{", '{"a" 1}'):
        with pytest.raises(ValueError):
            output.with_key(bad, "k", 1)


def test_batch_exits_cleanly(tmp_path):
    """``batch`` ended some runs with "Exception ignored in: <module 'threading'> ... OSError: [Errno 9] Bad file
    descriptor": its worker pool was shut down without waiting, and the pool's manager thread closed its wakeup
    pipe while the interpreter's exit hook wrote to it. Several runs, stderr holds only batch's own lines."""
    for name in ("chatml-think", "json-bare", "flat-calls"):
        _model_dir(tmp_path, name)
    (tmp_path / "models.txt").write_text("./chatml-think\n./json-bare\n./flat-calls\n")
    for k in range(4):
        r = _batch("models.txt", "-o", f"out{k}", "--workers", "2", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        noise = [line for line in r.stderr.splitlines() if not line.startswith(("[", "autoparser batch:")) and "PyTorch" not in line]
        assert noise == [], r.stderr


def test_batch_leaves_no_pool_thread_running(tmp_path, monkeypatch):
    """The root of the exit noise above, checked without luck: when ``run`` returns, no worker pool's manager
    thread is left for the interpreter's exit hook to race with."""
    import argparse
    import concurrent.futures.process as cfp

    from autoparser import batch

    for name in ("chatml-think", "json-bare"):
        _model_dir(tmp_path, name)
    (tmp_path / "models.txt").write_text(f"{tmp_path / 'chatml-think'}\n{tmp_path / 'json-bare'}\n")
    args = argparse.Namespace(models=str(tmp_path / "models.txt"), output_dir=str(tmp_path / "out"), workers=2, write=False,
                              no_verify=False, verify=False, strict=False, force=True, template=None, reasoning_field="thinking")
    assert batch.run(args) == 0
    assert [t.name for t in list(cfp._threads_wakeups) if t.is_alive()] == []
