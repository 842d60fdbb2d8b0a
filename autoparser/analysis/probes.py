"""The controlled inputs of the differential analysis, and a prober that renders them.

Needles are distinctive strings the analyzers look for in renderings. Real templates reject some
inputs (no system role, nine-character call ids, string arguments, content with tool calls…), so the
prober tries a small set of adaptations and remembers the first that renders.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace
from itertools import chain, product

from .diff import MARKER, common_suffix_at, prefix_len, suffix_len, unsplit_prefix
from .reads import _GEN, _attribute_chains, prompt_only_names, reasoning_switches
from ..errors import TemplateError, without_frames
from ..render import REASONING_KEYS, Renderer, constant, undefined_name
from ..render.sandbox import CACHE_SOURCE

USER = "QXUSERQX"
USER2 = "QXUSERTWOQX"
CONTENT = "QXCONTENTQX"
REASON = "QXREASONQX"
RESULT = "QXRESULTQX"
FN_A, FN_B = "fn_alpha", "fn_beta"
ARG_A, ARG_B, ARG_C = "arg_one", "arg_two", "arg_three"
VAL_A, VAL_B = "QXVALAQX", "QXVALBQX"
ID_A, ID_B = "call00001", "call99999"
NEEDLE = re.compile(r"QX[A-Z]+QX")  # any probe text above
_PROBE_TEXT = re.compile(rf"QX[A-Z]+QX|{FN_A}|{FN_B}|{ARG_A}|{ARG_B}|{ARG_C}|{ID_A}|{ID_B}")


def probe_text(text: str) -> list[str]:
    """Probe needles and names found in ``text`` (an emitted template must hold none)."""
    return _PROBE_TEXT.findall(text)

THINKING_MODES = ({}, {"enable_thinking": True}, {"enable_thinking": False})
def tool_schema(name: str, params: dict[str, dict] | None = None) -> dict:
    params = params if params is not None else {ARG_A: {"type": "string", "description": "first"}, ARG_B: {"type": "string", "description": "second"}}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": params, "required": list(params)[:1]},
        },
    }


TOOLS = constant([tool_schema(FN_A), tool_schema(FN_B)])

# Tool lists passed to every render, keyed in the render cache by name instead of by ``repr`` (~20 us
# each time for verify's schemas). Only ``constant`` lists are named: nobody mutates them in place.
_NAMED: dict[int, tuple[object, str]] = {}


def name_tools(tools: list, name: str) -> list:
    """Register a constant tool list under ``name`` for the render cache's keys; returns it."""
    _NAMED[id(tools)] = (tools, name)
    return tools


def _tools_key(tools) -> str:
    hit = _NAMED.get(id(tools))
    return hit[1] if hit is not None and hit[0] is tools else repr(tools)


name_tools(TOOLS, "probe")


def call(name: str = FN_A, args: dict | None = None, id: str = ID_A) -> dict:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": {ARG_A: VAL_A} if args is None else args}}


def tool_result() -> dict:
    """The tool's answer to ``call()``."""
    return {"role": "tool", "tool_call_id": ID_A, "name": FN_A, "content": RESULT}


def assistant(content: str | None = CONTENT, reasoning: str | None = None, calls: list[dict] | None = None) -> dict:
    msg: dict = {"role": "assistant", "content": content}
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    if calls:
        msg["tool_calls"] = calls
    return msg


def drop_trailer(prompt: str, without: str | None, full: str) -> tuple[str, str | None, str]:
    """The three renderings (prompt, conversation without and with the reply) without the text the
    template writes after every conversation (a stray ``",`` after the last tag, a closing note): it
    follows the prompt as much as the reply, so it is neither prefill nor generation. Whitespace stays."""
    if not without or prompt == without:
        return prompt, without, full
    # The common tails before moving them to marker-safe cuts (which only shortens them): when that is
    # blank, so is the trailer, and the marker scans of three whole renderings are not needed.
    raw = min(suffix_len(prompt, len(prompt), full, len(full)), suffix_len(without, len(without), full, len(full)))
    if not full[len(full) - raw :].strip():
        return prompt, without, full
    n = min(common_suffix_at(prompt, len(prompt), full, len(full)), common_suffix_at(without, len(without), full, len(full)))
    trailer = full[len(full) - n :].lstrip()
    if not trailer or NEEDLE.search(trailer) or len(trailer) >= min(len(prompt), len(without)) or not prompt.endswith(trailer) or not without.endswith(trailer):
        return prompt, without, full
    t = len(trailer)
    return prompt[:-t], without[:-t], full[:-t]


