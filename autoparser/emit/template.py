r"""Analysis -> response_template. The only module that knows the response_template format.

Choices that matter for correctness (see transformers' chat_parsing):
- The implicit ``content`` field overwrites its value each time it closes, so whitespace between
  explicit regions must never open it: every close also takes the whitespace after it
  (``then_space``), which holds a stream back by that whitespace at most. Opens take none before
  them: a leading ``\s*`` is tried at every space of prose the streaming parser searches.
- Opens are literal where the format allows; patterns begin with their literal marker, so the
  ``regex`` module skips to it. Per streamed chunk transformers searches every watched delimiter
  once, so a delimiter's cost is what a hand-written one's is (benchmarks/bench.py).
- Only ``thinking``, ``content`` and ``tool_calls`` fields, text content without transform. The text fields
  ``repeats`` with a ``join`` (``library``), so transformers keeps every region of content (the text before
  a call and after it) instead of the last; vLLM and SGLang refuse ``join`` on a text field at startup, and
  join every region's chunks themselves, so the template they serve drops it (``served``).
"""

from __future__ import annotations

import json

import regex as re

from transformers.utils.chat_parsing.response_templates import load_response_template

from ..analysis.model import Analysis, Tools
from ..analysis.diff import MARKER, markers
from .families import headed_fields, message_anchor
from .guard import _BALANCED_TOKENS
from .streamed_calls import streamed_tool_field
from .markers import _STRUCTURE, SPECIAL_TOKEN, SPECIAL, _branches, _flex, cut_marker, esc, literals, parts_from, prefix_safe, then_space, waits, without_groups
from .pythonic import token_after_list
from .reasoning import (LONE_CLOSE_WINDOW, calls_end_reasoning, close_once, delimited_reasoning, reasoning_open, repeated_opener,
                        resumed_after_calls)
from .tools import dropped_section, one


WS_RUN = 64  # the longest whitespace run a delimiter pattern absorbs


def bounded_whitespace(pattern: str) -> str:
    """``\\s*`` -> ``\\s{0,64}`` (and ``\\s+`` -> ``\\s{1,64}``) outside character classes. The streaming
    parser searches every delimiter with ``partial=True``, and the ``regex`` module then tries an unbounded
    leading ``\\s*`` at every space of the text: 25 KB of prose took 17 ms per search, bounded 0.02 ms."""
    if "\\s*" not in pattern and "\\s+" not in pattern:  # nothing to bound: the walk below would copy it whole
        return pattern
    out, i, in_class, groups, closed = [], 0, False, [], False
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "(" and pattern.startswith(_BALANCED_TOKENS, i):  # a written-out JSON check: no whitespace run in it
            out.append(_BALANCED_TOKENS)
            i += len(_BALANCED_TOKENS)
            closed = False
            continue
        if c not in "\\()|[]":  # most characters: no syntax this walk reads (a call field's patterns run to thousands)
            out.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            if not in_class and pattern[i + 1] == "s" and pattern[i + 2 : i + 3] in ("*", "+"):
                run = r"\s{0,%d}" % WS_RUN if pattern[i + 2] == "*" else r"\s{1,%d}" % WS_RUN
                before = closed if out and out[-1] == ")" else _ends_unspaced("".join(out[-1:]))
                if groups and groups[-1][0] and pattern[i + 3 : i + 4] != "+" and before:
                    # In a lookbehind, after a marker: possessive. The ``regex`` module's partial search reports a
                    # lookbehind ``(?<=>\s{0,64})`` that fails as a partial match from there to the buffer's end
                    # (2026.11.19), which holds a stream back whole; taken possessively (the same matches: the
                    # marker before it ends with no whitespace) it does not.
                    run += "+"
                out.append(run)
                i += 3
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if not in_class and c == "(":
            # (in a lookbehind, whether every alternative so far ends with a literal that matches no whitespace)
            behind = True if pattern.startswith(("(?<=", "(?<!"), i) else False if pattern.startswith(("(?=", "(?!"), i) else bool(groups and groups[-1][0])
            groups.append([behind, True])
        elif not in_class and c == "|" and groups:
            groups[-1][1] = groups[-1][1] and _ends_unspaced("".join(out[-1:]))
        elif not in_class and c == ")" and groups:
            closed = groups.pop()[1] and _ends_unspaced("".join(out[-1:]))
        if c == "[" and not in_class:
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                out.append(c)
                i += 1
                c = pattern[i]
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a member
                out.append(c)
                i += 1
                c = pattern[i]
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _ends_unspaced(atom: str) -> bool:
    """Whether the pattern text just before a whitespace run ends with a literal that matches no whitespace:
    an escaped punctuation mark or ``\\A``, or a plain character that is no regex syntax."""
    if len(atom) == 2 and atom[0] == "\\":
        return (not atom[1].isalnum() and not atom[1].isspace()) or atom[1] == "A"
    return len(atom) == 1 and not atom.isspace() and atom not in "()[]{}*+?|.^$"


