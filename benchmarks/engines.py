"""Grammars and serving flags checked with the engines' own code (no GPU): run with the Python of a
virtualenv that has vLLM (and, for the SGLang rows, one that has SGLang):

    VLLM_VENV/bin/python benchmarks/engines.py [--only NAME ...] [--also DIR ...] [--verbose]
    SGLANG_VENV/bin/python benchmarks/engines.py --sglang

For every corpus template with a ``tool_calls`` field whose calls verify and that gets a grammar, with a
tokenizer built locally (the 256 byte symbols, plus the template's control-token-looking markers as
added tokens, as real vocabularies ship them):

- vLLM's ``GuidanceBackend.compile_grammar`` compiles the token-aware Lark grammar;
- every correct rendering of a call (the template's own, from verify) is accepted token by token by
  the compiled grammar and ends in an accepting state; a call to an unknown tool is rejected;
- under the flags ``infer --serve vllm`` prints (``--reasoning-parser hf`` and
  ``enable_in_reasoning`` where the template has a thinking field), the grammar form ``grammar --serve
  vllm`` prints is driven through vLLM's ``StructuredOutputManager.accept_tokens`` with vLLM's own
  reasoning parser: the same renderings are accepted and the grammar ends accepting; for reference, the
  after-reasoning form through vLLM's gate without ``enable_in_reasoning`` is counted too;
- the structural tag (where the format has one) compiles in xgrammar and accepts the renderings;
- the request shapes the README recommends pass vLLM's request checks (``ChatCompletionRequest``,
  ``OnlineRenderer.render_chat``'s tool-choice checks, the parser's ``adjust_request``,
  ``SamplingParams._validate_structured_outputs`` with the backend left at ``auto``, which must land a
  grammar on ``guidance``), and the ones it warns about are refused.

With ``--sglang`` the same through SGLang's code: grammars through its llguidance backend as an ``ebnf``
request, under the reasoning gate its scheduler builds (``ReasonerGrammarBackend``, only where the
``response_template`` reasoning parser yields end token ids: none of the corpus templates does), structural
tags through ``XGrammarGrammarBackend.dispatch_structural_tag``, request shapes through
``ChatCompletionRequest.to_sampling_params`` with the constraint its ``response_template`` tool parser derives.
Prints one row per template and the totals."""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("LLGUIDANCE_LOG_LEVEL", "0")

import autoparser  # noqa: E402
from autoparser.emit import served  # noqa: E402
from autoparser.grammar.build import build  # noqa: E402
from autoparser.grammar.layout import NoGrammar, layout, marker_texts  # noqa: E402
from autoparser.serve import grammar_form  # noqa: E402
from autoparser.verify import VERIFY_TOOLS, verify  # noqa: E402
from grammar_support import byte_tokenizer, control_tokens  # noqa: E402
from grammar_support import calls as _calls, opened as _opened, raw_unicode  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "templates"
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}
UNKNOWN_TOOLS = [t for t in VERIFY_TOOLS if t["function"]["name"] != "get_weather"]


def templates(only, also=()):
    """The corpus templates (and those in the folders ``also`` names: wild/, models/), or those ``only`` names."""
    for p in [*sorted(CORPUS.glob("*.jinja")), *(q for d in also for q in sorted(Path(d).glob("*.jinja")))]:
        if not only or any(o in p.stem for o in only):
            yield p


def prepared(path: Path):
    """(infer result, verify report, layout) for a template with verified tool calls, or the reason not."""
    src = path.read_text(encoding="utf-8")
    try:
        res = autoparser.infer_result(src, TOKENS)
    except autoparser.AutoparserError as e:
        return f"does not infer: {e}"
    report = verify(src, res.template, TOKENS, analysis=res.analysis) if "tool_calls" in (res.template.get("fields") or {}) else None
    res = dataclasses.replace(res, template=served(res.template))  # what --serve prints: the engines refuse join
    if report is None:
        return res  # only the request shapes apply
    if report.per_field().get("tool_calls") != "pass":
        return "tool calls do not verify"
    try:
        lay = layout(res.analysis)
        build(res.analysis, VERIFY_TOOLS)
    except NoGrammar as e:
        return f"no grammar: {e}"
    return res, report, lay


