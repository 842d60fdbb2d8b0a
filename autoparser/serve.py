"""``infer --serve vllm|sglang``: the server flags that fit an emitted template, and where it goes.

Measured with vLLM 0.33's and SGLang 0.5.23's own code (BRIEF §6): vLLM refuses ``--reasoning-parser hf``
for a template without a ``thinking`` field and ``--tool-call-parser hf`` without ``tool_calls``; SGLang
applies ``content`` only inside its reasoning parser, so that parser is on even without ``thinking``."""

from __future__ import annotations

SERVERS = ("vllm", "sglang")
WHERE = ("put the response_template in the model's tokenizer_config.json under the key \"response_template\" "
         "(`autoparser batch --write` does it for local model directories)")


def guidance(template: dict, server: str, model: str = "MODEL") -> list[str]:
    """Lines for an operator: the command, then why each parser flag is there or not."""
    fields = template.get("fields") or {}
    thinking, calls = "thinking" in fields, "tool_calls" in fields
    lines = [WHERE]
    if "reasoning_content" in fields:
        lines.append("the template names reasoning 'reasoning_content'; vLLM and SGLang accept only 'thinking': infer again without --reasoning-field")
    if server == "vllm":
        flags = (["--reasoning-parser hf"] if thinking else []) + (["--enable-auto-tool-choice --tool-call-parser hf"] if calls else [])
        lines.append(" ".join(["vllm serve", model, *flags]))
        if not thinking:
            lines.append("no --reasoning-parser hf: the template has no thinking field, and vLLM refuses the flag for it")
        if not calls:
            lines.append("no --tool-call-parser hf: the template has no tool_calls field, and vLLM refuses the flag for it; tool-call text stays in content")
        else:
            lines.append("vLLM refuses requests with tool_choice=\"required\", a named tool, strict tools or parallel_tool_calls=false with this parser")
        return lines
    flags = ["--reasoning-parser response_template"] + (["--tool-call-parser response_template"] if calls else [])
    lines.append(" ".join(["python -m sglang.launch_server --model-path", model, *flags]))
    if not thinking:
        lines.append("--reasoning-parser response_template although the template has no thinking field: SGLang applies the "
                     "content field only inside its reasoning parser; without it end-of-turn markers stay in content")
    if not calls:
        lines.append("no --tool-call-parser: the template has no tool_calls field; SGLang answers every request with tools with HTTP 400")
    return lines
