"""Wall time per analysis type: facts backend vs the local model, with the four domain agents run as
one batch vs one after another, all measured in one process/run.

KB: InMemoryKB over the shipped synthetic sample (kb_store/data/synthetic_default.csv, 44 patients);
retrieval is not what is measured here (bench_kb.py covers the KB). The local model is the bundled
SmolLM2-135M-Instruct on CPU; `--max-new-tokens` (default 96, the paper uses 1,200) bounds each
generation so the run fits in minutes, and `--rounds` (default 0) sets the grounding guard's
critique rounds (0: an unsupported number goes straight to the facts fallback), so timings compare
generation, not how many retries a text needed.

Usage: .venv/bin/python bench/bench_engine.py [--max-new-tokens 96] [--rounds 0] [--threads N]
       [--repeat 1] [--json out.json]
Prints a Markdown table (seconds per query; LLM calls; new tokens; domain-agent node time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = {
    "single_session": "What is the baseline status of proj id 5 using UPDRS?",
    "trajectory": "Show me the UPDRS trajectory of proj id 5.",
    "comparison": "Compare the disease progression on UPDRS between proj id 3 and proj id 8.",
    "cohort": "Which patient has the highest UPDRS score?",
}


DOMAIN_NODES = {"domain_agents", "motor_agent", "adl_agent", "nonmotor_agent", "qol_agent"}


def build_kb():
    from kb_store.documents import build_documents
    from kb_store.ingest import load_sources
    from kb_store.reader import InMemoryKB
    from kb_store.synth import default_sample_path

    res = load_sources([default_sample_path()])
    return InMemoryKB(build_documents(res.sessions))


def run_case(engine, llm, query: str, repeat: int) -> dict:
    times, calls, tokens, agent_ms, fallbacks = [], 0, 0, 0.0, 0
    for _ in range(repeat):
        before = getattr(llm, "new_tokens", 0)
        t0 = time.perf_counter()
        result = engine.ask(query)
        times.append(time.perf_counter() - t0)
        calls = result.llm_calls
        tokens = getattr(llm, "new_tokens", 0) - before
        agent_ms = sum(t.ms for t in result.trace if t.node in DOMAIN_NODES)
        fallbacks = len(result.verification.get("fallback_agents", []))
        analysis = result.plan.analysis
    return {
        "analysis": analysis,
        "seconds": statistics.median(times),
        "llm_calls": calls,
        "new_tokens": tokens,
        "domain_agents_s": agent_ms / 1000,
        "fallback_agents": fallbacks,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    import torch

    from engine import Config, open_engine
    from engine.engine_factory import open_llm  # one model shared by several engines

    if args.threads:
        torch.set_num_threads(args.threads)
    kb = build_kb()
    rows = []
    facts_cfg = Config.load({"llm": "facts", "grounding_rounds": args.rounds}, env={})
    for q in QUERIES.values():
        r = run_case(open_engine(facts_cfg, kb=kb), None, q, max(3, args.repeat))
        rows.append({"backend": "facts", "domain_agents": "-", **r})
        print(rows[-1], flush=True)
    load_s = None
    if not args.skip_local:
        base = {
            "llm": "local",
            "device": "cpu",
            "max_new_tokens": args.max_new_tokens,
            "grounding_rounds": args.rounds,
        }
        t0 = time.perf_counter()
        llm = open_llm(Config.load(base, env={}))
        load = getattr(llm, "load", None)  # the local model loads on its first run otherwise
        if callable(load):
            load()
        load_s = time.perf_counter() - t0
        for name, q in QUERIES.items():
            for batched in (True, False):
                if name in ("comparison", "cohort") and not batched:
                    continue  # no domain agents: batching does not apply
                cfg = Config.load({**base, "batch_domain_agents": batched}, env={})
                r = run_case(open_engine(cfg, kb=kb, llm=llm), llm, q, args.repeat)
                label = (
                    ("batched" if batched else "sequential")
                    if name in ("single_session", "trajectory")
                    else "-"
                )
                rows.append({"backend": "local", "domain_agents": label, **r})
                print(rows[-1], flush=True)

    env = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print()
    print(
        f"Environment: {env}. Local model load: "
        f"{'-' if load_s is None else f'{load_s:.1f} s'}; max_new_tokens={args.max_new_tokens}, "
        f"grounding_rounds={args.rounds}."
    )
    print()
    print(
        "| analysis | backend | domain agents | s/query | LLM calls | new tokens | "
        "domain-agent node(s) s | fallbacks |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['analysis']} | {r['backend']} | {r['domain_agents']} | {r['seconds']:.2f} | "
            f"{r['llm_calls']} | {r['new_tokens']} | {r['domain_agents_s']:.2f} | "
            f"{r['fallback_agents']} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"env": env, "load_s": load_s, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