def in_reasoning_flag(template: dict) -> bool:
    """Whether the flags ``infer --serve vllm`` prints set ``enable_in_reasoning``."""
    from autoparser.serve import IN_REASONING, guidance

    return any(IN_REASONING in line for line in guidance(template, "vllm"))


def call_cases(report):
    return [c for c in report.cases if c.status == "pass" and _calls(c)]


# ------------------------------------------------------------------------------------------------ vLLM
class VLLM:
    def __init__(self):
        from vllm.v1.structured_output.backend_guidance import GuidanceBackend
        from vllm.v1.structured_output.backend_types import StructuredOutputOptions

        self.Guidance, self.Options = GuidanceBackend, StructuredOutputOptions

    def backend(self, hf):
        cfg = SimpleNamespace(structured_outputs_config=SimpleNamespace(disable_any_whitespace=False, disable_additional_properties=False))
        return self.Guidance(vllm_config=cfg, tokenizer=hf, vocab_size=len(hf))

    def compile(self, be, grammar: str):
        return be.compile_grammar(self.Options.GRAMMAR, grammar)

    @staticmethod
    def accepts(compiled, ids) -> bool:
        return all(compiled.accept_tokens("r", [t]) for t in ids) and (compiled.ll_matcher.is_accepting() or compiled.ll_matcher.is_stopped())

    def gated(self, be, hf, grammar: str, prompt_ids, ids, reasoning: bool, names=(), in_reasoning: bool = False) -> tuple[bool, str]:
        """The grammar driven by vLLM's StructuredOutputManager, its reasoning parser as the gate."""
        from vllm.reasoning import ReasoningParserManager
        from vllm.sampling_params import StructuredOutputsParams
        from vllm.v1.structured_output import StructuredOutputManager
        from vllm.v1.structured_output.request import StructuredOutputRequest

        mgr = StructuredOutputManager.__new__(StructuredOutputManager)
        mgr.enable_in_reasoning = in_reasoning
        mgr.tokenizer = hf
        mgr.reasoner_cls = ReasoningParserManager.get_reasoning_parser("hf") if reasoning else None
        compiled = self.compile(be, grammar)
        sreq = StructuredOutputRequest(params=StructuredOutputsParams(grammar=grammar))
        sreq._grammar = compiled
        req = SimpleNamespace(use_structured_output=True, structured_output_request=sreq, prompt_token_ids=list(prompt_ids),
                              all_token_ids=list(prompt_ids), request_id="r")
        gate = 0 if not reasoning or in_reasoning else None
        for k, t in enumerate(ids):
            req.all_token_ids.append(t)
            if gate is None:  # where vLLM's own bounds start the grammar (it sees ids[gate:])
                start, _ = mgr._get_constraint_bounds(req, [t], spec_tokens_committed=True)
                if start <= 1:
                    gate = k + start
            if not mgr.accept_tokens(req, [t]):
                return False, f"token {k} rejected"
        if gate is None:
            return False, "the gate never opened: the grammar was never applied"
        seen = hf.decode(ids[:gate])
        if any(name in seen for name in names):
            return False, f"the gate opened after the call began (grammar applied from {seen[-40:]!r})"
        m = compiled.ll_matcher
        return (m.is_accepting() or m.is_stopped()), "not accepting at the end"

    # -- requests
    def request_checks(self, hf, template: dict, grammar: str | None) -> list[tuple[str, bool, str]]:
        """(request shape, passed vLLM's checks?, error) under the flags --serve vllm prints."""
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.parser.parser_manager import ParserManager
        from vllm.renderers.online_renderer import OnlineRenderer

        fields = template.get("fields") or {}
        reasoning = "hf" if "thinking" in fields else None
        tool = "hf" if "tool_calls" in fields else None
        hf.response_template = template
        parser = ParserManager.get_parser(tool_parser_name=tool, reasoning_parser_name=reasoning, enable_auto_tools=bool(tool), tokenizer=hf)
        r = OnlineRenderer.__new__(OnlineRenderer)
        r.enable_auto_tools, r.exclude_tools_when_tool_choice_none, r.use_harmony = bool(tool), False, False
        r.parser, r.renderer, r.log_error_stack = parser, SimpleNamespace(tokenizer=hf, get_tokenizer=lambda: hf), False
        r.model_config = SimpleNamespace(model="m", is_diffusion=False)
        r.validate_chat_template = lambda **kw: None
        r.trust_request_chat_template, r.chat_template, r.chat_template_content_format = False, None, "auto"
        r.default_chat_template_kwargs, r.reasoning_effort_map, r.trust_request_mm_kwargs = {}, {}, False
        seen: dict = {}

        async def preprocess_chat(request, *a, parser=None, **kw):  # the part of vLLM's that matters here
            if parser is not None:
                request = parser(hf, request.tools, model_config=r.model_config, chat_template_kwargs={}).adjust_request(request=request)
            seen["request"] = request
            return [], []

        r.preprocess_chat = preprocess_chat
        out = []
        tools = copy.deepcopy(VERIFY_TOOLS)
        msgs = [{"role": "user", "content": "Weather in Paris?"}]
        shapes = recommended_requests(template, grammar, tools)
        for name, body, want in shapes:
            try:
                req = ChatCompletionRequest.model_validate({"model": "m", "messages": msgs, **body})
                got = asyncio.run(r.render_chat(req))
                if not isinstance(got, tuple):
                    raise ValueError(getattr(got, "error", got))
                sp = seen["request"].to_sampling_params(max_tokens=16, default_sampling_params={})
                # the printed flags leave vLLM's backend at "auto": a Lark grammar must land on guidance
                sp._validate_structured_outputs(SimpleNamespace(is_diffusion=False), SimpleNamespace(backend="auto"), hf)
                so = sp.structured_outputs
                if so is not None and so.grammar and so._backend != "guidance":
                    raise ValueError(f"backend auto chose {so._backend} for the grammar")
                from vllm.v1.structured_output.backend_guidance import validate_guidance_grammar
                import llguidance.hf

                validate_guidance_grammar(sp, llguidance.hf.from_tokenizer(hf))
                ok, err = True, ""
            except Exception as e:  # noqa: BLE001 - any refusal is an HTTP 400 for the client
                ok, err = False, f"{type(e).__name__}: {str(e)[:160]}"
            out.append((name, ok == want, err if ok != want else ""))
        return out


