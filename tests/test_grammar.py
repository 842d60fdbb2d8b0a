"""Grammars in the template's own tool-call format (issue 13), checked with llguidance on a byte-level
tokenizer: for every corpus, wild and models/ template whose tool calls verify, the template's own renderings
of the probe calls are accepted; schema violations, unknown tools, a second call under no-parallel
and (with ``required``) a reply without a call are rejected; and every accepted string parses back
through the emitted response_template to the same calls. Refusals must say why."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

import autoparser
from autoparser.grammar.build import build, check_verified
from autoparser.grammar.layout import NoGrammar, layout, marker_texts
from autoparser.verify import VERIFY_TOOLS, verify
from autoparser.verify.parsing import _norm_calls
from grammar_support import calls as _calls, opened as _opened, raw_unicode

llguidance = pytest.importorskip("llguidance", reason="the grammar extra is not installed: pip install -e '.[grammar]'")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
TEMPLATES = sorted((SHARED / "templates").glob("*.jinja")) + sorted((SHARED / "wild" / "templates").glob("*.jinja"))
MODELS = sorted((Path(__file__).resolve().parents[1] / "models").glob("*.jinja"))  # the team's examples
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
# Why a verified tool-call format may get no grammar (each refusal must be one of these).
REFUSALS = ("not covered:", "replies made of headed messages", "pythonic calls", "JSON dialect", "tool-call format detail",
            "header pattern", "a call starts without a literal marker", "tagged arguments without")


def _id(p: Path) -> str:
    return ("wild/" if p.parent.parent.name == "wild" else "models/" if p.parent.name == "models" else "") + p.stem


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    import llguidance.hf

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<eos>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return llguidance.hf.from_tokenizer(PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>"))


def accepts(tok, grammar: str, text: str) -> bool:
    m = llguidance.LLMatcher(tok, llguidance.grammar_from("lark", grammar), log_level=0)
    assert not m.is_error(), m.get_error()
    return all(m.consume_token(t) for t in tok.tokenize_str(text)) and m.is_accepting()


_cache: dict = {}


def _verified(path: Path):
    """(source, infer result, report) once per template; skips templates that do not infer."""
    if path not in _cache:
        src = path.read_text(encoding="utf-8")
        try:
            res = autoparser.infer_result(src, TOKENS)
            _cache[path] = (src, res, verify(src, res.template, TOKENS, analysis=res.analysis))
        except autoparser.AutoparserError as e:
            _cache[path] = e
    got = _cache[path]
    if isinstance(got, Exception):
        pytest.skip(f"does not infer: {got}")
    return got


def _tools(mutate) -> list:
    tools = copy.deepcopy(VERIFY_TOOLS)
    mutate({t["function"]["name"]: t["function"]["parameters"] for t in tools}, tools)
    return tools


def _missing_required(params, tools):
    params["get_weather"]["properties"]["country"] = {"type": "string"}
    params["get_weather"]["required"].append("country")


def _wrong_type(params, tools):
    params["get_weather"]["properties"]["city"] = {"type": "integer"}


def _unknown(params, tools):
    tools[:] = [t for t in tools if t["function"]["name"] != "get_weather"]


@pytest.mark.parametrize("path", TEMPLATES + MODELS, ids=_id)
def test_grammar(path, tokenizer):
    src, res, report = _verified(path)
    a, template = res.analysis, res.template
    if report.per_field().get("tool_calls") != "pass":
        with pytest.raises(NoGrammar):
            check_verified(res, src, TOKENS)
        return
    try:
        build(a, VERIFY_TOOLS)
    except NoGrammar as e:
        assert any(r in str(e) for r in REFUSALS), str(e)
        pytest.skip(f"no grammar: {e}")
    cases = [c for c in report.cases if c.status == "pass"]
    grammars: dict = {}

    def g(opened, **kw):
        key = (opened, json.dumps(kw, sort_keys=True, default=str))
        if key not in grammars:
            grammars[key] = build(a, kw.pop("tools", VERIFY_TOOLS), reasoning_open=opened, **kw)
        return grammars[key]

    calls_seen = 0
    for c in cases:
        opened, want = _opened(a, c.prompt), _calls(c)
        where = f"{c.name} (mode {c.mode}, history {c.history}): {c.generated[:300]!r}"
        text = raw_unicode(c.generated)
        assert accepts(tokenizer, g(opened), text), f"auto grammar rejects {where}"
        parsed = parse_response(text, template, prefix=c.prompt, tools=VERIFY_TOOLS)
        assert [(x["name"], x["arguments"]) for x in _norm_calls(parsed.get("tool_calls"))] == want, where
        assert accepts(tokenizer, g(opened, parallel=False), text) == (len(want) <= 1), f"no-parallel: {where}"
        assert accepts(tokenizer, g(opened, tool_choice="required"), text) == bool(want), f"required: {where}"
        if not want or c.history:  # the rejections once per rendering, not again after a history
            continue
        calls_seen += 1
        names = {n for n, _ in want}
        assert accepts(tokenizer, g(opened, tool_choice="run_query"), text) == (names == {"run_query"}), f"named tool: {where}"
        if "get_weather" in names:
            for why, mutate in (("missing required argument", _missing_required), ("wrong argument type", _wrong_type), ("unknown tool", _unknown)):
                assert not accepts(tokenizer, g(opened, tools=_tools(mutate)), text), f"{why} accepted: {where}"
    assert calls_seen, "no probe call was rendered"


# Token-aware grammars that reject a verified rendering, with why; kept true both ways (a listed template
# whose renderings are all accepted fails the test).
# (wild/105-vllm was listed: its history writes the header and a reasoning close again before the calls, which the
# analysis read as the reply's; aligned since the header and its prefill are, ``probes._spaced_before_prefill``.)
TOKENS_KNOWN: dict[str, str] = {}


@pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")
@pytest.mark.parametrize("path", TEMPLATES, ids=_id)
def test_grammar_tokens(path):
    """With a tokenizer whose control-token-looking markers are added tokens (as real vocabularies ship
    them, and llguidance treats them as special), the token-aware grammar accepts the template's own
    renderings token by token, rejects an unknown tool, and rejects a marker spelt out byte by byte."""
    import llguidance.hf
    from grammar_support import byte_tokenizer, control_tokens

    src, res, report, lay = _with_grammar(path)
    a = res.analysis
    added = control_tokens(marker_texts(lay))
    if not added:
        pytest.skip("no marker looks like a control token")
    hf = byte_tokenizer(added)
    tok, vocab = llguidance.hf.from_tokenizer(hf), hf.get_added_vocab()
    spelt = [m for m in added if m in lay.trigger]

    def ok(grammar, ids):
        m = llguidance.LLMatcher(tok, llguidance.grammar_from("lark", grammar), log_level=0)
        assert not m.is_error(), m.get_error()
        return all(m.consume_token(t) for t in ids) and m.is_accepting()

    seen = 0
    for c in report.cases:
        if c.status != "pass" or not _calls(c) or c.history:
            continue
        opened = _opened(a, c.prompt)
        text = raw_unicode(c.generated)
        ids = hf.encode(text, add_special_tokens=False)
        if _id(path) in TOKENS_KNOWN:
            assert not ok(build(a, VERIFY_TOOLS, reasoning_open=opened, tokens=vocab), ids), f"listed but accepted: {c.name}"
            pytest.xfail(TOKENS_KNOWN[_id(path)])
        assert ok(build(a, VERIFY_TOOLS, reasoning_open=opened, tokens=vocab), ids), f"rejects {c.name}: {text[:300]!r}"
        seen += 1
        if "get_weather" in {n for n, _ in _calls(c)}:
            assert not ok(build(a, _tools(_unknown), reasoning_open=opened, tokens=vocab), ids), f"unknown tool accepted: {c.name}"
        if spelt:  # the same text with the opener's token written out byte by byte
            pos = text.find(spelt[0])
            pre = hf.encode(text[:pos], add_special_tokens=False)
            raw = byte_tokenizer().encode(spelt[0], add_special_tokens=False)  # same byte ids, no added tokens
            rest = hf.encode(text[pos + len(spelt[0]):], add_special_tokens=False)
            assert not ok(build(a, VERIFY_TOOLS, reasoning_open=opened, tokens=vocab), pre + raw + rest), f"spelt-out opener accepted: {c.name}"
    assert seen


def test_corpus_coverage():
    """Most templates whose tool calls verify get a grammar."""
    if not TEMPLATES:
        pytest.skip(f"corpus not found at {SHARED}")
    made = 0
    for path in TEMPLATES:
        got = _cache.get(path) or _verified_quiet(path)
        if isinstance(got, tuple) and got[2].per_field().get("tool_calls") == "pass":
            try:
                build(got[1].analysis, VERIFY_TOOLS)
                made += 1
            except NoGrammar:
                pass
    assert made >= 50, made


def _with_grammar(path: Path):
    """(source, infer result, report, layout) of a template whose calls verify and get a grammar; skips others."""
    src, res, report = _verified(path)
    if report.per_field().get("tool_calls") != "pass":
        pytest.skip("tool calls do not verify")
    try:
        lay = layout(res.analysis)
        build(res.analysis, VERIFY_TOOLS)
    except NoGrammar as e:
        pytest.skip(f"no grammar: {e}")
    return src, res, report, lay


def _verified_quiet(path):
    try:
        return _verified(path)
    except pytest.skip.Exception:
        return None


# ----------------------------------------------------------------------------------------- structural tag
def _check_structural_tag(st: dict) -> None:
    """The shape vLLM and SGLang take in ``response_format`` (xgrammar's triggered_tags)."""
    assert st["type"] == "structural_tag" and set(st) == {"type", "format"}
    f = st["format"]
    assert f["type"] == "triggered_tags" and set(f) == {"type", "triggers", "tags", "at_least_one", "stop_after_first"}
    assert f["triggers"] and all(isinstance(t, str) and t for t in f["triggers"])
    assert isinstance(f["at_least_one"], bool) and isinstance(f["stop_after_first"], bool)
    for tag in f["tags"]:
        assert set(tag) == {"begin", "content", "end"} and isinstance(tag["begin"], str) and isinstance(tag["end"], str)
        assert any(tag["begin"].startswith(t) for t in f["triggers"]), (tag["begin"], f["triggers"])
        schema = tag["content"]["json_schema"]
        assert tag["content"]["type"] == "json_schema" and all(x["type"] == "object" for x in schema.get("anyOf", [schema]))


STRUCTURAL = ["Qwen-Qwen3-0.6B", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "unsloth-mistral-Devstral-Small-2507"]


@pytest.mark.parametrize("name", STRUCTURAL)
def test_structural_tag(name):
    path = SHARED / "templates" / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"corpus template {path} not available")
    src, res, _ = _verified(path)
    st = build(res.analysis, VERIFY_TOOLS, format="structural-tag", tool_choice="required", parallel=False)
    _check_structural_tag(st)
    assert st["format"]["at_least_one"] and st["format"]["stop_after_first"]
    tags = st["format"]["tags"]
    text = json.dumps(tags)
    assert tags and "get_weather" in text and "run_query" in text
    try:
        import xgrammar
    except ImportError:
        pytest.skip("xgrammar is not installed (it pulls in torch); the shape was checked")
    xgrammar.Grammar.from_structural_tag(json.dumps(st))


@pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")
def test_structural_tag_layout_is_the_templates():
    """Each call the template renders is ``begin`` + JSON + ``end`` byte for byte (the whitespace inside
    the markers included), so the engines' triggered tags keep the model on its own format (xgrammar
    itself runs in benchmarks/engines.py, in the engines' environments)."""
    checked = 0
    for path in TEMPLATES:
        got = _cache.get(path) or _verified_quiet(path)
        if not isinstance(got, tuple) or got[2].per_field().get("tool_calls") != "pass":
            continue
        try:
            st = build(got[1].analysis, VERIFY_TOOLS, format="structural-tag")
        except NoGrammar:
            continue
        tags = st["format"]["tags"]
        for c in got[2].cases:
            if c.status != "pass" or not _calls(c):
                continue
            spans = [m for t in tags for m in re.finditer(re.escape(t["begin"]) + r"(\{.*?\})" + re.escape(t["end"]), c.generated, re.S)]
            names = [n for n, _ in _calls(c)]
            assert len(spans) >= len(names), (path.stem, c.name, tags[0]["begin"], tags[0]["end"], c.generated[:200])
            checked += 1
    assert checked >= 50, checked


def test_structural_tag_refuses_sections():
    path = SHARED / "templates" / "moonshotai-Kimi-K2.jinja"
    if not path.is_file():
        pytest.skip(f"corpus template {path} not available")
    src, res, _ = _verified(path)
    with pytest.raises(NoGrammar, match="section"):
        build(res.analysis, VERIFY_TOOLS, format="structural-tag")


