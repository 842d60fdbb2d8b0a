"""Regex text for literal markers: escaping, the whitespace a marker run may hold, and closes that are safe while
a longer marker may still be arriving; and the message shape of a call every builder's transform writes. Shared
by every builder of the emitter."""

from __future__ import annotations

import regex as re

from ..analysis.diff import MARKER, SPECIAL_TOKEN, markers


def then_space(*alternatives: str) -> str:
    r"""A close pattern that also takes the whitespace after the region it ends: whitespace between a
    closed region and the next one (``</tool_call>\n<tool_call>``, ``</tool_call>\n<|im_end|>``) must
    never open the implicit field, which would close empty and wipe the content before. Taken here,
    after the close, rather than before every open and end marker: a leading ``\s*`` on an open is
    tried at every space of prose the streaming parser searches (a tenth of its time per chunk)."""
    alts = [a for a in alternatives if a]
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return body + r"\s*"


def closing_marker(written: str) -> str:
    """The marker ``written`` ends with, or ""."""
    ms = markers(written)
    return ms[-1] if ms and written.endswith(ms[-1]) else ""


def esc(text: str) -> str:
    """``re.escape`` that writes newlines and tabs as ``\\n``/``\\t`` and leaves spaces bare (emitted templates
    are read by people)."""
    return re.escape(text).replace("\\\n", r"\n").replace("\\\t", r"\t").replace("\\\r", r"\r").replace("\\ ", " ")


def literals(marks) -> list[str]:
    """Literal markers as regex alternatives, in the order transformers tries a literal list: longest first."""
    return [esc(m) for m in sorted(dict.fromkeys(marks), key=len, reverse=True)]


def prefix_safe(marks) -> str:
    r"""Literal markers as one regex alternation in which a marker that begins a longer one never wins while
    the longer one may still be arriving: longest first, and the shorter refuses to match when all that
    follows it is a beginning of a longer one's rest (``<\|close\|>(?!(?:r|re|…)\Z)``). transformers
    judges a regex match final once it does not end at the buffer's edge, and the ``regex`` module's
    partial search prefers a complete match to a partial one: with plain alternatives ``<|close|>``
    matched inside ``<|close|>r`` is final while ``<|close|>response<|sep|>`` arrives, so a stream would
    commit the short marker and leave the rest as text."""
    marks = sorted({m for m in marks if m}, key=lambda m: (-len(m), m))  # ties by text: the same output every run
    return "|".join(waits(m, marks) for m in marks)


def waits(m: str, longer) -> str:
    """``m`` as a literal that refuses to match while what follows it may still become the rest of one of
    ``longer`` (``prefix_safe``'s guard for one marker)."""
    heads = sorted({x[len(m):len(m) + k] for x in longer if x != m and x.startswith(m) for k in range(1, len(x) - len(m))}
                   | {x[len(m):] for x in longer if x != m and x.startswith(m)}, key=lambda h: (-len(h), h))
    return esc(m) + (f"(?!(?:{'|'.join(map(esc, heads))})\\Z)" if heads else "")


def _flex(literal: str) -> str:
    r"""Regex for a literal marker run: any whitespace (or none) where the template put whitespace, and
    any between two markers the template wrote adjacent (``</function></tool_call>``): models and
    detokenizers add and drop whitespace at marker boundaries (docs/FORMATS.md §7b)."""
    out, i, n = [], 0, len(literal)
    ends = {m.end() for m in MARKER.finditer(literal)}
    starts = {m.start() for m in MARKER.finditer(literal)}
    while i < n:
        if literal[i].isspace():
            j = i
            while i < n and literal[i].isspace():
                i += 1
            # Between two words (``<call name=``) whitespace stays required, except between a tag's name and
            # its first attribute: ``<function name="f">`` arrives as ``<functionname="f">`` from detokenizers
            # that drop the space after a tag token (vLLM's MiniCPM 5 parser reads it), and nothing else
            # could be meant there.
            words = j and i < n and literal[j - 1].isalnum() and literal[i].isalnum()
            tag_attr = words and re.search(r"<[^\s<>=\"']+\Z", literal[:j]) and re.match(r"[\w:.-]+=", literal[i:])
            out.append(r"\s+" if words and not tag_attr else r"\s*")
            continue
        # Between a marker and what follows it (another marker, or a word: ``<|tool_call>call:``, a header's
        # ``<|tool_call_begin|>functions.f:0``): detokenizers put a space around added tokens (a slow tokenizer's
        # ``spaces_between_special_tokens``, vLLM's default), and the families' parsers take any whitespace there.
        if i and not literal[i - 1].isspace() and (i in ends or (i in starts and literal[i - 1] in ">]")):
            out.append(r"\s*")
        out.append(re.escape(literal[i]))
        i += 1
    return "".join(out)


# One atom of a regex pattern: an escape, a character class, a group opening, or one character.
_ATOM = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\(\?(?:P<\w+>|P=\w+\)|&\w+\)|<[=!]|[:=!>]|[\w-]+[:)])?|\{\d*,?\d*\}|.", re.S)
_WS_ESC = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\ ": " ", "\\\n": "\n", "\\\t": "\t", "\\\r": "\r"}