# ------------------------------------------------------------------------------------------------ SGLang
class SGL:
    """The same checks through SGLang's code: its llguidance backend (``ebnf`` requests), the reasoning
    gate its scheduler builds (``ReasonerGrammarBackend``, only where the reasoning parser yields end
    token ids), and its request conversion (``ChatCompletionRequest.to_sampling_params`` with the
    tool-call constraint its ``response_template`` tool parser derives)."""

    def __init__(self):
        from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject
        from sglang.srt.constrained.llguidance_backend import GuidanceBackend

        self.Guidance, self.Invalid = GuidanceBackend, InvalidGrammarObject
        self.gates = 0  # templates where SGLang's reasoning gate is on

    def backend(self, hf):
        from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        be = self.Guidance(hf, n_vocab=len(hf))
        be.gate = None
        if getattr(hf, "response_template", None) and "thinking" in (hf.response_template.get("fields") or {}):
            rp = ReasoningParser(model_type="response_template", stream_reasoning=False, tokenizer=hf)
            if rp.detector.get_think_end_token_ids(hf):  # as SGLang's scheduler decides
                be.gate = ReasonerGrammarBackend(be, rp, hf)
        return be

    def compile(self, be, grammar: str, gated: bool = False):
        obj = (be.gate if gated and be.gate else be)._init_value_dispatch(("ebnf", grammar), bool(gated and be.gate))
        if obj is None or isinstance(obj, self.Invalid):
            raise ValueError(f"SGLang refused the grammar: {getattr(obj, 'error_message', obj)}")
        return obj

    @staticmethod
    def accepts(obj, ids) -> bool:
        try:
            for t in ids:
                obj.accept_token(t)
        except Exception:  # noqa: BLE001 - SGLang raises on a token the grammar rejects
            return False
        inner = getattr(obj, "grammar", obj)
        if hasattr(obj, "_grammar_active") and not obj._grammar_active():
            return False
        return inner.ll_matcher.is_accepting() or inner.ll_matcher.is_stopped()

    def gated(self, be, hf, grammar: str, prompt_ids, ids, reasoning: bool, names=(), in_reasoning: bool = False) -> tuple[bool, str]:
        ok = self.accepts(self.compile(be, grammar, gated=reasoning), ids)
        return ok, "" if ok else ("rejected (reasoning gate on)" if be.gate else "rejected (grammar from the first token)")

    def request_checks(self, hf, template: dict, grammar: str | None) -> list[tuple[str, bool, str]]:
        from autoparser.serve import sglang_request_shapes
        from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
        from sglang.srt.function_call.function_call_parser import FunctionCallParser

        hf.response_template = template
        calls = "tool_calls" in (template.get("fields") or {})
        out = []
        msgs = [{"role": "user", "content": "Weather in Paris?"}]
        for name, body, want in sglang_request_shapes(template, grammar, copy.deepcopy(VERIFY_TOOLS)):
            try:
                req = ChatCompletionRequest.model_validate({"model": "m", "messages": msgs, **body})
                constraint = None
                if calls and req.tools and req.tool_choice != "none":
                    constraint = FunctionCallParser(req.tools, "response_template", tokenizer=hf).get_structure_constraint(
                        req.tool_choice, parallel_tool_calls=req.parallel_tool_calls, thinking_mode=False)
                req.to_sampling_params([], {}, constraint)
                ok, err = True, ""
            except Exception as e:  # noqa: BLE001 - a refusal is an HTTP 400
                ok, err = False, f"{type(e).__name__}: {str(e)[:160]}"
            out.append((name, ok == want, err if ok != want else "accepted, README says refused"))
        return out


