"""The one comparison primitive: split two renderings into common prefix, left, right, common suffix,
with boundaries moved so no marker token (``<…>``, ``[…]``, ``<|…|>``, ``<｜…｜>``) is cut in half."""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

import re as _stdlib_re

import regex as re

# A marker is an angle- or square-bracketed token without whitespace-heavy content.
# The standard library's engine: this plain pattern scans every rendering, and ``re`` runs it in 60% of
# ``regex``'s time (same matches; pass it to its own methods, not to ``regex`` functions).
MARKER = _stdlib_re.compile(r"<[|｜]?[^<>\s]{0,80}?[|｜]?>|\[[^\[\]\s\"',:{}]{1,40}\]|<[/]?[A-Za-z_][\w:.\-]*(?:\s+[\w:.\-]+=\"[^\"<>]*\")*\s*/?>")


@dataclass(frozen=True)
class Diff:
    prefix: str
    left: str
    right: str
    suffix: str


@functools.lru_cache(maxsize=512)
def _marker_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Cached: an analysis diffs the same few renderings many times."""
    return tuple([m.span() for m in MARKER.finditer(text)])


def prefix_len(a: str, b: str) -> int:
    """Length of the common prefix: ``os.path.commonprefix`` compares character by character in Python;
    this bisects on slice comparisons, which run in C."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; the first difference is before hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def suffix_len(a: str, i: int, b: str, j: int, start_a: int = 0, start_b: int = 0) -> int:
    """Length of the common suffix of ``a[start_a:i]`` and ``b[start_b:j]``: ``prefix_len`` of the two reversed,
    without reversing them. Renderings share long prefixes and short tails, so the tail is found by
    doubling a probe length from the end (comparing only the part not yet known equal) and then
    bisecting: work in proportion to the common tail, not to the texts."""
    n = max(min(i - start_a, j - start_b), 0)
    lo, k = 0, 1  # a[i-lo:i] == b[j-lo:j]
    while k <= n and a[i - k : i - lo] == b[j - k : j - lo]:
        lo, k = k, 2 * k
    if k > n:
        if lo == n or a[i - n : i - lo] == b[j - n : j - lo]:
            return n
        k = n
    hi = k  # the common tail is shorter than hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[i - mid : i - lo] == b[j - mid : j - lo]:
            lo = mid
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=512)
def _cuts(text: str) -> tuple[list[int], list[int], frozenset[int]]:
    """Marker starts and ends in order, and the starts as a set: what ``_valid_cut`` asks of a text."""
    spans = _marker_spans(text)
    return [s for s, _ in spans], [e for _, e in spans], frozenset(s for s, _ in spans)


def _sync_point(text: str, pos: int) -> int:
    """The last position ``q <= pos`` no marker straddles: a ``<`` after whitespace (a marker holds no
    whitespace, except between a tag's attributes, where no ``<`` can come), or 0. The markers from there
    on are those a scan of the whole text finds (no pattern looks behind), and no marker starting before
    it reaches past it."""
    q = text.rfind("<", 0, pos + 1)
    while q > 0 and not text[q - 1].isspace():
        q = text.rfind("<", 0, q)
    return max(q, 0)


@functools.lru_cache(maxsize=512)
def _cuts_from(text: str, q: int) -> tuple[list[int], list[int], frozenset[int]]:
    """``_cuts`` for positions from the sync point ``q`` on (``_sync_point``)."""
    spans = [m.span() for m in MARKER.finditer(text, q)]
    return [s for s, _ in spans], [e for _, e in spans], frozenset(s for s, _ in spans)


def _valid_cut(text: str, pos: int) -> bool:
    """A cut may not split a marker, split a word, or separate a marker from a word glued to its right
    (``<|channel|>analysis`` moves as one piece). Near the end of a long text (the tails verify compares
    on every rendering) only the markers after a sync point are scanned."""
    if pos <= 0 or pos >= len(text):
        return True
    q = _sync_point(text, pos) if len(text) > 1024 and pos > len(text) // 2 else 0
    starts, ends, at_start = _cuts(text) if q < len(text) // 2 else _cuts_from(text, q)
    k = bisect.bisect_left(starts, pos) - 1  # the last marker starting before pos (markers do not overlap)
    if k >= 0 and ends[k] > pos:
        return False
    if text[pos - 1].isspace() or text[pos].isspace():
        return True
    return pos in at_start  # a word or marker may be followed by a marker, never by the rest of a word


def diff(a: str, b: str) -> Diff:
    """Common prefix/suffix of ``a`` and ``b`` with marker-safe boundaries."""
    p = prefix_len(a, b)
    while p > 0 and not (_valid_cut(a, p) and _valid_cut(b, p)):
        p -= 1
    s = min(suffix_len(a, len(a), b, len(b)), len(a) - p, len(b) - p)
    while s > 0 and not (_valid_cut(a, len(a) - s) and _valid_cut(b, len(b) - s)):
        s -= 1
    return Diff(a[:p], a[p : len(a) - s], b[p : len(b) - s], a[len(a) - s :])


