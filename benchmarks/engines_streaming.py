"""Streaming at scale through vLLM's own streaming path: run with the Python of a virtualenv that has vLLM.

    VLLM_VENV/bin/python benchmarks/engines_streaming.py [--only SUBSTR ...] [--series ...] [--sizes ...] [--budget S]

The series and sizes of ``benchmarks/streaming.py`` (the template's own rendering of a long reasoning, a long
reply, a reply with no reasoning opener, one call with a long argument, many calls), tokenized with a byte-level
tokenizer whose added tokens are the markers the text holds (as real vocabularies ship them), grouped into
deltas of about ``--delta`` characters, and fed to vLLM's ``ChatStreamProcessor.step`` (what its OpenAI server
calls per generated chunk), with the prompt's token ids, as a request with the verify tools. Each template runs
with the ``hf`` parsers on the template ``infer`` emits; where vLLM has hand-written parsers for the model
(``HAND``: hermes, mistral, qwen3 / deepseek_r1 reasoning) the same deltas run through them too.

Per series and size: CPU per delta (µs, the fastest of repeated runs up to 0.3 s), the growth (time at 4x the
size / time at 1x, normalised to exactly 4x of characters; flat = 4), and ``held``: the most characters of the
output not yet streamed after any delta (reasoning, content and tool-call argument text delivered so far
against the text fed), as a share of the output at the largest size.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from autoparser import pipeline  # noqa: E402
from autoparser.analysis.diff import MARKER  # noqa: E402
from autoparser.analysis.probes import Prober  # noqa: E402
from autoparser.emit.template import served  # noqa: E402  (the form vLLM serves: no join on text fields)
from autoparser.errors import AutoparserError  # noqa: E402
from autoparser.render import Renderer  # noqa: E402
from autoparser.verify import VERIFY_TOOLS  # noqa: E402
from grammar_support import byte_tokenizer  # noqa: E402
from streaming import SERIES, SIZES, TOKENS, applies, one_call_each, series_texts, templates  # noqa: E402

# vLLM's hand-written parsers for the models of these templates: (tool parser, reasoning parser).
HAND = {
    "Qwen-Qwen3-0.6B": ("hermes", "qwen3"),
    "Qwen-Qwen2.5-7B-Instruct": ("hermes", None),
    "Qwen-QwQ-32B": ("hermes", "deepseek_r1"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": ("hermes", None),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ("hermes", None),
    "mistralai-Mistral-Nemo-Instruct-2407": ("mistral", None),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (None, "deepseek_r1"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": (None, "deepseek_r1"),
}


def parser_for(hf, template: dict | None, tool: str | None, reasoning: str | None):
    from vllm.parser.parser_manager import ParserManager

    if template is not None:
        hf.response_template = template
    cls = ParserManager.get_parser(tool_parser_name=tool, reasoning_parser_name=reasoning, enable_auto_tools=bool(tool), tokenizer=hf)
    return cls


def deltas(hf, text: str, size: int) -> list[tuple[str, list[int]]]:
    """The text as the engine would stream it: its tokens, grouped into pieces of about ``size`` characters."""
    ids = hf.encode(text, add_special_tokens=False)
    out, group, chars = [], [], 0
    for i in ids:
        group.append(i)
        piece = hf.decode([i])
        chars += len(piece)
        if chars >= size:
            out.append((hf.decode(group), group))
            group, chars = [], 0
    if group:
        out.append((hf.decode(group), group))
    return out


def run(cls, hf, prompt: str, pieces, tools: bool) -> tuple[float, int, str | None]:
    """(CPU seconds of every step, most characters fed but not yet streamed, error)."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor

    body = {"model": "m", "messages": [{"role": "user", "content": "Go."}]}
    if tools:
        body["tools"] = VERIFY_TOOLS
    req = ChatCompletionRequest.model_validate(body)
    parser = cls(hf, req.tools, model_config=None, chat_template_kwargs={}) if cls is not None else None
    proc = ChatStreamProcessor(req, parser, enable_auto_tools=tools, parser_cls=cls)
    prompt_ids = hf.encode(prompt, add_special_tokens=False)
    fed = streamed = held = 0
    t = time.process_time()
    try:
        for k, (text, ids) in enumerate(pieces):
            last = k == len(pieces) - 1
            step = proc.step(text, ids, "stop" if last else None, prompt_ids)
            fed += len(text)
            d = step.delta
            if d is not None:
                streamed += len(d.content or "") + len(d.reasoning or "")
                for c in d.tool_calls or []:
                    if c.function is not None:
                        streamed += len(c.function.arguments or "") + len(c.function.name or "")
            if not last:
                held = max(held, fed - streamed)
    except Exception as e:  # noqa: BLE001 - a raise is what the row reports
        return time.process_time() - t, held, f"{type(e).__name__}: {str(e)[:60]}"
    return time.process_time() - t, held, None


