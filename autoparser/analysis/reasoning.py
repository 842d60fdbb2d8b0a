"""Reasoning markers and mode (llama.cpp's R1-R3 plus the thinking toggle).

R1 compares a turn with and without reasoning, R3 the same inside a tool-call turn (reasoning that
only tool turns render), R2 the generation prompts of the thinking modes (a prefill that opens, or
opens and closes, the reasoning block)."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import regex as re

from .diff import MARKER, SPECIAL_TOKEN, Diff, diff, glued_header, leading_markers, markers, prefix_len, trailing_markers
from .probes import CONTENT, REASON, RESULT, USER, USER2, Prober, assistant, call
from .reads import reasoning_budgets
from .model import Reasoning, Tools


def _markers_around(d: Diff, needle: str, next_needle: str | None) -> tuple[str, str, str] | None:
    """(start, end, end-with-what-follows) around ``needle`` in the right side of a diff."""
    i = d.right.find(needle)
    if i < 0:
        return None
    before = d.right[:i]
    # A marker both sides open with went to the diff only because a word is glued to it on the left
    # (``[/INST]QXCONTENTQX``): it belongs to the prefix when a marker follows it on the right.
    for m in markers(before):
        if before.startswith(m) and d.left.startswith(m) and MARKER.match(before, len(m)):
            before = before[len(m) :]
        else:
            break
    start = before.strip() or trailing_markers(d.prefix).strip()
    after = d.right[i + len(needle) :]
    if next_needle and next_needle in after:
        after = after[: after.find(next_needle)]
    if after.strip():
        full_end = after.strip()
    else:
        full_end = leading_markers(d.suffix.lstrip()).strip()
    end_ms = markers(full_end)
    end = end_ms[0] if end_ms else full_end
    # Only count the start marker if it is not also the turn header: an empty block in the left side
    # (e.g. "<think>\n\n</think>", or "<think>" in the prompt and "</think>" opening the left side)
    # shows both markers belong to reasoning.
    if not before.strip() and start and not (end and (end in d.suffix or d.left.lstrip().startswith(end))):
        start = ""
    return _worded(d.prefix + before, start, end, full_end, after if after.strip() else d.suffix.lstrip())


_WORDED_START = re.compile(rf"(?:{SPECIAL_TOKEN})(?P<word>[A-Za-z_]\w*)(?:{SPECIAL_TOKEN})\s*$")


def _worded(text_before: str, start: str, end: str, full_end: str, text_after: str) -> tuple[str, str, str]:
    """Tags spelt token + word + token (Kimi K3: ``<|open|>think<|sep|>R<|close|>think<|sep|>``): the
    diff's marker cut keeps only the token next to the needle, a separator every tag shares. When the
    text before the needle ends with such a tag and the end opens with one naming the same word, those
    whole tags are the reasoning's start and end."""
    m = _WORDED_START.search(text_before)
    if not m or not start or not end or not m.group(0).strip().endswith(start.strip()):
        return start, end, full_end
    e = re.match(rf"(?:{SPECIAL_TOKEN}){re.escape(m['word'])}(?:{SPECIAL_TOKEN})", text_after.lstrip())
    if not e or not e.group(0).startswith(end):
        return start, end, full_end
    return m.group(0).strip(), e.group(0), e.group(0) if full_end == end else full_end


def _blank_line_end(pr: Prober, log: list[str]) -> tuple[str, str, str] | None:
    """Reasoning ended by whitespace alone: a line holding only spaces (``reasoning\n \n\ncontent``,
    a template whose tags were lost). Found when reasoning renders right at the start of the reply,
    before exactly the text a content-only reply has, and that text opens with such a run: the run is
    the end (DELIMITER). A run of bare newlines is a paragraph break, never taken."""
    for mode in pr.modes:
        base = pr.generation(assistant(), mode)
        withr = pr.generation(assistant(reasoning=REASON), mode)
        if not (base and withr and base.exact and withr.exact and withr.text == REASON + base.text):
            continue
        run = base.text[: len(base.text) - len(base.text.lstrip())]
        if run.count("\n") >= 2 and re.search(r"\n[ \t]+\n", run):
            log.append(f"R1 [{_m(mode)}] reasoning ends at a line of only spaces: {run!r}")
            return "", run, run
    return None


