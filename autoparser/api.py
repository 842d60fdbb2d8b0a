"""The pipeline: source -> render -> analyze -> workarounds -> emit."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass

from . import workarounds as wa
from .analysis.content import analyze_content
from .analysis.families import refine as refine_family
from .analysis.model import Analysis
from .analysis.reasoning import analyze_reasoning
from .analysis.tools import analyze_tools
from .analysis.turn import analyze_turn
from .emit import emit
from .errors import AnalysisError, AutoparserError
from .probes import Prober, probe_text
from .render import Renderer, budget

TIME_BUDGET = float(os.environ.get("AUTOPARSER_TIME_BUDGET", "2.0"))


@dataclass(frozen=True)
class Result:
    template: dict
    analysis: Analysis
    warnings: tuple[str, ...] = ()
    hash: str = ""


def template_hash(chat_template: str, special_tokens: dict | None = None) -> str:
    h = hashlib.sha256(chat_template.encode("utf-8", "surrogatepass"))
    for k, v in sorted((special_tokens or {}).items()):
        h.update(f"\0{k}={v}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def analyze(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None, workarounds_dir: str | None = None) -> Analysis:
    renderer = Renderer(chat_template, special_tokens, where=where)
    log: list[str] = []
    try:
        with budget(TIME_BUDGET, "template"):
            pr = Prober(renderer)
            reasoning = analyze_reasoning(pr, log)
            turn = analyze_turn(pr, reasoning, log)
            content = analyze_content(pr, turn, reasoning, log)
            tools = analyze_tools(pr, turn, reasoning, content, log)
            tools = refine_family(pr, turn, reasoning, content, tools, log)
    except AutoparserError as e:
        if e.where is None:
            e.where = where
        raise
    log.append(f"{renderer.renders} renders{' (mutable sandbox)' if renderer.mutable else ''}")
    analysis = Analysis(turn, reasoning, content, tools, (), tuple(log))
    return wa.apply(analysis, chat_template, wa.load_dir(workarounds_dir))


def infer_result(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None, reasoning_field: str = "thinking", workarounds_dir: str | None = None) -> Result:
    a = analyze(chat_template, special_tokens, where=where, workarounds_dir=workarounds_dir)
    try:
        template, warnings = emit(a, reasoning_field)
    except ValueError as e:
        raise AnalysisError(f"emitted template rejected by transformers: {e}", where) from None
    for name in ("bos_token", "eos_token"):
        if re.search(rf"\b{name}\b", chat_template) and not (special_tokens or {}).get(name):
            warnings.append(f"the template reads {name}, which was not given, so it rendered empty; markers it writes may be missing (CLI: --token {name}=...)")
    leaked = sorted(set(probe_text(json.dumps(template, ensure_ascii=False))))
    if leaked:  # an analysis bug: a delimiter copied from one probe conversation
        warnings.append(f"probe text {', '.join(leaked)} in the template; it will not match real output")
    return Result(template, a, tuple(warnings), template_hash(chat_template, special_tokens))


def infer(chat_template: str, **special_tokens: str) -> dict:
    """Infer a response_template from a chat template (special tokens such as ``bos_token`` as keywords)."""
    return infer_result(chat_template, special_tokens).template
