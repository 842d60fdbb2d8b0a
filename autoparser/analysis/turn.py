"""Where the assistant turn starts (generation prompt, start anchors) and ends (end-of-turn markers)."""

from __future__ import annotations

import regex as re

from .diff import MARKER, SPECIAL_TOKEN, _marker_spans, markers, prefix_len, worded_tag
from ..errors import AnalysisError, TemplateError
from ..sources.template_source import STOP_TOKENS
from .probes import CONTENT, NEEDLE, USER, USER2, Prober, assistant, call, tool_result
from .model import Reasoning, Turn


def _after(text: str, needle: str) -> str:
    i = text.rfind(needle)
    return text[i + len(needle) :] if i >= 0 else ""


def _between(text: str, a: str, b: str) -> str | None:
    i = text.find(a)
    j = text.find(b, i + len(a)) if i >= 0 else -1
    return text[i + len(a) : j] if i >= 0 and j >= 0 else None


def end_markers(pr: Prober, log: list[str]) -> tuple[str, ...]:
    """C1's end half: the markers that follow the content of the last and of a middle assistant turn."""
    user = [{"role": "user", "content": USER}]
    last = _after(pr.render(user + [assistant()]), CONTENT)
    # A worded tag that follows the content whether the turn ends there or calls follow it closes the
    # content, not the turn (Kimi K3's ``<|close|>response<|sep|>`` before ``<|open|>tools<|sep|>`` as
    # before ``<|close|>message<|sep|><|end_of_msg|>``): the turn's end is looked for after it.
    whole = last
    tag = worded_tag(last)
    beside = _after(pr.try_render(user + [assistant(calls=[call()])]) or "", CONTENT) if tag else ""
    skip = len(tag) + len(last) - len(last.lstrip()) if tag and beside.lstrip().startswith(tag) else 0
    if skip and not markers(last[skip:]):
        skip = 0  # nothing else follows: the tag is the turn's end after all
    last = last[skip:]
    found: list[str] = []
    run = markers(last.lstrip().split("\n\n")[0]) if last.strip() else []
    if run:
        found += [worded_tag(last) or run[0], run[-1]]
    elif last.strip() and not re.match(r"\s*(?:\{|\[\s*[{\[\"'\d])", last):
        # An end token in no bracket style we know (MiniMax's ``[e~[``): the first word. Not when what
        # follows is JSON (a template that prints tool results or definitions after the turn).
        found.append(last.split()[0])
    p0 = pr.render(user)
    mid = _between(pr.try_render(user + [assistant(), {"role": "user", "content": USER2}]) or "", CONTENT, USER2)
    if mid:
        # Drop the next user turn's opener: the longest tail of ``mid`` that also opens the first user turn.
        opener = p0[: p0.find(USER)]
        cut = len(mid)
        # Not into what also ends the last turn, when the next turn only adds its opener: the opener of the
        # first user turn may end with the close of a system message before it, spelt as the assistant's.
        # A tail starts on a marker's edge, never inside one: ``><|user_start|>`` also ends the opener when a
        # marker before it ends ``>`` too, which cut ``<|assistant_end|>`` in half (no marker was left).
        spans = _marker_spans(mid)
        for i in range(len(whole) if whole.strip() and mid.startswith(whole) else 0, len(mid)):
            if opener.endswith(mid[i:]) and mid[i:].strip() and not any(s < i < e for s, e in spans):
                cut = i
                break
        mid = mid[skip:]
        cut -= skip
        run = markers(mid[:cut])
        if run:
            found += [worded_tag(mid[:cut]) or run[0], run[-1]]
    if not found:
        found += next_turn_tokens(pr, user)
    # The tokenizer's end-of-sequence token ends a reply too where the template ends its turns with another
    # marker (GigaChat's ``<|message_sep|>``, the model stopping on ``</s>``) or with none (GLM's turns end where
    # the next begins): an engine that keeps special tokens leaves it at the end of the text, after a call or an
    # answer. Only a marker-shaped token.
    # The other tokens the model stops on (``STOP_TOKENS``, from its generation_config.json: Llama 3.2's
    # ``<|eom_id|>`` after a call, which its template never writes) end it the same way, and so does the
    # padding token: a batched generation decoded whole pads a short reply after its end
    # (``Hello<|im_end|><|endoftext|><|endoftext|>``), and padding is never text.
    tokens = pr.r.special_tokens
    pad = tokens.get("pad_token", "") if tokens.get("pad_token") != tokens.get("bos_token") else ""  # (``<s>`` as padding: a start)
    stops = [tokens.get("eos_token", ""), *tokens.get(STOP_TOKENS, "").split("\n"), pad]
    found += [tok.strip() for tok in stops if tok.strip() and MARKER.fullmatch(tok.strip())]
    ends = tuple(dict.fromkeys(m for m in found if m))
    log.append(f"C1 end of turn: after last content {last!r}, between turns {mid!r} -> {list(ends)}")
    return ends