def at_reply_start(literal: str, then: str = "", lead: str = "") -> str:
    r"""``literal`` only where the reply starts with it (after whitespace, ``lead`` and ``then``): a literal
    first, so the ``regex`` module still skips to it, then a lookbehind to the start of the reply (the
    parser's buffer starts right after the start anchor)."""
    e = esc(literal)
    return rf"{e}(?<=\A\s*{lead}{then}{e})"


def repeated_lead(a: Analysis, *also: str) -> str:
    """The anchor's last token, which a model may write again at the start of its reply (Command R+'s
    ``<|CHATBOT_TOKEN|>``), and the patterns ``also``, as an optional run before what must start the reply."""
    alts = literals(anchor_tokens(a)) + [x for x in also if x]
    return rf"(?:(?:{'|'.join(alts)})\s*)*" if alts else ""


def anchor_tokens(a: Analysis) -> list[str]:
    out = []
    for anchor in a.turn.anchors:
        last = markers(anchor.rstrip())[-1:]
        if last and anchor.rstrip().endswith(last[0]) and last[0] not in out:
            out.append(last[0])
    return out


def section_end_absorbed(a: Analysis, field: dict) -> tuple[dict, str]:
    r"""The calls' close also takes the section's end marker right after it (``<｜tool▁call▁end｜><｜tool▁calls▁end｜>``,
    ``<|tool_call_end|><|tool_calls_section_end|>``): the marker belongs to the calls it ends. It was consumed by the
    implicit content's close instead (a follower), which also swallowed it where no call was read, a call whose
    JSON is broken or written in a spelling the template never renders: the section's text stayed in content
    without its end. Only a section end made of special tokens alone (never a pythonic list's ``]``, a fence or
    prose), other than the call's own end; not where reasoning may resume after the calls (``resumed_after_calls``
    opens it on that marker: whether it does is known only up to ``RESUMED_WINDOW`` characters later, and a
    stream would have to hold every call's close back that far). Returns the field and the marker it takes
    ("" where none)."""
    t = a.tools
    sec_end, call_end = t.section_end.strip(), t.call_end.strip()
    close = field.get("close_pattern") or ("|".join(literals([field["close"]] if isinstance(field["close"], str) else field["close"]))
                                           if field.get("close") else "")
    if (not close or not sec_end or "".join(markers(sec_end)) != sec_end or not all(SPECIAL.fullmatch(m) for m in markers(sec_end))
            or call_end.endswith(sec_end) or (a.reasoning.mode == "TOOLS_ONLY" and a.reasoning.end)):
        return field, ""
    # (a stream cut inside the marker waits for the rest of it, else the call would close before it)
    taken = rf"(?:{close})(?:\s*{_flex(sec_end)}\s*|(?!\s*(?:{cut_marker(sec_end)})\Z))"
    # (the close in its place: a literal ``close`` becomes the pattern)
    return {("close_pattern" if k == "close" else k): (taken if k in ("close", "close_pattern") else v) for k, v in field.items()}, sec_end


def _implicit_close(cores: list[str], calls: dict | None, extra: list[tuple[str, str]] = ()) -> str:
    r"""The implicit content's close: the end markers and the markers consumed without a field, each
    with the whitespace after it (see ``then_space``).

    It also matches where a tool call opens, without ever firing there. Between calls the parser is
    back in content and searches its close over the rest of the text: with 100 calls, 100 scans to the
    end; stopping at the next call makes it one pass. The bound is the opener's literal text, followed
    by the rest of the open pattern as a lookahead, so it matches exactly where the call's open does,
    at the same start and never longer: the open wins (transformers' parser takes the longest match at
    the leftmost start, and an open before a close). Written so the scan stays fast: the ``regex``
    module skips to a pattern's first literal character, so every marker and the opener share it,
    ``<(?:(?:\|im_end\|>)\s*|tool_call>)``; and nothing before a literal is zero-width (a leading
    lookahead costs a tenth more per streamed chunk, a bare ``(?=<tool_call>)`` 20x on prose)."""
    cores = sorted(dict.fromkeys(cores), key=len, reverse=True)
    anchored = [pattern for _, pattern in extra]  # (its first literal, a pattern starting with that literal)
    plain = then_space(*literals(cores), *anchored)
    if not cores or not calls or not calls.get("repeats"):
        return plain
    if "open" in calls:
        bounds = literals([calls["open"]] if isinstance(calls["open"], str) else calls["open"])
    else:
        # Each branch of the open that starts with a literal bounds the scan where it opens (a branch that
        # starts otherwise, or looks back, is no bound: the scan runs on past it, as with no bound at all).
        bounds = []
        for branch in _branches(calls["open_pattern"]):
            lit, rest = _leading_literal(_EMPTY_GROUPS.sub("", branch))
            if lit and not re.search(r"\(\?P=|\(\?&|\\g<|\(\?<[=!]|\(\?\d|\(\?R|\\G", rest):
                rest = without_groups(rest)  # captures belong to the call's open
                bounds.append(esc(lit) + (f"(?={rest})" if rest else ""))
        if not bounds:
            return plain
    c, ec = cores[0][0], esc(cores[0][0])  # cores are non-empty markers
    if any(not x.startswith(c) for x in [*cores, *(lit for lit, _ in extra)]) or any(not b.startswith(ec) for b in bounds):
        return plain
    tail = then_space(*(esc(x[1:]) for x in cores), *(a[len(ec):] for a in anchored))
    return f"{ec}(?:{tail}|{'|'.join(b[len(ec):] for b in bounds)})"