def align_history(prompt: str, full: str, user: str) -> str:
    """``full`` realigned to continue ``prompt`` where they differ only in what no model writes: everything
    up to the last user message's text is taken from ``prompt`` when the two part before it (a system
    prompt merged into the last user message once an assistant turn follows), then layout around the
    assistant header (``_same_spacing``)."""
    pe = prompt.rfind(user)
    fe = full.rfind(user)
    if pe < 0 or fe < 0 or full.startswith(prompt):
        return full
    pe, fe = pe + len(user), fe + len(user)
    if prefix_len(prompt, full) < pe:
        full = prompt[:pe] + full[fe:]
    return _same_spacing(prompt, full)


def _separates(history: str, sep: str, header: str) -> bool:
    """Whether ``sep`` also comes right before an earlier turn's header marker (one opening like ``header``)."""
    i = history.find(sep)
    while i >= 0:
        j = i + len(sep)
        if history.startswith(header[:2], j) and (MARKER.match(history, j) or history.startswith(header[:8], j)):
            return True
        i = history.find(sep, i + 1)
    return False


def _same_spacing(prompt: str, full: str) -> str:
    """``full`` continuing ``prompt`` exactly when, after their common prefix, the history renders the
    prompt's closing header with other whitespace around it (blank lines a separate history loop adds),
    or after a separator the generation prompt leaves out (``\\n`` text a loop writes before every
    turn). Both are layout, not text a model writes: the model writes after the prompt's header."""
    k = unsplit_prefix(prompt, full)
    if k == len(prompt):
        return full
    header = prompt[k:].strip()
    j = full.find(header, k) if header else k
    if j < 0:
        if MARKER.fullmatch(header):
            return _other_user_close(prompt, full, k, header)
        return _spaced_before_prefill(prompt, full, k, header)
    if NEEDLE.search(full, k, j):
        return full
    skipped = full[k:j]
    if skipped.strip() and (MARKER.search(skipped) or len(skipped.strip()) > len(header) or not _separates(prompt[:k], skipped, header)):
        return full  # a separator is short, holds no marker and comes before the earlier turns' headers too; anything else is the reply's
    j += len(header)
    tail = len(prompt) - len(prompt.rstrip())  # the prompt's own closing whitespace, where the full has some
    while tail and j < len(full) and full[j].isspace():
        tail, j = tail - 1, j + 1
    return prompt + full[j:]


def _spaced_before_prefill(prompt: str, full: str, k: int, header: str) -> str:
    """``_same_spacing`` where the prompt's header goes on with a prefill history leaves out (``<｜Assistant｜><think>\n``
    in the prompt, ``            <｜Assistant｜>Hello`` in history: whitespace a template's own lines leave before the
    header): the header's leading markers, found after whitespace alone, align the two; the prefill after them stays
    the prompt's, for the caller to find as one."""
    if not MARKER.match(header):
        return full
    for end in reversed([m.end() for m in MARKER.finditer(header) if m.end() < len(header)]):
        part = header[:end]
        j = full.find(part, k)
        if j >= 0 and not full[k:j].strip():
            return prompt[: prompt.index(part, k) + len(part)] + full[j + len(part):]
    return full


_CLOSING = re.compile(r"</[^<>\s]{1,64}>|\[/[^\[\]\s]{1,64}\]")


