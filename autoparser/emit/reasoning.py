"""The reasoning field's patterns: where a block opens (its opener, a close with no opener near the reply's start,
a phrase the prompt prefills), and where it ends (its close, calls that end the reply, a repeated opener). Only
patterns: ``template.emit`` assembles them into the field."""

from __future__ import annotations

from ..analysis.diff import MARKER, markers
from ..analysis.model import Analysis
from .markers import _flex, closing_marker, esc, literals, not_before, then_space


LONE_CLOSE_WINDOW = 512  # how far into a reply a close with no opener makes the text before it reasoning


def reasoning_open(r, token: str = "", ends=()) -> str:
    r"""The reasoning block opens wherever its opener is written: at the start of the reply and after content
    too (interleaved thinking, ``<think>a</think>x<think>b</think>y``), since the text fields keep every region
    (``library``): reasoning ``a`` and ``b``, content ``x`` and ``y``, as tinker's, llama.cpp's, Ollama's and
    vLLM's Mistral parsers split it. It starts with the literal, so the ``regex`` module skips to it. An opener
    written twice (the prompt opened it and the model writes it again) opens once: the open takes the repeat
    and the whitespace after, which holds a stream back only while whitespace follows an opener. With
    ``lone_close`` text before a close with no opener is reasoning too, where the close comes within
    ``LONE_CLOSE_WINDOW`` characters of the reply's start, before the opener or a marker of ``ends`` (the turn's
    end, a call's opener, the content wrapper: reasoning comes before its close, those after it): the lookahead
    decides within that window, so a stream is held back by it at most and each delta re-reads no more than it
    (looking for the close anywhere ahead held the whole reply back and re-read it on every delta); a reply
    that starts with a call's opener gives the window up as soon as that marker is whole. Longer reasoning
    written without its opener stays content, the close with it (no text lost).

    ``token``: an opener made of a token and a word (Gemma 4's ``<|channel>thought``) also opens on the token
    alone, the word taken when written (``<|channel>first thought<channel|>``: reasoning ``first thought``;
    ``<|channel>thought\nPlan.``: ``Plan.``, not the channel's name), and on the token written twice."""
    if token:
        word = r.start[len(token):]
        # (the word only glued to the token: after whitespace a stream would commit the token alone before the word
        # arrived, the optional word being no growth transformers can see at the buffer's edge)
        opener = rf"{esc(token)}(?:\s*{esc(token)})?(?:{esc(word)})?"
    else:
        # (the opener written again right after itself is one opener, so the reasoning is one region: a zero-width
        # close before the repeat made an empty first region, and the field's join put its separator before the
        # reasoning, "\n\nR". The open takes the whitespace after it and then waits, ``not_before``, until a
        # character shows that no repeat follows: an opener at a prompt's end is no committed match before the
        # reply starts, and ``<think>\n`` no complete one while a second ``<think>`` may be arriving.)
        opener = rf"{_flex(r.start)}(?:\s*{_flex(r.start)})*\s*{not_before(r.start.strip())}"
    if r.lone_close and r.end:
        stop = "|".join(literals([token or r.start, *ends]))
        opener += rf"|\A(?=(?:(?!{stop})[\s\S]){{0,{LONE_CLOSE_WINDOW}}}?{esc(r.end)})"
    return opener


def close_once(end: str) -> str:
    """The reasoning's end, and the same marker written again right after it (``R</think></think>C``, ``</think>\n</think>``):
    a close written twice closes once, as an opener written twice opens once (``reasoning_open``), so the repeat is
    no content text. Only an end that is one marker: an end that holds the next message's header (R1b) written
    again is a message of its own."""
    body = _flex(end)
    if markers(end.strip()) != [end.strip()]:
        return then_space(body)
    # (``not_before``: the close waits for a character that shows no repeat is arriving, as a plain opener's open
    # does; the regex module's partial search prefers the whole close without the repeat to the repeat arriving)
    return body + rf"(?:\s*{body})*\s*{not_before(end.strip())}"


CALLS_AFTER_REASONING_WINDOW = 2048  # how far past a call's opener inside reasoning the calls must end the reply


