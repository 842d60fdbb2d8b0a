"""Self-verification: the round trip of BRIEF §4 on the template's own renderings.

For each probe message M and each thinking mode, render the prompt and the conversation ending in
M; the text after the prompt, cut after the end-of-turn marker, is what a model would generate
(``_generation``). Parsing it with the response_template (prefix = the prompt), one-shot and streamed
in small chunks, must give back every field of M that the template rendered (``_expected``): no more,
since templates trim, drop and truncate fields, and no less, since that would hide a parser bug."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

from ..analysis.families import CONTENT_AS_REASONING
from ..analysis.model import Analysis
from ..analysis.diff import MARKER, prefix_len
from ..analysis.probes import Prober, assistant
from ..errors import TemplateError
from ..render import REASONING_KEYS, Renderer, budget, watchdog
from . import written
from .generation import VERIFY_TOOLS, _generation, _reasoning
from .parsing import _norm_calls, _Parsing

AWKWARD = 'He said "hi" {not: json} <b>bold</b> & \\ back\\slash\n  tab\there — naïve 日本語 🙂'

def _call(name, args, id):
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


def probe_messages() -> list[tuple[str, dict]]:
    w1 = _call("get_weather", {"city": "Paris", "days": 3, "metric": True}, "call00001")
    w2 = _call("get_weather", {"city": "Zürich", "days": 1, "metric": False}, "call00002")
    q = _call("run_query", {"query": AWKWARD, "limit": 2.5, "options": {"nested": {"deep": [1, 2, {"x": "y"}]}, "rows": [{"a": 1}, {"b": "}, {"}], "flag": None}, "tags": ["a", "b c"]}, "call00003")
    return [
        ("content", assistant("Hello! Here is some code:\n```python\nprint({'a': 1})\n```\nBye.")),
        ("awkward content", assistant(AWKWARD)),
        ("reasoning + content", assistant("The answer is 42.", reasoning="Let me think about it.\nStep 1: {x} <y>.")),
        ("one call", assistant(None, calls=[w1])),
        ("parallel calls", assistant(None, calls=[w1, w2])),
        ("content + call", assistant("Let me check that for you.", calls=[w1])),
        ("reasoning + call", assistant(None, reasoning="I need the weather tool.", calls=[w1])),
        ("nested args", assistant(None, calls=[q])),
    ]


HISTORY = [
    {"role": "user", "content": "Earlier question?"},
    {"role": "assistant", "content": "Earlier answer."},
]


@dataclass
class Case:
    name: str
    mode: str
    history: bool
    status: str  # pass | fail | skip | limit (fails only on values the analysis found unreadable)
    how: str = ""  # exact | prefill-dropped | synthesized
    fields: dict = field(default_factory=dict)  # field -> pass/fail
    prompt: str = ""
    generated: str = ""
    expected: dict = field(default_factory=dict)
    parsed: dict = field(default_factory=dict)
    streamed: dict = field(default_factory=dict)
    error: str = ""  # why it failed, was skipped or is a limit; on a passing case, the caveat it passed under
    source: tuple = field(default=(), repr=False, compare=False)  # (msgs, message, mode) to re-render
    reading: "_Reading | None" = field(default=None, repr=False, compare=False)  # another reading of the same text

    @property
    def calls_sent(self) -> bool:
        """Whether the message the case renders carries tool calls (``_compare``)."""
        return bool(self.source and self.source[1].get("tool_calls"))


class _Reading:
    """The message the text also reads as when the template renders the content where it renders reasoning
    (gpt-oss: a tool-call turn's content goes to the analysis channel): then either reading is the text's, and
    a parse may give either. Whether the template does is a render; it is asked only when the parse does not
    read the text as the message has it (``_check``), not for every case that reads right."""

    __slots__ = ("expected", "_ask", "_holds")

    def __init__(self, expected: dict, ask):
        self.expected, self._ask, self._holds = expected, ask, None

    def holds(self) -> bool:
        if self._holds is None:
            self._holds = bool(self._ask())
            self._ask = None
        return self._holds


FIELDS = frozenset({"content", "reasoning", "tool_calls", "ids"})


def template_fields(response_template: dict, reasoning_field: str = "thinking") -> frozenset[str]:
    """The fields a response_template parses, in verify's names. Only these are judged: text of a field
    it lacks (tool calls of a template without ``tool_calls``) must arrive in content instead."""
    fields = response_template.get("fields") or {} if isinstance(response_template, dict) else {}
    out = {name for key, name in (("content", "content"), (reasoning_field, "reasoning"), ("tool_calls", "tool_calls")) if key in fields}
    calls = fields.get("tool_calls")
    if isinstance(calls, dict) and (not isinstance(calls.get("transform"), dict) or "id" in calls["transform"]):
        out.add("ids")
    return frozenset(out)


@dataclass
class Report:
    cases: list[Case]
    fields: frozenset = FIELDS  # what the response_template parses (``template_fields``)
    parsing: object = field(default=None, repr=False, compare=False)  # the ``_Parsing`` its parses are remembered in

    @property
    def passed(self) -> bool:
        return all(c.status != "fail" for c in self.cases) and any(c.status in ("pass", "limit") for c in self.cases)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0, "limit": 0}
        for c in self.cases:
            out[c.status] += 1
        return out

    def per_field(self) -> dict[str, str]:
        """Each field's worst outcome: fail, then limit, then pass."""
        rank = {"pass": 0, "limit": 1, "fail": 2}
        out: dict[str, str] = {}
        for c in self.cases:
            for f, ok in c.fields.items():
                ok = "limit" if c.status == "limit" and ok == "fail" else ok
                if rank[ok] >= rank.get(out.get(f, "pass"), 0) or f not in out:
                    out[f] = ok
        return out

    def limits(self) -> list[str]:
        """What the template renders that no response_template can read back, each said once."""
        return list(dict.fromkeys(c.error for c in self.cases if c.status == "limit" or c.status == "pass" and c.error))

    def first_failure(self) -> Case | None:
        return next((c for c in self.cases if c.status == "fail"), None)

    def first_line(self) -> str | None:
        """The first diverging case as one line, or None."""
        first = self.first_failure()
        return None if first is None else f"{first.name!r} (mode {first.mode}, history {first.history}): {_first_line(first)}"

    def reason(self) -> str | None:
        """Why the report did not pass, in one line; None when it passed."""
        if self.passed:
            return None
        if self.first_failure() is None:
            why = next((c.error for c in self.cases if c.error), "no probe messages")
            return f"no probe message rendered: {why}"
        return self.first_line()

    def summary(self) -> dict:
        """The verdict without the renderings: what ``infer --verify`` prints and ``batch`` records."""
        return {**self._verdict(), "first_failure": self.first_line(), "reason": self.reason()}

    def to_dict(self) -> dict:
        first = self.first_failure()
        keys = ("name", "mode", "history", "how", "prompt", "generated", "expected", "parsed", "streamed", "error")
        return {**self._verdict(), "first_failure": None if first is None else {k: getattr(first, k) for k in keys}}

    def _verdict(self) -> dict:
        return {"passed": self.passed, "counts": self.counts(), "fields": self.per_field(), "limits": self.limits()}


def _said(prompt: str, a: Analysis) -> str:
    """With delimiter-only reasoning, the words between the start anchor and the end of the prompt
    (Apriel's "Here are my reasoning steps:") are the start of the reasoning the parser reads."""
    if a.reasoning.mode != "DELIMITER":
        return ""
    ends = [prompt.rfind(x) + len(x) for x in a.turn.anchors if x in prompt]
    tail = prompt[max(ends):] if ends else ""
    return "" if MARKER.search(tail) else tail.strip()


ALT = "QXVERIFYALTQX"


def _changes(pr: Prober, a: Analysis, msgs: list[dict], mode: dict, text: str, variant: dict, around: dict | None = None) -> bool | None:
    """Whether the generation for ``variant`` differs from ``text`` (None: the variant does not render)."""
    g = _generation(pr, a, msgs, variant, mode, around)
    return None if g is None else g[1] != text


def _strings(value, out: list[str]) -> list[str]:
    """Every key and leaf of ``value`` as text, as a template prints it (``tojson`` escapes; a value it
    changes cannot come out of it unchanged)."""
    t = type(value)
    if t is str:  # most leaves, and every key: what ``str`` gives, without asking
        out.append(value)
        return out
    if t is dict:
        for k, v in value.items():
            if type(k) is str:
                out.append(k)
            else:
                _strings(k, out)
            _strings(v, out)
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            _strings(k, out)
            _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)
    elif value is not None:
        out.append(str(value))
    return out


