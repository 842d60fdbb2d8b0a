"""``infer --serve vllm|sglang``: the server flags that fit an emitted template, what clients must send,
and which grammar form goes with those flags.

Measured with vLLM 0.33's and SGLang 0.5.23's own code (BRIEF §6, §8; ``benchmarks/engines.py``):
vLLM refuses ``--reasoning-parser hf`` for a template without a ``thinking`` field and
``--tool-call-parser hf`` without ``tool_calls``; without a tool parser it answers a request carrying
tools with HTTP 400 unless ``tool_choice`` is ``"none"``; with the ``hf`` tool parser it refuses
``tool_choice="required"``, a named tool, strict tools and ``parallel_tool_calls=false`` (the parser
cannot guarantee them), so ``tool_choice="auto"`` plus a grammar in ``structured_outputs`` is how a
client gets those guarantees. With a reasoning parser, vLLM applies a request's grammar only once its
parser has read reasoning's end in prompt + output; where the prompt leaves reasoning neither open nor
settled as that parser reads it, that happens inside the call (after its opener or once it parsed
whole), and no grammar can start there. So for a template with reasoning ``--serve vllm`` adds
``--structured-outputs-config '{"enable_in_reasoning": true}'`` (vLLM 0.33's ``StructuredOutputsConfig``
field: the grammar applies from the first token) and ``grammar --serve vllm`` prints the form that
covers reasoning itself. SGLang applies ``content`` only inside its reasoning parser, so that parser is on even without
``thinking``; it answers requests with tools with HTTP 400 when no tool parser is set."""

from __future__ import annotations

import shlex

from .grammar.build import single_call_only as single_call

SERVERS = ("vllm", "sglang")
WHERE = ("put the response_template in the model's tokenizer_config.json under the key \"response_template\" "
         "(`autoparser batch --write` does it for local model directories)")


SERVED = ("this is the served form: no repeats/join on content or thinking (both engines refuse join there at startup; "
          "each joins every region's text itself, so the text before and after a call reaches the client); "
          "transformers' parse_response with this form keeps only the text after the last call: use `infer` without --serve there")


def _fields(template: dict) -> dict:
    return template.get("fields") or {}


IN_REASONING_CONFIG = '{"enable_in_reasoning": true}'
IN_REASONING = f"--structured-outputs-config {shlex.quote(IN_REASONING_CONFIG)}"


def flags(template: dict, server: str, analysis=None) -> list[tuple[str, str | None]]:
    """The server flags that fit ``template``, as (flag, value or None): what ``guidance`` prints on its
    command line and what ``autoparser serve`` adds to the engine's arguments. ``analysis``: where
    given, a format that can have no grammar gets no ``enable_in_reasoning`` (nothing to apply early)."""
    fields = _fields(template)
    thinking, calls = "thinking" in fields, "tool_calls" in fields
    if server == "vllm":
        why_not = no_grammar(analysis) if calls else None
        out = [("--reasoning-parser", "hf")] if thinking else []
        out += [("--enable-auto-tool-choice", None), ("--tool-call-parser", "hf")] if calls else []
        out += [("--structured-outputs-config", IN_REASONING_CONFIG)] if thinking and calls and not why_not else []
        return out
    return [("--reasoning-parser", "response_template")] + ([("--tool-call-parser", "response_template")] if calls else [])


def shell(pairs: list[tuple[str, str | None]]) -> list[str]:
    """Flags as a shell line's words (values quoted where the shell needs it)."""
    return [f"{k} {shlex.quote(v)}" if v is not None else k for k, v in pairs]


def grammar_form(template: dict, server: str | None) -> dict:
    """The ``build``/``grammar`` keyword arguments for a grammar sent to a server run with the flags
    ``guidance`` prints: both apply it from the first token, so the form covers reasoning. vLLM because
    of ``enable_in_reasoning``; SGLang because its reasoning gate needs a literal end marker, and the
    response_template's thinking closer is a pattern (``</think>\\s{0,64}``), so SGLang 0.5.23 reads
    no end token from it and disables grammar-gated reasoning (measured: ``benchmarks/engines.py --sglang``).
    ``after_reasoning`` stays for an engine that gates on a literal end."""
    if server is None:
        return {}
    return {"after_reasoning": False}


def request_shapes(template: dict, grammar: str | None, tools: list) -> list[tuple[str, dict, bool]]:
    """(what, request body, accepted?) for vLLM under the flags ``guidance`` prints: what the README
    recommends (accepted) and what it says vLLM refuses (refused). ``benchmarks/engines.py`` runs these
    through vLLM's own request checks."""
    calls = "tool_calls" in _fields(template)
    out = [("no tools", {}, True), ("tools, tool_choice=none", {"tools": tools, "tool_choice": "none"}, True)]
    if not calls:
        return out + [("tools, tool_choice=auto (no tool parser: refused)", {"tools": tools, "tool_choice": "auto"}, False)]
    out += [("tools, tool_choice=auto", {"tools": tools, "tool_choice": "auto"}, True)]
    if grammar:
        out.append(("tools, tool_choice=auto, grammar", {"tools": tools, "tool_choice": "auto", "structured_outputs": {"grammar": grammar}}, True))
    name = tools[0]["function"]["name"]
    refused = [("tool_choice=required", {"tool_choice": "required"}),
               ("named tool", {"tool_choice": {"type": "function", "function": {"name": name}}}),
               ("parallel_tool_calls=false", {"parallel_tool_calls": False})]
    for what, extra in refused:
        body = {"tools": tools, **extra}
        if grammar:
            body["structured_outputs"] = {"grammar": grammar}
        out.append((f"{what} (refused by the hf parser)", body, False))
    return out