def _other_user_close(prompt: str, full: str, k: int, close: str) -> str:
    """``full`` continuing ``prompt`` where the last user turn closes with one closing tag in the prompt and another in
    history (mistral.rs's Mistral Small template: the last user message in ``[SYSTEM_PROMPT]…[/SYSTEM_PROMPT]``, an
    earlier one in ``[INST]…[/INST]``): the reply follows either close, so history's is the user turn's, not text a
    model writes. Only closing tags (``</x>``, ``[/X]``): an opener there may be the reply's own markup."""
    m = MARKER.match(full, len(full) - len(full[k:].lstrip()))  # the first marker after whitespace
    if not (_CLOSING.fullmatch(close) and m and _CLOSING.fullmatch(m.group(0)) and m.group(0) != close and close not in full[k:]):
        return full
    return prompt + full[m.end():]


@dataclass(frozen=True)
class Generation:
    """What a model would generate after ``prompt`` to produce the final assistant message.

    ``exact``: the conversation rendering starts with the prompt. Otherwise the prompt ends with a
    prefill (``dropped``) that history rendering leaves out, and ``text`` follows their common part."""

    prompt: str
    text: str
    exact: bool
    dropped: str
    full: str


@dataclass(frozen=True)
class Style:
    """One way of writing the probe messages that the template accepts."""

    none_content_with_calls: bool = True
    string_arguments: bool = False
    system: bool = False
    thinking_chunks: bool = False  # reasoning only as a typed content chunk (Ministral's [THINK])
    text_chunks: bool = False  # content only as a list of typed parts (``content[0].type``: multimodal templates)


@functools.lru_cache(maxsize=2)
def _styles(chunks: bool) -> tuple[Style, ...]:
    """The styles tried in order when the remembered one is refused (built once, not at every render)."""
    return tuple(Style(n, s, y, chunks, t) for t, y, n, s in product((False, True), (False, True), (True, False), (False, True)))


