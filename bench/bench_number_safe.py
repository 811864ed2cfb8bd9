"""Number-safe decoding on vs off with the local model over a fixed set of queries: generation speed
(tokens/second) and what the grounding checker says about the raw generated texts.

Each query runs through engine.pipeline.Engine with guard=False, so every agent's text is measured,
never replaced (the "MA-RAG without grounding" baseline): per text, the claim checker's record gives
claim accuracy (claims with context that match the facts), numbers not in the fact table
(hallucination rate) and whether the text passes. "Fallback rate" = share of generated texts that do
not pass, i.e. those the guard would send to critique-and-regenerate or, with grounding_rounds=0, to
the facts fallback. KB: InMemoryKB over the shipped synthetic sample. Model: bundled SmolLM2-135M on
CPU, greedy, max_new_tokens from the flag (default 96; the paper uses 1,200).

Usage: .venv/bin/python bench/bench_number_safe.py [--max-new-tokens 96] [--threads N] [--json F]
       .venv/bin/python bench/bench_number_safe.py --overhead-only --threads 1   (processor cost)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = [
    "What is the baseline status of proj id 5 using UPDRS?",
    "Show me the UPDRS trajectory of proj id 12.",
    "Compare the disease progression on UPDRS between proj id 3 and proj id 8.",
    "Which patient has the highest UPDRS score?",
]


def processor_overhead(steps: int = 200, rows: int = 4) -> dict:
    """The processor's own cost per decoding step on the real SmolLM2 vocabulary (random logits
    with digits favoured, so numbers are attempted), minus the same loop without it."""
    import torch

    from engine.config import Config
    from engine.llm.local import load_model
    from engine.llm.number_safe import NumberSafeProcessor, vocab_index

    tok = load_model(Config.load({"llm": "local", "device": "cpu"}, env={})).tokenizer
    t0 = time.perf_counter()
    idx = vocab_index(tok, len(tok))
    index_s = time.perf_counter() - t0
    allowed = [frozenset({"14", "9", "12", "5", "3", "2021-03-15", "+2", "33.5"})] * rows
    digits = [i for i, s in enumerate(idx.token_skeleton) if s.isdigit()]

    def loop(proc) -> float:
        gen = torch.Generator().manual_seed(0)
        ids = torch.full((rows, 10), 5)
        t = time.perf_counter()
        for _ in range(steps):
            scores = torch.randn(rows, idx.size, generator=gen)
            scores[:, digits] += 3
            if proc is not None:
                scores = proc(ids, scores)
            ids = torch.cat([ids, scores.argmax(-1, keepdim=True)], 1)
        return time.perf_counter() - t

    with_p = loop(NumberSafeProcessor(idx, allowed, max_new_tokens=[steps] * rows))
    without = loop(None)
    return {
        "vocab": idx.size,
        "skeleton_groups": len(idx.groups),
        "index_build_s": round(index_s, 2),
        "rows": rows,
        "ms_per_step": round((with_p - without) / steps * 1000, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--overhead-only", action="store_true", help="only time the processor per step")
    args = ap.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.overhead_only:
        print(processor_overhead())
        return 0

    from bench.bench_engine import build_kb
    from engine import Config, open_engine
    from engine.engine_factory import open_llm  # one model shared by several engines

    kb = build_kb()
    out = {}
    for on in (True, False):
        cfg = Config.load(
            {
                "llm": "local",
                "device": "cpu",
                "number_safe": on,
                "max_new_tokens": args.max_new_tokens,
                "grounding_rounds": 0,
            },
            env={},
        )
        llm = open_llm(cfg)
        texts = claims = correct_ctx = ctx = numbers = absent_tokens = tokens = failed = 0
        t0 = time.perf_counter()
        for q in QUERIES:
            result = open_engine(cfg, kb=kb, llm=llm).ask(q, guard=False)
            for _agent, rec in result.verification["per_agent"].items():
                texts += 1
                n_ctx = int(rec.get("claims_with_context", 0))
                ctx += n_ctx
                correct_ctx += round(float(rec.get("claim_accuracy", 1.0)) * n_ctx)
                claims += int(rec.get("numbers", 0))
                tokens += int(rec.get("numeric_tokens", 0))
                absent_tokens += round(
                    float(rec.get("hallucination_rate", 0.0)) * int(rec.get("numeric_tokens", 0))
                )
                numbers += len(rec.get("unsupported", []))
                failed += 0 if rec.get("passed", not rec.get("unsupported")) else 1
        wall = time.perf_counter() - t0
        out["on" if on else "off"] = {
            "texts": texts,
            "new_tokens": llm.new_tokens,
            "generate_s": round(llm.seconds, 1),
            "tokens_per_s": round(llm.new_tokens / llm.seconds, 2) if llm.seconds else 0.0,
            "masked_steps": llm.masked_steps,
            "claims": claims,
            "claims_with_context": ctx,
            "claim_accuracy": round(correct_ctx / ctx, 3) if ctx else None,
            "numeric_tokens": tokens,
            "hallucination_rate": round(absent_tokens / tokens, 3) if tokens else 0.0,
            "unsupported": numbers,
            "fallback_rate": round(failed / texts, 3) if texts else 0.0,
            "wall_s": round(wall, 1),
        }
        print(("on " if on else "off"), out["on" if on else "off"], flush=True)

    print()
    print(
        f"{os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, "
        f"max_new_tokens={args.max_new_tokens}, {len(QUERIES)} queries, guard=False."
    )
    print()
    keys = [
        "texts",
        "new_tokens",
        "tokens_per_s",
        "masked_steps",
        "claims_with_context",
        "claim_accuracy",
        "numeric_tokens",
        "hallucination_rate",
        "unsupported",
        "fallback_rate",
        "wall_s",
    ]
    print("| number-safe | " + " | ".join(keys) + " |")
    print("| --- |" + " ---: |" * len(keys))
    for k, v in out.items():
        print(f"| {k} | " + " | ".join(str(v[x]) for x in keys) + " |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
