"""Tagged argument values whose tag says their type (DeepSeek DSML's ``string="true"``/``"false"``, Kimi K3's
``type="number"``): the key tag's pattern, its string delimiters and the value parser that reads a string as
written and every other type as JSON. Part of the emitter, beside ``tools``."""

from __future__ import annotations

import regex as re

from ..analysis.diff import MARKER, markers, one_word_apart
from .guard import nested_value
from .markers import _flex, esc


def typed_by_attribute(ks: str, vs: str, typed: str = "") -> tuple[str, tuple[str, str]] | None:
    r"""(pattern, the string's opening delimiter) for the key suffix and value of a tagged argument whose tag
    says whether the value is a string. DeepSeek's DSML: ``<parameter name="k" string="true">text</parameter>``
    for a string, ``string="false">`` + the value as JSON for any other; Kimi K3's XTML names the type,
    ``<|open|>argument key="k" type="string"<|sep|>``, ``type="number"``, ``type="array"``… The diffs saw the
    suffix of a string argument (``ks``); ``typed`` is the one the analysis saw before a list (A3), which
    differs in one word (``analysis.diff.one_word_apart``). The string's
    word marks a string, any other word a JSON literal (``10``, ``[1, 2]``, ``null``: typed with no schema;
    a value that is no JSON stays text). A string value is captured with the tag's last delimiter (``>``,
    or its last marker, ``<|sep|>``) and its value close around it, which the value parser reads as string
    delimiters, so it comes back exactly as written, never typed; its delimiters absorb one newline on each
    side, as models add them. ``\x01``/``\x02`` (the json parser's sentinels, which it refuses) end no
    value. None where the suffix has no such mark or the value no closing tag."""
    split = one_word_apart(ks, typed) if typed and typed != ks else None
    if not split:
        return None
    head, word, tail, other = split
    if {word, other} != {"true", "false"}:
        other = r"(?!" + word + r"\b)\w+"  # the type's name: any word but the string's
    tail = tail.rstrip("\n")
    close, ms = vs.strip(), markers(tail)
    if not (re.fullmatch(r"</[^<>\s]+>", close) or MARKER.match(close)):
        return None
    last = ms[-1] if ms and tail.endswith(ms[-1]) else tail[-1:]
    if last != ">" and not last.endswith(">"):
        return None
    end = _flex(close)
    body = r"[^\x01\x02]*?"
    # The string's opening delimiter is the whole tail as written (``">``), not its last character alone: a
    # value holding ``>`` and a newline (HTML, a Vue file: ``</div>\n<p>``) met the delimiter with a newline
    # there, and the value came back as its raw text, delimiters included. The tail spelt with other spaces
    # (``string="true" >``) is still a string, delimited by its last mark.
    opener = tail if tail and not re.search(r"\s", tail) and len(tail) > len(last) else last
    pattern = (_flex(head) + "(?:"
               + (rf"{word}(?P<value>{esc(opener)}{body}{end})|" if opener != last else "")  # a string, with its delimiters
               + rf"{word}{_flex(tail[: len(tail) - len(last)])}(?P<value>{esc(last)}{body}{end})"  # (other spaces)
               + rf"|{other}{_flex(tail)}\n?(?P<value>{body})(?:\n?{end}|\s*\Z)"  # a JSON literal
               + rf"|{word}{_flex(tail)}\n?(?P<value>{body})\s*\Z"  # a string cut off where the call ends
               + ")")
    return pattern, (opener, last)


# A key and its value in a JSON object written as a call's whole body instead of its argument tags (DeepSeek
# DSML's ``<invoke name="f">\n{"city": "Paris", "days": 3}\n</invoke>``, which SGLang's DeepSeek V3.2 parser
# reads): where the value parser reads JSON (``typed_by_attribute``), each pair is one argument, typed as
# JSON says. A key only after ``{`` or ``,`` (no pair out of prose between tags); an object or array value
# nested at most ``VALUE_DEPTH`` deep, whole (its own keys are no arguments). Before, the body's text was lost.
JSON_PAIR = (r'(?<=[{,]\s*)"(?P<key>[^"\\\n]+)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*"|' + nested_value()
              + r"|-?\d[\d.eE+-]*|true|false|null)")


def typed_value_parser(vs: str, openers: tuple[str, ...] = (">",)) -> dict:
    """The json value parser of ``typed_by_attribute``; ``openers``: the string's opening delimiters, the key
    tag's tail as written first, then its last delimiter alone. Its string delimiters also come without a token
    prefix in the end tag's name (``</｜DSML｜parameter>`` written ``</parameter>``, see
    ``template.optional_namespace``)."""
    end = vs.strip()
    bare = re.sub(r"｜[^｜<>\s]+｜(?=[A-Za-z_])", "", end)
    delims = [d for opener in dict.fromkeys(openers) for e in dict.fromkeys([end, bare])
              for d in ([opener + "\n", "\n" + e], [opener + "\n", e], [opener, "\n" + e], [opener, e])]
    return {"name": "json", "args": {"string_delims": delims, "allow_non_json": True, "strip": False}}