class Prober:
    def __init__(self, renderer: Renderer, renders: dict | None = None):
        """``renders``: another prober's raw render cache for the same template and special tokens (verify
        starts from the analysis' renderings: its own start-up probes are the analysis' first ones). Only
        that cache is shared: it is keyed by the messages as rendered, so the style this prober picks, its
        own choices, are made afresh."""
        self.r = renderer
        self.style = Style()
        self._cache: dict = {}
        self._generations: dict = {}
        self._renders: dict = {} if renders is None else renders  # (messages as rendered, tools, switches the template reads) -> text or error
        self.memo: dict = {}  # later stages' results derived from this prober's renderings, dropped with it
        self._reads: dict[str, bool] = {}
        self._switch_keys: dict[tuple, tuple] = {}  # switches as given -> as they key a render (``_switches``)
        self._prompt_only: frozenset[str] | None = None  # switches read only with the generation prompt
        self.tool_vars: list[str] = []  # other names the template reads the tools under
        self.token_vars: list[str] = []  # special tokens the template needs but the caller did not give
        # A template that raises whenever tools are given and renders without them (it writes an attribute on a
        # tool or on a message, MiroThinker's ``{% set tool.mt_visited = 1 %}``; or refuses tools outright):
        # every probe renders without tools, so its turns, reasoning and any calls its history writes are still
        # found. transformers raises on it the same way, which ``pipeline`` says (``tools_error``).
        self.tools_error = ""
        self.tools_error = self._refuses_tools()
        # A template that reads a message's text under a nested key (``message.context.body``) instead of
        # ``content`` gets each message's text there too (``_pick_content_path``).
        self.content_path: tuple[str, ...] = ()
        self._pick_content_path()
        # A template reads a message's reasoning by a key it spells (``message.reasoning_content``,
        # ``'thinking' in message``); one that spells none cannot render it, so no probe asks.
        self.reads_reasoning = any(k in renderer.source for k in REASONING_KEYS)
        self.modes = self._thinking_modes()
        self._pick_empty_content()
        if self.reads_reasoning:
            self._pick_reasoning_form()

    def _render(self, msgs: list[dict], tools=None, **kw) -> str:
        """Render; a template that reads the tools under another name (``'functions' is undefined``)
        gets them bound to that name too, as JSON text.

        Renders are remembered by the messages as rendered: probes and message styles often come to
        the same input. A switch (``enable_thinking``, ``add_generation_prompt``) whose name the source
        never spells cannot change the rendering (Jinja reads variables by literal name only), so it
        is left out of the key."""
        key = (repr(msgs), _tools_key(None if self.tools_error else tools), self._switches(kw))
        hit = self._renders.get(key)
        if hit is None:
            try:
                hit = self._render_new(msgs, tools, kw)
            except TemplateError as e:
                hit = without_frames(e)
            self._renders[key] = hit
        if isinstance(hit, TemplateError):
            raise without_frames(hit)
        return hit

    def _switches(self, kw: dict) -> tuple:
        """The switches that can change a rendering: those the source spells, less, without the generation
        prompt, those it reads only inside it (``prompt_only_names``): a template that reads
        ``enable_thinking`` only to prefill the prompt renders every conversation once, not once per mode.
        Remembered per switch setting: a prober asks for the same few thousands of times."""
        given = tuple(kw.items())
        try:
            out = self._switch_keys.get(given)
        except TypeError:  # an unhashable value: worked out each time
            given, out = None, None
        if out is None:
            out = tuple(sorted((k, v) for k, v in kw.items() if self._read(k)))
            if len(out) > 1 and not kw.get(_GEN):
                if self._prompt_only is None:
                    self._prompt_only = prompt_only_names(self.r.source) if len(self.r.source) <= CACHE_SOURCE else frozenset()
                out = tuple((k, v) for k, v in out if k not in self._prompt_only)
            if given is not None:
                self._switch_keys[given] = out
        return out

    def _read(self, name: str) -> bool:
        r = self._reads.get(name)
        if r is None:
            r = self._reads[name] = name in self.r.source
        return r

    def _render_new(self, msgs: list[dict], tools, kw: dict) -> str:
        while True:
            try:
                if self.tools_error:
                    tools = None
                bound = {n: json.dumps(tools or [], ensure_ascii=False) for n in self.tool_vars}
                return self.r.render(msgs, tools=tools, **kw, **bound, **{n: "" for n in self.token_vars})
            except TemplateError as e:
                name = undefined_name(e)
                if not name or name in self.tool_vars or name in self.token_vars or name in kw or len(self.tool_vars) + len(self.token_vars) >= 4:
                    raise
                # transformers passes every special token (``*_token``) to the template; one the caller
                # did not give renders empty, as ``{{ eos_token }}`` would, instead of failing ``'' + eos_token``.
                (self.token_vars if name.endswith("_token") else self.tool_vars).append(name)

    def _refuses_tools(self) -> str:
        """The template's error when a single user message renders without tools but not with them, else ""."""
        user = [{"role": "user", "content": USER}]
        try:
            self._render(user, tools=TOOLS)
            return ""
        except TemplateError as e:
            error = e.message
        try:
            self._render(user, tools=None)
        except TemplateError:
            return ""  # broken either way: the analysis says so
        return error

    def _pick_empty_content(self) -> None:
        """Prefer ``content: None`` with tool calls unless the template prints it ("None", "null")."""
        msgs = [{"role": "user", "content": USER}, assistant(None, calls=[call()])]
        try:
            with_none = self._render(self._adapt(msgs, Style(True)), tools=TOOLS, add_generation_prompt=False)
        except TemplateError:
            self.style = Style(False)
            return
        if not any(w in with_none[with_none.find(USER):] for w in ("None", "null")):
            return  # nothing printed the None
        try:
            with_empty = self._render(self._adapt(msgs, Style(False)), tools=TOOLS, add_generation_prompt=False)
        except TemplateError:
            return
        d = len(with_none) - len(with_empty)
        if d > 0 and any(with_none.count(w) > with_empty.count(w) for w in ("None", "null")):
            self.style = Style(False)

    def _pick_reasoning_form(self) -> None:
        """Reasoning goes in ``reasoning_content`` (and its aliases) unless only a ``thinking`` content
        chunk renders it."""
        msgs = [{"role": "user", "content": USER}, assistant(reasoning=REASON)]
        chunked = replace(self.style, thinking_chunks=True)
        for mode in self.modes:
            try:
                if REASON in self._render(self._adapt(msgs, self.style), tools=TOOLS, add_generation_prompt=False, **mode):
                    return
            except TemplateError:
                pass
        for mode in self.modes:
            try:
                out = self._render(self._adapt(msgs, chunked), tools=TOOLS, add_generation_prompt=False, **mode)
                if REASON in out and CONTENT in out and "'type'" not in out and '"type": "thinking"' not in out:
                    self.style = chunked  # the chunk itself rendered, not its repr
                    return
            except TemplateError:
                pass

    def _pick_content_path(self) -> None:
        """A template that raises on a plain user message because it reads a key messages do not have
        (``'dict object' has no attribute 'context'``) may read the text under that key: every attribute
        chain the template spells from it (``context.body``), read off the parsed template (nothing runs),
        is tried with the text there; the first that renders it is kept."""
        msgs = [{"role": "user", "content": USER}]
        try:
            self._render(msgs, tools=TOOLS, add_generation_prompt=True)
            return
        except TemplateError as e:
            m = re.search(r"'dict object' has no attribute '(\w+)'", e.message)
        if not m:
            return
        for path in _attribute_chains(self.r.source, m.group(1)):
            self.content_path = path
            try:
                if USER in self._render(self._adapt(msgs, self.style), tools=TOOLS, add_generation_prompt=True):
                    return
            except TemplateError:
                pass
        self.content_path = ()

    # -- rendering -----------------------------------------------------------------------------------
    def _adapt(self, msgs: list[dict], style: Style) -> list[dict]:
        out = []
        if style.system:
            out.append({"role": "system", "content": "QXSYSTEMQX"})
        for m in msgs:
            if m.get("tool_calls"):
                m = dict(m)
                if m.get("content") in (None, "") and not style.none_content_with_calls:
                    m["content"] = ""
                elif m.get("content") in (None, "") and style.none_content_with_calls:
                    m["content"] = None
                if style.string_arguments:
                    m["tool_calls"] = [
                        {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                        for c in m["tool_calls"]
                    ]
            if style.thinking_chunks and m.get("reasoning_content") is not None:
                text = [{"type": "text", "text": m["content"]}] if m.get("content") else []
                m = {**{k: v for k, v in m.items() if k != "reasoning_content"}, "content": [{"type": "thinking", "thinking": m["reasoning_content"]}] + text}
            elif style.text_chunks and isinstance(m.get("content"), str):
                m = {**m, "content": [{"type": "text", "text": m["content"]}]}
            if self.content_path and isinstance(m.get("content"), str):
                nested: object = m["content"]
                for key in reversed(self.content_path):
                    nested = {key: nested}
                m = {**m, **nested}
            out.append(m)
        return out

    def render(self, msgs: list[dict], gen: bool = False, mode: dict | None = None, tools: list | None = TOOLS) -> str:
        """Render with the remembered style, trying the other styles if the template refuses."""
        key = (repr(msgs), gen, tuple((mode or {}).items()), tools is None)
        hit = self._cache.get(key)  # a rendering or the error it raised, never None
        if hit is not None:
            if isinstance(hit, TemplateError):
                raise without_frames(hit)
            return hit
        current = self.style
        first_error = None
        for style in chain((current,), (s for s in _styles(current.thinking_chunks) if s != current)):
            try:
                out = self._render(self._adapt(msgs, style), tools=tools, add_generation_prompt=gen, **(mode or {}))
            except TemplateError as e:
                first_error = first_error or e
                continue
            self.style = style
            self._cache[key] = out
            return out
        self._cache[key] = first_error
        raise without_frames(first_error)

    def _styles(self) -> list[Style]:
        return list(_styles(self.style.thinking_chunks))

    def try_render(self, msgs, gen=False, mode=None, tools=TOOLS) -> str | None:
        try:
            return self.render(msgs, gen, mode, tools)
        except TemplateError:
            return None

    def _thinking_modes(self) -> list[dict]:
        """The thinking switches that change the generation prompt (first is the default)."""
        seen: dict[str, dict] = {}
        for mode in THINKING_MODES:
            p = self.try_render([{"role": "user", "content": USER}], gen=True, mode=mode)
            if p is not None and p not in seen:
                seen[p] = mode
        # Another switch counts only when it changes what the prompt prefills after the user turn (a
        # thinking prefill), not only the system text (``Reasoning: high``) or earlier turns.
        # It must also stay a prefill: at most two markers past what the default prompt ends with (an
        # opener, an empty block), not a whole extra turn (``<|think|><|end|><|begin|>assistant``).
        tails = {p[p.rfind(USER):] for p in seen}
        default = next(iter(seen))[next(iter(seen)).rfind(USER):] if seen else ""
        for mode in reasoning_switches(self.r.source) if seen else ():
            p = self.try_render([{"role": "user", "content": USER}], gen=True, mode=mode)
            tail = p[p.rfind(USER):] if p is not None else None
            if tail is not None and tail not in tails and len(MARKER.findall(tail[prefix_len(default, tail):])) <= 2:
                tails.add(tail)
                seen[p] = mode
        return list(seen.values()) or [{}]

    # -- generations ---------------------------------------------------------------------------------
    def generation(self, message: dict, mode: dict | None = None, history: list[dict] | None = None, tools=TOOLS) -> Generation | None:
        """Remembered: the analyzers ask for the same few messages in each mode many times over."""
        key = (repr(message), repr(mode), repr(history), _tools_key(tools))
        if key not in self._generations:
            self._generations[key] = self._generation(message, mode, history, tools)
        return self._generations[key]

    def _generation(self, message: dict, mode: dict | None, history: list[dict] | None, tools) -> Generation | None:
        convo = (history or []) + [{"role": "user", "content": USER}]
        prompt = self.try_render(convo, gen=True, mode=mode, tools=tools)
        full = self.try_render(convo + [message], gen=False, mode=mode, tools=tools)
        if prompt is None or full is None:
            return None
        without = self.try_render(convo, gen=False, mode=mode, tools=tools)
        prompt, without, full = drop_trailer(prompt, without, full)
        if prompt == without:
            # The template appends the next assistant header whether asked or not: the rendered turn
            # ends with it too, and a model stops before it.
            full = full[: len(full) - common_suffix_at(prompt, len(prompt), full, len(full))]
        full = align_history(prompt, full, USER)
        k = unsplit_prefix(prompt, full)
        if k == len(prompt):
            return Generation(prompt, full[k:], True, "", full)
        trailed = self._after_trailer(prompt, without, full)
        if trailed is not None:
            return Generation(prompt, trailed, True, "", full)
        return Generation(prompt, full[k:], False, prompt[k:], full)

    @staticmethod
    def _after_trailer(prompt: str, without: str | None, full: str) -> str | None:
        """The turn a model writes when the template closes every conversation with a fixed trailer
        (Command R+'s closing system turn) and the generation prompt comes after it: the rendered
        turn minus the trailer, after the generation prompt, plus the trailer's first marker when it
        ends the turn rather than opening the next one."""
        if not without or not prompt.startswith(without) or len(prompt) == len(without):
            return None
        header = prompt[len(without):]
        t = common_suffix_at(without, len(without), full, len(full))
        trailer = without[len(without) - t :]
        first = MARKER.match(trailer)
        if not first or not MARKER.search(trailer, first.end()) or NEEDLE.search(trailer):
            return None  # only an end-of-turn run, not a trailer
        body = full[: len(full) - t]
        i = body.rfind(header, len(without) - t)
        if i < 0:
            return None
        end = "" if header.startswith(first.group(0)) else first.group(0)  # a turn opener is no end
        return body[i + len(header) :] + end

    def generations(self, message: dict, history: list[dict] | None = None, tools=TOOLS) -> list[tuple[dict, Generation]]:
        out = []
        for mode in self.modes:
            g = self.generation(message, mode, history, tools)
            if g is not None:
                out.append((mode, g))
        return out
