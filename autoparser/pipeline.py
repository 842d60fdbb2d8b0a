"""The pipeline: source -> render -> analyze -> workarounds -> emit -> verify, remembered per template."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass

from .analysis import workarounds as wa
from .analysis.content import analyze_content
from .analysis.families import refine as refine_family
from .analysis.model import Analysis
from .analysis.reasoning import analyze_reasoning, ended_by_calls
from .analysis.tools import analyze_tools
from .analysis.turn import analyze_turn
from .emit import emit
from .errors import AnalysisError, AutoparserError, VerificationError, without_frames
from .analysis.probes import Prober, probe_text
from .render import Renderer, budget, watchdog
from .sources.template_source import TemplateSource
from .verify import roundtrip
from .verify.capabilities import rejudge_uncovered
from .verify.verdict import describe, judge as judge_report, reconcile, settle

@dataclass(frozen=True)
class Result:
    template: dict
    analysis: Analysis
    warnings: tuple[str, ...] = ()
    hash: str = ""
    verdict: dict | None = None  # None: not verified (see autoparser.verdict)


def template_hash(chat_template: str, special_tokens: dict | None = None) -> str:
    h = hashlib.sha256(chat_template.encode("utf-8", "surrogatepass"))
    for k, v in sorted((special_tokens or {}).items()):
        h.update(f"\0{k}={v}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def analyze(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None, workarounds_dir: str | None = None) -> Analysis:
    return _analyze(chat_template, special_tokens, where, workarounds_dir)[0]


def _analyze(chat_template: str, special_tokens: dict | None, where: str | None, workarounds_dir: str | None) -> tuple[Analysis, Prober]:
    """The analysis and the prober that made it (its renderings seed verify's, ``roundtrip.share``)."""
    renderer = Renderer(chat_template, special_tokens, where=where)
    log: list[str] = []
    try:
        with budget(watchdog.TIME_BUDGET, "template"):
            pr = Prober(renderer)
            reasoning = analyze_reasoning(pr, log)
            turn = analyze_turn(pr, reasoning, log)
            content = analyze_content(pr, turn, reasoning, log)
            tools = analyze_tools(pr, turn, reasoning, content, log)
            tools = refine_family(pr, turn, reasoning, content, tools, log)
            reasoning = ended_by_calls(pr, reasoning, tools, log)
    except AutoparserError as e:
        if e.where is None:
            e.where = where
        raise
    log.append(f"{renderer.renders} renders{' (mutable sandbox)' if renderer.mutable else ''}")
    analysis = Analysis(turn, reasoning, content, tools, (), tuple(log))
    return wa.apply(analysis, chat_template, wa.load_dir(workarounds_dir)), pr


MEMO_SIZE = 256
_memo: dict[tuple, Result | VerificationError] = {}  # in-process: a repeat call costs a hash, not an analysis


def forget() -> None:
    """Drop remembered results (benchmarks; or after editing the analyzer in a live session)."""
    _memo.clear()


def infer_result(chat_template: str, special_tokens: dict | None = None, *, where: str | None = None, reasoning_field: str = "thinking",
                 workarounds_dir: str | None = None, verify: bool = True) -> Result:
    """Analyse, emit and (unless ``verify=False``) round-trip the result: a field that parses wrongly is left
    out (``Result.verdict`` says which); ``VerificationError`` when content itself does not round-trip.
    Remembered per template, special tokens, reasoning field and verify flag; callers get their own copy."""
    key = (template_hash(chat_template, special_tokens), reasoning_field, verify, workarounds_dir)
    hit = _memo.get(key)
    if hit is None:
        try:
            hit = _infer(chat_template, special_tokens, where, reasoning_field, workarounds_dir, verify)
        except VerificationError as e:  # deterministic; budget failures (TemplateError) are not remembered
            hit = without_frames(e)  # its frames (the failed verification's reports and cases) need not live on in the memo
        if len(_memo) >= MEMO_SIZE:
            _memo.pop(next(iter(_memo)))
        _memo[key] = hit
    if isinstance(hit, VerificationError):
        raise VerificationError(hit.message, where or hit.where, copy.deepcopy(hit.verdict))
    return dataclasses.replace(hit, template=copy.deepcopy(hit.template), verdict=copy.deepcopy(hit.verdict))


def _infer(chat_template, special_tokens, where, reasoning_field, workarounds_dir, verify) -> Result:
    a, pr = _analyze(chat_template, special_tokens, where, workarounds_dir)
    if verify:
        roundtrip.share(chat_template, special_tokens, pr._renders)
    try:
        template, warnings = emit(a, reasoning_field)
    except ValueError as e:
        raise AnalysisError(f"emitted template rejected by transformers: {e}", where) from None
    verdict = None
    if verify:
        try:
            template, reduced_warnings, verdict = settle(chat_template, special_tokens, a, template, reasoning_field)
        except VerificationError as e:
            e.where = e.where or where
            raise
        warnings = reconcile(warnings if reduced_warnings is None else reduced_warnings, verdict)
        if verdict["status"] == "degraded":
            warnings.append(describe(verdict))
    if pr.tools_error:
        warnings.append(f"the template raises when given tools ({pr.tools_error}): analysed without them, as transformers' "
                        "apply_chat_template(tools=...) cannot render it either; tools must reach the model another way")
    for name in ("bos_token", "eos_token"):
        if not (special_tokens or {}).get(name) and _spells(chat_template, name):
            warnings.append(f"the template reads {name}, which was not given, so it rendered empty; markers it writes may be missing (CLI: --token {name}=...)")
    leaked = sorted(set(probe_text(json.dumps(template, ensure_ascii=False))))
    if leaked:  # an analysis bug: a delimiter copied from one probe conversation
        warnings.append(f"probe text {', '.join(leaked)} in the template; it will not match real output")
    return Result(template, a, tuple(warnings), template_hash(chat_template, special_tokens), verdict)


def _spells(source: str, name: str) -> bool:
    """Whether ``source`` holds ``name`` as a whole word. The pattern starts with the name, so the regex
    module scans for it as a literal (``\\bname\\b`` was tried at every position: 3.6 ms per corpus pass)."""
    return re.search(rf"{name}(?<!\w{name})(?!\w)", source) is not None


# The probe messages a request without tools gets: text, and reasoning with it.
PLAIN_REPLIES = ("content", "awkward content", "reasoning + content")


def infer_source(src: TemplateSource, *, reasoning_field: str = "thinking", workarounds_dir: str | None = None,
                 verify: bool = True) -> tuple[Result, TemplateSource]:
    """``infer_result`` for a source, and the source whose template was analysed (``prefer_tools``)."""
    def infer(s: TemplateSource) -> Result:
        return infer_result(s.template, s.special_tokens, where=s.where, reasoning_field=reasoning_field,
                            workarounds_dir=workarounds_dir, verify=verify)

    if not verify:  # nothing to check the default's replies with
        return infer(src), src
    res, used = prefer_tools(src, infer, lambda r: r.template, reasoning_field)
    return (res if used is src else dataclasses.replace(res, warnings=(*res.warnings, *used.notes))), used


def prefer_tools(src: TemplateSource, infer, template_of, reasoning_field: str = "thinking"):
    """(what ``infer`` gives for the source's template, the source it was given). Where the source chose its
    tools template over a default one (``TemplateSource.plain``), that template's parser must also read the
    replies the default renders (requests without tools): checked on the default's own renderings. Where it
    does not, or the tools template gives no parser, the default is analysed instead, and the source returned
    says in its notes that calls (rendered only by the tools template) are not covered; where the default
    gives no parser itself, the tools template's stands, its notes saying the default's replies are unchecked.
    ``template_of``: the response_template in what ``infer`` gives (a ``Result``, a cache entry)."""
    try:
        got = infer(src)
    except AutoparserError as e:
        if src.plain is None:
            raise
        got, why, failed = None, f"it gives no parser: {e.message}", e
    if src.plain is None:
        return got, src
    plain = dataclasses.replace(src, template=src.plain, name="default", plain=None)
    if got is not None:
        try:
            why = plain_replies_fail(src.plain, template_of(got), src.special_tokens, reasoning_field)
        except AutoparserError as e:  # the default gives no parser itself: the tools template's is the only one
            said = f"the 'default' template gives no parser ({e.message}): replies to requests without tools are not checked"
            return got, dataclasses.replace(src, notes=(said,))
        if why is None:
            return got, src
        why = f"its parser does not read the replies the 'default' template renders: {why}"
    said = f"the {src.name!r} template: {why}; analysed 'default', whose parser covers no call {src.name!r} renders (--template {src.name} for those)"
    try:
        return infer(plain), dataclasses.replace(plain, notes=(said,))
    except AutoparserError:
        if got is None:
            raise failed from None  # neither gives a parser: the tools template's reason, as asked without a name
        raise


def plain_replies_fail(plain: str, response_template: dict, special_tokens: dict | None, reasoning_field: str = "thinking") -> str | None:
    """Why ``response_template`` does not read the replies template ``plain`` renders to requests without tools
    (text, reasoning), in one line; None when it does. Raises ``AutoparserError`` when ``plain`` itself gives no
    parser (no reply of its own can be placed)."""
    messages = [(n, m) for n, m in roundtrip.probe_messages() if n in PLAIN_REPLIES]
    return verify(plain, response_template, special_tokens, messages=messages, reasoning_field=reasoning_field).reason()


def infer(chat_template: str, **special_tokens: str) -> dict:
    """A verified response_template for a chat template (special tokens such as ``bos_token`` as keywords);
    fields that do not round-trip are left out. Raises ``VerificationError`` when content does not."""
    return infer_result(chat_template, special_tokens).template


def verify(chat_template: str, response_template: dict | None = None, special_tokens: dict | None = None, *, messages=None,
           reasoning_field: str = "thinking") -> roundtrip.Report:
    """Round-trip ``response_template`` (what ``infer`` emits when not given) on the template's own renderings,
    with the template's analysis placing each generation."""
    res = infer_result(chat_template, special_tokens, reasoning_field=reasoning_field)
    own = response_template is None or response_template == res.template
    uncovered = (res.verdict or {}).get("uncovered") or () if own else ()  # what the emitted field does not cover must arrive in content
    template = response_template if response_template is not None else res.template
    report = roundtrip.verify(chat_template, template, special_tokens, analysis=res.analysis, messages=messages, reasoning_field=reasoning_field)
    # Cases of capabilities the field does not cover are judged as for a template without tool calls.
    return rejudge_uncovered(report, template, set(uncovered), reasoning_field) if uncovered else report


def judge(chat_template: str, response_template: dict | None = None, special_tokens: dict | None = None, *,
          reasoning_field: str = "thinking") -> tuple[dict, roundtrip.Report, dict]:
    """(template, its round-trip report, its verdict) for ``response_template`` (the inferred one when not
    given): the verdict has the keys ``infer`` gives its own (``verdict.judge``), so ``verify --json`` reads
    like ``infer -o``. The inferred template's verdict is the one ``infer`` settled on."""
    res = infer_result(chat_template, special_tokens, reasoning_field=reasoning_field)
    template = res.template if response_template is None else response_template
    report = verify(chat_template, template, special_tokens, reasoning_field=reasoning_field)
    if template == res.template and res.verdict is not None:
        return template, report, res.verdict
    return template, report, judge_report(report, template, res.analysis, reasoning_field)