_TOOL_TEXT = "\0".join(_strings(VERIFY_TOOLS, [json.dumps(VERIFY_TOOLS, ensure_ascii=False)]))


def _carried(pr: Prober, a: Analysis, msgs: list[dict], variant: dict, value: str, text: str) -> bool:
    """Whether the generation certainly changes when ``value`` is replaced (``variant``), known without
    rendering it: ``value`` is in the text, and nothing the variant's rendering reads (the template's
    source, the tools, the other messages, the variant's own fields, the special tokens) or
    ``_generation`` adds (the reasoning markers) holds it, its first or its last words, so no generation
    from the variant holds it and none equals the text. If the variant did not render at all, ``value in
    text`` decides the same. Only long values qualify: a short one occurs by chance."""
    if len(value) < 16 or value not in text:
        return False
    base, own = _read(pr, a, msgs), "\0".join(_strings(variant, []))
    return not any(v in base or v in _TOOL_TEXT or v in own for v in (value, value[:8], value[-8:]))


def _read(pr: Prober, a: Analysis, msgs: list[dict]) -> str:
    """What every rendering of a conversation ``msgs`` reads besides the tools and the message itself (the
    source, those messages, the special tokens) and the reasoning markers ``_generation`` adds, joined by
    NULs, which no value holds: a value is in one of them exactly when it is in the joined text. Kept on the
    prober: every probe message's checks ask it again."""
    key = ("read", repr(msgs), a.reasoning.start, a.reasoning.end)
    hit = pr.memo.get(key)
    if hit is None:
        r = a.reasoning
        hit = pr.memo[key] = "\0".join([pr.r.source, *_strings(msgs, []), *pr.r.special_tokens.values(), r.start, r.end])
    return hit