def calls_end_reasoning(a: Analysis, ends: list[str], openers: list[str]) -> str:
    r"""Reasoning left open before the reply's calls: ``<think>I need the file. <tool_call>…</tool_call>`` and
    the turn's end, no ``</think>`` (vLLM's Qwen3 and Ollama's parsers end reasoning at the call). A call's
    opener ends the reasoning, zero-width, where from there the reply is whole calls to its end: the calls'
    closing marker, then only whitespace before the turn's end or the text's end, within
    ``CALLS_AFTER_REASONING_WINDOW`` characters and with no reasoning end between. Reasoning that quotes the
    format and goes on (Seed-OSS spelling ``<seed:tool_call>…</seed:tool_call>. Wait, …``), or a call that is
    never closed (``<tool_call>first tool<tool_call>…``), stays reasoning: no call is made up from it. The look
    starts only at an opener, so a stream is held back by the window at most, and only there."""
    t = a.tools
    if t.format == "NONE" or t.headed.kind or not openers:
        return ""
    # (the section's closing marker, or the last call's where the model left the section's out: ``…<｜tool▁call▁end｜>``
    # and the turn's end, as a run of calls may end, ``guard.closer_left_out``)
    closers = [closing_marker(x.strip()) for x in (t.section_end, t.call_end) if x.strip()]
    if not closers or not closers[0]:
        return ""
    closer = "|".join(esc(c) for c in dict.fromkeys(closers) if c)
    stop = "|".join(literals([a.reasoning.end]))
    tail = "|".join([*literals(ends), r"\Z"])
    return "".join(rf"|(?={esc(o)}(?:(?!{stop})[\s\S]){{0,{CALLS_AFTER_REASONING_WINDOW}}}?(?:{closer})\s*(?:{tail}))" for o in openers)


RESUMED_WINDOW = 512  # how far past a call section's end the reasoning's close makes the text before it reasoning


def resumed_after_calls(a: Analysis, stops: list[str]) -> str:
    r"""Reasoning that calls end (TOOLS_ONLY: Kimi K2 Thinking writes its calls inside ``<think>``) resumes after
    them: ``<think>A<|tool_calls_section_begin|>…<|tool_calls_section_end|>B</think>Hello`` is reasoning ``A`` and
    ``B``, content ``Hello`` (llama.cpp's Kimi K2 parser reads it so). An open alternative on the call section's
    end marker, where the reasoning's close follows within ``RESUMED_WINDOW`` characters with no opener, call or
    turn's end between; before, ``B</think>`` came back in the content, the close marker with it. The section's
    end is the open's (consumed as it was); a reply whose calls end it is untouched."""
    t, r = a.tools, a.reasoning
    sec_end = t.section_end.strip()
    if not (sec_end and r.end and markers(sec_end) and markers(sec_end)[-1] == sec_end):
        return ""
    stop = "|".join(literals([r.end, r.start, *stops]))
    return rf"|{esc(sec_end)}\s*(?=(?:(?!{stop})[\s\S]){{0,{RESUMED_WINDOW}}}?{_flex(r.end)})"


def delimited_reasoning(a: Analysis, ends: list[str], openers: list[str]) -> dict:
    r"""Reasoning marked only by its end (``R<|/thought|>C``): what precedes the end is reasoning where the end
    comes within ``LONE_CLOSE_WINDOW`` characters of the reply's start (before a call or the turn's end), or
    where the reply starts with the plain phrase the generation prompt prefills after its anchor (Apriel's
    ``Here are my reasoning steps:``; the prompt opened reasoning). Both decide within a bounded look at the
    reply's start: waiting for the end marker anywhere ahead held the whole reply back, re-read on every
    delta. A reply opened by the phrase is reasoning until the end marker, a call or the turn's end."""
    r = a.reasoning
    stops = "|".join(literals([*ends, *openers]))
    stop = f"(?!{stops})" if stops else ""
    alts = [rf"\A(?=(?:{stop}[\s\S]){{0,{LONE_CLOSE_WINDOW}}}?{esc(r.end)})"]
    gp = a.turn.generation_prompt
    anchor = max((x for x in a.turn.anchors if x and x in gp), key=len, default="")
    phrase = gp[gp.rfind(anchor) + len(anchor):].strip() if anchor else ""
    if phrase and not MARKER.search(phrase) and r.end not in phrase:
        alts.insert(0, rf"\A(?=\s*{esc(phrase)})")
    close = then_space(esc(r.end))
    if stops and len(alts) > 1:  # opened by the phrase: the end may never come
        close += rf"|(?={stops})"
    return {"open_pattern": "|".join(alts), "close_pattern": close, "content": "text"}


def repeated_opener(start: str, lead: str = "") -> str:
    """A zero-width close of the block the prompt opened, where the model writes the opener again before
    any reasoning: the block reopens there (``reasoning_open``), so the second opener is not reasoning text. A
    plain opener's open takes its repeat itself (one region); this remains for what it does not take (an opener
    spelt token + word, written again whole)."""
    return rf"(?={esc(start)})(?<=\A\s*{lead}{esc(start)}\s*)"