SPECIAL_TOKEN = r"<\|[^<>|\s]+\|>|<｜[^<>｜\s]+｜>"  # a pipe-delimited token, ASCII or full-width (the emitter's too)
_WORDED = re.compile(rf"\s*((?:{SPECIAL_TOKEN})[A-Za-z_]\w*(?:{SPECIAL_TOKEN}))")
_GLUED_HEADER = _stdlib_re.compile(rf"(?:{SPECIAL_TOKEN})[A-Za-z_]\w*$")


def worded_tag(text: str) -> str:
    """A closing tag spelt token + word + token at the start of ``text`` (Kimi K3's
    ``<|close|>response<|sep|>``): the whole tag is one marker, not its first token, which every tag
    shares (the reasoning's ``<|close|>think<|sep|>`` too)."""
    m = _WORDED.match(text)
    return m.group(1) if m else ""


def shared_lead(key_prefix: str, value_suffix: str) -> str:
    """The marker a tagged value's close ends with and the next key's prefix begins with, which the template
    writes once between two arguments (Kimi K3's ``…<|close|>argument<|sep|><|open|>argument key=…``), or "":
    the emitter lets the next key begin right after the close, the grammar gives the marker to the next tag."""
    lead = MARKER.match(key_prefix)
    return lead.group(0) if lead and value_suffix.endswith(lead.group(0)) and value_suffix != lead.group(0) else ""


def markers(text: str) -> list[str]:
    return [m.group(0) for m in MARKER.finditer(text)]


def one_word_apart(a: str, b: str) -> tuple[str, str, str, str] | None:
    """(head, ``a``'s word, tail, ``b``'s word) where ``a`` and ``b`` differ in one whole word and agree around
    it (``" type="string"<|sep|>`` and ``" type="array"<|sep|>``; ``true``/``false`` share their ``e``, which
    stays in the word), else None."""
    p = prefix_len(a, b)
    q = min(prefix_len(a[::-1], b[::-1]), len(a) - p, len(b) - p)
    while p and _WORD_CHAR.match(a, p - 1):
        p -= 1
    while q and _WORD_CHAR.match(a, len(a) - q):
        q -= 1
    wa, wb = a[p : len(a) - q], b[p : len(b) - q]
    if not (_WORD.fullmatch(wa) and _WORD.fullmatch(wb)):
        return None
    return a[:p], wa, a[len(a) - q :], wb


_WORD_CHAR = _stdlib_re.compile(r"\w")
_WORD = _stdlib_re.compile(r"\w+")
_WS = _stdlib_re.compile(r"\s+")



def glued_header(prompt: str) -> str:
    """The prompt's last special token and the word glued to it (``<|im_start|>assistant``), or "": a role header
    the reply may continue (R1b, T9). Searched in the prompt's last characters: a ``$``-anchored search walks the
    whole prompt, tools and all."""
    m = _GLUED_HEADER.search(prompt.rstrip()[-256:])
    return m.group(0) if m else ""


def leading_markers(text: str) -> str:
    """The run of markers (and whitespace between them) at the start of ``text``."""
    pos = 0
    end = 0
    while True:
        m = MARKER.match(text, pos)
        if not m:
            ws = _WS.match(text, pos)  # (at pos: a slice would copy the rest of the text on every marker)
            if ws and MARKER.match(text, ws.end()):
                pos = ws.end()
                continue
            return text[:end]
        end = pos = m.end()


def trailing_markers(text: str) -> str:
    """The run of markers (and whitespace between them) at the end of ``text``."""
    spans = _marker_spans(text)
    start = len(text.rstrip())
    end = start
    for s, e in reversed(spans):
        if text[e:start].strip() == "":
            start = s
        else:
            break
    return text[start:end]


def common_prefix_at(a: str, i: int, b: str, j: int, limit_a: int | None = None, limit_b: int | None = None) -> int:
    """Length of the common text starting at ``a[i:]`` and ``b[j:]``, ending on a marker-safe cut."""
    ea = len(a) if limit_a is None else limit_a
    eb = len(b) if limit_b is None else limit_b
    n = prefix_len(a[i:ea], b[j:eb])
    while n > 0 and not (_valid_cut(a, i + n) and _valid_cut(b, j + n)):
        n -= 1
    return n


def unsplit_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``, backed off so it cuts no marker in either; words
    may be cut (a generation prompt can end inside a word the model continues)."""
    p = prefix_len(a, b)
    for text in (a, b):
        starts, ends, _ = _cuts(text)
        k = bisect.bisect_left(starts, p) - 1  # the one marker that can hold p: the last starting before it
        if k >= 0 and ends[k] > p:
            p = starts[k]
    return p


def common_suffix_at(a: str, i: int, b: str, j: int, start_a: int = 0, start_b: int = 0) -> int:
    """Length of the common text ending at ``a[:i]`` and ``b[:j]``, starting on a marker-safe cut."""
    n = suffix_len(a, i, b, j, start_a, start_b)
    while n > 0 and not (_valid_cut(a, i - n) and _valid_cut(b, j - n)):
        n -= 1
    return n
