"""Tool-call analysis of tag forms: the arguments after a call's name (JSON, a JSON dialect, or tagged
key/value pairs) read from the one-call and two-call renderings. Part of the tool analysis (``tools``)."""

from __future__ import annotations

import json

import regex as re

from transformers.utils.chat_parsing.content_parsers import parse_content

from .diff import _marker_spans, common_prefix_at, common_suffix_at, markers, suffix_len
from .probes import ARG_A, ARG_B, FN_A, FN_B, ID_A, ID_B, VAL_A, VAL_B
from .model import Arguments, Tools

ID = "\x00ID\x00"  # placeholder for call ids while comparing the two calls
_DEC = json.JSONDecoder()


def _json_values(text: str):
    """Every JSON object/array in ``text`` as (start, end, value), outermost first."""
    out = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = _DEC.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            out.append((i, end, value))
            i = end
        else:
            i += 1
    return out


# --------------------------------------------------------------------------------------- tag forms
def _args_span(text: str, name_at: int, dialect: dict | None = None):
    """(start, end, kind) of the arguments after the name: strict JSON, JSON dialect, or None."""
    for s, e, v in _json_values(text[name_at:]):
        if isinstance(v, dict) and (ARG_A in v or not v):
            return name_at + s, name_at + e, "json"
        break
    if dialect:
        return _dialect_span(text, name_at, dialect)
    return None


def _dialect_span(text: str, name_at: int, dialect: dict):
    """The arguments object after the name, parsed the way the executor parses a JSON dialect."""
    k = text.find(ARG_A, name_at)
    start = text.rfind("{", name_at, k) if k >= 0 else -1
    if start < 0:
        return None
    end = text.find("}", k)
    while end >= 0:
        try:
            value = parse_content(text[start : end + 1], "json", dialect)
        except ValueError:
            value = None
        if isinstance(value, dict) and ARG_A in value:
            return start, end + 1, "json"
        end = text.find("}", end + 1)
    return None


def _json_dialect(text: str, name_at: int) -> dict | None:
    """JSON with unquoted keys and/or custom string delimiters (``{key:<|"|>v<|"|>}``), read off the
    one-argument call: the key's quoting, and what wraps the string value. Confirmed by parsing it
    with transformers' own json content parser, so the emitted ``content_args`` are known to work."""
    k = text.find(ARG_A, name_at)
    v = text.find(VAL_A, k)
    if k < 0 or v < 0:
        return None
    before_key, colon = text[name_at:k], text[k + len(ARG_A) : v]
    args: dict = {}
    if before_key.rstrip().endswith("{") and colon.lstrip().startswith(":"):
        args["unquoted_keys"] = True
    elif before_key.endswith("'") and colon.startswith("'"):
        args["string_delims"] = [["'", "'"]]  # a Python dict: keys and strings in single quotes
    elif not (before_key.endswith('"') and colon.startswith('"')):
        return None
    opener = colon.split(":", 1)[1].strip() if ":" in colon else ""
    if opener and opener != '"':
        after = text[v + len(VAL_A) :]
        closer = opener if after.startswith(opener) else next((m for m in markers(after[:80]) if after.startswith(m)), "")
        if not closer:
            return None
        args["string_delims"] = [[opener, closer]]
    if not args:
        return None
    return args if _dialect_span(text, name_at, args) else None


def _generalize(a: str, b: str, names: tuple[str, str] = ("", "")) -> str:
    """Regex matching both ``a`` and ``b``: literal where equal, ``\\d+`` where only digits differ, and
    the call's own name where each writes its name again (``to=f<|message|><invoke name="f">``, a
    backreference to the header's name group)."""
    if a == b:
        return re.escape(a)
    if all(names) and names[0] in a and a.replace(names[0], "\0") == b.replace(names[1], "\0"):
        parts = [_generalize(x, y) for x, y in zip(a.split(names[0]), b.split(names[1]))]
        if None not in parts:
            return "(?P=name)".join(parts)
    pa = re.split(r"(\d+)", a)
    pb = re.split(r"(\d+)", b)
    if len(pa) == len(pb) and all((x == y) or (i % 2 == 1) for i, (x, y) in enumerate(zip(pa, pb))):
        return "".join(re.escape(x) if i % 2 == 0 else r"\d+" for i, x in enumerate(pa))
    return None


