"""The versioned query set and the gold summaries: coverage, and every number of every hand-written
synthetic gold summary checked against the data (the facts of its query's plan)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine.config import Config
from engine.eval.gold import clinician_summary, synthetic_gold
from engine.eval.harness import default_marag_dir, open_dataset
from engine.eval.queries import load_queries
from engine.grounding.guard import check_numbers
from engine.pipeline import Engine
from engine.types import ANALYSES


def test_query_set_covers_four_tasks_on_both_datasets():
    version, qs = load_queries()
    assert version == "v1" and len(qs) >= 40
    c = Counter((q.dataset, q.task) for q in qs)
    for ds in ("synthetic", "marag"):
        for task in ANALYSES:
            assert c[(ds, task)] >= 4, (ds, task)
    gold = synthetic_gold()
    syn_gold = [q.gold for q in qs if q.dataset == "synthetic" and q.gold]
    assert len(syn_gold) >= 12 and all(g in gold for g in syn_gold)
    assert {q.task for q in qs if q.gold == "clinician_summary"} == {"single_session"}


def test_bad_query_file_names_the_entry(tmp_path: Path):
    p = tmp_path / "q.json"
    p.write_text(
        '{"queries": [{"id": "x", "dataset": "synthetic", "query": "q", "task": "cohort", '
        '"plan": {"patients": [], "analysis": "trajectory"}}]}'
    )
    with pytest.raises(ValueError, match="query 0 \\(x\\).*task"):
        load_queries(p)


def test_every_number_in_the_synthetic_gold_summaries_matches_the_data():
    _, qs = load_queries()
    ds = open_dataset("synthetic")
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    gold = synthetic_gold()
    checked = 0
    for q in qs:
        if q.dataset != "synthetic" or not q.gold:
            continue
        r = eng.run(q.plan)
        rec = check_numbers(gold[q.gold], r.ledger, r.plan.patients)
        assert rec["unsupported"] == [], (q.id, rec["unsupported"])
        assert rec["claim_accuracy"] == 1.0 and rec["claims_with_context"] >= 5, q.id
        checked += 1
    assert checked >= 12


def test_marag_single_session_gold_is_the_study_clinician_summary():
    mdir = default_marag_dir()
    if not mdir.exists():
        pytest.skip(f"MA-RAG study data not found at {mdir} (../shared beside the repo)")
    _, qs = load_queries()
    ds = open_dataset("marag")
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    found = 0
    for q in qs:
        if q.gold != "clinician_summary":
            continue
        r = eng.run(q.plan)
        text, src = clinician_summary(mdir, r.plan, r.facts)
        assert text, (q.id, src)
        assert "clinician_summary" in src
        found += 1
    assert found >= 8
