"""Helpers shared by tests/test_grammar.py and benchmarks/engines.py (no pytest here, so the engines' own
virtualenvs can import it). A byte-level tokenizer built locally with ``tokenizers`` (no Hub), optionally with the template's
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


_ESCAPED = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})", re.I)


def raw_unicode(text: str) -> str:
    """``text`` with JSON ``\\uXXXX`` escapes of printable non-ASCII characters written as the characters:
    the grammars take no ``x-guidance`` options (llguidance 1.7 refuses them), so a string's characters
    are written as they are; the parser reads both spellings alike (the test checks that too)."""

    def one(m):
        if m.group(2):
            return m.group(1) + (chr(int(m.group(2), 16)) + chr(int(m.group(3), 16))).encode("utf-16", "surrogatepass").decode("utf-16")
        cp = int(m.group(5), 16)
        return m.group(4) + chr(cp) if cp >= 0xA0 and not 0xD800 <= cp < 0xE000 else m.group(0)

    return _ESCAPED.sub(one, text)


def opened(a, prompt: str):
    r = a.reasoning
    if not r.end or r.mode in ("NONE", "FORCED_CLOSED"):
        return None
    return not r.start or prompt.rstrip().endswith(r.start)


def calls(case) -> list:
    return [(c["name"], c["arguments"]) for c in case.expected.get("tool_calls", [])]