def _traces(value: str, text: str) -> bool:
    """Whether any run of six or more letters, digits and spaces of ``value`` is in ``text``: what a rendering
    of the value through a name the template does not spell (``message|tojson``, a loop over its items) would
    leave, escaped or not."""
    return any(run.strip() in text for run in _RUNS.findall(value) if len(run.strip()) >= 6)


_RUNS = re.compile(r"[\w ]{6,}")
_TOOL_NAMES = frozenset(t["function"]["name"] for t in VERIFY_TOOLS)


def _named(pr: Prober, a: Analysis, msgs: list[dict], m: dict, text: str) -> bool:
    """Whether renaming the message's calls certainly changes the generation, known without rendering it
    (``_carried`` for call names): a called name is in the text and nothing else the rendering reads holds
    it but the tool list, which is not what the text shows: a tool the message does not call is not named
    in it. A wrong answer here could only add calls to what the text must parse back to, so it would
    fail verification, never pass a wrong template."""
    names = {c["function"]["name"] for c in m["tool_calls"]}
    shown = [n for n in names if len(n) >= 6 and n in text]
    if not shown:
        return False
    unnamed = {**m, "tool_calls": [{**c, "function": {**c["function"], "name": ""}} for c in m["tool_calls"]]}
    base, own = _read(pr, a, msgs), "\0".join(_strings(unnamed, []))
    listed_not_shown = any(n not in text for n in _TOOL_NAMES - names)
    return any(n not in base and n not in own and (n not in _TOOL_TEXT or listed_not_shown) for n in shown)


