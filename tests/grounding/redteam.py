"""Runs the red-team set (tests/grounding/data/redteam_v1.json) through the statement checker on
the real MA-RAG study facts; shared by the test and the report script."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.config import REPO_ROOT

DATA_FILE = Path(__file__).with_name("data") / "redteam_v1.json"
HELDOUT_FILE = Path(__file__).with_name("data") / "redteam_heldout_v1.json"
STUDY = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"


def load_set(path: Path = DATA_FILE) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def study_engine():
    from engine.config import Config
    from engine.contexts import load_contexts
    from engine.pipeline import Engine
    from kb_store.documents import build_documents
    from kb_store.ingest import load_sources
    from kb_store.reader import InMemoryKB

    res = load_sources([STUDY])
    cfg = Config.load({"llm": "facts", "embedding": "hashing"}, env={})
    return Engine(
        cfg, InMemoryKB(build_documents(res.sessions)), None, load_contexts(cfg.contexts_dir)
    )


def run_set(engine, path: Path = DATA_FILE) -> list[dict[str, Any]]:
    """One row per text: id, category, passed, unsupported sentences, whether the failure is on
    the planted sentence only."""
    from engine.grounding.statements import check_statements
    from engine.grounding.verify import context_phrases
    from engine.types import Plan

    data = load_set(path)
    results = {}
    for key, p in data["plans"].items():
        results[key] = engine.run(Plan.from_dict(p))
    rows = []
    for t in data["texts"]:
        r = results[t["plan"]]
        rep = check_statements(
            t["text"], r.ledger, r.plan.patients, masked_phrases=context_phrases(engine.contexts)
        )
        bad = [s for s in rep.sentences if s.status == "unsupported"]
        planted = t.get("planted")
        rows.append(
            {
                "id": t["id"],
                "category": t["category"],
                "passed": rep.passed,
                "unsupported": [(s.text, s.reasons) for s in bad],
                "on_planted": bool(planted)
                and len(bad) == 1
                and bad[0].text.strip() == planted.strip(),
                "caught": bool(planted) and any(s.text.strip() == planted.strip() for s in bad),
            }
        )
    return rows


def rates(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per category: n, catch rate (planted sentence unsupported), exact rate (only it), and
    for 'true' the false-rejection rate."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["category"]].append(r)
    out = {}
    for cat, rs in sorted(by.items()):
        if cat == "true":
            out[cat] = {"n": len(rs), "false_rejection": sum(not r["passed"] for r in rs) / len(rs)}
        else:
            out[cat] = {
                "n": len(rs),
                "catch": sum(r["caught"] for r in rs) / len(rs),
                "only_planted": sum(r["on_planted"] for r in rs) / len(rs),
            }
    return out


if __name__ == "__main__":
    import sys

    rows = run_set(study_engine(), HELDOUT_FILE if "--heldout" in sys.argv else DATA_FILE)
    for r in rows:
        ok = r["passed"] if r["category"] == "true" else r["on_planted"]
        if not ok:
            print(r["id"], r["category"], r["unsupported"])
    for cat, v in rates(rows).items():
        print(cat, v)
