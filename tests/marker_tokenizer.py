"""A byte-level tokenizer built locally with ``tokenizers`` (no Hub), optionally with the template's
markers as added tokens, the way real tokenizers ship ``<think>``, ``<tool_call>``, ``[TOOL_CALLS]``,
``<|...|>``: which chunks of a marker count as one token is a property of how vocabularies name their
control tokens (bracketed, no spaces), not of any one model."""

from __future__ import annotations

import regex as re

# Control-token spellings: <...>, <|...|>, <｜...｜>, [UPPER_CASE] (no whitespace inside).
CONTROL = re.compile(r"<\|[^<>|\s]{1,60}\|>|<｜[^<>｜]{1,60}｜>|<\|?[^<>\s|]{1,60}\|?>|\[/?[A-Z][A-Z_]{1,40}\]")


def control_tokens(markers) -> list[str]:
    """The control-token-looking chunks of these markers."""
    out: list[str] = []
    for m in markers:
        out += CONTROL.findall(m)
    return list(dict.fromkeys(out))


def byte_tokenizer(added=(), eos: str = "<eos>"):
    """A transformers fast tokenizer over the 256 byte symbols, plus ``added`` as added tokens and
    ``eos`` (an added special token)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    added = [a for a in dict.fromkeys(added) if a != eos]
    if added:
        tok.add_tokens([AddedToken(a, special=False, normalized=False) for a in added])
    tok.add_special_tokens([AddedToken(eos, special=True, normalized=False)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos)