def _opener_len(a: str, i: int, b: str, j: int) -> int:
    """The common text before the name in both calls, cut at a marker-safe point, or further back at a
    JSON object or array start: a call written as a JSON fragment (``, {"name": "`` vs ``[{"name": "``)
    opens with ``{"name": "``, which the marker-safe cut alone leaves at ``"``."""
    n = common_suffix_at(a, i, b, j)
    raw = suffix_len(a, i, b, j)
    for k in range(raw, n, -1):
        if a[i - k] in "{[" and not any(s < i - k < e for s, e in _marker_spans(a)) and not any(s < j - k < e for s, e in _marker_spans(b)):
            return k
    return n


def _tagged(one, two, turn, log) -> Tools:
    uncovered: list[str] = []
    ids = ID_A in one
    o1 = one.replace(ID_A, ID)
    t2 = two.replace(ID_A, ID).replace(ID_B, ID) if two else None
    n1 = o1.find(FN_A)
    pre1 = o1[:n1]
    if t2:
        m1, m2 = t2.find(FN_A), t2.find(FN_B)
        opener = pre1[len(pre1) - _opener_len(o1, n1, t2, m2) :]
        opener = opener[len(opener) - len(opener.lstrip()) :]
    else:
        m1 = m2 = -1
        ms = markers(pre1)
        opener = pre1[pre1.rfind(ms[-1]) :] if ms else pre1
        opener = pre1[len(pre1) - len(pre1.lstrip()) :] if not ms else opener
    # Keep the opener whole: start it at a marker boundary inside pre1.
    section_start = pre1[: len(pre1) - len(opener)]
    if t2:
        m1 = t2.find(FN_A)
    dialect = None
    span = _args_span(o1, n1 + len(FN_A))
    if span is None:
        dialect = _json_dialect(o1, n1 + len(FN_A))
        span = _args_span(o1, n1 + len(FN_A), dialect)
        if span:
            log.append(f"A1 arguments are a JSON dialect: {dialect}")
    fmt = "TAG_WITH_JSON" if span else "TAG_WITH_TAGGED"
    args = Arguments()
    if dialect:
        args = Arguments(unquoted_keys=bool(dialect.get("unquoted_keys")), string_delims=tuple(tuple(p) for p in dialect.get("string_delims", ())))
    if span:
        a_start, a_end, _ = span
        suffix1 = o1[n1 + len(FN_A) : a_start]
        tail1 = o1[a_end:]
    else:
        a_start = a_end = None
        suffix1 = tail1 = ""
    name_suffix_re = re.escape(suffix1)
    call_end = tail1
    section_end = ""
    sep = ""
    if t2 and span:
        s2 = _args_span(t2, m2 + len(FN_B), dialect)
        s1 = _args_span(t2, m1 + len(FN_A), dialect)
        if s1 and s2:
            suffix2 = t2[m2 + len(FN_B) : s2[0]]
            g = _generalize(suffix1, suffix2, (FN_A, FN_B))
            if g is None:
                uncovered.append(f"name suffix differs between calls: {suffix1!r} vs {suffix2!r}")
            else:
                name_suffix_re = g
            between = t2[s1[1] : m2 - len(opener)]
            last_tail = t2[s2[1] :]
            call_end = between[: common_prefix_at(t2, s1[1], t2, s2[1], m2 - len(opener))]
            sep = between[len(call_end) :]
            section_end = last_tail[len(call_end) :]
    if not span:
        args, call_end, sep, section_end, name_suffix_re = _tagged_args(o1, t2, n1, m1, m2, opener, uncovered, log)
        if args is None:
            # Non-JSON arguments in a shape we cannot split (e.g. python-call syntax): try JSON dialect.
            return Tools(format="TAG_WITH_TAGGED", family="unknown", uncovered=tuple(uncovered) or ("arguments format not recognised",))
    if span and not (ARG_A in o1[a_start:a_end] and f'"{ARG_A}"' in o1[a_start:a_end]):
        fmt = "TAG_WITH_JSON"
    # Trim end-of-turn markers out of the call/section ends; a marker the call's own markup also writes
    # inside it (Kimi K3's ``<|sep|>``, which ends every tag) is no end of the turn there.
    own = opener + args.key_prefix + args.value_suffix
    def trim(s: str) -> str:
        for e in (e for e in turn.end_markers if e not in own):
            i = s.find(e)
            if i >= 0:
                s = s[:i]
        return s

    call_end_t, section_end_t = trim(call_end), trim(section_end)
    family = "prefixed-indexed" if r"\d+" in name_suffix_re else "tagged"
    if "[" in opener and "]" in opener and not opener.strip().startswith("<"):
        family = "bracket-tag"
    header = re.escape(opener).replace(re.escape(ID), r"(?P<id>[^\s<>\[\]]+?)") + r"(?P<name>[\w.\-/]+)" + name_suffix_re.replace(re.escape(ID), r"(?P<id>[^\s<>\[\]]+?)")
    t = Tools(
        format=fmt,
        family=family,
        section_start=section_start,
        section_end=section_end_t,
        call_start=opener,
        name_suffix=suffix1,
        call_end=call_end_t,
        call_separator=sep,
        id_in_header=ids,
        index_in_header=r"\d+" in name_suffix_re,
        header_pattern=header,
        arguments=args,
        uncovered=tuple(uncovered),
    )
    log.append(f"T3-T7 {fmt} -> {t}")
    return t


