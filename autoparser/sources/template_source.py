"""What a source is once read: a chat template, the special tokens it reads, and which of a model's named
templates was chosen. Shared by every kind of source (a file, a model directory, a GGUF header, the Hub), so
that each chooses alike."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import SourceError

SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
# The other tokens a model stops on (``generation_config.json``'s ``eos_token_id`` beside ``eos_token``: Llama
# 3.x's ``<|eom_id|>`` after a ``<|python_tag|>`` call, Qwen 2.5's ``<|endoftext|>``), one per line: a
# generation decoded with its special tokens ends with one of them, which ends the turn like the template's
# own end. Kept with the special tokens so that every consumer (cache keys, the hook) sees them; never
# rendered (a template does not read it).
STOP_TOKENS = "stop_tokens"


class NoTemplate(SourceError):
    """The source has no chat template at all (where a Hub repo may still hold one in a GGUF file)."""


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


def eos_ids(generation_config: object) -> list[int]:
    """generation_config.json's ``eos_token_id``: one id or a list of them."""
    ids = generation_config.get("eos_token_id") if isinstance(generation_config, dict) else None
    ids = [ids] if isinstance(ids, int) else ids if isinstance(ids, list) else []
    return [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]


def stop_tokens_from(generation_config: object, id_to_text: dict[int, str], eos_token: str | None) -> str | None:
    """``STOP_TOKENS`` from a parsed generation_config.json and the tokenizer's added tokens (id -> text); None
    when it names no other. An id the added tokens do not hold is left out (a plain vocabulary word)."""
    texts = [id_to_text.get(i) for i in eos_ids(generation_config)]
    out = list(dict.fromkeys(t for t in texts if t and t.strip() and t != eos_token and "\n" not in t))
    return "\n".join(out) or None


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
        raise NoTemplate("has no chat template", where)
    raise SourceError(f"chat_template must be a string or a list of named templates, got {type(value).__name__}", where)


def with_tools_template(default: TemplateSource, tools: str, where: str) -> TemplateSource:
    """The tools template in place of ``default`` (no name asked): ``TOOLS_TEMPLATE``. Without a default,
    transformers renders every request with it (without tools it refuses), so there is nothing to check."""
    if default.template == tools:
        return dataclasses.replace(default, name=TOOLS_TEMPLATE, where=where)
    return dataclasses.replace(default, template=tools, where=where, name=TOOLS_TEMPLATE, plain=default.template)


def choose(value: object, name: str | None, tokens: dict[str, str], where: str,
           named: dict[str, str] | None = None) -> TemplateSource:
    """The source a config's ``chat_template`` (a string, or templates by name: ``named`` where already read)
    gives: the one named, else ``TOOLS_TEMPLATE`` where there is one (``with_tools_template``), else ``default``.
    Every kind of source with named templates (a tokenizer config, a GGUF header) chooses here."""
    named = named if named is not None else named_templates(value, where)
    if name is None and named and TOOLS_TEMPLATE in named:
        default = TemplateSource(named.get("default", named[TOOLS_TEMPLATE]), tokens, where, "default")
        return with_tools_template(default, named[TOOLS_TEMPLATE], where)
    template, chosen = pick_template(value, name, where, named)
    return TemplateSource(template, tokens, where, chosen)