def scale(cls, hf, texts, tools: bool, delta: int, limit: float) -> dict:
    runs, growth, stopped = [], 0.0, False
    for n, prompt, text in texts:
        pieces = deltas(hf, text, delta)
        if runs:
            g = max(growth, 4.0)
            predicted = runs[-1]["t"] * (g / 4.0) * (len(text) / runs[-1]["n"]) ** (1 if g <= 4 else 2 if g >= 16 else 1.5)
            if predicted > limit:
                stopped = True
                break
        t, held, err = run(cls, hf, prompt, pieces, tools)
        spent, k = t, 1
        while not err and spent < 0.3 and k < 30:
            t2 = run(cls, hf, prompt, pieces, tools)[0]
            t, spent, k = min(t, t2), spent + t2, k + 1
        run_ = {"n": len(text), "t": t, "us": t / max(1, len(pieces)) * 1e6, "held": held, "error": err}
        if runs and runs[-1]["t"] > 0 and t > 0:
            growth = max(growth, (t / runs[-1]["t"]) / (len(text) / runs[-1]["n"]) * 4)
        runs.append(run_)
        if err:
            break
    last = runs[-1] if runs else None
    return {"runs": runs, "growth": growth, "stopped": stopped, "held": last["held"] if last else None,
            "held_share": last["held"] / last["n"] if last else None}


def line(label: str, series: str, sizes, r: dict) -> str:
    cells = []
    for k in range(len(sizes)):
        run_ = r["runs"][k] if k < len(r["runs"]) else None
        cells.append(f"{'-':>7}" if run_ is None else f"{'raise':>7}" if run_["error"] else f"{run_['us']:7.1f}")
    held = f"{r['held_share'] * 100:5.2f}%" if r["held_share"] is not None else "     -"
    err = next((x["error"] for x in r["runs"] if x["error"]), "")
    return (f"{label[:40]:40} {series:9} " + " ".join(cells) + f" {r['growth']:6.1f} {r['held'] if r['held'] is not None else '-':>6} {held:>6}"
            + ("  >budget" if r["stopped"] else "") + (f"  {err}" if err else ""))


def main(argv=None) -> int:
    import vllm

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=sorted(HAND))
    ap.add_argument("--series", default=",".join(SERIES))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--delta", type=int, default=4)
    ap.add_argument("--budget", type=float, default=20.0)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    series = [s for s in args.series.split(",") if s]
    print(f"== vLLM {vllm.__version__} streaming (ChatStreamProcessor.step, ~{args.delta} characters a delta; µs of CPU per "
          f"delta; growth = time at 4x the size / time at 1x, flat = 4; held = most characters fed but not streamed) ==")
    print(f"{'template / parsers':40} {'series':9} " + " ".join(f"{s // 1000:>6}k" for s in sizes) + f" {'growth':>6} {'held':>6} {'held%':>6}")
    for where, name, src in templates(args.only):
        try:
            res = pipeline.infer_result(src, TOKENS)
        except AutoparserError:
            continue
        a, template = res.analysis, res.template
        fields = template["fields"]
        pr = Prober(Renderer(src, TOKENS))
        hand = HAND.get(name)
        for s in series:
            if not applies(s, a, fields):
                continue
            texts = series_texts(pr, a, s, sizes)
            if texts is None:
                continue
            if one_call_each(s, texts):
                print(f"{name} {s}: one call per message ({len(texts[-1][2])} characters at every count): not a calls series")
                continue
            markers = sorted({m.group(0) for _, p, t in texts[:1] for m in MARKER.finditer(p + t)} | set(TOKENS.values()))
            hf = byte_tokenizer(markers)
            tools = "tool_calls" in fields
            ours = parser_for(hf, served(template), "hf" if tools else None, "hf" if "thinking" in fields else None)
            print(line(f"{name} (hf)", s, sizes, scale(ours, hf, texts, tools, args.delta, args.budget)), flush=True)
            if hand:
                tool, reasoning = hand
                try:
                    theirs = parser_for(byte_tokenizer(markers), None, tool if tools else None, reasoning)
                except Exception as e:  # noqa: BLE001
                    print(f"  {tool}/{reasoning}: {type(e).__name__}: {str(e)[:80]}")
                    continue
                label = f"  {'/'.join(x for x in (tool if tools else None, reasoning) if x) or 'no parser'}"
                print(line(label, s, sizes, scale(theirs, byte_tokenizer(markers), texts, bool(tool) and tools, args.delta, args.budget)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
