"""Tool families whose fields are told apart by a message header rather than by their own tags.

Runs after the tag analysis and refines its result:

- channels (harmony): reasoning, content and the tool-call header share one header grammar,
  ``<C>word … <M>`` (``<|channel|>analysis<|message|>``, ``<|channel|>final<|message|>``,
  ``to=functions.name<|channel|>commentary json<|message|>``). A model may reorder the header's
  parts or add attributes, so the header, not a literal tag, decides the field: a recipient makes it
  a call, else the channel word does. A header on the tools' channel without a recipient is
  addressed to the user, so it is content.
- recipient (``>>>name\\n{json}``): the per-call marker also opens content, with a fixed word in
  the name's place (``>>>all\\n``), found by rendering a content-only turn.
"""

from __future__ import annotations

import dataclasses

import regex as re

from .diff import markers
from .probes import CONTENT, USER, Prober, assistant, call
from .model import Content, Headed, Reasoning, Tools, Turn


# Said by the analysis (``Tools.uncovered``) and by verify, for the cases that pass only when the content
# beside calls is read as reasoning (``verify.roundtrip._Reading``): one sentence, the same in the warning
# and in the verdict's limits.
CONTENT_AS_REASONING = "content written with tool calls is rendered on the reasoning channel; it parses back as reasoning"


def refine(pr: Prober, turn: Turn, r: Reasoning, c: Content, t: Tools, log: list[str]) -> Tools:
    if t.format == "NONE" or t.family in ("unknown", "nameless"):
        return t
    h = _channels(turn, r, c, t) or _recipient(pr, turn, t)
    if h is None:
        return t
    log.append(f"F headed messages ({h.kind}) -> {h}")
    uncovered = t.uncovered
    both = pr.try_render([{"role": "user", "content": USER}, assistant(CONTENT, calls=[call()])]) or ""
    if h.kind == "channels" and r.start + CONTENT in both:
        uncovered += (CONTENT_AS_REASONING,)
    return dataclasses.replace(t, family=h.kind, headed=h, uncovered=uncovered)


def _channels(turn: Turn, r: Reasoning, c: Content, t: Tools) -> Headed | None:
    """Reasoning and content starts ``<C>word<M>`` and a tool header that holds ``<C>`` and ends with ``<M>``."""
    if t.format != "TAG_WITH_JSON" or r.mode == "NONE" or not (r.start and c.start):
        return None
    ms = markers(r.start)
    if len(ms) < 2 or not (r.start.startswith(ms[0]) and r.start.endswith(ms[-1])):
        return None
    C, M = ms[0], ms[-1]
    header = t.name_suffix
    if not (c.start.startswith(C) and c.start.endswith(M) and C in header and header.endswith(M)):
        return None
    word = lambda s: s[len(C) : len(s) - len(M)].strip()  # noqa: E731
    tool_channel = re.match(r"\s*(\w+)", header[header.find(C) + len(C) :])
    # The recipient is the last attribute before the name (``to=functions.``), not the turn opener
    # that a template may repeat before every call.
    recipient = re.search(r"[^\s<>|\[\]]*\Z", t.call_start.strip()).group(0)
    if not recipient or not word(r.start) or not word(c.start):
        return None
    content_words = (word(c.start),) + ((tool_channel.group(1),) if tool_channel else ())
    ends = tuple(dict.fromkeys(e for e in (t.call_end.strip(), r.end, c.end, *turn.end_markers) if e))
    return Headed("channels", C, M, recipient, (word(r.start),), tuple(dict.fromkeys(content_words)), ends)


def _recipient(pr: Prober, turn: Turn, t: Tools) -> Headed | None:
    """Every call starts with the section marker and no other opener; content is that marker plus a word."""
    H = t.section_start.strip()
    if t.format != "TAG_WITH_JSON" or not H or t.call_start.strip() or t.call_separator.strip() != H:
        return None
    full = pr.try_render([{"role": "user", "content": USER}, assistant()]) or ""
    before = full[: full.find(CONTENT)] if CONTENT in full else ""
    m = re.search(re.escape(H) + r"(\w+)" + re.escape(t.name_suffix) + r"\Z", before)
    if not m:
        return None
    ends = tuple(e for e in turn.end_markers if e)
    return Headed("recipient", H, t.name_suffix, "", (), (m.group(1),), ends)