def _expected(pr: Prober, a: Analysis, msgs: list[dict], m: dict, mode: dict, text: str, around: dict | None = None) -> tuple[dict, dict | None]:
    """The fields of M that the generated text carries, found by changing each field's value (content,
    reasoning, call names) and re-rendering: a substring test is fooled by short values and by templates
    that trim fields, and removing a field changes the turn's shape, not only its text. Values are
    compared whitespace-trimmed; tool calls are the leading calls the rendering carries (some templates
    render only the first), ids those found verbatim. Second: the message that reads as the content given
    as reasoning, when the template may render it the same (``_Reading``; None when it certainly does not)."""
    exp: dict = {}
    as_reasoning = None
    content = m.get("content") if isinstance(m.get("content"), str) else ""
    if content.strip():
        alt = ALT if content.strip() != ALT else ALT + "2"
        variant = {**m, "content": alt}
        hit = True if _carried(pr, a, msgs, variant, content.strip(), text) else _changes(pr, a, msgs, mode, text, variant, around)
        if hit or (hit is None and content.strip() in text):
            exp["content"] = content.strip()
            # A template may render content where it renders reasoning (gpt-oss: the analysis channel
            # of a tool-call turn). Then no parser can tell them apart; the text reads as reasoning.
            # Known without rendering when the template spells no reasoning key (``Prober.reads_reasoning``):
            # the content given as reasoning then renders nowhere, and ``_carried`` says the text cannot be
            # had without it.
            if not _reasoning(m).strip():
                unread = not pr.reads_reasoning and _carried(pr, a, msgs, {**m, "content": None}, content.strip(), text)
                if not unread:
                    as_reasoning = {**m, "content": None, "reasoning_content": content}
    reasoning = _reasoning(m)
    if reasoning.strip():
        alt = ALT if reasoning.strip() != ALT else ALT + "2"
        variant = {**{k: v for k, v in m.items() if k not in REASONING_KEYS}, "reasoning_content": alt}
        if _carried(pr, a, msgs, variant, reasoning.strip(), text):
            hit = True
        elif not pr.reads_reasoning and reasoning.strip() not in text and not _traces(reasoning, text):
            hit = False  # spelt nowhere, and nothing of it in the text (``_generation`` writes none): no rendering reads it
        else:
            hit = _changes(pr, a, msgs, mode, text, variant, around)
        if hit or (hit is None and reasoning.strip() in text):
            exp["thinking"] = reasoning.strip()
    calls = m.get("tool_calls") or []
    if calls:
        renamed = [{**c, "function": {**c["function"], "name": ALT.lower()}} for c in calls]
        if _named(pr, a, msgs, m, text):
            hit = True
        elif "tool_calls" not in pr.r.source and not _traces("\0".join(_strings([[c.get("id"), c["function"]["name"], c["function"]["arguments"]] for c in calls], [])), text):
            hit = False  # spelt nowhere, and nothing of them in the text: no rendering reads them
        else:
            hit = _changes(pr, a, msgs, mode, text, {**m, "tool_calls": renamed}, around)
        if hit or (hit is None and any(c["function"]["name"] in text for c in calls)):
            n = next((k for k in range(1, len(calls)) if _changes(pr, a, msgs, mode, text, {**m, "tool_calls": calls[:k]}, around) is False), len(calls))
            exp["tool_calls"] = [
                {"name": c["function"]["name"], "arguments": c["function"]["arguments"], "id": c["id"] if c.get("id") and c["id"] in text else None}
                for c in calls[:n]
            ]
    return exp, as_reasoning


def _compare(exp: dict, got: dict, reasoning_field: str, fields: frozenset = FIELDS, calls_sent: bool = False) -> dict[str, str]:
    """Each judged field of ``got`` against ``exp``. Reasoning and tool calls the template does not parse
    are expected in content: its text, and each call's name. ``calls_sent``: the message carried calls; where
    the template renders none of them but markup of its own for such a turn (``[TOOL_CALLS]`` and the content)
    and no tool_calls field parses it, that markup is the calls' text and arrives in content beside it."""
    res = {}
    content = (got.get("content") or "").strip()
    spilled = [exp["thinking"]] if "thinking" in exp and "reasoning" not in fields else []
    spilled += [c["name"] for c in exp.get("tool_calls", [])] if "tool_calls" not in fields else []
    unrendered_calls = calls_sent and "tool_calls" not in fields and "tool_calls" not in exp and bool(exp.get("content"))
    if "content" in fields and (spilled or unrendered_calls):  # the content within what arrived, not all of it
        res["content"] = "pass" if all(x in content for x in [exp.get("content", ""), *spilled]) else "fail"
    elif "content" in fields and ("content" in exp or content):
        res["content"] = "pass" if content == exp.get("content", "") else "fail"
    if "reasoning" in fields and ("thinking" in exp or (got.get(reasoning_field) or "").strip()):
        res["reasoning"] = "pass" if (got.get(reasoning_field) or "").strip() == exp.get("thinking", "") else "fail"
    if "tool_calls" in fields and ("tool_calls" in exp or got.get("tool_calls")):
        want = exp.get("tool_calls", [])
        have = _norm_calls(got.get("tool_calls"))
        names_args = [(c["name"], c["arguments"]) for c in want] == [(c["name"], c["arguments"]) for c in have]
        res["tool_calls"] = "pass" if names_args else "fail"
        if "ids" in fields and any(c["id"] for c in want):
            res["ids"] = "pass" if [c["id"] for c in want if c["id"]] == [c["id"] for c in have if c["id"]] else "fail"
    return res


