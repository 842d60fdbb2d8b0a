"""Turn what the user points at (a .jinja file, a tokenizer_config.json, a chat_template.json, a model
directory, or raw text) into the chat template text plus the special tokens it reads."""

from __future__ import annotations

import dataclasses
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SourceError

SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
# The other tokens a model stops on (``generation_config.json``'s ``eos_token_id`` beside ``eos_token``: Llama
# 3.x's ``<|eom_id|>`` after a ``<|python_tag|>`` call, Qwen 2.5's ``<|endoftext|>``), one per line: a
# generation decoded with its special tokens ends with one of them, which ends the turn like the template's
# own end. Kept with the special tokens so that every consumer (cache keys, the hook) sees them; never
# rendered (a template does not read it).
STOP_TOKENS = "stop_tokens"
MAX_FILE = 8 << 20


@dataclass(frozen=True)
class TemplateSource:
    """A chat template and where it came from."""

    template: str
    special_tokens: dict[str, str] = field(default_factory=dict)
    where: str = "<template>"
    name: str | None = None  # the named template chosen, when the source had several
    notes: tuple[str, ...] = ()  # what the user should know about how it was read (a Hub copy taken from the cache)
    response_template: dict | None = None  # the one the model ships (tokenizer_config.json), which a loaded tokenizer keeps
    # Where the source has a tools template and a default one and no name was asked: the default's text. The
    # tools template was chosen (``TOOLS_TEMPLATE``); the pipeline checks that its parser reads the default's replies.
    plain: str | None = None


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


def _eos_ids(generation_config: object) -> list[int]:
    """generation_config.json's ``eos_token_id``: one id or a list of them."""
    ids = generation_config.get("eos_token_id") if isinstance(generation_config, dict) else None
    ids = [ids] if isinstance(ids, int) else ids if isinstance(ids, list) else []
    return [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]


def stop_tokens_from(generation_config: object, id_to_text: dict[int, str], eos_token: str | None) -> str | None:
    """``STOP_TOKENS`` from a parsed generation_config.json and the tokenizer's added tokens (id -> text); None
    when it names no other. An id the added tokens do not hold is left out (a plain vocabulary word)."""
    texts = [id_to_text.get(i) for i in _eos_ids(generation_config)]
    out = list(dict.fromkeys(t for t in texts if t and t.strip() and t != eos_token and "\n" not in t))
    return "\n".join(out) or None


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
    if any(i not in ids for i in _eos_ids(gen)) and (path / "tokenizer.json").is_file():  # older configs list their added tokens there only
        try:
            ids = added_token_texts(config, _read_json(path / "tokenizer.json"))
        except SourceError:
            pass  # over the size limit, or broken: the config's tokens only
    return stop_tokens_from(gen, ids, tokens.get("eos_token"))


# The named template transformers renders a request that has tools with (``get_chat_template``: ``tool_use`` when
# tools are given and the tokenizer has one, else ``default``): the only template a model's calls answer, so where no
# name is asked it is the one analysed, and the default, which renders requests without tools, is kept as ``plain``.
TOOLS_TEMPLATE = "tool_use"
TEMPLATE_HELP = (f"named chat template to use; without one, {TOOLS_TEMPLATE!r} where the model has it (checked to read "
                 "the replies 'default' renders, else 'default' with a warning), else 'default'")


def pick_template(value: object, name: str | None, where: str, named: dict[str, str] | None = None) -> tuple[str, str | None]:
    """A config's ``chat_template`` is a string or a list of ``{"name", "template"}``; pick one (``named``: the
    list as ``named_templates`` read it already)."""
    named = named if named is not None else named_templates(value, where)
    if named is None:
        if name not in (None, "default"):
            raise SourceError(f"has a single chat template, not one named {name!r}", where)
        return value, None
    wanted = name or "default"
    if wanted not in named:
        # transformers refuses too when nothing is named "default" and no name is given
        raise SourceError(f"no chat template named {wanted!r} (has {', '.join(map(repr, sorted(named)))}; choose one with --template)", where)
    return named[wanted], wanted


def named_templates(value: object, where: str) -> dict[str, str] | None:
    """A config's ``chat_template``: None for a single template (a string), else its templates by name."""
    if isinstance(value, str):
        return None
    if isinstance(value, list):
        named = {}
        for i, item in enumerate(value):
            if not (isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("template"), str)):
                raise SourceError(f"chat_template list entry {i} is not a {{\"name\": string, \"template\": string}} object", where)
            named[item["name"]] = item["template"]
        if not named:
            raise SourceError("chat_template list is empty", where)
        return named
    if value is None:
        raise SourceError("has no chat template", where)
    raise SourceError(f"chat_template must be a string or a list of named templates, got {type(value).__name__}", where)


def from_config(config: object, where: str, name: str | None = None, special_tokens: dict | None = None) -> TemplateSource:
    if not isinstance(config, dict):
        raise SourceError(f"expected a JSON object, got {type(config).__name__}", where)
    tokens = {**special_tokens_from_config(config), **(special_tokens or {})}
    value = config.get("chat_template")
    named = named_templates(value, where)
    if name is None and named and TOOLS_TEMPLATE in named:
        return with_tools_template(TemplateSource(named.get("default", named[TOOLS_TEMPLATE]), tokens, where, "default"), named[TOOLS_TEMPLATE], where)
    template, chosen = pick_template(value, name, where, named)
    return TemplateSource(template, tokens, where, chosen)


def with_tools_template(default: TemplateSource, tools: str, where: str) -> TemplateSource:
    """The tools template in place of ``default`` (no name asked): ``TOOLS_TEMPLATE``. Without a default,
    transformers renders every request with it (without tools it refuses), so there is nothing to check."""
    if default.template == tools:
        return dataclasses.replace(default, name=TOOLS_TEMPLATE, where=where)
    return dataclasses.replace(default, template=tools, where=where, name=TOOLS_TEMPLATE, plain=default.template)


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
    raise SourceError("no chat template found (looked for chat_template.jinja, chat_template.json, tokenizer_config.json)", str(path))


def load_path(path: str | Path, name: str | None = None) -> TemplateSource:
    """A local file or directory."""
    p = Path(path)
    if p.is_dir():
        return load_dir(p, name)
    if not p.exists():
        raise SourceError("no such file or directory", str(p))
    if p.suffix == ".json":
        return from_config(_read_json(p), str(p), name)
    return TemplateSource(_read_text(p), {}, str(p))
