"""``autoparser serve vllm|sglang MODEL [ENGINE ARGS...]``: one command from a model to a server whose
tool calls and reasoning are parsed, with no hand step and nothing of the user's checkpoint written.

It chooses the response_template as a loaded tokenizer would get it (the model's own if it ships one,
else inferred and verified, through the cache), adds the flags ``infer --serve`` prints for it
(``serve.flags``, the single source of both) where the user gave none of their own, says in one line what
it chose and why, and runs the engine's own CLI in this process. The template reaches the tokenizers the
engine loads in every process it starts through the environment: ``AUTOPARSER_HOOK=said`` turns on the
tokenizer-load hook in each process that loads the engine's plugins (``autoparser.plugin``), and the
verdict was already said here, so those processes attach without repeating it. A template that is refused
or cannot be inferred is said in the same line, and the server still starts, without parser flags."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from . import hook
from .errors import AutoparserError
from .serve import SERVERS, flags, shell

PROG = "autoparser serve"
# the engine's own arguments that name where the tokenizer (and so the chat template) comes from
TOKENIZER_FLAGS = {"vllm": ("--tokenizer", "--tokenizer-revision", "--revision"),
                   "sglang": ("--tokenizer-path", None, "--revision")}
ENGINE_MODULES = {"vllm": "vllm.entrypoints.cli.main", "sglang": "sglang.cli.main"}
INSTALL = {"vllm": "pip install vllm", "sglang": "pip install sglang"}


@dataclass(frozen=True)
class Plan:
    """What ``autoparser serve`` runs and why: the engine's argv (after its program name), the flags it
    added and the user's that won over ours, and the one line that says so."""

    engine: str
    model: str
    argv: tuple[str, ...]
    added: tuple[tuple[str, str | None], ...]
    kept: tuple[tuple[str, str | None], ...]  # (the user's flag as given, the value ours would have had)
    template: dict | None
    why: str  # where the template comes from and its verdict, or why there is none

    def line(self) -> str:
        """The one start-up line: the template's origin and verdict, the flags added, the user's kept."""
        parts = [f"{PROG}: {self.model}: {self.why}"]
        parts.append("added " + " ".join(shell(list(self.added))) if self.added else "added no parser flags")
        if self.kept:
            yours = [f"{_spelled(f, value(self.argv, f))} (not {shell([(f, v)])[0]})" for f, v in self.kept]
            parts.append("kept yours: " + ", ".join(yours))
        return "; ".join(parts)


def _spelled(flag: str, v: str | None) -> str:
    return flag if v is None or v.startswith("-") else shell([(flag, v)])[0]


def _norm(arg: str) -> str:
    """A flag as both engines' parsers read it: ``--tool_call_parser`` is ``--tool-call-parser``."""
    return "--" + arg[2:].replace("_", "-") if arg.startswith("--") else arg


def given(argv) -> set[str]:
    """The flags the user passed (normalised, without values)."""
    return {_norm(a.partition("=")[0]) for a in argv if a.startswith("--")}


def value(argv, flag: str) -> str | None:
    """The value the user gave ``flag`` (``--flag V`` or ``--flag=V``), the last one winning, or None."""
    out = None
    for k, arg in enumerate(argv):
        name, sep, v = arg.partition("=")
        if _norm(name) == flag:
            out = v if sep else (argv[k + 1] if k + 1 < len(argv) else None)
    return out


def merge(ours: list[tuple[str, str | None]], argv) -> tuple[list, list]:
    """(flags to add, flags of ours the user's own replace): the user's flag wins, flag by flag."""
    theirs = given(argv)
    added = [(f, v) for f, v in ours if f not in theirs]
    kept = [(f, v) for f, v in ours if f in theirs]
    return added, kept


def choose(engine: str, model: str, argv=()) -> tuple[dict | None, str, object]:
    """(response_template or None, why in a few words, analysis or None) as the engine's tokenizer will
    have it: the one the model ships, else the hook's (verified, cached, so the engine's processes read
    the same entry)."""
    from .cache import source_entry
    from .sources.hub import resolve
    from .verify.verdict import describe

    tok_flag, tok_rev, rev = TOKENIZER_FLAGS[engine]
    source = value(argv, tok_flag) or model
    revision = (value(argv, tok_rev) if tok_rev else None) or value(argv, rev)
    try:
        src = resolve(source, revision=revision)
    except AutoparserError as e:
        return None, f"no response_template ({e.message}): tool calls and reasoning arrive as content", None
    if src.response_template is not None:
        return src.response_template, "ships its own response_template (kept)", None
    try:
        entry, src = source_entry(src)
    except AutoparserError as e:
        return None, f"no response_template ({e.message}): tool calls and reasoning arrive as content", None
    analysis = None
    fields = entry["response_template"].get("fields") or {}
    if engine == "vllm" and "thinking" in fields and "tool_calls" in fields:
        try:  # whether a grammar can apply from the first token (``serve.flags``); memoised by the pipeline
            from .pipeline import analyze

            analysis = analyze(src.template, src.special_tokens, where=src.where)
        except AutoparserError:
            analysis = None
    from .emit import served

    # what the engine's processes attach (``hook``, served): the form its validator accepts
    named = f" from its {src.name!r} template" if src.name else ""
    return served(entry["response_template"]), f"response_template inferred{named}, {describe(entry['verdict'])}", analysis


def plan(engine: str, model: str, argv=()) -> Plan:
    if engine not in SERVERS:
        raise AutoparserError(f"unknown engine {engine!r} (one of {', '.join(SERVERS)})")
    argv = tuple(argv)
    template, why, analysis = choose(engine, model, argv)
    ours = flags(template, engine, analysis) if template is not None else []
    added, kept = merge(ours, argv)
    head = ("serve", model) if engine == "vllm" else ("serve", "--model-path", model)
    full = (*head, *argv, *(w for f, v in added for w in ((f,) if v is None else (f, v))))
    return Plan(engine, model, full, tuple(added), tuple(kept), template, why)


def environment(environ=None) -> dict:
    """The environment the engine runs in: the hook asked for, the verdict already said."""
    env = dict(os.environ if environ is None else environ)
    env[hook.ENV] = hook.SAID
    return env


def run(p: Plan) -> int:
    """Run the engine's own CLI (``vllm serve`` / ``sglang serve``) in this process, with the environment
    its processes inherit; returns its exit status."""
    import importlib
    import importlib.util

    module = ENGINE_MODULES[p.engine]
    if importlib.util.find_spec(module.partition(".")[0]) is None:
        raise AutoparserError(f"{p.engine} is not installed in this Python ({sys.executable}): {INSTALL[p.engine]}")
    os.environ.update(environment())
    hook.enable_from_env(served=True)
    sys.argv = [p.engine, *p.argv]
    try:
        result = importlib.import_module(module).main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return result if isinstance(result, int) else 0