def _first_line(c: Case) -> str:
    if c.error:
        return c.error.splitlines()[0]
    bad = [f for f, ok in c.fields.items() if ok == "fail"]
    return f"{', '.join(bad)} differ; generated {c.generated[:120]!r}"


_PROBERS: dict = {}
_SHARED: dict = {}  # the analysis' raw render cache for the template it analysed last (``share``)


def _key(chat_template: str, special_tokens: dict | None) -> tuple:
    return chat_template, tuple(sorted((k, v) for k, v in (special_tokens or {}).items() if isinstance(v, str)))


def share(chat_template: str, special_tokens: dict | None, renders: dict) -> None:
    """Start the next verification of this template from the analysis' renderings (``Prober(renders=)``):
    the prober's own start-up probes (thinking modes, message styles) are renderings the analysis made."""
    _SHARED.clear()
    _SHARED[_key(chat_template, special_tokens)] = renders


def _prober(chat_template: str, special_tokens: dict | None, seconds: float) -> Prober:
    """A prober per template, kept for the next call (the fuzz suite verifies one message at a time: the
    prompts and reference turns are then rendered once, not per message; the degrade loop and a second
    ``verify`` of the same template reuse its cases and parses, ``Prober.memo``). Its render cache is
    dropped when it grows large."""
    key = _key(chat_template, special_tokens)
    pr = _PROBERS.get(key)
    if pr is None or len(pr._cache) > 2000:
        renders = _SHARED.pop(key, None) if pr is None else None
        with budget(seconds, "template"):
            pr = Prober(Renderer(chat_template, special_tokens), renders)
        _PROBERS.clear()
        _PROBERS[key] = pr
    return pr


def verify(chat_template: str, response_template: dict, special_tokens: dict | None = None, *, analysis: Analysis, messages=None, reasoning_field: str = "thinking") -> Report:
    """Round-trip ``response_template`` on the template's own renderings (``pipeline.verify`` checks what
    ``infer`` emits). The analysis says where each rendering's generation starts.

    The renderings of each probe message run under the analysis' time budget (``watchdog.TIME_BUDGET``);
    parsing runs outside it."""
    fields = template_fields(response_template, reasoning_field)
    pr = _prober(chat_template, special_tokens, watchdog.TIME_BUDGET)
    cases = _cases(pr, analysis, messages)
    parsing = _Parsing(pr, response_template, VERIFY_TOOLS)
    for case in cases:
        if case.status == "pass":
            _check(case, response_template, reasoning_field, fields, parsing)
        if case.status == "fail" and analysis.tools.unreadable:
            _limit(pr, analysis, case, response_template, reasoning_field, fields, parsing)
        if case.status == "fail" and "tool_calls" in fields:
            _written(analysis, case, response_template, reasoning_field, fields, parsing)
    report = Report(cases, fields, parsing)
    return report


def _cases(pr: Prober, analysis: Analysis, messages) -> list[Case]:
    """The cases before any parsing, as fresh copies: they depend on the template and its analysis, not on
    the response_template, so the degrade loop's re-verifications (and a second ``verify``) reuse them."""
    key = ("cases", repr(messages), repr(analysis))
    made = pr.memo.get(key)
    if made is None:
        made = []
        arounds: dict[bool, dict] = {False: {}, True: {}}  # each conversation's shared renderings (``_around``)
        for name, m in messages or probe_messages():
            with budget(watchdog.TIME_BUDGET, "template"):  # each probe message's renderings, as one analysis
                for hist in (False, True):
                    msgs = (HISTORY if hist else []) + [{"role": "user", "content": "What is the weather in Paris?"}]
                    found = False
                    for mode in pr.modes:
                        case = _case(pr, analysis, name, msgs, m, mode, hist, arounds[hist])
                        if case is not None:
                            made.append(case)
                            found = True
                    if not found:
                        made.append(Case(name, "-", hist, "skip", error=_unrendered(pr, msgs + [m])))
        pr.memo[key] = made
    return [copy.copy(c) for c in made]


