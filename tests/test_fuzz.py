"""Property-based round trips on the corpus: random assistant messages, rendered by each template, parsed back
by the response_template inferred from it (one-shot and streamed), through ``autoparser.verify``.

What is fuzzed: unicode text, whitespace runs, braces, quotes, markup-like text, numbers and booleans as text,
and for tool calls several calls with typed, nested arguments. What is excluded, explicitly (``unambiguous``):

* text containing a marker the analysis found -- reasoning start/end, the content wrapper, end-of-turn markers,
  tool section/call openers and closers (and, inside argument strings, what ends a tagged value or delimits a
  string). Such text is genuinely ambiguous: a model writing ``<tool_call>`` in its answer produces the same
  tokens as one calling a tool, and no parser can tell them apart. Everything else must round-trip.
* content or reasoning that is only whitespace (nothing to give back). Surrounding whitespace is compared
  stripped, as BRIEF §4 says.
* in tagged-argument formats, string values with surrounding whitespace (templates pad values with newlines
  that the parser must strip).

``verify`` decides which fields the template rendered by re-rendering with each value changed, so a template
that trims, drops or truncates a field is expected to give back only what it rendered; call ids are taken as
rendered when found verbatim, hence the reserved ``Zq7`` prefix below.

Known failures are strict xfails listed in ``tests/fuzz_known_failing.json`` (``kind/template`` -> one-line
reason), so a fix is noticed as XPASS. To regenerate the list after analyzer changes::

    python tests/test_fuzz.py            # runs every case without the list, rewrites it, prints the changes

It keeps the reasons of entries that still fail, drops fixed ones, and adds new failures with the first line of
their report prefixed ``TODO:`` -- replace that with the root cause. Examples are fixed (``derandomize``) and not
shrunk, to keep the file under two minutes; ``AUTOPARSER_FUZZ_SHRINK=1`` shrinks to a minimal failing example
(minutes per failure), ``AUTOPARSER_FUZZ_EXAMPLES=N`` sets the count, ``AUTOPARSER_FUZZ_IGNORE_KNOWN=1`` runs the
known failures as ordinary tests.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from autoparser.verify import verify

TEMPLATES = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "templates"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
NAMES = sorted(p.stem for p in TEMPLATES.glob("*.jinja")) or ["<corpus absent>"]
KNOWN_FILE = Path(__file__).resolve().parent / "fuzz_known_failing.json"
KNOWN_FAILING = {} if os.environ.get("AUTOPARSER_FUZZ_IGNORE_KNOWN") == "1" else json.loads(KNOWN_FILE.read_text(encoding="utf-8"))
SHRINK = os.environ.get("AUTOPARSER_FUZZ_SHRINK") == "1"
FUZZ = settings(derandomize=True, deadline=None, max_examples=int(os.environ.get("AUTOPARSER_FUZZ_EXAMPLES", "30")),
                database=None, report_multiple_bugs=False, phases=tuple(Phase) if SHRINK else (Phase.explicit, Phase.generate),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
_INFERRED: dict = {}


@pytest.fixture(autouse=True, scope="module")
def _fixed_examples():
    """Hypothesis mixes literals from every loaded local module (tests included) into its draws, so the examples
    would depend on which test files were collected; without them ``derandomize`` is deterministic."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without constant mining
        yield
        return
    if not hasattr(providers, "_get_local_constants"):  # pragma: no cover
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(providers, "_get_local_constants", providers.Constants)
        providers.CONSTANTS_CACHE.cache.clear()
        yield
    providers.CONSTANTS_CACHE.cache.clear()


def templates(kind: str) -> list:
    """Corpus template names, known failures (``kind/name``) as strict xfails with the reason on record."""
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[f"{kind}/{n}"])) if f"{kind}/{n}" in KNOWN_FAILING
            else n for n in NAMES]


