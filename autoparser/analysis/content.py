"""How content is wrapped (C1): plain, always wrapped, or wrapped only when reasoning is present."""

from __future__ import annotations

import re

from .diff import markers, worded_tag
from .probes import CONTENT, REASON, USER, Prober, assistant
from .model import Content, Reasoning, Turn


def _strip_block(text: str, r: Reasoning) -> str:
    if r.start and r.end:
        i = text.find(r.start)
        j = text.find(r.end, i + len(r.start)) if i >= 0 else -1
        if i >= 0 and j >= 0:
            return text[:i] + text[j + len(r.end) :]
    if r.end and r.end in text:
        return text[text.find(r.end) + len(r.end) :]
    return text


DIGITS = re.compile(r"\d+")


def _before(pr: Prober, r: Reasoning, history: list[dict] | None) -> str | None:
    g = pr.generation(assistant(), pr.modes[0], history)
    text = g.text if g else ""
    i = text.find(CONTENT)
    return _strip_block(text[:i], r).strip() if i >= 0 else None


def _numbered(pr: Prober, r: Reasoning, before: str) -> bool:
    """The text before the content counts turns (``[2] ``, ``Turn 3:``): it differs only in its numbers
    when the same reply comes one exchange later."""
    if not DIGITS.search(before):
        return False
    later = _before(pr, r, [{"role": "user", "content": USER}, assistant()])
    return bool(later) and later != before and DIGITS.sub("0", later) == DIGITS.sub("0", before)


def analyze_content(pr: Prober, turn: Turn, r: Reasoning, log: list[str]) -> Content:
    g = pr.generation(assistant(), pr.modes[0])
    text = g.text if g else ""
    i = text.find(CONTENT)
    before = _strip_block(text[:i], r).strip() if i >= 0 else ""
    after = text[i + len(CONTENT) :] if i >= 0 else ""
    after_ms = markers(after)
    numbered = bool(before) and _numbered(pr, r, before)
    if before and not (r.start and before.startswith(r.start)):
        end = worded_tag(after) or (after_ms[0] if after_ms else "")
        c = Content("ALWAYS_WRAPPED", before, end, numbered)
    else:
        c = Content()
        if r.mode != "NONE":
            gr = pr.generation(assistant(reasoning=REASON), pr.modes[0])
            if gr and REASON in gr.text and CONTENT in gr.text:
                seg = gr.text[gr.text.find(REASON) + len(REASON) : gr.text.find(CONTENT)]
                post = markers(gr.text[gr.text.find(CONTENT) + len(CONTENT) :])
                ms = markers(seg)
                if len(ms) >= 2 and ms[-1] != r.end and post and post[0] not in turn.end_markers:
                    c = Content("WRAPPED_WITH_REASONING", ms[-1], post[0])
    log.append(f"C1 content: before {before!r} after {after[:40]!r} -> {c}")
    return c