def _unrendered(pr: Prober, msgs: list[dict]) -> str:
    """Why no thinking mode gave a case for this conversation: the template's own error when it raises."""
    try:
        full = pr.render(msgs, gen=False, mode=pr.modes[0], tools=VERIFY_TOOLS)
    except TemplateError as e:
        return f"the template raises: {e.message}"
    prompt = pr.try_render(msgs[:-1], gen=True, mode=pr.modes[0], tools=VERIFY_TOOLS)
    if prompt is not None and not full.startswith(prompt):
        k = prefix_len(prompt, full)
        return f"the conversation does not continue the generation prompt: it ends {prompt[k:][:40]!r} where the reply renders {full[k:][:40]!r}"
    return "template does not render this message"


def _case(pr: Prober, a: Analysis, name: str, msgs: list[dict], m: dict, mode: dict, hist: bool, around: dict | None = None) -> Case | None:
    """Message ``m`` in one thinking mode: what a model would generate, and what parsing must give back
    (None when this mode does not render it)."""
    got = _generation(pr, a, msgs, m, mode, around)
    if got is None:
        return None
    prompt, text, how = got
    exp, as_reasoning = _expected(pr, a, msgs, m, mode, text, around)
    mode_name = ",".join(f"{k}={v}" for k, v in mode.items()) or "default"
    rewritten = [f for f in ("content", "thinking") if f in exp and exp[f] not in text]
    if rewritten:  # the template renders the field, but not as the message has it (splits, truncates)
        why = f"the template rewrites the {' and '.join(FIELD_NAMES[f] for f in rewritten)} it renders (the rendered text is not the message's), so no round trip can be judged"
        return Case(name, mode_name, hist, "skip", how, prompt=prompt, generated=text, expected=exp, error=why)
    said = _said(prompt, a) if how == "synthesized" else ""
    if said:  # a phrase the prompt prefills ahead of delimiter-only reasoning is part of it
        exp["thinking"] = (said + "\n" + exp.get("thinking", "")).strip()
    if not exp:
        return None
    reading = None
    if as_reasoning is not None and "content" in exp:
        alt = {k: v for k, v in exp.items() if k != "content"}
        alt["thinking"] = (said + "\n" + exp["content"]).strip() if said else exp["content"]
        reading = _Reading(alt, lambda: _changes(pr, a, msgs, mode, text, as_reasoning, around) is False)
    return Case(name, mode_name, hist, "pass", how, prompt=prompt, generated=text, expected=exp, source=(msgs, m, mode), reading=reading)


