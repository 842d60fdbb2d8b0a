"""Fields for replies made of headed messages (``Tools.headed``). Part of the emitter.

No field is implicit: text outside a message body (headers, ``<|start|>assistant`` between
messages) is discarded; a reply written with no header at all is content. Each field opens on a header pattern that says which field the message is,
so the order of a header's parts does not matter."""

from __future__ import annotations

import regex as re

from ..analysis.model import Analysis
from ..analysis.diff import MARKER
from .guard import never_raises
from .markers import parts_from


def _alts(words) -> str:
    return "(?:" + "|".join(re.escape(w) for w in words) + ")"


def headed_fields(a: Analysis, reasoning_field: str) -> tuple[dict, list[str], list[str] | None]:
    """(fields, warnings, start anchors or None to keep the turn's)."""
    h = a.tools.headed
    C, M = re.escape(h.header_start), re.escape(h.header_end)
    fields: dict[str, dict] = {}
    warnings: list[str] = []
    if h.kind == "channels":
        R = re.escape(h.recipient)
        # A header addressed elsewhere (``to=python``, ``to=functions.x``) is no reasoning or content;
        # one addressed to the assistant itself is. Headers are read up to the next channel marker.
        key = re.escape(re.match(r"\W*\w+=|", h.recipient).group(0) or h.recipient)
        away = rf"{key}(?!assistant\b)"
        rest = rf"(?:(?!{M}|{C}|{away}).)*?{M}"
        # The channel marker first, then the look back for a recipient before it (a bounded name): a look back
        # tried at every position ran over a whole run of text with no ``<`` or space, quadratic on junk between
        # messages (3,000 characters took 1.4 s a search).
        C_free = rf"{C}(?<!{away}[^<\s]{{0,512}}\s*{C})"
        # A message also ends where the next message's header begins (a model that leaves out ``<|end|>``), at its role
        # marker or its channel marker, which no message holds (``Sure. <|channel|>commentary to=functions.f…``: text
        # written with no header, then a call's header, where the text ran on over the call).
        # (the channel marker left to the next message's header, which opens on it: a look ahead)
        role = _role_header(a)
        head = MARKER.match(role).group(0) if role else ""
        ends = list(dict.fromkeys([*h.ends, *([head] if head else [])]))
        channel = h.header_start.strip()
        # So is a recipient written right before that marker (``Sure. to=functions.f<|channel|>commentary…``): the header
        # began there, and the call opens on it.
        close = ({"close_pattern": "|".join([*(re.escape(e) for e in ends), rf"(?={re.escape(channel)})",
                                             rf"(?=\s*{away}[^<\n]{{0,128}}?{re.escape(channel)})"])}
                 if channel and channel not in ends else {"close": ends})
        if h.reasoning_words:
            fields[reasoning_field] = {
                "open_pattern": rf"{C_free}\s*{_alts(h.reasoning_words)}\b{rest}",
                **close,
                "content": "text",
            }
        # Any recipient but the assistant is a call: the template's own namespace (``functions.``) is left out of
        # the name, and a recipient outside it is the name whole (harmony's built-in tools, ``to=browser.search``,
        # ``to=python``, called on the analysis channel): read as any header addressed elsewhere, never discarded
        # with its arguments as text outside every message.
        ns = R[len(key):]
        fields["tool_calls"] = {
            # The call opens at its recipient: the channel marker and word before it are header text, discarded as
            # any text outside a message body (no other field opens on a header addressed elsewhere). Taking them
            # into the open, as an optional group or an alternative before the recipient, made the regex module's
            # partial search quadratic on runs of word characters between markers (32k characters: 0.1 s a search).
            "open_pattern": rf"{away}(?:{ns})?(?P<name>[\w.\-/]+)(?:(?!{M}).)*?{M}",
            **close,
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        }
        fields["tool_calls"] = never_raises(fields["tool_calls"])
        content_open = rf"{C_free}\s*{_alts(h.content_words)}\b{rest}"
        # A message on a channel the template never names (``<|channel|>summary<|message|>…``, junk in the header)
        # would be outside every field and its text lost: it is content (its header discarded as every header is).
        # Not a header addressed elsewhere (``rest`` stops at a recipient), nor one of the named channels.
        known = [*h.reasoning_words, *h.content_words]
        if known:
            content_open += rf"|{C_free}(?!\s*{_alts(known)}\b){rest}"
        if role:
            # A message whose header names no channel (``<|start|>assistant<|message|>Answer``) is content.
            content_open += rf"|(?<={re.escape(role)}\s*){M}"
            # So is a reply written with no header at all (``Plain answer<|return|>``), which would otherwise
            # be text outside every message, and lost: right after the prompt's role header, text that
            # has already left every header part opens content. Each alternative holds the character
            # where the text parts from a marker or the recipient word, so a stream cut inside ``to=``
            # or a marker opens nothing yet.
            word = (re.match(r"\W*\w+=|", h.recipient).group(0) or h.recipient).strip()
            # (after each prefix the parts share, a character none goes on with: ``<div>`` parts from ``<|channel|>``
            # at its second character, where excluding a first character alone left such a reply outside every field)
            parts = parts_from((h.header_start, h.header_end, head, word), tokens_are_text=True)
            content_open += rf"|(?<={re.escape(role)})(?=\s*+{parts})"
            # ... and text written after a message's end with no header before it (``<|end|>\nMore text``: the next
            # message's ``<|start|>assistant`` left out), which was lost after the message as after the prompt.
            if h.ends:
                content_open += rf"|(?<=(?:{'|'.join(map(re.escape, h.ends))})\s{{0,64}})(?=\s*+{parts})"
        fields["content"] = {"open_pattern": content_open, **close, "content": "text"}
        return fields, warnings, None
    # recipient: H word SUFFIX opens content, H name SUFFIX a call; a message ends at the next header.
    words = _alts(h.content_words)
    close_pattern = f"(?={C})|" + "|".join(re.escape(e) for e in h.ends)
    fields["tool_calls"] = {
        "open_pattern": rf"{C}(?!{words}{M})(?P<name>[\w.\-/]+){M}",
        "close_pattern": close_pattern,
        "repeats": True,
        "content": "json",
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    }
    fields["tool_calls"] = never_raises(fields["tool_calls"])
    # A message written with no recipient after the header (``>>>Hello there.``, ``>>> all``, ``>>>\n…``) is no call
    # and was outside every field, its text lost: it opens content at the header once the text parts from a
    # recipient's name (a character no name holds, the suffix not begun) or the suffix follows with no name. A
    # stream holds back at most the word being written.
    no_name = rf"{C}(?=[\w.\-/]*(?!{M})[^\w.\-/]|{M})"
    named = "|".join(re.escape(h.header_start + w + h.header_end) for w in h.content_words)
    fields["content"] = {"open_pattern": f"{named}|{no_name}", "close_pattern": close_pattern, "content": "text"}
    warnings.append(f"content ends at the next {h.header_start!r}: a literal {h.header_start!r} in content ends it early")
    # The generation prompt ends with the header marker: anchor before it so the parser sees it.
    anchors = [x[: len(x) - len(h.header_start)] if x.endswith(h.header_start) else x for x in a.turn.anchors]
    return fields, warnings, [x for x in anchors if x.strip()] or None


def _role_header(a: Analysis) -> str | None:
    """The assistant's own message header (``<|start|>assistant``): the start anchor's marker and role word."""
    anchor = next((x for x in a.turn.anchors if x.strip()), "")
    head = MARKER.match(anchor)
    role = anchor[head.end() :].strip() if head else ""
    return head.group(0) + role if head and role and re.fullmatch(r"\w+", role) else None


def message_anchor(a: Analysis) -> str | None:
    """Where the reply begins when it is a run of messages, each under its own header: after the last
    message that is not the assistant's. The assistant may already have written some of the run (an
    analysis message before a continued final one); anchoring on its last header would drop them."""
    h = a.tools.headed
    own = _role_header(a)
    if not (own and h.ends):
        return None
    head = MARKER.match(own).group(0)
    ends = "|".join(re.escape(e) for e in h.ends)
    return rf"{re.escape(head)}(?!{re.escape(own[len(head):])}\b)[\s\S]*?(?:{ends})"