def _toggle(pr: Prober, log: list[str]) -> tuple[str, str, str] | None:
    """Reasoning that history never renders but the thinking switch shows: one mode's generation
    prompt opens the block and another opens and closes it (``<think>`` vs ``<think></think>``)."""
    # From the user's message on: the switch may also change a system preamble (SmolLM3's /think).
    prompts = [g.prompt[g.prompt.rfind(USER):] for g in (pr.generation(assistant(), m) for m in pr.modes) if g]
    for a, b in combinations(prompts, 2):
        d = diff(a, b)
        extra, other = (d.left, d.right) if d.left.strip() else (d.right, d.left)
        opener = markers(trailing_markers(d.prefix))
        closer = markers(extra)
        # (an opening tag, ``<think>`` after ``<｜Assistant｜>``, is a mode's prefilled opener, read below: no close)
        if not other.strip() and opener and len(closer) == 1 and extra.strip() == closer[0] and closer[0] != opener[-1] and not _closing_form(closer[0]):
            log.append(f"R2 thinking toggle: prompts differ by {extra!r} after {opener[-1]!r}")
            return opener[-1], closer[0], closer[0]
        if not other.strip() and len(closer) == 2 and not MARKER.sub("", extra).strip() and closer[0] != closer[1]:
            # One mode prefills an empty block the other leaves to the model (SmolLM3's
            # "<think>\n\n</think>\n" when thinking is off).
            log.append(f"R2 thinking toggle: one prompt adds the empty block {extra!r}")
            return closer[0], closer[1], closer[1]
    return None


def _closer_by_split(pr: Prober, start: str, log: list[str]) -> str:
    """The end of a block whose opener only the prompt shows. Some templates cut reasoning out of
    history by splitting content on the end marker: a content ``REASON<end>CONTENT`` that renders
    without REASON confirms the candidate, the opener's closing form (``<x>``/``</x>``, ``[X]``/``[/X]``)."""
    cand = _closing_form(start)
    if not cand:
        return ""
    ok = _split_drops(pr, cand)
    log.append(f"R2 end of {start!r} by content split on {cand!r}: {'confirmed' if ok else 'no'}")
    return cand if ok else ""


def _split_drops(pr: Prober, cand: str) -> bool:
    """Whether history drops what an assistant's content writes before ``cand``: the last turn's or an earlier
    one's (a template may keep the last turn whole)."""
    msg = assistant(REASON + cand + CONTENT)
    g = pr.generation(msg, pr.modes[0])
    turns = [{"role": "user", "content": USER}, msg, {"role": "user", "content": USER2}]
    mid = pr.try_render(turns, mode=pr.modes[0])
    return any(t and CONTENT in t and REASON not in t for t in (g.full if g else None, mid))


# A closing tag that is a whole string literal of the source where the source cuts or tests text at it
# (``.split('</think>')``, ``'</think>' in content``): the literals a template only writes out cost no render.
_CLOSING_TAG = re.compile(r"""(?:(?:split|partition)\(\s*)(['"])(</\w[\w:.\-]{0,31}>|\[/\w{1,32}\])\1"""
                          r"""|(['"])(</\w[\w:.\-]{0,31}>|\[/\w{1,32}\])\3(?=\s*(?:not\s+)?in\b)""")
SPLIT_CANDIDATES = 8  # closing tags the source names that R4 tries, one render each


def _pair_by_split(pr: Prober, log: list[str]) -> tuple[str, str] | None:
    """R4: reasoning that no switch and no field of the message shows, where history cuts it out of the content
    (``content.split('</think>')[-1]``: Nemotron Super, LFM2.5, DeepSeek-R1 tool templates). The template says
    by that cut that the text before the marker is no answer: a closing tag the source cuts or tests text at
    (``</x>``, ``[/X]``, a whole string literal) that an assistant's content renders without the text before it
    is the block's end, its opening form the start. The source only proposes; the render decides."""
    seen = list(dict.fromkeys(m[1] or m[3] for m in _CLOSING_TAG.findall(pr.r.source)))[:SPLIT_CANDIDATES]
    for cand in seen:
        # One render per candidate, the turn an earlier one (a template may keep the last turn whole: LFM2.5)
        text = pr.try_render([{"role": "user", "content": USER}, assistant(REASON + cand + CONTENT),
                              {"role": "user", "content": USER2}, assistant(RESULT), {"role": "user", "content": USER}], mode=pr.modes[0])
        if not (text and CONTENT in text and REASON not in text):
            continue
        # (a tag the template writes around calls is the calls' own, whatever history cuts at it)
        calls = pr.generation(assistant(None, calls=[call()]), pr.modes[0])
        if calls and cand in calls.full:
            continue
        start = _opening_form(cand)
        log.append(f"R4 history drops the content before {cand!r}: reasoning {start!r}…{cand!r}")
        return start, cand
    if seen:
        log.append(f"R4 no content split on {seen}")
    return None