_EMPTY_GROUPS = re.compile(r"^(?:\(\?P<\w+>\))+")  # a branch's empty default captures (``guard._id_default``)


_TOKEN = re.compile(r"\\([^\w])|\\([ntr])|([^\\()\[\].^$|?*+{}])", re.S)


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """(the literal text every match of ``pattern`` starts with, the pattern after it); ``("", pattern)``
    when the pattern branches at its top level, where no prefix is common to every match."""
    return ("", pattern) if len(_branches(pattern)) > 1 else _leading_literal(pattern)


def _leading_literal(pattern: str) -> tuple[str, str]:
    """``_literal_prefix`` of a pattern known not to branch at its top level (one of ``_branches``)."""
    out, i = [], 0
    while (m := _TOKEN.match(pattern, i)) and not re.match(r"[?*+{]", pattern[m.end() : m.end() + 1]):
        out.append(m.group(1) or {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(2) or "") or m.group(3))
        i = m.end()
    return "".join(out), pattern[i:]


def tokens_then_text(a: Analysis) -> str:
    r"""Special tokens the analysis never saw, then text (``<|START_RESPONSE|>Hello``: Command A's older spelling of
    its ``<|START_TEXT|>``): where content is a wrapped field, that text would be outside every field and lost, so
    it opens content, the tokens kept in it as written. Not a token found anywhere in the analysis (a header's
    ``<|start|>assistant``, an end marker), nor tokens with no text after them (an end-of-sequence token an
    engine left at the end): those stay out, as ``parts_from`` keeps them. A stream waits for the first
    character after the tokens."""
    seen = sorted(set(SPECIAL.findall(repr(a))))
    known = f"(?!{'|'.join(map(re.escape, seen))})" if seen else ""
    token = rf"{known}(?:{SPECIAL_TOKEN})"
    return rf"(?:{token}\s*+)+(?:[^\s<]|<[^|｜\s])"


JOIN = "\n\n"  # between two regions of one text field: the text before a call and the text after it


def text_fields(template: dict) -> list[str]:
    """The fields vLLM and SGLang stream as text (reasoning under either name, and content)."""
    return [n for n in ("thinking", "reasoning_content", "content") if n in (template.get("fields") or {})]


def library(template: dict) -> dict:
    """The template transformers runs: each text field keeps every region, joined (``repeats`` + ``join``).
    transformers' fields overwrite their value each time they close, so without it the implicit content
    that reopens after a call replaces the text before the call (``Sure.`` + call + ``Done.`` gave ``Done.``)."""
    out = {**template, "fields": {k: dict(v) for k, v in template["fields"].items()}}
    for name in text_fields(out):
        out["fields"][name].update(repeats=True, join=JOIN)
    return out


def served(template: dict) -> dict:
    """The template vLLM and SGLang serve: the library template without ``repeats``/``join`` on its text
    fields, which both refuse at startup. They lose nothing by it: each routes every region chunk of a
    text field to the message and joins them (vLLM's ``ResponseTemplateEventEngine``, SGLang's stream
    adapter), so the text on both sides of a call reaches the client. transformers' ``parse_response``
    with this form keeps only a text field's last region."""
    out = {**template, "fields": {k: dict(v) for k, v in template["fields"].items()}}
    for name in text_fields(out):
        out["fields"][name].pop("repeats", None)
        out["fields"][name].pop("join", None)
    return out


_NAMESPACE = re.compile(r"(｜[^｜<>\s\\()|]+｜)(?=[A-Za-z_])")


