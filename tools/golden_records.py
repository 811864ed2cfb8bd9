"""The golden record snapshot: every facts-backend run of both evaluation datasets and both
red-team sets, as data, so that a refactor can show it changed no output.

What is recorded (tests/golden/facts_records.json.gz):
- runs: the 46 queries of engine/eval/queries_v1.json (explicit plans), then for every patient of
  both datasets (the MA-RAG study files and the shipped synthetic sample) a trajectory over both
  instruments, a single session at the latest visit, and a comparison with the next patient id;
  each with its released summary and dense facts text in full, and a SHA-256 of every other section
  of `Result.to_json()` (facts, table B, cohort, flags, verification, claims, series, slopes,
  courses, excluded sessions, ledger); timings (trace ms) are left out;
- redteam: the statement-check verdict of every text of tests/grounding/data/redteam_v1.json and
  redteam_heldout_v1.json (passed, unsupported sentences with their reasons).

Usage:
    python tools/golden_records.py --write     # regenerate the snapshot
    python tools/golden_records.py --diff      # compare with the stored snapshot, print the diffs
The test tests/engine/test_golden_records.py runs the comparison. A commit that changes output on
purpose regenerates the file and says which runs changed and why.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import hashlib
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "golden" / "facts_records.json.gz"
STUDY = ROOT.parent / "shared" / "data" / "ma-rag"
REDTEAM = [
    ROOT / "tests" / "grounding" / "data" / "redteam_v1.json",
    ROOT / "tests" / "grounding" / "data" / "redteam_heldout_v1.json",
]
TEXT_SECTIONS = ("summary", "summary_dense", "digest")
HASHED_SECTIONS = (
    "facts",
    "table_b",
    "cohort",
    "flags",
    "narratives",
    "verification",
    "screening",
    "llm_calls",
    "claims",
    "series",
    "slopes",
    "excluded_sessions",
    "courses",
)


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _engines() -> dict[str, Any]:
    from engine import Config, open_engine
    from kb_store.documents import build_documents
    from kb_store.exclusions import excluded_from_ingest
    from kb_store.ingest import load_sources
    from kb_store.reader import InMemoryKB
    from kb_store.synth import default_sample_path

    cfg = Config.load({"llm": "facts", "embedding": "hashing"}, env={})
    out = {}
    for name, path in (("marag", STUDY), ("synthetic", default_sample_path())):
        res = load_sources([path])
        kb = InMemoryKB(build_documents(res.sessions), excluded_from_ingest(res, [path]))
        out[name] = open_engine(cfg, kb=kb, llm=None)
    return out


def _record(run_id: str, result: Any) -> dict[str, Any]:
    data = result.to_json()
    rec: dict[str, Any] = {"id": run_id, "plan": data["plan"]}
    for key in TEXT_SECTIONS:
        if key in data:
            rec[key] = data[key]
    rec["hashes"] = {k: _digest(data.get(k)) for k in HASHED_SECTIONS}
    rec["hashes"]["ledger"] = _digest([asdict(fv) for fv in result.ledger])
    return rec


def _plans(engine: Any, dataset: str) -> list[tuple[str, Any]]:
    from engine.types import Plan

    patients = sorted(engine.kb.patient_ids())
    plans = []
    for i, p in enumerate(patients):
        plans.append((f"{dataset}/trajectory/{p}", Plan([p], "trajectory", ["updrs", "pdq8"])))
        plans.append(
            (
                f"{dataset}/single/{p}",
                Plan([p], "single_session", ["updrs", "pdq8"], "latest_visit"),
            )
        )
        if i + 1 < len(patients):
            q = patients[i + 1]
            plans.append(
                (f"{dataset}/comparison/{p}-{q}", Plan([p, q], "comparison", ["updrs", "pdq8"]))
            )
    return plans


def _redteam(engine: Any) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "tests" / "grounding"))
    from redteam import run_set

    rows = []
    for path in REDTEAM:
        for row in run_set(engine, path):
            rows.append(
                {
                    "set": path.name,
                    "id": row["id"],
                    "passed": row["passed"],
                    "unsupported": [[t, list(r)] for t, r in row["unsupported"]],
                }
            )
    return rows


def collect() -> dict[str, Any]:
    from engine.eval.queries import load_queries

    engines = _engines()
    runs = []
    _, queries = load_queries()
    for q in queries:
        runs.append(_record(f"eval/{q.id}", engines[q.dataset].run(q.plan, guard=True)))
    for name, eng in engines.items():
        for run_id, plan in _plans(eng, name):
            runs.append(_record(run_id, eng.run(plan, guard=True)))
    return {"runs": runs, "redteam": _redteam(engines["marag"])}


def load() -> dict[str, Any]:
    with gzip.open(SNAPSHOT, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def write(data: dict[str, Any]) -> None:
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, indent=0).encode("utf-8")
    with open(SNAPSHOT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(blob)


def differences(old: dict[str, Any], new: dict[str, Any], context: int = 2) -> list[str]:
    """Human-readable differences: one block per changed run or red-team verdict."""
    out: list[str] = []
    old_runs = {r["id"]: r for r in old["runs"]}
    new_runs = {r["id"]: r for r in new["runs"]}
    for rid in sorted(old_runs.keys() - new_runs.keys()):
        out.append(f"run {rid}: missing now")
    for rid in sorted(new_runs.keys() - old_runs.keys()):
        out.append(f"run {rid}: new")
    for rid in sorted(old_runs.keys() & new_runs.keys()):
        a, b = old_runs[rid], new_runs[rid]
        if a == b:
            continue
        for key in ("plan", *TEXT_SECTIONS):
            if a.get(key) != b.get(key):
                if isinstance(a.get(key), str) and isinstance(b.get(key), str):
                    diff = difflib.unified_diff(
                        a[key].splitlines(), b[key].splitlines(), lineterm="", n=context
                    )
                    out.append(f"run {rid}: {key}\n" + "\n".join(list(diff)[2:]))
                else:
                    out.append(f"run {rid}: {key} {a.get(key)!r} -> {b.get(key)!r}")
        changed = [k for k in b["hashes"] if a["hashes"].get(k) != b["hashes"][k]]
        if changed:
            out.append(f"run {rid}: sections changed: {', '.join(changed)}")
    old_rt = {(r["set"], r["id"]): r for r in old["redteam"]}
    for r in new["redteam"]:
        prev = old_rt.get((r["set"], r["id"]))
        if prev != r:
            out.append(f"redteam {r['set']} {r['id']}: {prev} -> {r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="regenerate the stored snapshot")
    ap.add_argument("--diff", action="store_true", help="compare with the stored snapshot")
    args = ap.parse_args(argv)
    data = collect()
    if args.write:
        write(data)
        print(f"wrote {SNAPSHOT} ({len(data['runs'])} runs, {len(data['redteam'])} red-team texts)")
        return 0
    diffs = differences(load(), data)
    print("\n".join(diffs) if diffs else "identical")
    print(
        f"{len(data['runs'])} runs, {len(data['redteam'])} red-team texts, {len(diffs)} differences"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