def _opening_form(end: str) -> str:
    return "<" + end[2:] if end.startswith("</") else "[" + end[2:]


_TAG_OR_BRACKET = re.compile(r"<(\w[\w:.\-]*)>|\[(\w+)\]")


def _closing_form(start: str) -> str:
    m = _TAG_OR_BRACKET.fullmatch(start)
    if not m:
        return ""
    return f"</{m.group(1)}>" if m.group(1) else f"[/{m.group(2)}]"


def _without_shared_head(prefills: dict[str, str], log: list[str]) -> dict[str, str]:
    """Prefills with the leading markers every mode's prefill shares taken off: when history renders
    the turn header differently, each prefill starts with the header (``<｜Assistant｜><think>`` vs
    ``<｜Assistant｜></think>``), which is the turn's, not reasoning's."""
    pres = [p for p in prefills.values() if p.strip()]
    if len(pres) < 2 or len(prefills) != len(pres) or len(set(pres)) < 2:
        return prefills
    k = prefix_len(pres[0], pres[1]) if len(pres) == 2 else min(prefix_len(pres[0], p) for p in pres[1:])
    head = pres[0][:k]
    ms = markers(head)
    if not ms:
        return prefills
    cut = head.rfind(ms[-1]) + len(ms[-1])
    cut += len(head[cut:]) - len(head[cut:].lstrip())
    if any(not p[cut:].strip() for p in pres):
        return prefills
    log.append(f"R2 every prefill starts with {pres[0][:cut]!r}: the turn's header, left out")
    return {k_: p[cut:] for k_, p in prefills.items()}


def _open_close_pair(prefills: dict[str, str]) -> tuple[str, str] | None:
    """(opener, closer) when one mode's prefill is a single marker and another's is its closing form."""
    singles = {p.strip() for p in prefills.values() if p.strip() and markers(p) == [p.strip()]}
    for s in singles:
        if (c := _closing_form(s)) and c in singles:
            return s, c
    return None


def _open_close_prompts(prompts: dict[str, str]) -> tuple[str, str] | None:
    """(opener, closer) when one mode's prompt ends with a marker and another's ends, at the same
    place, with its closing form (``<|Assistant|><think>`` vs ``<|Assistant|></think>``), history
    writing the closer either way."""
    tails = {}
    for p in prompts.values():
        p = p[p.rfind(USER):].rstrip()
        ms = markers(trailing_markers(p))
        if ms:
            tails[ms[-1]] = p[: len(p) - len(ms[-1])]
    for s, head in tails.items():
        c = _closing_form(s)
        if c and c in tails and tails[c] == head:
            return s, c
    return None


def _rest_after_prompt(prompt: str, rendered: str, start: str, end: str, log: list[str]) -> tuple[str, str]:
    """R1b: a reasoning block written as a message of its own under a role header that the generation prompt
    begins (HyperCLOVA X: the prompt ends ``<|im_start|>assistant``, history writes
    ``<|im_start|>assistant/think\n…<|im_end|>\n<|im_start|>assistant\n`` then the content). History's diff puts
    the whole header in the opener; the model, continuing the prompt, writes only the rest (``/think``), and its
    reasoning ends where the next message's header, the prompt's text again, has been written."""
    # the prompt's last marker and the word glued to it (``<|im_start|>assistant``), else its trailing markers
    overlap = glued_header(prompt) or trailing_markers(prompt).strip()
    if not overlap or start == overlap or not start.startswith(overlap) or prompt.rstrip().endswith(start):
        return start, end
    rest = start[len(overlap):]
    # the next message's header after the reasoning's end, as history writes it (``<|im_end|>\n<|im_start|>assistant``)
    after = re.search(re.escape(REASON) + r"\s*" + re.escape(end) + r"(\s*)" + re.escape(overlap), rendered)
    if not rest.strip() or rest[0].isalnum() or not after:
        return start, end
    log.append(f"R1b the prompt ends {overlap!r}, which begins the opener {start!r}: the model writes {rest!r}; "
               f"its reasoning ends with {end!r} and the next message's header {overlap!r}")
    return rest, f"{end}{after.group(1)}{overlap}"


