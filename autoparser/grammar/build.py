"""``autoparser.grammar``: a constrained-decoding grammar in the model's own tool-call format, from
the same analysis the response_template is emitted from, and only where that template's tool calls
verified (a grammar for a format the parser misreads would guarantee the wrong thing)."""

from __future__ import annotations

from .layout import NoGrammar, layout, select_tools
from .lark import lark_grammar

FORMATS = ("lark", "structural-tag")


def check_verified(result, chat_template: str, special_tokens: dict | None) -> None:
    """NoGrammar unless the template's own tool-call renderings round-trip through its template."""
    from ..verify import verify

    report = verify(chat_template, result.template, special_tokens, analysis=result.analysis)
    verdict = report.per_field().get("tool_calls")
    if verdict != "pass":
        first = report.summary().get("first_failure")
        raise NoGrammar("tool calls did not verify" + (f" ({verdict})" if verdict else ": no probe call round-trips") + (f"; first failure: {first}" if first and verdict == "fail" else ""))


def single_call_only(verdict: dict | None) -> bool:
    """Whether the verdict says parallel calls do not round-trip (then a grammar allows one call)."""
    caps = (verdict or {}).get("tool_capabilities") if isinstance(verdict, dict) else None
    return isinstance(caps, dict) and caps.get("parallel", "pass") != "pass"


def build(analysis, tools, *, tool_choice: str = "auto", parallel: bool = True, format: str = "lark", reasoning_open: bool | None = None,
          tokens: dict[str, int] | None = None, after_reasoning: bool = False):
    """The grammar for an Analysis already known to verify: Lark text or a structural_tag dict.
    ``tokens``: the tokenizer's added tokens (Lark only; structural tags match markers as text);
    ``after_reasoning``: the form for an engine that applies the grammar only after a literal reasoning
    end (see ``lark_grammar``; neither engine under the flags ``--serve`` prints)."""
    if format not in FORMATS:
        raise NoGrammar(f"unknown grammar format {format!r} (one of {', '.join(FORMATS)})")
    lay = layout(analysis, reasoning_open=reasoning_open)
    fns = select_tools(tools, tool_choice)
    if format == "lark":
        return lark_grammar(lay, fns, tool_choice=tool_choice, parallel=parallel, tokens=tokens, after_reasoning=after_reasoning)
    from .structural_tag import structural_tag

    return structural_tag(lay, fns, tool_choice=tool_choice, parallel=parallel)


def grammar(chat_template: str, tools: list, *, tool_choice: str = "auto", parallel: bool = True, format: str = "lark", reasoning_open: bool | None = None,
            tokens: dict[str, int] | None = None, after_reasoning: bool = False, **special_tokens: str):
    """A grammar for the assistant turn in the template's native format: reasoning (where the template
    has it), content, and tool calls whose arguments follow each tool's JSON schema.

    ``tool_choice``: ``auto`` (free text until the tool-call opener), ``required`` (at least one call),
    ``none``, or a tool name (only that tool). ``parallel=False`` allows one call. ``format``: ``lark``
    (llguidance Lark text) or ``structural-tag`` (an xgrammar ``structural_tag`` dict).
    ``reasoning_open``: whether the prompt left a reasoning block open (default: as the template's
    generation prompt does). ``tokens``: the tokenizer's added tokens (text -> id, e.g.
    ``tokenizer.get_added_vocab()``): markers that are tokens are written as tokens; without it they
    are matched as text. ``after_reasoning``: the form for an engine that applies the grammar only once
    its reasoning parser read reasoning's end (vLLM without ``enable_in_reasoning``); the flags
    ``serve`` prints make both vLLM and SGLang apply it from the first token, where the default fits.
    Where the verdict says parallel calls do not round-trip, one call only.
    Raises ``NoGrammar`` with the reason when the format cannot be constrained."""
    from ..pipeline import infer_result

    res = infer_result(chat_template, special_tokens)
    check_verified(res, chat_template, special_tokens)
    parallel = parallel and not single_call_only(res.verdict)
    return build(res.analysis, tools, tool_choice=tool_choice, parallel=parallel, format=format, reasoning_open=reasoning_open,
                 tokens=tokens, after_reasoning=after_reasoning)