def flex_pattern(pattern: str) -> str:
    r"""``_flex`` applied to every run of literal text in a regex (a call header built by the analysis:
    ``<tool_call>\n<function=(?P<name>…)>``): whitespace in it becomes ``\s*``, adjacent markers get
    ``\s*`` between them, and so does a marker next to a name or id capture (``<tool_call>  name``).
    Never at the pattern's start (a leading ``\s*`` is tried at every space of prose)."""
    atoms = _ATOM.findall(pattern)
    out: list[str] = []
    run: list[str] = []  # the literal text of the current run

    def literal(a: str) -> str | None:
        if a in _WS_ESC:
            return _WS_ESC[a]
        if len(a) == 2 and a[0] == "\\" and not a[1].isalnum():
            return a[1]
        if len(a) == 1 and a not in "()[]{}|^$.?*+\\":
            return a
        return None

    def flush(before_group: bool) -> None:
        if not run:
            return
        text = "".join(run)
        body = _flex(text)
        if out and out[-1] == ")" and MARKER.match(text):
            body = r"\s*" + body
        if before_group and any(m.end() == len(text) for m in MARKER.finditer(text)):
            body += r"\s*"
        out.append(body)
        run.clear()

    for k, a in enumerate(atoms):
        nxt = atoms[k + 1] if k + 1 < len(atoms) else ""
        lit = literal(a)
        quantified = bool(nxt) and (nxt[0] in "?*+" or (nxt.startswith("{") and nxt.endswith("}")))
        if lit is not None and not quantified:
            run.append(lit)
            continue
        flush(a.startswith("(") and not a.startswith(("(?<", "(?=", "(?!")))  # before a group, not a look
        out.append(a)
    flush(False)
    return "".join(out)


OBJECT_BEGIN = r'\{\s*["}]'  # a JSON object as JSON begins one: its first key (a double-quoted string) or its end
CALL_WINDOW = 512  # characters of a call that decide whether it is one (``streamed_calls._json_whole``, ``tagged_calls._json_in_tags``)
NAME = r'[^"\\]{1,256}'  # a call's name as written (no JSON escapes): a bounded look, even at a name never closed
ARGS_KEYS = ("parameters", "arguments")  # the two spellings of a call object's arguments key

SPECIAL = re.compile(SPECIAL_TOKEN)  # pipe-delimited tokens: special in every vocabulary we know


SPECIAL_OPENERS = ("<|", "<｜")  # how a special token begins (``SPECIAL``): one the analysis never saw is no text either


def parts_from(marks, tokens_are_text: bool = False) -> str:
    r"""Text that begins none of ``marks``, decided where it parts from the last of them: for every proper
    prefix of a marker (the empty one included), that prefix then a character no marker continues it with
    (``[^\s<]|<[^t|]|<t[^h]|…``). A bare reply that begins ``<answer>`` or ``<b>`` is text once ``<a`` has
    arrived; one that begins ``<th`` waits for the next character, so a stream never takes a marker's first
    half for text. A whole marker is no text (nor a text that ends within a marker's first characters), nor is
    text that begins like a special token (``<|``, ``<｜``): a token the analysis never saw (an end-of-turn
    token left in the text) stays out of the content, as every ``<`` did before. ``tokens_are_text``: where
    every marker that may stand there is among ``marks`` (a headed reply's header parts), text that begins like
    another token (``<|chart|> is text``) parts from them as any text does."""
    marks = sorted({m.strip() for m in marks if m and m.strip()})
    tokens = () if tokens_are_text else SPECIAL_OPENERS
    alts = []
    for p in sorted({m[:k] for m in marks for k in range(len(m))}, key=lambda x: (len(x), x)):
        if p in marks or p.startswith(tokens):
            continue
        nxt = sorted({m[len(p)] for m in marks if m.startswith(p) and len(m) > len(p)}
                     | ({o[1] for o in tokens} if p == "<" else set()))
        alts.append(re.escape(p) + "[^" + (r"\s" if not p else "") + "".join(re.escape(ch) for ch in nxt) + "]")
    return "(?:" + "|".join(alts) + ")"


def without_groups(pattern: str) -> str:
    """``pattern`` with its named groups plain: a copy that stands inside another pattern (a lookbehind, a close)
    whose own captures those groups would otherwise become."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def _call_transform(name: str, args: str, id_: str | None) -> dict:
    t: dict = {"type": "function"}
    if id_:
        t["id"] = id_
    t["function"] = {"name": name, "arguments": args}
    return t


# What a top-level scan must see: an escape, a whole character class, a group's parentheses, an alternation.
_STRUCTURE = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|[()|]", re.S)


def _branches(pattern: str) -> list[str]:
    """``pattern`` split at the alternations of its top level (outside groups and classes)."""
    out, depth, start = [], 0, 0
    for m in _STRUCTURE.finditer(pattern):
        ch = m.group()
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(pattern[start:m.start()])
            start = m.end()
    return [*out, pattern[start:]]


def each_branch(pattern: str, look: str) -> str:
    """``look`` after each top-level branch of ``pattern``, not around them all: a branch that starts with a literal
    is where the implicit content's close bounds its scan (``template._implicit_close``), and a group hides it."""
    return "|".join(b + look for b in _branches(pattern))


def not_before(marker: str) -> str:
    r"""A lookahead: what follows is neither whitespace nor ``marker`` (or the text ends). Written character by
    character (``[^\s<]|<(?:[^t]|t(?:[^h]|…))``) so that a stream cut inside the marker is a partial match the
    ``regex`` module reports as such (it prefers a complete match to a partial one, and a negative lookahead
    fails or holds on no partial): the match before it waits until a character decides."""
    inner = ""
    for ch in reversed(marker[1:]):
        inner = f"[^{esc(ch)}]" + (f"|{esc(ch)}(?:{inner})" if inner else "")
    head = esc(marker[0])
    return rf"(?=[^\s{head}]" + (f"|{head}(?:{inner})" if inner else "") + r"|\Z)"


def cut_marker(marker: str) -> str:
    """Every proper prefix of ``marker``, longest first, as an alternation: what arrived of it where a text or a
    stream was cut inside it."""
    return "|".join(esc(marker[:k]) for k in range(len(marker) - 1, 0, -1))
