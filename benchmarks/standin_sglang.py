"""Stand-in for SGLang's scheduler process (which runs the model) for ``benchmarks/serve_engines.py``: SGLang
has no seam below the scheduler that works without a GPU (the scheduler itself builds the model runner and
its CUDA memory pools), so the whole scheduler process is the stand-in, through SGLang's own extension
point for it (``run_scheduler_process_func``, which ``Engine`` and ``launch_server`` take "for private
forks"). The rest is SGLang's own: ``sglang serve`` and its HTTP server, the TokenizerManager (tokenizer
loading, chat template rendering, tokenization), OpenAIServingChat with its reasoning and tool-call
parsers, the detokenizer process, and plugin loading in each of them.

The stand-in speaks the scheduler's side of SGLang's IPC: it takes each ``TokenizedGenerateReqInput`` and
answers, one token per message, with the ids of the text ``$STANDIN_SCRIPTS`` holds under the request's
seed, then end-of-text, as ``BatchTokenIDOutput`` to the real detokenizer. It is swapped in by an SGLang
general plugin (``plugin``), which the check registers through a dist-info folder on PYTHONPATH."""

from __future__ import annotations

import json
import logging
import os
from array import array
from pathlib import Path

logger = logging.getLogger("standin")


def plugin() -> None:
    """``sglang.srt.plugins`` entry point: serve with the stand-in scheduler (only where a check asked)."""
    if not os.environ.get("STANDIN_SCRIPTS"):
        return
    from sglang.srt.entrypoints.engine import Engine

    if getattr(Engine._launch_subprocesses, "__standin__", False):
        return
    original = Engine._launch_subprocesses.__func__

    def launch(cls, server_args, init_tokenizer_manager_func, run_scheduler_process_func, run_detokenizer_process_func, *a, **k):
        return original(cls, server_args, init_tokenizer_manager_func, run_standin_scheduler, run_detokenizer_process_func, *a, **k)

    launch.__standin__ = True
    Engine._launch_subprocesses = classmethod(launch)


def _payload(rid, ipc, decoded, ids, new, read_offset, finished, prompt_len, done_len):
    from sglang.srt.managers.io_struct import BatchTokenIDOutput

    one = lambda v: [v]  # noqa: E731
    return BatchTokenIDOutput(
        rids=[rid], http_worker_ipcs=[ipc], finished_reasons=[finished], decoded_texts=[decoded], decode_ids=[array("i", ids)],
        read_offsets=[read_offset], output_ids=[array("i", new)], skip_special_tokens=[True], spaces_between_special_tokens=[True],
        no_stop_trim=[False], prompt_tokens=one(prompt_len), reasoning_tokens=one(0), completion_tokens=one(done_len),
        cached_tokens=one(0), input_token_logprobs_val=[], input_token_logprobs_idx=[], output_token_logprobs_val=[],
        output_token_logprobs_idx=[], input_top_logprobs_val=[], input_top_logprobs_idx=[], output_top_logprobs_val=[],
        output_top_logprobs_idx=[], input_token_ids_logprobs_val=[], input_token_ids_logprobs_idx=[],
        output_token_ids_logprobs_val=[], output_token_ids_logprobs_idx=[], output_token_entropy_val=None,
        output_token_sampling_mask=None, output_hidden_states=[], routed_experts=None, indexer_topk=None,
        placeholder_tokens_idx=None, placeholder_tokens_val=None, retraction_counts=one(0))


def run_standin_scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank, pipe_writer, *_, **__):
    import zmq
    from sglang.srt.managers.io_struct import TokenizedGenerateReqInput, sock_recv, sock_send
    from sglang.srt.plugins import load_plugins
    from sglang.srt.utils.network import get_zmq_socket
    from sglang.srt.utils.hf_transformers_utils import get_tokenizer

    load_plugins()  # as SGLang's own scheduler process does first
    tokenizer = get_tokenizer(server_args.tokenizer_path or server_args.model_path, trust_remote_code=False)
    rt = getattr(tokenizer, "response_template", None)
    print(f"standin scheduler: tokenizer response_template fields: {sorted((rt or {}).get('fields') or {}) if rt else None}", flush=True)
    scripts = json.loads(Path(os.environ["STANDIN_SCRIPTS"]).read_text(encoding="utf-8"))
    ctx = zmq.Context(2)
    recv = get_zmq_socket(ctx, zmq.PULL, port_args.scheduler_input_ipc_name, False)
    send = get_zmq_socket(ctx, zmq.PUSH, port_args.detokenizer_ipc_name, False)
    pipe_writer.send({"status": "ready", "max_total_num_tokens": 1 << 16, "max_req_input_len": 16384, "startup_time": None})
    eos = tokenizer.eos_token_id
    while True:
        req = sock_recv(recv)
        if not isinstance(req, TokenizedGenerateReqInput):
            continue
        seed = getattr(req.sampling_params, "sampling_seed", None)
        ids = tokenizer.encode(scripts.get(str(seed), f"[no script for seed {seed}]"), add_special_tokens=False)
        ids = ids[: ids.index(eos) + 1] if eos in ids else [*ids, eos]
        prompt = list(req.input_ids or [])
        tail = prompt[-5:]
        for k, t in enumerate(ids):
            last = k == len(ids) - 1
            finished = {"type": "stop", "matched": t} if last else None
            decode = [*tail, t] if k == 0 else [t]
            sock_send(send, _payload(req.rid, getattr(req, "http_worker_ipc", None), "", decode, [t], len(tail), finished, len(prompt), k + 1))