def optional_namespace(pattern: str) -> str:
    """A token-like prefix written inside a tag's name (DeepSeek's ``<｜DSML｜invoke``, ``</｜DSML｜parameter>``)
    may be left out: models write ``<invoke name="f">`` too, and the family's parsers read it. Only a
    fullwidth-bar token glued to the word it prefixes; a token standing alone (``<｜tool▁sep｜>``) stays."""
    return _NAMESPACE.sub(lambda m: f"(?:{m.group(1)})?", pattern)


# A quote right after an attribute's ``=`` and before a group or a class: ``name="(?P<name>…)"``, ``string="(?:true|false)"``,
# ``name="[^<>"\n=]+?"`` (the next key's tag in a look ahead).
_ATTRIBUTE_OPEN = re.compile(r'(?<=[\w\-]=)(\\?")(?=[(\[])')
_QUANTIFIER = re.compile(r"(?:[*+?]|\{\d*,?\d*\})[?+]?")
QUOTE = r"""["']"""


def _atom_end(pattern: str, i: int) -> int | None:
    """The index after the group, or the quantified class, that opens at ``pattern[i]``, or None."""
    m = _STRUCTURE.match(pattern, i)
    if m is None or m.group()[0] not in "([":
        return None
    if m.group() != "(":
        q = _QUANTIFIER.match(pattern, m.end())
        return q.end() if q else m.end()
    depth = 0
    for m in _STRUCTURE.finditer(pattern, i):
        depth += (m.group() == "(") - (m.group() == ")")
        if depth == 0:
            return m.end()
    return None


def either_quote(pattern: str) -> str:
    r"""An XML attribute's value may be quoted with ``'`` as with ``"`` (XML's own rule): MiniCPM 5 models write
    ``<function name='f'><param name='k'>``, and mlx-lm's MiniCPM 5 and vLLM's MiniMax parsers read both. Where a
    pattern writes a quote after an attribute's ``=``, then a group or a class, then the same quote, either quote is
    taken on each side."""
    out, i = [], 0
    for m in _ATTRIBUTE_OPEN.finditer(pattern):
        if m.start() < i:
            continue
        end = _atom_end(pattern, m.end())
        if end is None or not pattern.startswith(m.group(1), end):
            continue
        out += [pattern[i:m.start()], QUOTE, pattern[m.end():end], QUOTE]
        i = end + len(m.group(1))
    return "".join(out) + pattern[i:]


def call_marker(a: Analysis, w_open: str = "") -> list[str]:
    """The call's own first marker where it differs from the section's and belongs to calls alone: one that the
    content's, the reasoning's or the turn's markers also write (Kimi K3's ``<|sep|>``, which ends every tag)
    says nothing about a call."""
    t, c, r = a.tools, a.content, a.reasoning
    m = markers(t.call_start.strip())[:1]
    others = [t.section_start, c.start, c.end, w_open, *a.turn.end_markers, *((r.start, r.end) if r.mode != "NONE" else ())]
    return [x for x in m if not any(x in o for o in others if o)]


_NAME_GROUP = re.compile(r"\(\?P<name>[^()]*\)")


def _header_to_marker(t: Tools) -> str:
    """A call header whose opener is no marker, up to the first marker after the name (``to=(?P<name>…)<\\|message\\|>``
    of ``Tools.header_pattern``), the name any name: where such a header begins, a call may open."""
    m = _NAME_GROUP.search(t.header_pattern)
    if not m or not t.call_start.strip():
        return ""
    lit = _leading_literal(t.header_pattern[m.end():])[0]
    mk = MARKER.match(lit.lstrip())
    return _flex(t.call_start.strip()) + r"[\w.\-/]+\s*" + esc(mk.group(0)) if mk else ""