def _prefill(pr: Prober, mode: dict) -> str:
    g = pr.generation(assistant(), mode)
    return g.dropped if g and not g.exact else ""


_WORD = re.compile(r"[A-Za-z_][\w\-]{0,31}\s*")


def _worded_opener(prefill: str, ms: list[str]) -> str:
    """The opener of an empty block a prompt prefills: its first marker, with the one word glued to it before the end
    (``<|channel>thought\n<channel|>``: ``<|channel>thought``, the token and the channel's name, as Gemma 4 writes
    its reasoning opener). An empty block holds no reasoning, so that word is the opener's, where history renders no
    reasoning to show it; read as reasoning, every reply after such a prompt came back with reasoning ``thought``."""
    if len(ms) != 2:
        return ms[0]
    i = prefill.index(ms[0]) + len(ms[0])
    word = prefill[i:prefill.rindex(ms[-1])]
    return ms[0] + word.rstrip() if _WORD.fullmatch(word) else ms[0]


def analyze_reasoning(pr: Prober, log: list[str]) -> Reasoning:
    found = None
    scope = "content"
    for mode in pr.modes if pr.reads_reasoning else ():
        base = pr.generation(assistant(), mode)
        withr = pr.generation(assistant(reasoning=REASON), mode)
        if base and withr and REASON in withr.full:
            d = diff(base.full, withr.full)
            found = _markers_around(d, REASON, CONTENT)
            log.append(f"R1 [{_m(mode)}] content vs content+reasoning: left {d.left!r} right {d.right!r} -> {found}")
            if found:
                break
    if not found:
        for mode in pr.modes if pr.reads_reasoning else ():
            base = pr.generation(assistant(None, calls=[call()]), mode)
            withr = pr.generation(assistant(None, reasoning=REASON, calls=[call()]), mode)
            if base and withr and REASON in withr.full:
                d = diff(base.full, withr.full)
                found = _markers_around(d, REASON, None)
                if found:  # what follows reasoning here is the tool call, not a content wrapper
                    found = (found[0], found[1], found[1])
                log.append(f"R3 [{_m(mode)}] tool call vs tool call+reasoning: right {d.right!r} -> {found}")
                if found:
                    scope = "tools"
                    break
    if not found:
        found = _toggle(pr, log)
    if not (found and any(found)) and pr.reads_reasoning:
        found = _blank_line_end(pr, log) or found
    start, end, full_end = found if found else ("", "", "")
    # R2: what the thinking modes' generation prompts prefill.
    prefills = {_m(m): _prefill(pr, m) for m in pr.modes}
    prompts = {}
    for m in pr.modes:
        g = pr.generation(assistant(), m)
        if g:
            prompts[_m(m)] = g.prompt
    if start and end and pr.modes and _m(pr.modes[0]) in prompts:
        withr = pr.generation(assistant(reasoning=REASON), pr.modes[0])
        start, end = _rest_after_prompt(prompts[_m(pr.modes[0])], withr.full if withr else "", start, end, log)
    log.append(f"R2 prefills by mode: {prefills}")
    prefills = _without_shared_head(prefills, log)
    forced_open = forced_closed = False
    pair = _open_close_pair(prefills) or _open_close_prompts(prompts)
    if pair and (not start or start == pair[0]) and (not end or end == pair[1]):
        # One mode prefills the opener, another its closing form (a ``thinking`` switch: ``<think>`` vs
        # ``</think>``): the model writes reasoning after the first, content after the second.
        start, end, forced_open = pair[0], pair[1], True
        log.append(f"R2 one mode opens {start!r}, another closes with {end!r}")
    for name, pre in prefills.items():
        ms = markers(pre)
        if not ms and pre.strip():
            # A plain-text prefill that history drops ("Here are my reasoning steps:") is words the
            # model says, not a token: reasoning is what precedes its end (DELIMITER), phrase included.
            continue
        if len(ms) >= 2 and (not end or ms[-1] == end):
            forced_closed = True
            start = start or _worded_opener(pre, ms)
            end = end or ms[-1]
        elif len(ms) == 1 and (not start or ms[0] == start):
            start = start or ms[0]
            forced_open = True
    # A prompt can also end with the opener and history keep it (exact generations).
    if start and not forced_open:
        for p in prompts.values():
            if p.rstrip().endswith(start):
                forced_open = True
    assumed = False
    if start and not end:
        end = _closer_by_split(pr, start, log)
        if not end and forced_open and (end := _closing_form(start)):
            # The prompt opens the block and no rendering shows its end (history drops the reasoning, and
            # cuts content at no end): a tag's own closing form ends it, as markup pairs, where before the
            # whole reply was reasoning. Said by a warning (``end_assumed``).
            assumed = True
            log.append(f"R2 end of {start!r}: no rendering shows one; its closing form {end!r}")
    if not start and not end:
        # The prompt ends with an opener that history keeps before the content, and earlier turns
        # are cut at its closing form (Nemotron Nano v2's always-open <think>).
        tail = markers(trailing_markers(prompts.get(_m(pr.modes[0]), "")))
        if tail and (closer := _closer_by_split(pr, tail[-1], log)):
            start, end, forced_open = tail[-1], closer, True
    if not start and not end and (pair := _pair_by_split(pr, log)):
        start, end = pair
    if not start and not end:
        mode = "NONE"
    elif not start:
        mode = "DELIMITER"
    elif scope == "tools":
        mode = "TOOLS_ONLY"
    elif forced_open:
        mode = "FORCED_OPEN"
    elif forced_closed:
        mode = "FORCED_CLOSED"
    else:
        mode = "TAG_BASED"
    variants = tuple(dict.fromkeys(v for v in (full_end, end) if v))
    # A thinking budget of 0 may close the block in the prompt where no switch does (Seed-OSS): asked only here.
    budgets = {f"{n}=0": pr.try_render([{"role": "user", "content": USER}], gen=True, mode={n: 0})
               for n in reasoning_budgets(pr.r.source)} if mode != "NONE" else {}
    budgets = {k: v for k, v in budgets.items() if v is not None}
    r = Reasoning(mode, start, end, variants, _lone_close(mode, start, end, {**prompts, **budgets}, log), end_assumed=assumed)
    log.append(f"reasoning -> {r}")
    return r


