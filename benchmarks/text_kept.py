"""Is a plain answer left plain, and does text written around a real output reach the message? Two counts over every
template ``infer`` hands out, and over the real-output development set (tests/data/real_outputs, ../shared/corpus/peer).

    python benchmarks/text_kept.py             # both tables
    python benchmarks/text_kept.py -v          # also every flagged parse
    python benchmarks/text_kept.py --only plain|around

plain   ``PLAIN`` (team-written answers a model writes with no call: markdown, code, JSON and HTML examples, a
        call quoted in inline code, a record with a ``name`` key, tags named in prose) parsed by each corpus,
        wild and wild2 template's parser, with the prompt its tests use. Flagged: a call made up, or a word of
        the answer in no field (the harness's ``lost_words``: the words the format itself writes left out). An answer split between reasoning and content is counted apart (``split``):
        where the prompt opened reasoning, the whole answer is reasoning by the format's rule, which is not a
        split. An answer that begins with the template's own reasoning opener (``<think> is a tag…``) is the
        format's, and left out.
around  each real output of the development set that passes, with a sentence written before it, after it, or before
        it on a line of its own (``AROUND``). Flagged: the sentence's words in no field, or fewer or more calls than
        the output alone. Text after the turn's end marker is beyond the turn, and a headed format's text with no
        header before a recipient (Functionary's ``>>>``) no format reads: both are reported, not fixed.

Shares the harness of tests/test_real_outputs.py (templates inferred once, cached; prompts; ``lost_words``).
Every parse is one-shot ``parse_response``; the tests check streamed = one-shot.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
_spec = importlib.util.spec_from_file_location("_real_outputs", HERE.parent / "tests" / "test_real_outputs.py")
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)

ROOTS = ("templates", "wild/templates", "wild2/templates")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]

PLAIN = [
    'Here\'s a JSON example:\n```json\n{"name": "Alice", "age": 30, "tags": ["a", "b"]}\n```',
    'Use `dict(name="x")` or `[x for x in range(3)]` in Python.',
    '<div class="box"><p>Hello</p></div>',
    "The formula is f(x) = [a, b] + {c}.",
    'Call print(f"{x}") then return [1, 2].',
    "A table:\n| a | b |\n|---|---|\n| 1 | 2 |",
    "The regex is \\[(\\w+)\\] and the path is C:\\Users\\x.",
    'name: get_weather\narguments: {"city": "Paris"}',
    "See [the docs](https://example.com/a_b(c)) for more.",
    'Here is Python:\n```python\ndef get_weather(city="Paris"):\n    return {"city": city}\n```',
    'Here is XML:\n<config><parameter name="x">1</parameter></config>',
    "[1] First reference. [2] Second one.",
    '{"answer": 42}',
    '["apple", "banana"]',
    'Result: {"name": "Bob", "arguments": "none"}',
    'The result was {"data": {"name": "get_weather", "arguments": {"city": "Paris"}}} as expected.',
    "In Python, write `[get_weather(city='Paris')]` to call it.",
    'Write `{"name": "get_weather", "arguments": {"city": "Paris"}}` to call it.',
    "Use the <tool_call> tag to call tools, then close it with </tool_call>.",
    "<b>Bold</b> and <i>italic</i>.",
    "<3 you",
    "Hello! 😀 你好，世界。¿Qué tal?",
    "Final answer: **42**",
    '>>> print("hi")\nhi',
]
AROUND = {
    "before": lambda o: "Zebra quokka. " + o,
    "before, a line": lambda o: "Zebra quokka.\n\n" + o,
    "after": lambda o: o + "\nZebra quokka.",
}


def _split(msg: dict) -> bool:
    return bool((msg.get("content") or "").strip() and (msg.get("thinking") or msg.get("reasoning_content") or "").strip())


def plain(verbose: bool) -> Counter:
    from transformers.utils.chat_parsing import parse_response

    out = Counter()
    for root in ROOTS:
        for path in sorted((H.CORPUS / root).glob("*.jinja")):
            # (a case of the harness's shape: its tokens and lost words are the real-output set's)
            named = path.name if root == "templates" else f"{root.split('/')[0]}/{path.name}"
            tokens = tuple(sorted(H.tokens_for({"template": named}).items()))
            template, _, _ = H._infer(str(path), tokens)
            if template is None:
                continue
            try:
                prefix = H._prefix(str(path), tokens, json.dumps(TOOLS, sort_keys=True), "{}", None)
            except Exception:  # noqa: BLE001 - a template that cannot render this prompt has no parse to check
                continue
            out["templates"] += 1
            for text in PLAIN:
                if text.startswith("<think>"):
                    continue
                out["parses"] += 1
                try:
                    msg = parse_response(text, template, prefix=prefix, tools=TOOLS)
                except Exception as e:  # noqa: BLE001 - the finding
                    out["raised"] += 1
                    print(f"  raised  {path.stem}: {text[:50]!r}: {e}")
                    continue
                why = ("call made up" if msg.get("tool_calls") else
                       "words lost" if H.lost_words({"template": named, "output": text}, msg) else
                       "split" if _split(msg) else None)
                if why:
                    out[why] += 1
                    if verbose:
                        print(f"  {why:<12} {root.split('/')[0]}/{path.stem}: {text[:60]!r} -> {json.dumps(msg, ensure_ascii=False)[:200]}")
    return out


def around(verbose: bool) -> Counter:
    from transformers.utils.chat_parsing import parse_response

    out = Counter()
    cases = [dict(c, _suite="dev") for c in H.load_cases()] + [dict(c, _suite="peer") for c in H.load_peer_cases()]
    for case in cases:
        r = H.run_case(case)
        if r["status"] != "pass" or case.get("partial"):
            continue
        calls = len((r["got"] or {}).get("tool_calls") or [])
        template, _, _ = H._infer(str(H.template_file(case)), tuple(sorted(H.tokens_for(case).items())))
        for name, mutate in AROUND.items():
            text = mutate(case["output"])
            out["parses"] += 1
            try:
                msg = parse_response(text, template, prefix=H.prefix_for(case), tools=case.get("tools") or None)
            except Exception as e:  # noqa: BLE001 - the finding
                out["raised"] += 1
                print(f"  raised  {case['id']} ({name}): {e}")
                continue
            why = ("words lost" if {"zebra", "quokka"} & set(H.lost_words(dict(case, output=text), msg)) else
                   "calls differ" if len(msg.get("tool_calls") or []) != calls else None)
            if why:
                out[why] += 1
                out[f"{why}, {name}"] += 1
                if verbose:
                    print(f"  {why:<12} {case['id']} ({name}): {text[-90:]!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--only", choices=["plain", "around"])
    args = ap.parse_args(argv)
    if args.only in (None, "plain"):
        c = plain(args.verbose)
        print(f"plain answers: {c['templates']} templates, {c['parses']} parses; call made up {c['call made up']}, "
              f"words lost {c['words lost']}, split {c['split']}, raised {c['raised']}")
    if args.only in (None, "around"):
        c = around(args.verbose)
        parts = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if "," in k)
        print(f"text around real outputs: {c['parses']} parses; words lost {c['words lost']}, calls differ {c['calls differ']}, "
              f"raised {c['raised']} ({parts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
