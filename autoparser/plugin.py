"""The engines' general plugins: vLLM (``vllm.general_plugins``) and SGLang (``sglang.srt.plugins``) call
every installed entry point of their group early in each process they start (API server, engine core,
scheduler, detokenizer), which is the one place that reaches all of them: patching tokenizer loading in
the parent alone does not, as workers are spawned. Each entry point turns the tokenizer-load hook on, so
a model that ships no ``response_template`` gets an inferred, verified one and the engine's ``hf`` /
``response_template`` parsers work for it; a model that ships one keeps it (``hook.attach``).

Installing autoparser must change nothing for someone who did not ask: the hook goes on only when
``AUTOPARSER_HOOK`` asks for it (``autoparser serve`` sets it) or the engine's own allow-list
(``VLLM_PLUGINS`` / ``SGLANG_PLUGINS``) names ``autoparser``. Never raises: a plugin that fails would
stop the engine's process from starting."""

from __future__ import annotations

import os

from . import hook

NAME = "autoparser"  # the entry point's name in both groups (pyproject.toml)
ALLOW_LISTS = {"vllm": "VLLM_PLUGINS", "sglang": "SGLANG_PLUGINS"}


def opted_in(engine: str, environ=None) -> bool:
    """Whether this process was asked for the hook: ``AUTOPARSER_HOOK`` on, or the engine's allow-list
    naming this plugin (an allow-list that names it is the operator choosing it by name)."""
    env = os.environ if environ is None else environ
    if hook.asked(env):
        return True
    names = {n.strip() for n in env.get(ALLOW_LISTS[engine], "").split(",")}
    return NAME in names


def register(engine: str, environ=None) -> bool:
    """Turn the hook on where this process opted in; whether it is on."""
    env = os.environ if environ is None else environ
    if not opted_in(engine, env):
        return hook.enabled()
    return hook.enable_from_env({hook.ENV: hook.asked(env) or "on"}, served=True)


def vllm() -> None:
    """Entry point of ``vllm.general_plugins``."""
    register("vllm")


def sglang() -> None:
    """Entry point of ``sglang.srt.plugins``."""
    register("sglang")
