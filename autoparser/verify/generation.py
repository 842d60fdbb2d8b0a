"""What a model would generate for a probe message: the template's rendering of the conversation ending in the
message, after the prompt, cut where a model stops (a prefill the history leaves out, the turn's end, a trailer
the template appends to every conversation). Part of verification: ``roundtrip`` parses what this gives;
``VERIFY_TOOLS`` are the tools every probe conversation is rendered with."""

from __future__ import annotations

from ..analysis.diff import MARKER, _marker_spans, common_suffix_at, prefix_len, worded_tag
from ..analysis.model import Analysis
from ..analysis.probes import Prober, align_history, assistant, drop_trailer, name_tools
from ..render import REASONING_KEYS, constant

VERIFY_TOOLS = name_tools(constant([
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Days ahead"},
                    "metric": {"type": "boolean", "description": "Use metric units"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_query",
            "description": "Run a structured query.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Query text"},
                    "limit": {"type": "number", "description": "Maximum rows"},
                    "options": {"type": "object", "description": "Extra options", "additionalProperties": {}},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
                },
                "required": ["query"],
            },
        },
    },
]), "verify")


def _cut(text: str, ends: tuple[str, ...]) -> str:
    """``text`` up to and including the earliest end marker (the analysis' end-of-turn tokens)."""
    best = None
    for e in ends:
        i = text.find(e)
        if i >= 0 and (best is None or i + len(e) < best):
            best = i + len(e)
    return text[:best] if best is not None else text.rstrip()


def _split(prompt: str, full: str) -> int:
    """Where the prompt and the rendered turn part. When the turn does not continue the whole prompt,
    their common prefix is backed off so it cuts no marker and no word in either: a prefill
    ``<think></think>`` and a reply ``</think>…`` share ``<``, ``Here are my…`` and ``Hello`` share ``He``."""
    if full.startswith(prompt):
        return len(prompt)
    spans = (_marker_spans(prompt), _marker_spans(full))

    def whole(text: str, k: int, marks) -> bool:
        inside_word = 0 < k < len(text) and text[k - 1].isalnum() and text[k].isalnum()
        return not inside_word and not any(s < k < e for s, e in marks)

    k = prefix_len(prompt, full)
    while k > 0 and not (whole(prompt, k, spans[0]) and whole(full, k, spans[1])):
        k -= 1
    return k


def _overlap(dropped: str, rest: str) -> int:
    """Length of the longest tail of the dropped prefill that the rendered turn starts with, cut at a
    marker boundary: history renders ``</think>answer`` where the prompt ended ``<think></think>``."""
    spans = _marker_spans(dropped)
    for j in range(len(dropped)):
        tail = dropped[j:]
        if tail.strip() and rest.startswith(tail) and not any(s < j < e for s, e in spans):
            return len(tail)
    return 0


REF = assistant("QXVERIFYREFQX")


def _turn_end(full: str, start: int, ref: str | None) -> int:
    """Where a model stops: before what the rendering appends after any assistant turn (found as the
    common tail with a reference turn), keeping that tail's first marker, the end-of-turn token. Without
    this, a template that opens the next header after every turn would feed it to the parser when the
    analysis found no end marker; ``_cut`` then cuts at the earliest end marker the analysis found."""
    if ref is None:
        return len(full)
    cut = max(len(full) - common_suffix_at(full, len(full), ref, len(ref)), start)
    at = cut + len(full[cut:]) - len(full[cut:].lstrip())
    if tag := worded_tag(full[at:]):  # a closing tag spelt token + word + token is one marker
        return at + len(tag)
    end = MARKER.match(full, at)
    return end.end() if end else cut


def _reasoning(m: dict) -> str:
    return next((m[k] for k in REASONING_KEYS if isinstance(m.get(k), str)), "")


_AROUND = {"prompt": (True, None), "without": (False, None), "ref": (False, REF)}  # kind -> (generation prompt, reply)


def _around(pr: Prober, msgs: list[dict], mode: dict, memo: dict | None, kind: str) -> str | None:
    """A rendering every probe message's generation from conversation ``msgs`` reads (the prompt, the
    conversation without the reply, and with the reference reply), from ``memo`` when the same conversation
    asked it before in this mode: ``_cases`` keeps one per conversation (every probe message and each of its
    variants asks the same three), where the prober's cache answered each later ask at the cost of a
    ``repr`` of the conversation. The first ask renders, where it always did; ``memo=None``: every ask goes
    to the prober."""
    key = (kind, *mode.items())
    if memo is not None:
        hit = memo.get(key, memo)
        if hit is not memo:
            return hit
    gen, reply = _AROUND[kind]
    out = pr.try_render(msgs if reply is None else msgs + [reply], gen=gen, mode=mode, tools=VERIFY_TOOLS)
    if memo is not None:
        memo[key] = out
    return out


def _generation(pr: Prober, a: Analysis, msgs: list[dict], m: dict, mode: dict, around: dict | None = None):
    """(prompt, generated text, how) or None when this mode cannot produce M.

    ``exact``: the rendered turn continues the prompt. Otherwise the prompt ends with a prefill the
    history rendering leaves out: after a closed reasoning prefill the model goes on with the rest of
    the turn (``prefill-dropped``); after an open one, or when the turn never closes the reasoning the
    prompt opened, it writes the reasoning and its end marker first (``synthesized``)."""
    prompt = _around(pr, msgs, mode, around, "prompt")
    full = pr.try_render(msgs + [m], gen=False, mode=mode, tools=VERIFY_TOOLS)
    if prompt is None or full is None:
        return None
    without = _around(pr, msgs, mode, around, "without")
    real = prompt  # what the model is given; the split below reads the renderings without their trailer
    prompt, without, full = drop_trailer(prompt, without, full)
    full = align_history(prompt, full, msgs[-1]["content"])
    k = _split(prompt, full)
    ends = a.turn.end_markers + a.tools.end_markers
    if k < len(prompt):  # a template that closes every conversation with a fixed trailer (Command R+)
        trailed = Prober._after_trailer(prompt, without, full)
        if trailed is not None:
            return real, _cut(trailed, ends), "exact"
    full = full[: _turn_end(full, k, _around(pr, msgs, mode, around, "ref"))]
    dropped, rest = prompt[k:], full[k:]
    rest = rest[_overlap(dropped, rest):]
    r = a.reasoning
    reasoning = _reasoning(m).strip()
    # The prompt leaves reasoning open, but the rendered turn never closes it: history dropped the
    # reasoning (and its end) while keeping the opener (Nemotron Nano v2), or dropped the opener too.
    opened = bool(r.start and r.end) and prompt.rstrip().endswith(r.start) and r.end not in rest
    if not dropped and not opened:
        return real, _cut(rest, ends), "exact"
    if r.end and r.end in dropped:  # closed reasoning prefill: the model continues after it
        if reasoning:
            return None
        return real, _cut(rest, ends), "prefill-dropped"
    if opened or (r.end and (r.start in dropped or not r.start)):  # open reasoning prefill (any, with delimiter-only reasoning)
        if reasoning and reasoning in rest:  # rendered elsewhere, not where a model writes it
            return None
        body = rest if rest.lstrip().startswith(r.end) else f"{r.end}\n\n{rest}"
        return real, _cut(f"{reasoning}\n{body}", ends), "synthesized"
    return None