def _kinds(value) -> set[str]:
    """The JSON kinds inside ``value``, itself included; ``boolean`` and ``escaped`` (a string that a
    Python repr writes with escapes or in the other quotes) too."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, str):
        out = {"escaped"} if any(ch in value for ch in "\\\n\t\r'") or not value.isprintable() else set()
        return out | ({"html"} if any(ch in value for ch in "&<>\"'") else set())
    if isinstance(value, dict):
        return {"object"}.union(*map(_kinds, value.values()))
    if isinstance(value, list):
        return {"array"}.union(*map(_kinds, value))
    return set()


def _limit(pr: Prober, a: Analysis, case: Case, response_template: dict, reasoning_field: str, fields: frozenset = FIELDS, parsing=None) -> None:
    """A failing case is a limit, not a bug, when its calls carry argument values of a kind the analysis
    found unreadable (Python literals) and the same message without those arguments round-trips."""
    msgs, m, mode = case.source
    reasons = dict(a.tools.unreadable)
    dropped: dict[str, set[str]] = {}  # argument -> its unreadable kinds
    for c in m.get("tool_calls") or []:
        for k, v in c["function"]["arguments"].items():
            if kinds := _kinds(v) & reasons.keys():
                dropped.setdefault(k, set()).update(kinds)
    if not dropped:
        return
    calls = [{**c, "function": {**c["function"], "arguments": {k: v for k, v in c["function"]["arguments"].items() if k not in dropped}}}
             for c in m["tool_calls"]]
    with budget(watchdog.TIME_BUDGET, "template"):
        retry = _case(pr, a, case.name, msgs, {**m, "tool_calls": calls}, mode, case.history)
    if retry is None:
        return
    _check(retry, response_template, reasoning_field, fields, parsing)
    if retry.status == "pass":
        why = "; ".join(reasons[k] for k in reasons if any(k in ks for ks in dropped.values()))
        case.status = "limit"
        case.error = f"not covered: {why} (the same calls without {', '.join(dropped)} round-trip)"


def _only_values_differ(case: Case) -> bool:
    """Whether a failing case's parses found the expected calls by name, in order, with every other field
    right: the format was read, only argument values did not come back (``verify.written``)."""
    want = [c["name"] for c in case.expected.get("tool_calls") or []]
    if case.error or not want or any(v == "fail" for f, v in case.fields.items() if f != "tool_calls"):
        return False
    return all([c["name"] for c in _norm_calls((got or {}).get("tool_calls"))] == want for got in (case.parsed, case.streamed))


def _written(a: Analysis, case: Case, response_template: dict, reasoning_field: str, fields: frozenset, parsing) -> None:
    """A tool-call case whose only difference is argument values is a limit when the same calls written in
    the format as a model writes them (``verify.written``) parse back: the template's history is lossy,
    not the format. The arguments the analysis found unreadable are left out of that written output."""
    if not _only_values_differ(case):
        return
    lay = written.format_layout(a)
    if lay is None:
        return
    # The format's own limits are left out first; then the kinds the analysis found unreadable, which may be
    # the rendering's only (a model writes JSON where the template printed Python) or the format's too.
    own = written.format_limits(lay)
    steps = [{}, own, {**own, **dict(a.tools.unreadable)}]
    for i, kinds in enumerate(steps):
        if i and kinds == steps[i - 1]:
            continue
        expected = copy.deepcopy(case.expected)
        left_out: set[str] = set()
        for c in expected["tool_calls"]:
            bad = {k for k, v in c["arguments"].items() if _kinds(v) & kinds.keys()}
            left_out |= {kind for k in bad for kind in _kinds(c["arguments"][k]) & kinds.keys()}
            c["arguments"] = {k: v for k, v in c["arguments"].items() if k not in bad}
        text = written.written(a, lay, case.generated, expected)
        if text is None:
            return
        retry = Case(case.name, case.mode, case.history, "pass", case.how, prompt=case.prompt, generated=text, expected=expected)
        _check(retry, response_template, reasoning_field, fields, parsing)
        if retry.status == "pass":
            break
    else:
        return
    case.status = "limit"
    case.error = written.LOSSY + ("; not covered: " + "; ".join(kinds[k] for k in kinds if k in left_out) if left_out else "")


FIELD_NAMES = {"content": "content", "thinking": "reasoning", "tool_calls": "tool_calls"}


def _check(case: Case, response_template: dict, reasoning_field: str, fields: frozenset = FIELDS, parsing: _Parsing | None = None) -> None:
    """Parse the generated text one-shot and streamed; mark the case and each field pass or fail."""
    try:
        parsing = parsing or _Parsing(None, response_template, VERIFY_TOOLS)
        case.parsed = parsing.one_shot(case.prompt, case.generated)
        case.streamed = parsing.streamed(case.prompt, case.generated)
    except Exception as e:  # noqa: BLE001 - a parse error is a verification failure
        case.status, case.error = "fail", f"{type(e).__name__}: {e}"
        case.fields = {f: "fail" for f in {FIELD_NAMES[k] if FIELD_NAMES[k] in fields else "content" for k in case.expected} & fields}
        return
    sent = case.calls_sent
    f1 = _compare(case.expected, case.parsed, reasoning_field, fields, sent)
    f2 = _compare(case.expected, case.streamed, reasoning_field, fields, sent)
    if case.reading is not None and "fail" in (*f1.values(), *f2.values()) and case.reading.holds():
        case.expected = case.reading.expected  # the text reads as reasoning as well: the parse may give that
        f1 = _compare(case.expected, case.parsed, reasoning_field, fields, sent)
        f2 = _compare(case.expected, case.streamed, reasoning_field, fields, sent)
        if "fail" not in (*f1.values(), *f2.values()):
            case.error = CONTENT_AS_REASONING  # it passes so, and the verdict's limits say that it does
    case.fields = {k: ("pass" if f1.get(k) == f2.get(k) == "pass" else "fail") for k in sorted(set(f1) | set(f2))}
    if any(v == "fail" for v in case.fields.values()):
        case.status = "fail"