def _lone_close(mode: str, start: str, end: str, prompts: dict[str, str], log: list[str]) -> bool:
    """Whether text before a close with no opener is reasoning (the DeepSeek-R1 convention): where a
    thinking switch closes the block in the prompt in one mode (an empty block, or the close alone) and
    leaves the reply's start to the model in another, that other mode is the thinking one, and a model
    trained on it may reason without writing the opener. Not where the switch's other mode opens the
    block: the free mode is then the non-thinking one, whose every reply the lookahead would hold back
    (and vLLM's structured-output gate with it) to find a close that does not come. Never for a template
    without reasoning, nor one with no switch."""
    if mode not in ("TAG_BASED", "FORCED_OPEN", "FORCED_CLOSED", "TOOLS_ONLY") or not (start and end) or len(prompts) < 2:
        return False
    tails = [p[p.rfind(USER):].rstrip() for p in prompts.values()]
    closed = [t.endswith(end) for t in tails]
    free = [not t.endswith(start) and not t.endswith(end) for t in tails]
    if any(closed) and any(free):
        log.append(f"R2 one mode closes the block in the prompt, another leaves it to the model: text before a lone {end!r} is reasoning")
        return True
    return False


def _m(mode: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in mode.items()) or "default"


def ended_by_calls(pr: Prober, r: Reasoning, t: Tools, log: list[str]) -> Reasoning:
    """Reasoning the template itself writes right before its calls, with nothing but whitespace between
    (``<|think|>\nR\n<|act|>\n{…}``, while a content reply begins with the end ``<|out|>``): the calls' opener ends the
    block there, as the end does before content (``Reasoning.calls_end``). Asked once the calls' opener is known;
    one render of a reasoning + call turn."""
    if r.mode not in ("TAG_BASED", "FORCED_OPEN") or not (r.start and r.end) or t.format == "NONE" or t.headed.kind or not pr.modes:
        return r
    opener = (t.section_start or t.call_start).strip()
    first = MARKER.match(opener)
    if not first:
        return r
    g = pr.generation(assistant(None, reasoning=REASON, calls=[call()]), pr.modes[0])
    if not g or REASON not in g.full:
        return r
    after = g.full[g.full.index(REASON) + len(REASON):]
    k = after.find(first.group(0))
    if k < 0 or after[:k].strip():
        return r
    log.append(f"R5 reasoning + call: the call's opener {first.group(0)!r} follows the reasoning with no end: it ends the block")
    return replace(r, calls_end=True)