def next_turn_tokens(pr: Prober, user: list[dict]) -> list[str]:
    """Where a template ends no turn with a marker of its own (GLM: a turn ends where the next begins), the
    marker token that opens the turn after the assistant's (``<|user|>``, and after calls the tool results'
    ``<|observation|>``) ends the reply: a model that goes on writes the next turn's header, which is its stop
    token (an engine that keeps special tokens leaves it at the end of the text), and no reply holds it as
    text. The first marker the next message adds to the rendering, where it is a special token."""
    out = []
    turns = [(assistant(), {"role": "user", "content": USER2}),
             (assistant(None, calls=[call()]), tool_result())]
    for reply, after in turns:
        alone, more = pr.try_render(user + [reply]), pr.try_render(user + [reply, after])
        if not alone or not more or not more.startswith(alone):
            continue
        added = more[len(alone):].lstrip()
        run = markers(added)
        if run and added.startswith(run[0]) and re.fullmatch(SPECIAL_TOKEN, run[0]):
            out.append(run[0])
    return out


def generation_prompt(pr: Prober, mode: dict, history: list[dict] | None = None) -> tuple[str, str] | None:
    """(prompt, generation prompt) after the last user (or tool) turn."""
    convo = (history or []) + [{"role": "user", "content": USER}] if history is None or history[-1]["role"] != "tool" else history
    try:
        with_gp = pr.render(convo, gen=True, mode=mode)
        without = pr.render(convo, gen=False, mode=mode)
    except TemplateError:
        return None
    return with_gp, with_gp[prefix_len(with_gp, without):]


def anchor_for(prompt: str, cut: int, gp_start: int) -> str:
    """Text ending at ``cut`` whose last occurrence in ``prompt`` ends exactly there: the parser drops
    everything up to an anchor's last occurrence. It starts as the generation prompt (or, when there
    is none, the marker run before the cut) and grows left only as far as uniqueness needs; it never
    reaches back into probe text, which would tie it to one conversation."""
    head = prompt[:cut]
    needles = list(NEEDLE.finditer(head))
    floor = needles[-1].end() if needles else 0
    start = min(max(gp_start, floor), cut)
    while start < cut and head[start].isspace():
        start += 1
    if start >= cut:  # no generation prompt: begin with the last marker run before the cut
        tail_markers = [m for m in MARKER.finditer(head) if m.start() >= floor]
        start = tail_markers[-1].start() if tail_markers else max(floor, cut - 1)
    while start > floor:
        a = head[start:]
        if a.strip() and prompt.rfind(a) + len(a) == cut:
            break
        start -= 1
    return head[start:]


def analyze_turn(pr: Prober, reasoning: Reasoning, log: list[str]) -> Turn:
    user = [{"role": "user", "content": USER}]
    try:
        pr.render(user)  # (one that raises only when given tools renders without them: ``Prober.tools_error``)
    except TemplateError as e:
        raise AnalysisError(f"template cannot render a single user message: {e.message}") from None
    try:
        turn = pr.render(user + [assistant()])
    except TemplateError as e:
        # (MiroThinker writes ``message.content``: transformers' sandbox refuses every assistant turn)
        raise AnalysisError(f"template raises on an assistant turn: {e.message}") from None
    if CONTENT not in turn:
        raise AnalysisError("template renders no assistant turn (assistant content never appears)")
    ends = end_markers(pr, log)
    anchors: list[str] = []
    gen_prompt = ""
    contexts = [None, [{"role": "user", "content": USER}, assistant(None, calls=[call()]), tool_result()]]
    said = {}  # per mode: a phrase the prompt prefills and history drops (not markers)
    for mode in pr.modes:
        g = pr.generation(assistant(), mode)
        said[repr(mode)] = g.dropped.strip() if g and not g.exact and not markers(g.dropped) else ""
    for ctx in contexts:
        for mode in pr.modes:
            got = generation_prompt(pr, mode, ctx)
            if got is None:
                continue
            prompt, gp = got
            if ctx is None and mode == pr.modes[0]:
                gen_prompt = gp
            # A prefill that opens or closes the reasoning belongs to the message, not the anchor.
            # The earliest such cut that still leaves anchor text: a "start" marker the generation prompt
            # begins with is the turn's own header (history writes it without any reasoning).
            cuts = sorted({len(prompt)} | {i for marker in (reasoning.start, reasoning.end, said[repr(mode)])
                                           if marker and (i := prompt.find(marker, len(prompt) - len(gp))) >= 0})
            for cut in cuts:
                a = anchor_for(prompt, cut, len(prompt) - len(gp))
                if a.strip():
                    anchors.append(a)
                    break
    anchors = list(dict.fromkeys(anchors))
    log.append(f"generation prompt {gen_prompt!r}; start anchors {anchors}")
    return Turn(gen_prompt, tuple(anchors), ends, tuple(",".join(f"{k}={v}" for k, v in m.items()) for m in pr.modes))