def inferred(name: str):
    """(template source, Result), inferred once per session; skips when the corpus or the inference is missing."""
    path = TEMPLATES / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"corpus templates not found at {TEMPLATES} (the shared corpus sits next to the project)")
    if name not in _INFERRED:
        from autoparser import infer_result

        src = path.read_text(encoding="utf-8")
        try:
            _INFERRED[name] = (src, infer_result(src, TOKENS))
        except Exception as e:  # noqa: BLE001 - inference failures are test_corpus's business
            _INFERRED[name] = (src, e)
    src, res = _INFERRED[name]
    if isinstance(res, Exception):
        pytest.skip(f"no response_template inferred: {res}")
    return src, res


# -- what no format can disambiguate --------------------------------------------------------------------------


def markers(a, *, in_arguments: bool = False) -> tuple[str, ...]:
    t = a.tools
    found = [*a.turn.end_markers, a.reasoning.start, a.reasoning.end, *a.reasoning.end_variants, a.content.start, a.content.end,
             t.section_start, t.section_end, t.call_start, t.call_end, *t.end_markers]
    if in_arguments:
        found += [t.arguments.value_suffix, t.arguments.key_prefix, *(d for pair in t.arguments.string_delims for d in pair)]
    pieces = {p.strip() for m in found for p in re.split(r"\x00ID\x00", m)}  # call-id placeholders split a marker
    return tuple(sorted(p for p in pieces if p))


WORD = regex.compile(r"\w+")
SENTINELS = ("Zq7",)  # reserved for the call ids


def unambiguous(text: str, marks: tuple[str, ...]) -> bool:
    return not any(m in text for m in (*marks, *SENTINELS))


# -- strategies -----------------------------------------------------------------------------------------------

WHITESPACE = st.sampled_from([" ", "  ", "   ", "\n", "\n\n", "\t", " \n ", "\r\n", "\u00a0"])
SYMBOLS = st.sampled_from(["{", "}", "{{", "}}", "{%", "%}", '"', "'", "`", "```", "<b>", "</b>", "<br/>", "<", ">", "&amp;",
                           "[", "]", "\\", "\\n", "/", "|", "<|", "|>", '{"a": 1}', "[1, 2]", "null", "true", "false", "42",
                           "-3.5", "1e10", "→", "…", "日本語", "🙂", "é", "\u200b"])
WORDS = st.from_regex(r"[A-Za-z]{1,8}", fullmatch=True)
UNICODE = st.text(st.characters(exclude_categories=("Cs", "Cc", "Co", "Cn")), min_size=1, max_size=6)
PIECES = st.one_of(WORDS, SYMBOLS, WHITESPACE, UNICODE)


def text(marks: tuple[str, ...], max_pieces: int = 10) -> st.SearchStrategy[str]:
    return st.lists(PIECES, min_size=1, max_size=max_pieces).map("".join).filter(lambda s: s.strip() and unambiguous(s, marks))


def arg_string(marks, tagged: bool) -> st.SearchStrategy[str]:
    s = st.one_of(st.just(""), text(marks, 6))
    return s.filter(lambda v: v == v.strip()) if tagged else s


def json_value(strings, keys) -> st.SearchStrategy:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False), strings)
    return st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(keys, kids, max_size=3), max_leaves=6)


def object_keys(marks, bare: bool) -> st.SearchStrategy[str]:
    """Keys of nested argument objects. Where the template writes keys bare (``{key:value}``, Gemma 4), a key is
    delimited only by the ``{``/``,`` before it and the ``:`` after it, so a key holding punctuation, whitespace
    or nothing cannot be read back (``{a, b:1}``); word-character keys (by the ``regex`` module, as transformers'
    ``unquoted_keys`` dialect reads them) are the unambiguous set."""
    if bare:
        return st.from_regex(r"\w{1,8}", fullmatch=True).filter(lambda k: WORD.fullmatch(k) and unambiguous(k, marks))
    return text(marks, 3).filter(lambda k: k == k.strip())


def tool_call(marks, tagged: bool, bare_keys: bool = False) -> st.SearchStrategy[dict]:
    s = arg_string(marks, tagged)
    keys = object_keys(marks, bare_keys)
    weather = st.fixed_dictionaries({"city": s}, optional={"days": st.integers(-1000, 1000), "metric": st.booleans()})
    query = st.fixed_dictionaries({"query": s}, optional={
        "limit": st.one_of(st.integers(-10**9, 10**9), st.floats(-1e9, 1e9, allow_nan=False)),
        "options": st.dictionaries(keys, json_value(s, keys), max_size=3),
        "tags": st.lists(s, max_size=3)})
    return st.one_of(st.tuples(st.just("get_weather"), weather), st.tuples(st.just("run_query"), query))


