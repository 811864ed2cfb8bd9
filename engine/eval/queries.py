"""The versioned query set of `marag eval` (queries_v1.json): id, dataset, query text, explicit plan,
task type and gold summary id. Loading validates every entry and names the bad one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engine.types import ANALYSES, Plan

DEFAULT_QUERIES = Path(__file__).with_name("queries_v1.json")
DATASETS = ("synthetic", "marag")


@dataclass(frozen=True)
class EvalQuery:
    id: str
    dataset: str
    query: str
    plan: Plan
    task: str
    gold: str | None  # gold summary id, "clinician_summary", or None


def load_queries(path: str | Path | None = None) -> tuple[str, list[EvalQuery]]:
    """(version, queries) from a query-set file; raises ValueError naming file and entry."""
    path = Path(path) if path else DEFAULT_QUERIES
    if not path.exists():
        raise FileNotFoundError(f"query set {path} does not exist")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from e
    out: list[EvalQuery] = []
    seen: set[str] = set()
    for i, q in enumerate(doc.get("queries", [])):
        where = f"{path}: query {i} ({q.get('id', '?')})"
        for key in ("id", "dataset", "query", "plan", "task"):
            if key not in q:
                raise ValueError(f"{where}: missing field {key!r}")
        if q["dataset"] not in DATASETS:
            raise ValueError(f"{where}: dataset must be one of {', '.join(DATASETS)}")
        if q["task"] not in ANALYSES or q["task"] != q["plan"].get("analysis"):
            raise ValueError(
                f"{where}: task must be one of {', '.join(ANALYSES)} and equal plan.analysis"
            )
        if q["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(q["id"])
        try:
            plan = Plan.from_dict(q["plan"], q["query"])
        except ValueError as e:
            raise ValueError(f"{where}: bad plan: {e}") from e
        out.append(EvalQuery(q["id"], q["dataset"], q["query"], plan, q["task"], q.get("gold")))
    if not out:
        raise ValueError(f"{path}: no queries")
    return str(doc.get("version", path.stem)), out
