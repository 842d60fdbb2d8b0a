"""``autoparser batch``: failures isolated, identical templates analysed once, resume, offline reruns."""

from __future__ import annotations

import io
import json
import os

from conftest import corpus_template

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
