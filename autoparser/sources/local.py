"""Turn what the user points at (a .jinja file, a tokenizer_config.json, a chat_template.json, a model
directory, or raw text) into the chat template text plus the special tokens it reads; a GGUF file, or a
directory holding only GGUF files, is handed to ``gguf``."""

from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

from ..errors import SourceError
from .gguf import gguf_choice, load_gguf
from .template_source import (SPECIAL_TOKEN_KEYS, STOP_TOKENS, TOOLS_TEMPLATE, NoTemplate, TemplateSource, choose,
                              eos_ids, stop_tokens_from, with_tools_template)

MAX_FILE = 8 << 20


def _read_text(path: Path) -> str:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: reading would never end
            raise SourceError("not a regular file", str(path))
        if st.st_size > MAX_FILE:
            raise SourceError(f"file is {st.st_size} bytes (limit {MAX_FILE})", str(path))
        with path.open("rb") as f:
            data = f.read(MAX_FILE + 1)  # the file may have grown since stat()
    except OSError as e:
        raise SourceError(f"cannot read: {e.strerror or e}", str(path)) from None
    if len(data) > MAX_FILE:
        raise SourceError(f"file is over {MAX_FILE} bytes", str(path))
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SourceError("file is UTF-16; chat templates are read as UTF-8", str(path))
    if b"\x00" in data:
        raise SourceError("file is binary, not a text chat template", str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SourceError(f"file is not UTF-8 (byte {e.start})", str(path)) from None


def _read_json(path: Path) -> object:
    text = _read_text(path).removeprefix("\ufeff")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", str(path)) from None
    except RecursionError:
        raise SourceError("JSON nests too deeply", str(path)) from None


def _token_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):  # AddedToken serialisation
        return value["content"]
    return None


def special_tokens_from_config(config: dict) -> dict[str, str]:
    out = {}
    for key in SPECIAL_TOKEN_KEYS:
        text = _token_text(config.get(key))
        if text is not None:
            out[key] = text
    return out


def added_token_texts(*configs: object) -> dict[int, str]:
    """id -> text of the added tokens a tokenizer_config.json (``added_tokens_decoder``) or tokenizer.json
    (``added_tokens``) declares; the first that names an id wins."""
    out: dict[int, str] = {}
    for config in configs:
        if not isinstance(config, dict):
            continue
        decoder = config.get("added_tokens_decoder")
        if isinstance(decoder, dict):
            for key, item in decoder.items():
                if str(key).isdigit() and (text := _token_text(item)) is not None:
                    out.setdefault(int(key), text)
        for item in config.get("added_tokens") or []:
            if isinstance(item, dict) and isinstance(item.get("id"), int) and (text := _token_text(item)) is not None:
                out.setdefault(item["id"], text)
    return out


def read_generation_config(path: Path) -> dict | None:
    """A generation_config.json, or None where it is absent or cannot be read (it only adds to what the
    template's parser reads, so it never fails the source)."""
    try:
        data = _read_json(path) if path.is_file() else None
    except SourceError:
        return None
    return data if isinstance(data, dict) else None


def _stop_tokens(path: Path, config: dict, tokens: dict[str, str]) -> str | None:
    """``STOP_TOKENS`` of a model directory."""
    gen = read_generation_config(path / "generation_config.json")
    if gen is None:
        return None
    ids = added_token_texts(config)
    if any(i not in ids for i in eos_ids(gen)) and (path / "tokenizer.json").is_file():  # older configs list their added tokens there only
        try:
            ids = added_token_texts(config, _read_json(path / "tokenizer.json"))
        except SourceError:
            pass  # over the size limit, or broken: the config's tokens only
    return stop_tokens_from(gen, ids, tokens.get("eos_token"))


def from_config(config: object, where: str, name: str | None = None, special_tokens: dict | None = None) -> TemplateSource:
    if not isinstance(config, dict):
        raise SourceError(f"expected a JSON object, got {type(config).__name__}", where)
    tokens = {**special_tokens_from_config(config), **(special_tokens or {})}
    return choose(config.get("chat_template"), name, tokens, where)


def load_dir(path: Path, name: str | None = None) -> TemplateSource:
    """A model directory: ``chat_template.jinja`` (or ``additional_chat_templates/NAME.jinja``),
    else ``chat_template.json``, else ``tokenizer_config.json``; special tokens from the config."""
    config_path = path / "tokenizer_config.json"
    config = _read_json(config_path) if config_path.is_file() else {}
    if not isinstance(config, dict):
        raise SourceError("tokenizer_config.json is not a JSON object", str(config_path))
    tokens = special_tokens_from_config(config)
    stm = path / "special_tokens_map.json"
    if stm.is_file():
        data = _read_json(stm)
        if isinstance(data, dict):
            tokens = {**special_tokens_from_config(data), **tokens}
    src = _load_dir(path, name, config, config_path, tokens)
    stops = _stop_tokens(path, config, src.special_tokens)
    return dataclasses.replace(src, special_tokens={**src.special_tokens, STOP_TOKENS: stops}) if stops else src


def _load_dir(path: Path, name: str | None, config: dict, config_path: Path, tokens: dict[str, str]) -> TemplateSource:
    shipped = config.get("response_template") if isinstance(config.get("response_template"), dict) else None
    if name and name != "default":
        named = path / "additional_chat_templates" / f"{name}.jinja"
        if named.is_file():
            return TemplateSource(_read_text(named), tokens, str(named), name, shipped)
    tools = path / "additional_chat_templates" / f"{TOOLS_TEMPLATE}.jinja"
    if name is None and tools.is_file():
        try:
            default = _load_dir(path, "default", config, config_path, tokens)
        except SourceError:  # only the tools template: transformers renders every request with it
            return TemplateSource(_read_text(tools), tokens, str(tools), TOOLS_TEMPLATE, shipped)
        return with_tools_template(default, _read_text(tools), str(tools))
    jinja = path / "chat_template.jinja"
    if jinja.is_file() and not (name and name != "default"):
        return TemplateSource(_read_text(jinja), tokens, str(jinja), response_template=shipped)
    ctj = path / "chat_template.json"
    if ctj.is_file():
        return dataclasses.replace(from_config(_read_json(ctj), str(ctj), name, tokens), response_template=shipped)
    if "chat_template" in config:
        return dataclasses.replace(from_config(config, str(config_path), name), response_template=shipped)
    if gguf := gguf_in(path):
        return load_gguf(gguf, name)
    raise NoTemplate("no chat template found (looked for chat_template.jinja, chat_template.json, tokenizer_config.json, "
                      "a .gguf file)", str(path))


def gguf_in(path: Path) -> Path | None:
    """The ``.gguf`` file of a model directory that has no template file (a llama.cpp download)."""
    try:
        names = [p.name for p in path.iterdir() if p.is_file()]
    except OSError:
        return None
    chosen = gguf_choice(names)
    return path / chosen if chosen else None


def load_path(path: str | Path, name: str | None = None) -> TemplateSource:
    """A local file or directory."""
    p = Path(path)
    if p.is_dir():
        return load_dir(p, name)
    if not p.exists():
        raise SourceError("no such file or directory", str(p))
    if p.suffix == ".json":
        return from_config(_read_json(p), str(p), name)
    if is_gguf(p):
        return load_gguf(p, name)
    return TemplateSource(_read_text(p), {}, str(p))


def is_gguf(path: Path) -> bool:
    """A ``.gguf`` file, or a file that starts as one (Ollama's blobs have no suffix)."""
    if path.suffix.lower() == ".gguf":
        return True
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False
