"""Write GGUF files for tests, from the format's published layout (not from the reader under test).

Layout (version 3, little-endian unless asked): magic ``GGUF``, u32 version, u64 tensor count, u64 metadata
count, then per key: u64-length UTF-8 key, u32 value type, value (strings: u64 length + bytes; arrays: u32
item type, u64 count, items), then the tensor infos and data, which only pad the file here.
"""

from __future__ import annotations

import struct

U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10


def _string(e: str, value: str | bytes) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return struct.pack(e + "Q", len(data)) + data


def _typed(e: str, value) -> tuple[int, bytes]:
    if isinstance(value, bool):
        return BOOL, struct.pack(e + "?", value)
    if isinstance(value, int):
        return U32, struct.pack(e + "I", value)
    if isinstance(value, float):
        return F32, struct.pack(e + "f", value)
    if isinstance(value, (str, bytes)):
        return STRING, _string(e, value)
    if isinstance(value, list):
        kinds = {_typed(e, v)[0] for v in value} or {STRING}
        (kind,) = kinds
        return ARRAY, struct.pack(e + "IQ", kind, len(value)) + b"".join(_typed(e, v)[1] for v in value)
    raise TypeError(type(value))


def gguf_bytes(metadata: dict, *, version: int = 3, big_endian: bool = False, tensor_bytes: int = 0) -> bytes:
    """A GGUF file holding ``metadata`` (ints as u32, strings, lists of one kind) and ``tensor_bytes`` of
    zeros after it (standing in for the weights)."""
    e = ">" if big_endian else "<"
    out = [b"GGUF", struct.pack(e + "IQQ", version, 1 if tensor_bytes else 0, len(metadata))]
    for key, value in metadata.items():
        kind, data = _typed(e, value)
        out += [_string(e, key), struct.pack(e + "I", kind), data]
    if tensor_bytes:  # one tensor info (name, 1 dim, its size, type f32, offset 0), then its data
        out += [_string(e, "weights"), struct.pack(e + "IQIQ", 1, tensor_bytes // 4, 0, 0)]
        out.append(b"\0" * (-sum(map(len, out)) % 32 + tensor_bytes))  # the data starts aligned to 32 bytes
    return b"".join(out)


def model_metadata(template: str | list[dict], vocab: list[str], **ids: int) -> dict:
    """The metadata llama.cpp's converter writes for a tokenizer: the vocabulary, token ids by name
    (``bos``, ``eos``, ``eot``, ``padding``...) and the chat template (a list: named templates, the default
    at ``tokenizer.chat_template``, the others at ``tokenizer.chat_template.NAME``, their names listed)."""
    meta: dict = {"general.architecture": "llama", "general.name": "test", "llama.context_length": 4096,
                  "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": vocab,
                  "tokenizer.ggml.token_type": [3 if t.startswith("<") else 1 for t in vocab],
                  "tokenizer.ggml.merges": [f"{a} {b}" for a, b in zip(vocab, vocab[1:])]}
    for name, i in ids.items():
        meta[f"tokenizer.ggml.{name}_token_id"] = i
    if isinstance(template, str):
        meta["tokenizer.chat_template"] = template
    else:
        others = [t["name"] for t in template if t["name"] != "default"]
        for t in template:
            key = "tokenizer.chat_template" + ("" if t["name"] == "default" else "." + t["name"])
            meta[key] = t["template"]
        if others:
            meta["tokenizer.chat_templates"] = others
    return meta
