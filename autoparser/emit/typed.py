"""Tagged argument values: where a value begins and ends (the newlines and indentation around it, a CDATA
section, an end tag left out), and, where the tag says the value's type (DeepSeek DSML's
``string="true"``/``"false"``, Kimi K3's ``type="number"``), the key tag's pattern, its string delimiters and
the value parser that reads a string as written and every other type as JSON. Part of the emitter, beside
``tools``."""

from __future__ import annotations

import regex as re

from ..analysis.diff import MARKER, markers, one_word_apart
from .guard import nested_value
from .markers import _flex, esc


def _cdata(vs: str, value: str) -> str:
    r"""Where a value is an element's text (its close is an end tag, ``</param>``), the value written as an XML
    CDATA section, ``<![CDATA[text]]>``, is its text: templates write one for a value holding ``<``, ``&`` or
    a newline (MiniCPM 5), and models write it whatever their template does. The section is an alternative
    tried first, capturing the same ``value`` group (the regex module keeps the alternative that matched);
    a value that only begins with ``<![CDATA[`` (no ``]]>`` right before the end tag) is read as written."""
    if not vs.strip().startswith("</"):
        return value
    return r"(?:<!\[CDATA\[(?P<value>.*?)\]\]>(?=\n?" + _flex(vs.strip()) + r"|\s*\Z)|" + value + ")"


def tagged_value(ks: str, vs: str, ks_re: str, vs_re: str, kp: str) -> str:
    r"""The key suffix, value and value close of a tagged argument. Where the template writes a newline inside
    the value's tags (``<parameter=k>\nv\n</parameter>``), that newline is the format's separator: each side
    is optional (``ks_re``/``vs_re`` end and start with ``\n?``). Where it writes none
    (``<arg_value>v</arg_value>``), models still add one on each side (Seed-OSS), but a newline on one side
    only is the value's own (code ending with a newline: ``<arg_value>  x = 1\n</arg_value>``, which
    vLLM's Poolside parser keeps): a newline is taken as the separator only in a pair around the value.

    A value whose end tag the model left out ends where the next argument's tag begins (``kp``, the key's
    opening tag: ``<parameter=city>\nDallas\n<parameter=state>``; vLLM's Qwen3-Coder and Step 3.5 parsers
    read it so), not only where the call's text ends; a value that writes a whole key tag itself is cut there."""
    # A close tag inside the value (code that writes ``<parameter=path>…</parameter>``) is the value's own: the
    # value's close is one that the next key's tag, another closing tag (the call's, its section's, when the
    # call's is left out), a special token or the call's end follows, and a close left out ends the value
    # where the next key's tag starts a line (mlx-lm's Qwen3-Coder parser reads both).
    then = rf"(?=\s*(?:{kp}|</|<\||<｜|\Z))" if kp else ""
    value = r"(?P<value>.*?)"
    close = vs_re[len(r"\n?"):] if vs_re.startswith(r"\n?") else None
    # A value laid out on lines of its own, its tags indented (``<parameter=k>\n      v\n    </parameter>``): the
    # newline and indentation before the close tag are layout, and so is the first line's indentation when the
    # close tag is indented, or stands on that line alone (llama.cpp's and Ollama's parsers trim such values).
    # A value written on the open tag's line (``<arg_value>    code</arg_value>``) keeps its spaces, as vLLM's
    # and SGLang's parsers keep them.
    lead = rf"(?:[ \t]+(?={close}|(?:(?!{close})[\s\S])*?\n[ \t]+{close}))?" if close else ""
    nxt = rf"|\n[ \t]*(?={kp})" if kp else ""
    if ks.endswith("\n") or vs.startswith("\n") or not (ks_re.endswith(r"\n?") and close):
        if close:
            vs_re = r"(?:\n[ \t]*)?" + close
        if close and ks_re.endswith(r"\n?"):
            ks_re = ks_re[: -len(r"\n?")] + rf"(?:\n{lead})?"
        return ks_re + _cdata(vs, value) + r"(?:" + vs_re + then + nxt + r"|\s*\Z)"
    bare_end = r"(?:" + close + then + nxt + r"|\s*\Z)"
    # a CDATA section (``_cdata``) first, with a newline on either side
    cdata = r"\n?<!\[CDATA\[(?P<value>.*?)\]\]>\n?" + bare_end + "|" if vs.strip().startswith("</") else ""
    return ks_re[: -len(r"\n?")] + rf"(?:{cdata}\n{lead}{value}\n[ \t]*{bare_end}|{value}{bare_end})"


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

# The same pair where values are text with no value parser (tagged arguments, typed by the schema: ``tools=``):
# a string's text between its quotes (its escapes as written), any other value as written, which the schema
# casts (``3``, ``true``, ``[1, 2]``); a value cut off where the region ends (a close tag written inside a string) as
# far as it arrived. For a JSON object written as a tagged call's arguments (``tagged_calls._json_in_tags``).
JSON_PAIR_TEXT = (r'(?<=[{,]\s*)"(?P<key>[^"\\\n]+)"\s*:\s*(?:"(?P<value>(?:[^"\\]|\\.)*)"|(?P<value>' + nested_value()
                  + r"|-?\d[\d.eE+-]*|true|false|null)"
                  # (a value cut where the region ends, a close tag written inside a string: what arrived is kept)
                  + r'|"(?P<value>(?:[^"\\]|\\.)*)\Z|(?P<value>[\[{][\s\S]*)\Z)')


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
