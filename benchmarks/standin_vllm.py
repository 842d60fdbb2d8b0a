"""Stand-in model execution for ``benchmarks/serve_engines.py``: the one part of an engine replaced to run
it without a GPU. Everything around it is the engine's own: its CLI and server start-up, the processes it
spawns (and the plugins it loads in each), tokenizer loading, request handling, scheduling, detokenizing,
and the tool-call and reasoning parsers.

vLLM: ``StandInExecutor``, passed as ``--distributed-executor-backend standin_vllm.StandInExecutor`` (vLLM
resolves a qualified class name there; this folder is on the engine processes' PYTHONPATH). Instead of
running a model it answers each request with the token ids of a script: the text
``$STANDIN_SCRIPTS`` (a JSON file, seed -> text) holds under the request's ``seed``, then the end-of-text
token. The KV cache it reports is a small one on the CPU, which no kernel ever touches."""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path

from vllm.v1.executor.abstract import Executor
from vllm.v1.outputs import ModelRunnerOutput


def script_ids(tokenizer, text: str) -> list[int]:
    """The ids a model that wrote ``text`` would produce: up to and including the first end-of-text token
    (the engine stops there and keeps it out of the text), or the text and then end-of-text."""
    eos = tokenizer.eos_token_id
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids[: ids.index(eos) + 1] if eos in ids else [*ids, eos]


class StandInExecutor(Executor):
    uses_ray = False
    supports_pp = False

    def _init_executor(self) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_config.tokenizer)
        rt = getattr(self.tokenizer, "response_template", None)  # attached here only by the plugin (this is the engine core process)
        print(f"standin executor (pid {os.getpid()}): tokenizer response_template fields: {sorted(rt.get('fields') or {}) if rt else None}", flush=True)
        self.scripts = json.loads(Path(os.environ["STANDIN_SCRIPTS"]).read_text(encoding="utf-8"))
        self.pending: dict[str, list[int]] = {}  # request -> ids still to write
        self.prefill: dict[str, int] = {}  # request -> prompt tokens not yet scheduled
        self.last = None

    # -- what the engine core asks of workers at start-up
    def collective_rpc(self, method, timeout=None, args=(), kwargs=None, non_block=False, **_):
        own = getattr(self, f"_rpc_{method}" if isinstance(method, str) else "", None)
        result = [own(*args, **(kwargs or {})) if own else None]
        if non_block:
            f: Future = Future()
            f.set_result(result)
            return f
        return result

    def _rpc_get_kv_cache_spec(self):
        import torch
        from vllm.v1.kv_cache_interface import FullAttentionSpec

        return {"model.layers.0.self_attn.attn": FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=16, dtype=torch.float32)}

    def _rpc_determine_available_memory(self):
        return 32 << 20

    def _rpc_get_supported_kv_cache_layouts(self):
        return ["NHD"]

    def _rpc_get_supported_tasks(self):
        return ("generate",)

    def _rpc_compile_or_warm_up_model(self):
        from types import SimpleNamespace

        return SimpleNamespace(language_model=0.0, encoder=0.0)

    def check_health(self) -> None:
        return None

    def shutdown(self) -> None:
        return None

    # -- the model
    def execute_model(self, scheduler_output, non_block=False):
        for req in scheduler_output.scheduled_new_reqs:
            seed = getattr(req.sampling_params, "seed", None)
            text = self.scripts.get(str(seed), f"[no script for seed {seed}]")
            self.pending[req.req_id] = script_ids(self.tokenizer, text)
            self.prefill[req.req_id] = len(req.prompt_token_ids or []) - req.num_computed_tokens
        for rid in scheduler_output.finished_req_ids:
            self.pending.pop(rid, None)
            self.prefill.pop(rid, None)
        self.last = scheduler_output
        if non_block:
            f: Future = Future()
            f.set_result(None)
            return f
        return None

    def sample_tokens(self, grammar_output, non_block=False):
        so = self.last
        req_ids = list(so.num_scheduled_tokens)
        sampled = []
        for rid in req_ids:
            left = self.prefill.get(rid, 0) - so.num_scheduled_tokens[rid]
            if left > 0:  # a chunk of the prompt: nothing sampled yet
                self.prefill[rid] = left
                sampled.append([])
                continue
            self.prefill[rid] = 0
            ids = self.pending.get(rid) or [self.tokenizer.eos_token_id]
            sampled.append([ids.pop(0)])
        out = ModelRunnerOutput(req_ids=req_ids, req_id_to_index={r: i for i, r in enumerate(req_ids)}, sampled_token_ids=sampled)
        if non_block:
            f: Future = Future()
            f.set_result(out)
            return f
        return out