def with_ids(calls: list, ids: list[str]) -> list[dict]:
    return [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for (n, a), i in zip(calls, ids)]


# Nine alphanumerics (Mistral's rule), opening with a reserved prefix: verify takes an id found in the generated
# text as rendered, so an id must not be a word the text may contain anyway ("arguments").
IDS = st.lists(st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=6, max_size=6).map("Zq7".__add__),
               min_size=3, max_size=3, unique=True)


# -- the properties -----------------------------------------------------------------------------------------------


def check(name: str, message: dict) -> None:
    src, res = inferred(name)
    report = verify(src, res.template, TOKENS, analysis=res.analysis, messages=[("fuzz", message)])
    first = report.first_failure()
    if first is not None:
        what = first.error or ", ".join(f"{k} differs" for k, v in first.fields.items() if v == "fail")
        summary = f"{first.mode}{' after history' if first.history else ''} ({first.how}): {what}; generated {first.generated[:80]!r}"
        pytest.fail(summary + "\n" + json.dumps(report.to_dict()["first_failure"], ensure_ascii=False, indent=1), pytrace=False)


@pytest.mark.parametrize("name", templates("content"))
@FUZZ
@given(data=st.data())
def test_content_and_reasoning_round_trip(name, data):
    _, res = inferred(name)
    marks = markers(res.analysis)
    message = {"role": "assistant", "content": data.draw(text(marks), label="content")}
    if data.draw(st.booleans(), label="with reasoning"):
        message["reasoning_content"] = data.draw(text(marks), label="reasoning")
    check(name, message)


@pytest.mark.parametrize("name", templates("tools"))
@FUZZ
@given(data=st.data())
def test_tool_calls_round_trip(name, data):
    _, res = inferred(name)
    if res.analysis.tools.format == "NONE":
        pytest.skip("the analysis found no tool-call format")
    marks = markers(res.analysis)
    tagged = res.analysis.tools.format == "TAG_WITH_TAGGED"
    bare = res.analysis.tools.arguments.unquoted_keys
    calls = data.draw(st.lists(tool_call(markers(res.analysis, in_arguments=True), tagged, bare), min_size=1, max_size=3), label="calls")
    message = {"role": "assistant", "content": None, "tool_calls": with_ids(calls, data.draw(IDS, label="ids"))}
    if data.draw(st.booleans(), label="with content"):
        message["content"] = data.draw(text(marks), label="content")
    if data.draw(st.booleans(), label="with reasoning"):
        message["reasoning_content"] = data.draw(text(marks), label="reasoning")
    check(name, message)


def regenerate_known_failing() -> int:
    """Run every case with the list ignored and rewrite it: kept reasons for what still fails, ``TODO:`` lines
    (the first line of the failure) for new failures, fixed entries dropped."""

    class Collect:
        def __init__(self):
            self.failed: dict[str, str] = {}

        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.failed:
                kind = "content" if "content_and_reasoning" in report.nodeid else "tools"
                name = report.nodeid.split("[", 1)[1].rstrip("]")
                first = next((ln.strip() for ln in str(report.longrepr).splitlines() if ln.strip()), "failed")
                self.failed[f"{kind}/{name}"] = first[:240]

    os.environ["AUTOPARSER_FUZZ_IGNORE_KNOWN"] = "1"
    old = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))
    collect = Collect()
    pytest.main(["-q", "-p", "no:cacheprovider", __file__], plugins=[collect])
    new = {k: old.get(k) or f"TODO: {v}" for k, v in sorted(collect.failed.items())}
    KNOWN_FILE.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for k in sorted(set(old) | set(new)):
        if k not in new:
            print(f"fixed    {k}")
        elif k not in old:
            print(f"new      {k}: {new[k]}")
    print(f"{len(new)} known failures written to {KNOWN_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(regenerate_known_failing())