def sglang_request_shapes(template: dict, grammar: str | None, tools: list) -> list[tuple[str, dict, bool]]:
    """(what, request body, accepted?) for SGLang under the flags ``guidance`` prints: a grammar goes in
    ``ebnf`` with ``tool_choice="auto"``; SGLang refuses it beside ``"required"`` or a named tool (its
    own tool-call constraint and the grammar cannot both hold)."""
    calls = "tool_calls" in _fields(template)
    out = [("no tools", {}, True)]
    if not calls:
        return out
    out += [("tools, tool_choice=auto", {"tools": tools, "tool_choice": "auto"}, True),
            ("tools, tool_choice=none", {"tools": tools, "tool_choice": "none"}, True)]
    if grammar:
        name = tools[0]["function"]["name"]
        out += [("tools, tool_choice=auto, ebnf grammar", {"tools": tools, "tool_choice": "auto", "ebnf": grammar}, True),
                ("tool_choice=required + ebnf (refused by SGLang)", {"tools": tools, "tool_choice": "required", "ebnf": grammar}, False),
                ("named tool + ebnf (refused by SGLang)", {"tools": tools, "tool_choice": {"type": "function", "function": {"name": name}}, "ebnf": grammar}, False)]
    return out


def no_grammar(analysis) -> str | None:
    """Why this format can have no grammar (one line), or None where it can."""
    from .grammar.layout import NoGrammar, layout

    if analysis is None:
        return None
    try:
        layout(analysis)
    except NoGrammar as e:
        return str(e)
    return None


def guidance(template: dict, server: str, model: str = "MODEL", verdict: dict | None = None, analysis=None) -> list[str]:
    """Lines for an operator: the command, why each parser flag is there or not, what clients send.
    ``analysis``: where given, a format that can have no grammar says so instead of offering one."""
    fields = _fields(template)
    thinking, calls = "thinking" in fields, "tool_calls" in fields
    lines = [WHERE, SERVED]
    why_not = no_grammar(analysis) if calls else None
    if why_not:
        lines.append(f"no grammar for this tool-call format ({why_not}): tool calls are parsed, not constrained")
    if "reasoning_content" in fields:
        lines.append("the template names reasoning 'reasoning_content'; vLLM and SGLang accept only 'thinking': infer again without --reasoning-field")
    grammar_cmd = f"autoparser grammar {model} --tools TOOLS.json --serve {server}" + (" --no-parallel" if single_call(verdict) else "")
    if server == "vllm":
        lines.append(" ".join(["vllm serve", model, *shell(flags(template, server, analysis))]))
        if not thinking:
            lines.append("no --reasoning-parser hf: the template has no thinking field, and vLLM refuses the flag for it")
        if not calls:
            lines.append("no --tool-call-parser hf: the template has no tool_calls field, and vLLM refuses the flag for it; "
                         "clients that send tools must send tool_choice=\"none\" (vLLM answers tools with tool_choice \"auto\", "
                         "its default, and \"required\" with HTTP 400 without a tool parser); tool-call text then stays in content")
            return lines
        lines.append("clients send tool_choice=\"auto\" (or \"none\"): vLLM refuses tool_choice=\"required\", a named tool, strict tools "
                     "and parallel_tool_calls=false with the hf parser (HTTP 400), whatever grammar the request carries")
        if why_not:
            return lines
        lines.append(f"to require a call, name the tool or allow one call: tool_choice=\"auto\" plus extra_body={{\"structured_outputs\": "
                     f"{{\"grammar\": ...}}}} with the grammar from `{grammar_cmd} [--tool-choice required|NAME] [--no-parallel]`"
                     + (" (it covers reasoning too)" if thinking else ""))
        if thinking:
            lines.append("enable_in_reasoning: vLLM applies a request's grammar from the first token; without it vLLM waits for its "
                         "reasoning parser to read reasoning's end, which for some prompts happens only inside the call; "
                         "it applies to every structured output, so a response_format/json_schema request then gets no reasoning")
    else:
        lines.append(" ".join(["python -m sglang.launch_server --model-path", model, *shell(flags(template, server, analysis))]))
        if not thinking:
            lines.append("--reasoning-parser response_template although the template has no thinking field: SGLang applies the "
                         "content field only inside its reasoning parser; without it end-of-turn markers stay in content")
        if not calls:
            lines.append("no --tool-call-parser: the template has no tool_calls field; SGLang answers every request with tools "
                         "with HTTP 400: clients must not send tools")
            return lines
        if why_not:
            return lines
        lines.append(f"grammars for requests: `{grammar_cmd}` as extra_body={{\"ebnf\": ...}} with tool_choice=\"auto\" "
                     "(Lark: add --grammar-backend llguidance) or with --format structural-tag as response_format; SGLang refuses "
                     "a grammar beside tool_choice=\"required\" or a named tool (HTTP 400): to require a call, use the grammar's "
                     "--tool-choice required|NAME with tool_choice=\"auto\"")
        if thinking:
            lines.append("SGLang applies the grammar from the first token (it reads no literal reasoning end from the "
                         "response_template), so the grammar covers reasoning too")
    if single_call(verdict):
        lines.append("parallel tool calls do not round-trip through this template: allow one call (the grammar's --no-parallel), "
                     "and do not rely on parallel_tool_calls=false, which vLLM refuses")
    return lines