def _tagged_args(o1, t2, n1, m1, m2, opener, uncovered, log):
    """A1/A2/T5: key and value markers from the second call (two arguments: arg_one=B, arg_two=A)."""
    if not t2:
        uncovered.append("tagged arguments need a two-call rendering to find their markers")
        return None, "", "", "", ""
    body_start = m2 + len(FN_B)
    k1 = t2.find(ARG_A, body_start)
    v1 = t2.find(VAL_B, k1)
    k2 = t2.find(ARG_B, v1)
    v2 = t2.find(VAL_A, k2)
    if min(k1, v1, k2, v2) < 0:
        uncovered.append("argument names/values not found in the rendering")
        return None, "", "", "", ""
    name_suffix = t2[body_start:k1]
    between_args = t2[v1 + len(VAL_B) : k2]
    key_prefix = name_suffix[len(name_suffix) - common_suffix_at(t2, k1, t2, k2, body_start, v1 + len(VAL_B)) :]
    name_suffix = name_suffix[: len(name_suffix) - len(key_prefix)]
    key_suffix = t2[k1 + len(ARG_A) : v1]
    after_last = t2[v2 + len(VAL_A) :]
    value_suffix = between_args[: common_prefix_at(t2, v1 + len(VAL_B), t2, v2 + len(VAL_A), k2)]
    arg_sep = between_args[len(value_suffix) : len(between_args) - len(key_prefix)]
    # What follows the last value's suffix: the call end, then the next call's opener in the first call.
    b1 = t2.find(FN_A)
    first_last_val = t2.rfind(VAL_A, b1, m2)
    between_calls = t2[first_last_val + len(VAL_A) + len(value_suffix) : m2 - len(opener)]
    last_tail = after_last[len(value_suffix) :]
    bc_at = first_last_val + len(VAL_A) + len(value_suffix)
    call_end = between_calls[: common_prefix_at(t2, bc_at, t2, v2 + len(VAL_A) + len(value_suffix), m2 - len(opener))]
    sep = between_calls[len(call_end) :]
    section_end = last_tail[len(call_end) :]
    # Strip the inter-argument whitespace from the key prefix; the tag pattern allows any.
    args = Arguments(kind="tagged", key_prefix=key_prefix.lstrip(), key_suffix=key_suffix, value_suffix=value_suffix.rstrip() or value_suffix, separator=arg_sep)
    # The first call's name suffix must agree with the second's.
    n_suffix1 = o1[n1 + len(FN_A) : o1.find(ARG_A, n1)]
    n_suffix1 = n_suffix1[: len(n_suffix1) - len(key_prefix)] if n_suffix1.endswith(key_prefix) else n_suffix1
    g = _generalize(n_suffix1, name_suffix, (FN_A, FN_B))
    if g is None:
        uncovered.append(f"name suffix differs between calls: {n_suffix1!r} vs {name_suffix!r}")
        g = re.escape(name_suffix)
    log.append(f"A1/A2 key prefix {key_prefix!r} key->value {key_suffix!r} value suffix {value_suffix!r} separator {arg_sep!r}")
    return args, call_end, sep, section_end, g