def recommended_requests(template: dict, grammar: str | None, tools: list):
    """(name, request body, expected to pass) — what the README recommends (must pass) and what it
    says vLLM refuses with the hf tool parser (must be refused)."""
    from autoparser.serve import request_shapes

    return request_shapes(template, grammar, tools)


# ------------------------------------------------------------------------------------------------ xgrammar
def xgrammar_accepts(hf, st: dict, ids) -> tuple[bool, str]:
    """vLLM's XgrammarBackend compiles the structural tag; its grammar accepts the rendering."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions
    from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

    cfg = SimpleNamespace(structured_outputs_config=SimpleNamespace(disable_any_whitespace=False, disable_additional_properties=False),
                          model_config=None, speculative_config=None)
    be = XgrammarBackend(vllm_config=cfg, tokenizer=hf, vocab_size=len(hf))
    g = be.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, json.dumps(st))
    for k, t in enumerate(ids):
        if not g.accept_tokens("r", [t]):
            return False, f"token {k} rejected"
    return True, ""


def sglang_structural(hf, st: dict, ids) -> tuple[bool, str]:
    from sglang.srt.constrained.xgrammar_backend import XGrammarGrammarBackend

    be = XGrammarGrammarBackend(hf, vocab_size=len(hf))
    g = be.dispatch_structural_tag(json.dumps(st))
    if g is None or hasattr(g, "error") and not hasattr(g, "accept_token"):
        return False, f"refused: {g}"
    for k, t in enumerate(ids):
        try:
            g.accept_token(t)
        except Exception as e:  # noqa: BLE001
            return False, f"token {k}: {e}"
    return True, ""


# ------------------------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--also", nargs="*", default=[], metavar="DIR", help="template folders checked besides the corpus (e.g. ../shared/corpus/wild/templates models)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--sglang", action="store_true", help="check with SGLang's code (run with SGLang's Python)")
    args = ap.parse_args(argv)

    engine = SGL() if args.sglang else VLLM()  # whose code runs the checks
    tot = dict(templates=0, compiled=0, cases=0, accepted=0, unknown=0, unknown_rejected=0, gated=0, gated_ok=0, gated_unknown=0, gated_unknown_rejected=0, gate_only=0, gate_only_ok=0,
               lead=0, lead_ok=0, st_templates=0, st_cases=0, st_ok=0, st_unknown=0, st_unknown_rejected=0, requests=0, requests_ok=0, no_calls_templates=0)
    rows = []
    for path in templates(args.only, args.also):
        got = prepared(path)
        if isinstance(got, str):
            if args.verbose:
                print(f"  {path.stem:48} skipped: {got[:100]}")
            continue
        if not isinstance(got, tuple):  # no tool_calls field: what --serve tells clients must hold
            hf = byte_tokenizer(["<eos>"])
            checks = engine.request_checks(hf, got.template, None)
            tot["requests"] += len(checks)
            tot["requests_ok"] += sum(ok for _, ok, _ in checks)
            tot["no_calls_templates"] += 1
            for name, ok, err in checks:
                if not ok:
                    print(f"  {path.stem}: request {name}: {err}")
            continue
        res, report, lay = got
        a, template = res.analysis, res.template
        hf = byte_tokenizer(control_tokens(marker_texts(lay)))
        hf.response_template = template
        vocab = hf.get_added_vocab()
        tot["templates"] += 1
        row = dict(name=path.stem, compiled="-", accepted="", unknown="", gated="", st="", requests="")
        form = grammar_form(template, "sglang" if args.sglang else "vllm")
        cases = call_cases(report)
        try:
            be = engine.backend(hf)
            engine.compile(be, build(a, VERIFY_TOOLS, tokens=vocab))
            compiled_ok = True
            if args.sglang and be.gate:
                engine.gates += 1
        except Exception as e:  # noqa: BLE001
            compiled_ok = False
            row["compiled"] = f"NO: {str(e)[:80]}"
        if compiled_ok:
            tot["compiled"] += 1
            row["compiled"] = "yes"
        n = ok = un = unr = gn = gok = 0
        fails = []
        for c in cases:
            opened = _opened(a, c.prompt)
            text = raw_unicode(c.generated)
            ids = hf.encode(text, add_special_tokens=False)
            if compiled_ok:
                good = engine.accepts(engine.compile(be, build(a, VERIFY_TOOLS, tokens=vocab, reasoning_open=opened)), ids)
            else:
                good = False
            n, ok = n + 1, ok + good
            if not good:
                fails.append(f"{c.name}: rejected {text[:120]!r}")
            if "get_weather" in {x for x, _ in _calls(c)} and not c.history and compiled_ok:
                un += 1
                bad = engine.accepts(engine.compile(be, build(a, UNKNOWN_TOOLS, tokens=vocab, reasoning_open=opened)), ids)
                unr += not bad
            if compiled_ok:
                gn += 1
                g = build(a, VERIFY_TOOLS, tokens=vocab, reasoning_open=opened, **form)
                prompt_ids = hf.encode(c.prompt, add_special_tokens=False)
                names = {x for x, _ in _calls(c)}
                thinking = "thinking" in template["fields"]
                flags = dict(reasoning=thinking, names=names, in_reasoning=False if args.sglang else in_reasoning_flag(template))
                good, why = engine.gated(be, hf, g, prompt_ids, ids, **flags)
                gok += good
                if not good:
                    fails.append(f"{c.name} (served): {why} {text[:120]!r}")
                if lay.lead and text.lstrip()[:1] in ("{", "["):  # the lead a model may write before such a call (a workaround's)
                    lead_ids = hf.encode(lay.lead + text, add_special_tokens=False)
                    plain = engine.accepts(engine.compile(be, build(a, VERIFY_TOOLS, tokens=vocab, reasoning_open=opened)), lead_ids)
                    served, why = engine.gated(be, hf, g, prompt_ids, lead_ids, **flags)
                    tot["lead"] += 1
                    tot["lead_ok"] += plain and served
                    if not (plain and served):
                        fails.append(f"{c.name} with the lead {lay.lead!r}: " + ("rejected" if not plain else f"(served) {why}"))
                if thinking and not args.sglang:  # the alternative: no enable_in_reasoning, the after-reasoning form, vLLM's gate
                    after = build(a, VERIFY_TOOLS, tokens=vocab, reasoning_open=opened, after_reasoning=True)
                    tot["gate_only"] += 1
                    ok_gate, why = engine.gated(be, hf, after, prompt_ids, ids, reasoning=True, names=names)
                    tot["gate_only_ok"] += ok_gate
                    if not ok_gate and args.verbose:
                        print(f"  {path.stem}: {c.name} (after-reasoning form, vLLM's gate): {why}")
                if "get_weather" in {x for x, _ in _calls(c)} and not c.history:
                    g = build(a, UNKNOWN_TOOLS, tokens=vocab, reasoning_open=opened, **form)
                    bad, _ = engine.gated(be, hf, g, prompt_ids, ids, **flags)
                    tot["gated_unknown"] += 1
                    tot["gated_unknown_rejected"] += not bad
                    if bad:
                        fails.append(f"{c.name} (served): a call to an unknown tool accepted {text[:120]!r}")
        row.update(accepted=f"{ok}/{n}", unknown=f"{unr}/{un}" if un else "", gated=f"{gok}/{gn}" if gn else "")
        for k, v in (("cases", n), ("accepted", ok), ("unknown", un), ("unknown_rejected", unr), ("gated", gn), ("gated_ok", gok)):
            tot[k] += v
        # structural tags (xgrammar matches markers as text)
        try:
            st = build(a, VERIFY_TOOLS, format="structural-tag")
        except NoGrammar:
            st = None
        if st is not None:
            tot["st_templates"] += 1
            sn = sok = 0
            for c in cases:
                ids = hf.encode(raw_unicode(c.generated), add_special_tokens=False)
                good, why = sglang_structural(hf, st, ids) if args.sglang else xgrammar_accepts(hf, st, ids)
                sn, sok = sn + 1, sok + good
                if not good:
                    fails.append(f"{c.name} (structural tag): {why}")
            try:
                st_unknown = build(a, UNKNOWN_TOOLS, format="structural-tag")
            except NoGrammar:
                st_unknown = None
            for c in cases if st_unknown else ():
                if "get_weather" in {x for x, _ in _calls(c)} and not c.history:
                    ids = hf.encode(raw_unicode(c.generated), add_special_tokens=False)
                    bad, _ = sglang_structural(hf, st_unknown, ids) if args.sglang else xgrammar_accepts(hf, st_unknown, ids)
                    tot["st_unknown"] += 1
                    tot["st_unknown_rejected"] += not bad
            row["st"] = f"{sok}/{sn}"
            tot["st_cases"] += sn
            tot["st_ok"] += sok
        checks = engine.request_checks(hf, template, build(a, VERIFY_TOOLS, tokens=vocab, **form))
        rok = sum(ok for _, ok, _ in checks)
        row["requests"] = f"{rok}/{len(checks)}"
        tot["requests"] += len(checks)
        tot["requests_ok"] += rok
        fails += [f"request {name}: {err}" for name, ok, err in checks if not ok]
        rows.append(row)
        if args.verbose or fails:
            for f in fails[:40]:
                print(f"  {path.stem}: {f}")
    label = "SGLang 0.5.23 (llguidance %s, xgrammar)" % _version("llguidance") if args.sglang else "vLLM %s (llguidance %s)" % (_version("vllm"), _version("llguidance"))
    print(f"\n== engines: {label} ==")
    print(f"{'template':48} {'compiles':8} {'accepted':>9} {'unknown':>8} {'served':>8} {'struct':>7} {'requests':>8}")
    for r in rows:
        print(f"{r['name'][:48]:48} {r['compiled'][:8]:8} {r['accepted']:>9} {r['unknown']:>8} {r['gated']:>8} {r['st']:>7} {r['requests']:>8}")
    print(f"\ngrammars compiled: {tot['compiled']}/{tot['templates']}; renderings accepted: {tot['accepted']}/{tot['cases']}; "
          f"unknown tool rejected: {tot['unknown_rejected']}/{tot['unknown']}; under the served flags: {tot['gated_ok']}/{tot['gated']} "
          f"(unknown tool rejected {tot['gated_unknown_rejected']}/{tot['gated_unknown']}; "
          + (f"SGLang's reasoning gate on for {engine.gates} of {tot['templates']} templates); " if args.sglang else
             f"without enable_in_reasoning, the after-reasoning form through vLLM's gate, on templates with reasoning: "
             f"{tot['gate_only_ok']}/{tot['gate_only']}); ")
          + (f"the same with the optional lead before the call (workarounds' call_lead): {tot['lead_ok']}/{tot['lead']}; " if tot["lead"] else "")
          + f"structural tags: {tot['st_ok']}/{tot['st_cases']} renderings on {tot['st_templates']} templates "
          f"(unknown tool rejected {tot['st_unknown_rejected']}/{tot['st_unknown']}); "
          f"request shapes as the README says: {tot['requests_ok']}/{tot['requests']} (with the {tot['no_calls_templates']} templates "
          f"without a tool_calls field)")
    return 0


def _version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
