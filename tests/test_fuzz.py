"""Property-based round trips on the corpus: random assistant messages, rendered by each template, parsed back
by the response_template inferred from it (one-shot and streamed), through ``autoparser.verify``.

What is fuzzed: unicode text, whitespace runs, braces, quotes, markup-like text, numbers and booleans as text,
and for tool calls several calls with typed, nested arguments. What is excluded, explicitly (``unambiguous``):

* text containing a marker the analysis found -- reasoning start/end, the content wrapper, end-of-turn markers,
  tool section/call openers and closers (and, inside argument strings, what ends a tagged value or delimits a
  string). No format can tell such text from structure; everything else must round-trip.
* content or reasoning that is only whitespace (nothing to give back). Surrounding whitespace is compared
  stripped, as the parser strips it.
* in tagged-argument formats, string values with surrounding whitespace (templates pad values with newlines
  that the parser must strip).

``verify`` decides which fields a template rendered by finding the start of each field's first line in the
generated text; so that coincidence cannot fool it, reasoning opens with the word 思考 and content that may be
dropped (next to tool calls) with 答 after optional whitespace. (That verify looks for reasoning unstripped is a
verify bug; the failures it causes are listed as such.)

Known failures are strict xfails listed in ``tests/fuzz_known_failing.json`` (so a fix is noticed). Examples
are fixed (``derandomize``) and not shrunk, to keep the file under two minutes; ``AUTOPARSER_FUZZ_SHRINK=1``
shrinks to a minimal failing example (minutes per failure), ``AUTOPARSER_FUZZ_EXAMPLES=N`` sets the count.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from autoparser.verify import verify

TEMPLATES = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "templates"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
NAMES = sorted(p.stem for p in TEMPLATES.glob("*.jinja")) or ["<corpus absent>"]
KNOWN_FAILING = json.loads((Path(__file__).resolve().parent / "fuzz_known_failing.json").read_text(encoding="utf-8"))
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


SENTINELS = ("思考", "答", "Zq7")  # reserved for the openings above and the call ids


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


def reasoning_text(marks) -> st.SearchStrategy[str]:
    return text(marks).map(lambda t: f"思考{t}")


def arg_string(marks, tagged: bool) -> st.SearchStrategy[str]:
    s = st.one_of(st.just(""), text(marks, 6))
    return s.filter(lambda v: v == v.strip()) if tagged else s


def json_value(strings) -> st.SearchStrategy:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False), strings)
    return st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(strings, kids, max_size=3), max_leaves=6)


def tool_call(marks, tagged: bool) -> st.SearchStrategy[dict]:
    s = arg_string(marks, tagged)
    keys = text(marks, 3).filter(lambda k: k == k.strip())
    weather = st.fixed_dictionaries({"city": s}, optional={"days": st.integers(-1000, 1000), "metric": st.booleans()})
    query = st.fixed_dictionaries({"query": s}, optional={
        "limit": st.one_of(st.integers(-10**9, 10**9), st.floats(-1e9, 1e9, allow_nan=False)),
        "options": st.dictionaries(keys, json_value(s), max_size=3),
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
    failed = [c for c in report.cases if c.status == "fail"]
    assert not failed, json.dumps(report.to_dict()["first_failure"], ensure_ascii=False, indent=1)


@pytest.mark.parametrize("name", templates("content"))
@FUZZ
@given(data=st.data())
def test_content_and_reasoning_round_trip(name, data):
    _, res = inferred(name)
    marks = markers(res.analysis)
    message = {"role": "assistant", "content": data.draw(text(marks), label="content")}
    if data.draw(st.booleans(), label="with reasoning"):
        message["reasoning_content"] = data.draw(reasoning_text(marks), label="reasoning")
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
    calls = data.draw(st.lists(tool_call(markers(res.analysis, in_arguments=True), tagged), min_size=1, max_size=3), label="calls")
    message = {"role": "assistant", "content": None, "tool_calls": with_ids(calls, data.draw(IDS, label="ids"))}
    if data.draw(st.booleans(), label="with content"):
        message["content"] = data.draw(st.tuples(st.sampled_from(["", " ", "\n"]), text(marks)).map(lambda p: f"{p[0]}答{p[1]}"), label="content")
    if data.draw(st.booleans(), label="with reasoning"):
        message["reasoning_content"] = data.draw(reasoning_text(marks), label="reasoning")
    check(name, message)