def emit(a: Analysis, reasoning_field: str = "thinking") -> tuple[dict, list[str]]:
    """Returns (response_template, warnings): the library form (``library``; ``served`` gives the engines')."""
    warnings: list[str] = []
    fields: dict[str, dict] = {}
    r, c, t = a.reasoning, a.content, a.tools
    lead = repeated_lead(a)
    # An opener made of a token and a word (``<|channel>thought``) may follow its token written alone.
    token = markers(r.start)[:1] if r.mode != "NONE" and r.start else []
    token = [x for x in token if x != r.start.strip() and r.start.startswith(x)]
    lead_open = lead + "".join(rf"(?:{esc(x)}\s*)?" for x in token)
    ends = list(a.turn.end_markers) + [m for m in t.end_markers if m not in a.turn.end_markers]
    leads = [MARKER.match(o.strip()) for o in (t.section_start, t.call_start)] if t.format != "NONE" else []
    openers = list(dict.fromkeys(m.group(0) for m in leads if m))
    if r.mode != "NONE":
        if r.start:
            # The token alone opens reasoning unless the content wrapper starts with it too (``<|channel>answer``).
            alone = token[0] if token and not (c.mode == "ALWAYS_WRAPPED" and c.start.startswith(token[0])) else ""
            # A lone close is looked for only before the turn's end, a call's opener or the content wrapper:
            # text after those is no reasoning left without its opener, so the look stops there.
            stops = ends + openers + ([c.start.strip()] if c.mode == "ALWAYS_WRAPPED" and c.start.strip() and not c.numbered else [])
            f = {"open_pattern": reasoning_open(r, alone, stops)}
            if r.end and (r.mode == "TOOLS_ONLY" or r.calls_end) and openers:
                # Reasoning that exists to plan calls: models go straight on to the call (Kimi K2
                # Thinking), so the call's (or section's) opening token also ends it; so it does where the
                # template itself writes calls right after the reasoning with no end (``Reasoning.calls_end``).
                # Not in other modes: reasoning that spells the call format (Seed-OSS quoting
                # ``<seed:tool_call>…``) would make a call up from it (docs/FORMATS.md §7b, a call inside
                # unclosed reasoning).
                f["close_pattern"] = close_once(r.end) + f"|(?={'|'.join(map(esc, openers))})"
                if r.mode == "TOOLS_ONLY":
                    f["open_pattern"] += resumed_after_calls(a, stops)
            elif r.end:
                # (``_flex``: whitespace between the end's markers and words, ``<|close|> think<|sep|>``)
                f["close_pattern"] = close_once(r.end) + calls_end_reasoning(a, ends, openers)
            # An end that holds the next message's header (R1b: ``<|im_end|>\n<|im_start|>assistant``): its first part
            # alone also closes where the turn ends right after it (a reply of reasoning only).
            firsts = [v for v in r.end_variants if r.end and r.end.startswith(v) and v != r.end]
            if firsts and ends:
                f["close_pattern"] += "|" + "|".join(rf"{esc(v)}(?=\s*(?:{'|'.join(literals(ends))}|\Z))" for v in firsts)
            # The turn ending inside the block (the model stopped before writing the close): the reasoning ends
            # there, and the end marker is the content's to consume, no reasoning text. Not a marker the close
            # itself begins with (an end that holds the next header, above): a stream, whose partial search
            # prefers this whole zero-width match to the close still arriving at the same place, would end the
            # block before the header.
            cut = [e for e in ends if r.end and not any(v.startswith(e) for v in (r.end, *r.end_variants))]
            if cut:
                f["close_pattern"] += "|(?=" + "|".join(literals(cut)) + ")"
            if r.end and alone:  # (a plain opener's open takes its repeat itself)
                f["close_pattern"] += "|" + repeated_opener(r.start, lead_open)
            f["content"] = "text"
            fields[reasoning_field] = f
            if r.end_assumed:
                warnings.append(f"the reasoning's end {r.end!r} is its opener's closing form: the prompt opens {r.start!r} and no "
                                f"rendering of the template shows how the block ends")
            if r.lone_close and r.end:
                warnings.append(f"text before a {r.end!r} with no {r.start!r} is reasoning where the {r.end!r} comes within "
                                f"{LONE_CLOSE_WINDOW} characters of the reply's start: a stream whose reply does not start with {r.start!r} "
                                f"(and no prompt opened it) is held back by that much at most")
        elif r.end:
            fields[reasoning_field] = delimited_reasoning(a, ends, openers)
            warnings.append(f"reasoning has no start marker, only the end {r.end!r}: text before it is reasoning where it comes within "
                            f"{LONE_CLOSE_WINDOW} characters of the reply's start (or the prompt's own prefill opens the reply), "
                            f"so a stream is held back by that much at most")
    absorbed = ""
    if t.format != "NONE":
        field, tool_warnings = streamed_tool_field(a)
        warnings += tool_warnings
        if field:
            field, absorbed = section_end_absorbed(a, field)
            fields["tool_calls"] = field
    # Markers that may follow a closed region but belong to no field (a tool section's end the calls' close
    # does not take, ``section_end_absorbed``; the content wrapper opened after reasoning): as closes of the
    # implicit field they are consumed without opening it, so they neither leak into content nor overwrite it.
    # Not a section end that is bare punctuation (a pythonic list's ``]``): prose and code write it (``a[0]``, a link's
    # ``[text](url)``), and the calls' own close takes the list's.
    followers = [t.section_end.strip()] if t.format != "NONE" and t.section_end.strip().strip("])}") and not absorbed else []
    followers += [t.content_opener] if t.format != "NONE" and t.content_opener else []  # consumed before the content it wraps
    followers += [v[len(r.end):].strip() for v in r.end_variants if r.end and v.startswith(r.end) and v[len(r.end):].strip()]
    # A call's close that holds the turn's end then more markers (HyperCLOVA X's ``<|im_end|><|stop|>``): a stream
    # may close the call at the turn's end, and what the close wrote after it is no text either.
    for close in ((t.call_end, t.section_end) if t.format != "NONE" else ()):
        ms = markers(close)
        cut = next((i for i, m in enumerate(ms) if m in a.turn.end_markers), None)
        followers += [m for m in ms[cut + 1:] if m not in followers] if cut is not None else []
    # A prompt that prefills only the reasoning's end (thinking switched off) leaves it to the parser; only
    # at the reply's start: a close written after content is text (the stray-marker choice, §7b).
    at_start = [r.end] if r.mode != "NONE" and r.end and r.start and r.end not in followers else []
    # A model may repeat the generation prompt's last token (Command R+'s <|CHATBOT_TOKEN|>).
    followers += [m for m in anchor_tokens(a) if m not in followers]
    w_open, w_close = (c.wrapper + ("", ""))[:2]  # another wrapper models write (a workaround's), each optional
    if c.mode == "ALWAYS_WRAPPED":
        # An explicit field: no region is implicit, so whitespace between regions opens nothing.
        f = {"open_pattern": re.sub(r"\d+", lambda _: r"\d+", esc(c.start))} if c.numbered else {"open": c.start}
        if w_open:
            f = {"open_pattern": (f.get("open_pattern") or esc(c.start)) + "|" + esc(w_open)}
        # A reply that leaves the wrapper out (bare text) would be outside every field, and lost: at the
        # reply's start, text whose first character begins none of the markers that may come there opens
        # content. One character decides, so a stream never opens it on the first half of a marker.
        # A numbered wrapper (``[4] ``) is any number: what comes before its number, then a digit, is its start
        # (``["apple"]`` parts from it at its second character; where the first alone decided, such a reply was lost).
        # The wrapper's own markers written alone (a stray ``</answer>`` after calls) are no text either.
        before = re.match(r"\D*", c.start.strip()).group(0)
        numbered = [before + d for d in "0123456789"] if before else [c.start.strip()[:1]]
        starts = [*(numbered if c.numbered else [c.start]), r.start, t.section_start, t.call_start, *anchor_tokens(a), *ends,
                  c.end, w_open, w_close]
        # The word a closing sequence writes after one of its markers (Kimi K3's section end
        # ``<|sep|><|close|>tools<|sep|>`` after ``<|close|>``, which also closes content) is that
        # sequence's, not text after a close.
        for seq in ((t.section_end, t.call_end) if "tool_calls" in fields else ()):
            starts += [seq[m.end():] for m in MARKER.finditer(seq) if seq[m.end():m.end() + 1].strip() and not MARKER.match(seq, m.end())]
        if any(m and m.strip() for m in starts):
            cls = r"(?=\s*+(?:" + parts_from(starts) + "|" + tokens_then_text(a) + "))"
            bare = r"\A" + cls
            # ... and likewise after any region: text a model writes bare after its calls (Command R7B's answer
            # after ``<|END_ACTION|>`` with no ``<|START_RESPONSE|>``), or after a stray close of the content
            # or reasoning, would be outside every field. Only right after such a close (a lookbehind), where
            # one character decides.
            closes = [c.end, w_close, *ends, r.end if r.mode != "NONE" else ""]
            closes += [t.section_end, t.call_end] if "tool_calls" in fields else []
            closes = [x.strip() for x in closes if x.strip()]
            if closes:
                bare += rf"|(?<=(?:{'|'.join(literals(closes))})\s*){cls}"
            f = {"open_pattern": (f.get("open_pattern") or esc(c.start)) + "|" + bare}
        close = list(dict.fromkeys(([c.end] if c.end else []) + ([w_close] if w_close else []) + ends))
        # Content written before calls (bare, when the template wraps only a reply without calls: Hunyuan's
        # ``助手：``) ends where a call's marker opens, left to the call (zero-width); likewise where the other
        # wrapper opens, which then opens content again (``Hi <answer>x``: ``Hi`` and ``x``, no marker).
        opener = (t.section_start.strip() or t.call_start.strip()) if t.format != "NONE" and not t.headed.kind else ""
        own_marker = call_marker(a, w_open) if opener and markers(opener) and "tool_calls" in fields else []
        if opener and markers(opener) and "tool_calls" in fields:
            # A call's marker that opens no call (a call cut off by a token limit, or one whose JSON is broken)
            # would leave its text outside every field here, where no region is implicit: the marker opens
            # content instead, consumed as markup. Never over a call: the call's open, longer at the same
            # place, wins, and while it is undecided (its window) this one waits (transformers commits no
            # match co-located with a pending one).
            # Where that marker also begins content's own opener (Kimi K3's ``<|open|>`` of ``<|open|>response<|sep|>``
            # and of ``<|open|>tools``), it waits while the opener's rest may be arriving: a stream would otherwise
            # open content on the marker alone and take the opener's word for text.
            # The call's own marker likewise, where it differs from the section's: a model may leave the section's
            # marker out (Solar Open's ``<|tool_call:begin|>…`` with no ``<|tool_calls|>``), and a call cut off
            # there left the whole reply outside every field.
            firsts = [markers(opener)[0], *own_marker]
            f["open_pattern"] += "".join("|" + waits(m, [c.start.strip(), w_open.strip()]) for m in dict.fromkeys(firsts))
        elif opener and "tool_calls" in fields and (head := _header_to_marker(t)):
            # A call opener that is no marker (a recipient, ``to=read<|message|>…``): a header that opens no call
            # (its body no call: ``to=read<|message|>garbage``, a marker written into the name) opens content
            # there, zero-width, so the header stays visible text; the call's open, longer at the same place,
            # wins, and while it is pending this one waits. Not at content's or reasoning's own header.
            own = "".join(f"(?!{_flex(x.strip())})" for x in (c.start, r.start if r.mode != "NONE" else "") if x.strip())
            f["open_pattern"] += f"|(?={own}{head})"
        ahead = [x for x in (opener if opener and markers(opener) and opener not in close else "", w_open) if x]
        # (and before the call's own marker, where a call may open without the section's: bare content before it)
        ahead += [m for m in own_marker if not any(x.startswith(m) or m.startswith(x) for x in ahead)]
        if close and ahead:
            f["close_pattern"] = "|".join([prefix_safe(close), *(f"(?={esc(x)})" for x in ahead)])
        elif close:
            f["close"] = one(close)
        f["content"] = "text"
        fields["content"] = f
    else:
        cores = [m for m in ([c.end] if c.mode == "WRAPPED_WITH_REASONING" else []) + ends + followers + [w_open, w_close] if m.strip()]
        cores = [m for m in cores if m not in at_start or m in ends]
        # The reasoning's close is consumed at the reply's start: after whitespace, repeated anchor tokens
        # and closes, and after the reasoning block only when the model started the turn again (the anchor's
        # token); right after the block a second close is text (a thinking-off prompt's empty block, then
        # ``</think>``).
        toks = literals(anchor_tokens(a))
        block = rf"(?:{esc(r.start)}[\s\S]*?{esc(r.end)}\s*(?:{'|'.join(toks)})\s*)?" if at_start and toks else ""
        close_lead = block + repeated_lead(a, *literals(at_start))
        # ... and at the reply's end (a stray close before the end marker), where nothing follows to lose.
        strays = "".join(rf"(?:\s*{x})*" for x in literals(at_start))
        tail = rf"(?={strays}\s*(?:" + "|".join([*literals(ends), r"\Z"]) + "))"
        extra = [(x, esc(x) + f"(?:{at_reply_start(x, lead=close_lead)[len(esc(x)):]}|{tail})") for x in at_start]
        # The opener's token written alone before the opener: consumed, so the block still opens at the start.
        extra += [(x, esc(x) + rf"(?<=\A\s*{lead}{esc(x)})(?=\s*{esc(r.start)})") for x in token]
        if r.mode != "NONE" and r.start and r.end and fields.get(reasoning_field, {}).get("open_pattern"):
            # An empty reasoning block at the reply's end, after content, holds no text: consumed, not left
            # in content. (At the reply's start, a prompt's prefill: the next alternative.)
            extra.append((r.start, rf"{esc(r.start)}(?<!\A\s*{lead_open}(?:{esc(r.start)}\s*)?{esc(r.start)})\s*{esc(r.end)}{tail}"))
            # At the reply's start a block left empty (a thinking-off prompt's prefill, ``<think></think>``) holds
            # no text either: consumed, so it adds no region for the field's join to put before the reasoning
            # the model may write anyway (before: reasoning "\n\nR", or "\n\n" alone).
            extra.append((r.start, at_reply_start(r.start, lead=lead_open) + rf"\s*{esc(r.end)}"))
        sec, sec_end = (t.section_start.strip(), t.section_end.strip()) if "tool_calls" in fields else ("", "")
        if sec and sec_end and markers(sec) == [sec] and sec_end in followers:
            # An empty call section (``<|tool_calls_section_begin|><|tool_calls_section_end|>``) holds no text:
            # its opener is consumed where its end follows (the end is consumed as a follower), not left in content.
            extra.append((sec, rf"{esc(sec)}(?=\s*{esc(sec_end)})"))
        elif sec and sec_end and markers(sec) == [sec] and sec_end == absorbed:
            # (the calls' close takes the section's end: the empty section is consumed whole)
            extra.append((sec, rf"{esc(sec)}\s*{esc(sec_end)}"))
        # Likewise an empty call element (GLM's ``<tool_call>   </tool_call>``): its opener and its closer, both
        # markers, with only whitespace between, are consumed whole.
        c_open = markers(t.call_start.strip())[:1] if "tool_calls" in fields else []
        c_close = markers(t.call_end.strip())[-1:] if "tool_calls" in fields else []
        if c_open and c_close and t.call_start.strip().startswith(c_open[0]) and t.call_end.strip().endswith(c_close[0]) and c_open != c_close:
            extra.append((c_open[0], rf"{esc(c_open[0])}\s*{esc(c_close[0])}"))
        # A call's closing marker written again right after itself (Gemma 4's ``<tool_call|><tool_call|>``, which
        # Ollama's parser drops): markup, consumed, never content.
        # (only where every other marker there starts with its first character: the scan's bound needs one)
        if c_close and c_close[0] not in ends and c_close[0] not in followers and all(m.startswith(c_close[0][0]) for m in cores):
            # (only after a JSON value's end and the first close: a marker doubled after other text is that text's)
            extra.append((c_close[0], rf"{esc(c_close[0])}(?<=[}}\]]\s*{esc(c_close[0])}\s*{esc(c_close[0])})"))
        after_list = token_after_list(t) if "tool_calls" in fields else None
        if after_list:  # a special token right after a pythonic list with no marker of its own (Llama 4)
            extra += [("<", after_list)]
        f = {"close_pattern": _implicit_close(cores, fields.get("tool_calls"), extra)} if cores or extra else {}
        section = dropped_section(t)
        if section:  # calls no field reads: their section is consumed, not read as content
            f["close_pattern"] = "|".join([x for x in (f.get("close_pattern"), section) if x])
        f["content"] = "text"
        fields["content"] = f
    anchors = list(a.turn.anchors)
    if t.headed.kind:
        fields = {k: v for k, v in fields.items() if k == reasoning_field and r.mode != "NONE" and not t.headed.reasoning_words}
        headed, headed_warnings, headed_anchors = headed_fields(a, reasoning_field)
        fields.update(headed)
        warnings += headed_warnings
        anchors = headed_anchors or anchors
    spec: dict = {"defaults": {"role": "assistant"}}
    after_others = message_anchor(a) if t.headed.kind == "channels" else None
    if after_others:
        spec["start_anchor_pattern"] = after_others
    elif anchors:
        spec["start_anchor"] = one(anchors)
    else:
        spec["start_anchor_pattern"] = r"\Z"
        warnings.append("no start anchor found; the prefix is not used")
    for f in fields.values():
        # (not where a tag's tail is a typed string's delimiter, ``">``: a value after ``'>`` would match no argument,
        # and a call that opened on ``name='f'`` would lose its values; such a call stays content, visible)
        typed = bool((f.get("content_args", {}).get("value_parser") or {}).get("args", {}).get("string_delims"))

        def spelt(pattern: str) -> str:
            pattern = optional_namespace(pattern)
            return pattern if typed else either_quote(pattern)

        for key in ("open_pattern", "close_pattern"):
            if key in f:
                f[key] = bounded_whitespace(spelt(f[key]))
        if "tag_pattern" in f.get("content_args", {}):
            f["content_args"]["tag_pattern"] = spelt(f["content_args"]["tag_pattern"])
    spec["fields"] = fields
    spec = library(spec)
    loaded(spec)  # raises ValueError if transformers would refuse it
    return spec, warnings


_LOADED: dict[str, object] = {}  # the emitted templates' compiled forms, by their JSON text (``loaded``)


def loaded(spec: dict):
    """transformers' compiled form of ``spec`` (``load_response_template``), kept for the last few emitted
    templates by their JSON text in its own key order (the order of fields is the parser's order): verify
    parses with the template emit just compiled to validate it, where compiling every pattern again was
    half a millisecond a template. Raises as the loader raises; a refused template is not kept."""
    try:
        key = json.dumps(spec, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON: not one emit made, nothing to keep
        return load_response_template(spec)
    hit = _LOADED.get(key)
    if hit is None:
        hit = load_response_template(spec)
        if len(_LOADED) >= 8:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = hit
    return hit
