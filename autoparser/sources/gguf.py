"""Read the chat template and special tokens out of a GGUF file's header.

llama.cpp, Ollama and LM Studio users hold a model as one ``.gguf`` file (or its shards): the chat template
is a metadata string (``tokenizer.chat_template``, named ones ``tokenizer.chat_template.NAME``), the special
tokens are ids into the vocabulary array. Only the metadata section at the file's start is read, never the
tensors, so a 40 GB file costs a few MB of reads, and a file on the Hub is read by byte ranges
(``sources/hub.py``).

The file is untrusted: every length and count is bounded before it is used (``MAX_METADATA`` read in all,
``MAX_STRING`` per string, ``MAX_STRINGS`` per array of strings, ``MAX_KEYS`` keys, ``MAX_DEPTH`` arrays deep),
so a corrupt or hostile header is one ``SourceError`` within seconds, never a huge allocation or an endless
read; what is held at once is a few blocks (``_remembered``), never the vocabulary.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from ..errors import SourceError
from .template_source import STOP_TOKENS, NoTemplate, TemplateSource, choose, stop_tokens_from

MAGIC = b"GGUF"
MAX_METADATA = 64 << 20  # bytes of metadata read in all (a 262k vocabulary with its merges and scores is ~10 MB)
MAX_STRING = 8 << 20  # a chat template or any other string
MAX_ITEMS = 1 << 24  # items in one array of numbers
MAX_STRINGS = 1 << 21  # strings in one array (8 times the largest vocabulary; each costs a step)
MAX_KEYS = 1 << 16  # metadata keys (a model has a few dozen)
MAX_DEPTH = 8  # arrays of arrays (llama.cpp writes none)
BLOCK = 1 << 20  # bytes fetched at a time from a file
REMOTE_BLOCK = 4 << 20  # ... over HTTP, where each block is a round trip (a 150k vocabulary's header is ~6 MB)

TEMPLATE_KEY = "tokenizer.chat_template"
NAMES_KEY = "tokenizer.chat_templates"  # the names of the other templates, each at TEMPLATE_KEY + "." + name
TOKENS_KEY = "tokenizer.ggml.tokens"
TYPES_KEY = "tokenizer.ggml.token_type"  # per token: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
ADDED_TYPES = (3, 4)  # what a tokenizer.json calls its added tokens: matched whole, never split
ADDED = "added"  # read_metadata's key for the ids of those tokens
MAX_ADDED = 1 << 16
# GGUF's token-id keys, by the special-token name transformers' configs use (the separator key is spelt so
# in the format). ``eot``/``eom`` are tokens the model stops on beside ``eos``: they end the turn too.
TOKEN_IDS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "sep_token": "tokenizer.ggml.seperator_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
    "cls_token": "tokenizer.ggml.cls_token_id",
    "mask_token": "tokenizer.ggml.mask_token_id",
}
STOP_IDS = ("tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")
SHARD_KEY = "split.no"  # a split model's shard number: only the first (0) holds the tokenizer's metadata
WANTED = frozenset({*TOKEN_IDS.values(), *STOP_IDS, SHARD_KEY})

# value type -> struct format of a scalar; 8 is a string, 9 an array
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    """Sequential reads over ``fetch(offset, size)`` from ``at``, a block at a time, within ``MAX_METADATA``;
    it holds one block (or one string) at a time."""

    def __init__(self, fetch: Callable[[int, int], bytes], where: str, at: int = 0, endian: str = "<", block: int = BLOCK):
        self.fetch, self.where, self.endian, self.block = fetch, where, endian, block
        self.buf, self.start, self.pos = b"", at, at

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > MAX_METADATA:
            raise SourceError(f"GGUF metadata runs past {MAX_METADATA >> 20} MB (a corrupt header?)", self.where)
        while end > self.start + len(self.buf):
            have = self.buf[self.pos - self.start:]
            more = self.fetch(self.pos + len(have), max(self.block, n - len(have)))
            if not more:
                raise SourceError("GGUF file ends inside its metadata (truncated or not a GGUF file)", self.where)
            self.buf, self.start = have + more, self.pos
        out = self.buf[self.pos - self.start:end - self.start]
        self.pos = end
        return out

    def unpack(self, fmt: str):
        return struct.unpack(self.endian + fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, what: str, limit: int) -> int:
        n = self.unpack("Q")
        if n > limit:
            raise SourceError(f"GGUF {what} of {n} is over the limit of {limit} (a corrupt header?)", self.where)
        return n

    def string(self) -> bytes:
        return self.take(self.count("string length", MAX_STRING))

    def strings(self, n: int, keep: frozenset[int] = frozenset()) -> dict[int, bytes]:
        """Read past ``n`` strings in a row (a vocabulary, its merges: the bulk of a header), keeping those whose
        index is in ``keep``; without a call per string where the block holds them."""
        out, i, fmt = {}, 0, struct.Struct(self.endian + "Q")
        while i < n:
            buf, at, end = self.buf, self.pos - self.start, len(self.buf)
            while i < n and at + 8 <= end:
                size = fmt.unpack_from(buf, at)[0]
                if at + 8 + size > end:
                    break
                if i in keep:
                    out[i] = buf[at + 8:at + 8 + size]
                at, i = at + 8 + size, i + 1
            self.pos = self.start + at
            if i < n:  # a string across the block's end (or an over-long one, or past the limit: raises)
                text = self.string()
                if i in keep:
                    out[i] = text
                i += 1
        self.take(0)  # past the limit: raises
        return out

    def text(self) -> str:
        try:
            return self.string().decode("utf-8")
        except UnicodeDecodeError as e:
            raise SourceError(f"GGUF string is not UTF-8 (byte {e.start})", self.where) from None


def _value(r: _Reader, kind: int, keep: bool, depth: int = 0):
    """A value of type ``kind``, or None where not ``keep`` (an array is never kept: none is needed)."""
    if kind in _SCALARS:
        return r.unpack(_SCALARS[kind])
    if kind == _STRING:
        if keep:
            return r.text()
        r.string()
        return None
    if kind == _ARRAY and depth >= MAX_DEPTH:
        raise SourceError(f"GGUF arrays nest over {MAX_DEPTH} deep (a corrupt header?)", r.where)
    if kind == _ARRAY:
        item = r.unpack("I")
        n = r.count("array length", MAX_ITEMS if item in _SCALARS else MAX_STRINGS)
        if item in _SCALARS:
            r.take(struct.calcsize(_SCALARS[item]) * n)
        elif item == _STRING:
            r.strings(n)
        else:
            for _ in range(n):
                _value(r, item, False, depth + 1)
        return None
    raise SourceError(f"GGUF value of unknown type {kind} (a corrupt header, or a newer GGUF version)", r.where)


def read_metadata(fetch: Callable[[int, int], bytes], where: str, block: int = BLOCK) -> dict:
    """The metadata keys this module uses (templates, token ids), every other key read past unkept; the ids'
    token texts under ``TOKENS_KEY`` (id -> bytes), read again from the vocabulary once the ids are known (they
    follow it in the files llama.cpp writes), so no vocabulary is ever held."""
    fetch = _remembered(fetch)
    r = _Reader(fetch, where, block=block)
    if r.take(4) != MAGIC:
        raise SourceError("not a GGUF file (no GGUF magic at its start)", where)
    raw = r.take(4)
    version = struct.unpack("<I", raw)[0]
    if version > 0xFFFF:  # a big-endian file reads as a huge little-endian number
        r.endian, version = ">", struct.unpack(">I", raw)[0]
    if version < 2:
        raise SourceError(f"GGUF version {version} is not supported (2 and 3 are; convert the file again with llama.cpp)", where)
    if version > 3:
        raise SourceError(f"GGUF version {version} is newer than this reader (2 and 3)", where)
    r.unpack("Q")  # tensor count: the tensors are never read
    n_keys = r.count("metadata key count", MAX_KEYS)
    out: dict = {}
    vocab = None  # (offset of its first string, count)
    for _ in range(n_keys):
        key = r.text()
        kind = r.unpack("I")
        if key in (TOKENS_KEY, TYPES_KEY) and kind == _ARRAY:
            at, item = r.pos, r.unpack("I")
            if key == TOKENS_KEY and item == _STRING:
                n = r.count("array length", MAX_STRINGS)
                vocab = (r.pos, n)
                r.strings(n)
                continue
            if key == TYPES_KEY and item in _SCALARS:
                n = r.count("array length", MAX_ITEMS)
                types = struct.iter_unpack(r.endian + _SCALARS[item], r.take(struct.calcsize(_SCALARS[item]) * n))
                out[ADDED] = frozenset(islice((i for i, (t,) in enumerate(types) if t in ADDED_TYPES), MAX_ADDED))
                continue
            r = _Reader(fetch, where, at, r.endian, block)  # another item type: read past it as any value
        wanted = key.startswith(TEMPLATE_KEY) or key in WANTED
        value = _value(r, kind, wanted)
        if wanted:
            out[key] = value
    ids = token_ids(out) | out.get(ADDED, frozenset())
    if vocab and ids:
        out[TOKENS_KEY] = _Reader(fetch, where, vocab[0], r.endian, block).strings(min(vocab[1], max(ids) + 1), ids)
    return out


def token_ids(meta: dict) -> frozenset[int]:
    """The ids of the special and stop tokens ``meta`` names (a bool or another type names none)."""
    return frozenset(v for k in (*TOKEN_IDS.values(), *STOP_IDS) if isinstance(v := meta.get(k), int) and not isinstance(v, bool))


def _remembered(fetch: Callable[[int, int], bytes], keep: int = 16 << 20) -> Callable[[int, int], bytes]:
    """``fetch`` that answers from the blocks it fetched last (``keep`` bytes of them) where one holds the offset
    asked: the vocabulary is read twice, and on the Hub each block is a request."""
    blocks: list[tuple[int, bytes]] = []

    def fetch_(offset: int, size: int) -> bytes:
        for start, data in blocks:
            if start <= offset < start + len(data):
                return data[offset - start:offset - start + size]
        data = fetch(offset, size)
        if data:
            blocks.append((offset, data))
            while sum(len(d) for _, d in blocks) > keep and len(blocks) > 1:
                blocks.pop(0)
        return data

    return fetch_


def _token(meta: dict, key: str) -> str | None:
    """The text of the token whose id ``key`` holds, or None (absent, out of range, not UTF-8)."""
    i = meta.get(key)
    return _text(meta, i) if isinstance(i, int) and not isinstance(i, bool) else None


def _text(meta: dict, i: int) -> str | None:
    text = meta.get(TOKENS_KEY, {}).get(i)
    try:
        return text.decode("utf-8") if text is not None else None
    except UnicodeDecodeError:
        return None


def source_from_metadata(meta: dict, where: str, name: str | None = None) -> TemplateSource:
    """The TemplateSource a GGUF's metadata describes, choosing a named template as a tokenizer config's
    list is (``template_source.choose``: ``tool_use`` where no name is asked)."""
    default = meta.get(TEMPLATE_KEY)
    named = {k[len(TEMPLATE_KEY) + 1:]: v for k, v in meta.items()
             if k.startswith(TEMPLATE_KEY + ".") and isinstance(v, str)}
    if not isinstance(default, str) and not named:
        if isinstance(meta.get(SHARD_KEY), int) and meta[SHARD_KEY] > 0:
            raise SourceError(f"is shard {meta[SHARD_KEY] + 1} of a split GGUF model: the chat template is in the first "
                              "shard (…-00001-of-…)", where)
        raise NoTemplate(f"GGUF file has no chat template (no {TEMPLATE_KEY} in its metadata)", where)
    tokens = {k: t for k, key in TOKEN_IDS.items() if (t := _token(meta, key)) is not None}
    stops = stop_tokens_from({"eos_token_id": [meta[k] for k in STOP_IDS if isinstance(meta.get(k), int)]},
                             {meta[k]: t for k in STOP_IDS if (t := _token(meta, k)) is not None},
                             tokens.get("eos_token"))
    if stops:
        tokens[STOP_TOKENS] = stops
    if named and isinstance(default, str):
        named = {"default": default, **named}
    return choose(default, name, tokens, where, named or None)


def load_gguf(path: Path, name: str | None = None) -> TemplateSource:
    """A local ``.gguf`` file (of a split model, the first shard: only it holds the tokenizer's metadata)."""
    return source_from_metadata(_local_metadata(path), str(path), name)


def added_tokens(path: Path) -> dict[str, int]:
    """Text -> id of a local GGUF's control and user-defined tokens: the tokens a grammar writes as tokens."""
    meta = _local_metadata(path)
    return {text: i for i in sorted(meta.get(ADDED, ())) if (text := _text(meta, i)) is not None}


def _local_metadata(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            def fetch(offset: int, size: int) -> bytes:
                f.seek(offset)
                return f.read(size)

            return read_metadata(fetch, str(path))
    except OSError as e:
        raise SourceError(f"cannot read: {e.strerror or e}", str(path)) from None


_SPLIT = re.compile(r"-(\d{5})-of-\d{5}\.gguf$")


def gguf_choice(names: list[str]) -> str | None:
    """Which of a model's ``.gguf`` files holds its chat template: every quantisation holds the same one, and a
    split model holds it in its first shard; a vision projector (``mmproj``) holds no tokenizer at all."""

    def usable(name: str) -> bool:
        base = Path(name).name.lower()
        split = _SPLIT.search(base)
        return base.endswith(".gguf") and not base.startswith("mmproj") and (split is None or int(split[1]) == 1)

    found = [n for n in names if usable(n)]
    return min(found, key=lambda n: (n.count("/"), n)) if found else None