# ----------------------------------------------------------------------------------------- API and CLI
QWEN = """{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def test_api_and_cli(tmp_path, capsys, tokenizer):
    from autoparser.cli.main import main

    g = autoparser.grammar(QWEN, VERIFY_TOOLS, tool_choice="required")
    assert g.startswith("%llguidance {}") and '"get_weather"' in g
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'
    assert accepts(tokenizer, g, text) and not accepts(tokenizer, g, "No call.<|im_end|>")
    (tmp_path / "t.jinja").write_text(QWEN)
    (tmp_path / "tools.json").write_text(json.dumps(VERIFY_TOOLS))
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), "--no-parallel"]) == 0
    assert capsys.readouterr().out.startswith("%llguidance {}")
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), "--format", "structural-tag"]) == 0
    _check_structural_tag(json.loads(capsys.readouterr().out))
    assert main(["grammar", str(tmp_path / "t.jinja"), "--tools", str(tmp_path / "tools.json"), "--tool-choice", "nope"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "grammar: no tokenizer (a bare template file; see --tokenizer): markers are matched as text"
    assert len(err) == 2 and "'nope'" in err[1] and "Traceback" not in "".join(err)
    (tmp_path / "plain.jinja").write_text("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    assert main(["grammar", str(tmp_path / "plain.jinja"), "--tools", str(tmp_path / "tools.json")]) == 2
    assert "autoparser: error:" in capsys.readouterr().err


# Formats whose values the parser delimits by text rather than by JSON: a value must not hold the text
# that closes its call (the parser would end the call there), and the grammar must refuse it.
CLOSERS = {
    "LFM2.5-8B-A1B": ("city='Paris'", "city='Par), get_weather(is'"),  # pythonic: ')' then the next call
    "wild/020-vedika-4-1-flash": ('city:<|"|>Paris<|"|>', 'city:<|"|>Pa<tool_call|>ris<|"|>'),  # dialect: the call's end
    "meetkai-functionary-medium-v3.2": ('"city": "Paris"', '"city": "Pa>>>ris"'),  # recipient: the next header
}


@pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")
@pytest.mark.parametrize("name", sorted(CLOSERS))
def test_value_cannot_close_its_call(name, tokenizer):
    path = next((p for p in TEMPLATES if _id(p) == name), None)
    if path is None:
        pytest.skip(f"{name} not in the corpus")
    src, res, report = _verified(path)
    good, bad = CLOSERS[name]
    case = next(c for c in report.cases if c.status == "pass" and c.name == "one call" and not c.history)
    text = raw_unicode(case.generated)
    assert good in text, text
    grammar = build(res.analysis, VERIFY_TOOLS, reasoning_open=_opened(res.analysis, case.prompt))
    assert accepts(tokenizer, grammar, text)
    assert not accepts(tokenizer, grammar, text.replace(good, bad, 1))
    # the same text with a harmless ')' or quote-free '<' in the value is accepted and parses back whole
    harmless = text.replace(good, good.replace("Paris", "Pa)r<is"), 1)
    assert accepts(tokenizer, grammar, harmless)
    parsed = parse_response(harmless, res.template, prefix=case.prompt, tools=VERIFY_TOOLS)
    assert _norm_calls(parsed["tool_calls"])[0]["arguments"]["city"] == "Pa)r<is"


def test_recipient_messages(tokenizer):
    """Recipient-headed replies (functionary v3.2): text under ``all``, calls under a tool's name, at
    least one call with ``required``, none with ``none``, one with no-parallel; an unknown recipient is
    refused."""
    path = next((p for p in TEMPLATES if p.stem == "meetkai-functionary-medium-v3.2"), None)
    if path is None:
        pytest.skip("functionary v3.2 not in the corpus")
    src, res, report = _verified(path)
    a = res.analysis
    call = 'get_weather\n{"city": "Paris"}'
    text = "all\nLooking.>>>" + call + ">>>all\nDone.<|eot_id|>"
    assert accepts(tokenizer, build(a, VERIFY_TOOLS), text)
    assert accepts(tokenizer, build(a, VERIFY_TOOLS, tool_choice="required"), text)
    assert not accepts(tokenizer, build(a, VERIFY_TOOLS, tool_choice="required"), "all\nNo call.<|eot_id|>")
    assert not accepts(tokenizer, build(a, VERIFY_TOOLS, tool_choice="none"), text)
    assert not accepts(tokenizer, build(a, VERIFY_TOOLS, parallel=False), call + ">>>" + call + "<|eot_id|>")
    assert not accepts(tokenizer, build(a, VERIFY_TOOLS), 'delete_all\n{"x": 1}<|eot_id|>')
    parsed = parse_response(text, res.template, prefix=report.cases[0].prompt, tools=VERIFY_TOOLS)
    assert [c["name"] for c in _norm_calls(parsed["tool_calls"])] == ["get_weather"]


@pytest.mark.skipif(not TEMPLATES, reason=f"corpus not found at {SHARED} (../shared is absent)")
@pytest.mark.parametrize("path", TEMPLATES, ids=_id)
def test_no_value_ends_its_call_early(path, tokenizer):
    """With markers matched as text, a string value may hold any text the grammar allows; every such
    text built from the format's own markers (and a pythonic ``), f(``) either is refused or parses back
    as the one call with that value: a value never ends its call early for the parser."""
    src, res, report, lay = _with_grammar(path)
    a = res.analysis
    case = next((c for c in report.cases if c.status == "pass" and c.name == "one call" and not c.history), None)
    if case is None or "Paris" not in case.generated:
        pytest.skip("no one-call rendering with the probe's city")
    text = raw_unicode(case.generated)
    grammar = build(a, VERIFY_TOOLS, reasoning_open=_opened(a, case.prompt))
    wrong = []
    for m in [*marker_texts(lay), ")", "), get_weather(", "\n", "}", "]", ">>>"]:
        value = "Pa" + m + "ris"
        candidate = text.replace("Paris", value, 1)
        if not accepts(tokenizer, grammar, candidate):
            continue
        parsed = parse_response(candidate, res.template, prefix=case.prompt, tools=VERIFY_TOOLS)
        calls = _norm_calls(parsed.get("tool_calls"))
        args = calls[0]["arguments"] if len(calls) == 1 else None
        if not (isinstance(args, dict) and args.get("city") in (value, _as_json_string(value, lay))):
            wrong.append((m, parsed.get("tool_calls")))
    assert not wrong, wrong[:3]


def _as_json_string(value: str, lay) -> str | None:
    """What a JSON string whose raw text is ``value`` holds (a marker written with a literal ``\\n``,
    as a template that escaped its newlines twice writes it, is a JSON escape inside a JSON value)."""
    if lay.kind not in ("json", "json_array", "json_key", "tagged_json"):
        return None
    try:
        return json.loads(f'"{value}"')
    except ValueError:
        return None


def test_call_lead_is_optional_before_a_call(tokenizer):
    """A lead the model may write before a call with no marker (Llama 3.1's ``<|python_tag|>``, a
    workaround's ``call_lead``) is allowed, optional, before the call, and every accepted text parses back
    to the call; content may not start with it (the parser would read a call there); an unknown tool is
    refused after the lead too. The same with the lead an added token."""
    import llguidance.hf
    from grammar_support import byte_tokenizer

    path = SHARED / "templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja"
    if not path.is_file():
        pytest.skip(f"corpus template {path} not available")
    src, res, report = _verified(path)
    a, prompt = res.analysis, report.cases[0].prompt
    assert a.tools.call_lead == "<|python_tag|>" and layout(a).lead == "<|python_tag|>"
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    good = [call + "<|eot_id|>", "<|python_tag|>" + call + "<|eot_id|>", " <|python_tag|> " + call, "Sunny.<|eot_id|>"]
    bad = ["<|python_tag|>Sunny.<|eot_id|>", "<|python_tag|>" + call.replace("get_weather", "delete_all") + "<|eot_id|>"]
    hf = byte_tokenizer(["<|python_tag|>", "<|eot_id|>"])
    tok, vocab = llguidance.hf.from_tokenizer(hf), hf.get_added_vocab()

    def ok(grammar, ids):
        m = llguidance.LLMatcher(tok, llguidance.grammar_from("lark", grammar), log_level=0)
        assert not m.is_error(), m.get_error()
        return all(m.consume_token(t) for t in ids) and m.is_accepting()

    text_g, token_g = build(a, VERIFY_TOOLS), build(a, VERIFY_TOOLS, tokens=vocab)
    for text in good:
        assert accepts(tokenizer, text_g, text), text
        assert ok(token_g, hf.encode(text, add_special_tokens=False)), text
        parsed = parse_response(text, res.template, prefix=prompt, tools=VERIFY_TOOLS)
        want = [] if text.startswith("Sunny") else [("get_weather", {"city": "Paris"})]
        assert [(c["name"], c["arguments"]) for c in _norm_calls(parsed.get("tool_calls"))] == want, (text, parsed)
    for text in bad:
        assert not accepts(tokenizer, text_g, text), text
        assert not ok(token_g, hf.encode(text, add_special_tokens=False)), text
    spelt = byte_tokenizer().encode("<|python_tag|>", add_special_tokens=False) + hf.encode("Sunny.", add_special_tokens=False)
    assert not ok(token_g, spelt)  # the lead spelt out byte by byte before text is no content either
