"""`marag eval` end to end on small subsets: the facts backend through the real CLI, and a scripted
fake LLM whose planted wrong numbers the baselines keep and the product removes."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli import main
from engine.config import Config
from engine.eval.harness import open_dataset, run_eval
from engine.eval.queries import load_queries
from engine.eval.report import aggregate, product_guarantee, write_report
from engine.llm.base import FakeLLM
from engine.metrics import hashing_embedder


def test_marag_eval_limit_2_writes_the_report(tmp_path: Path, capsys):
    out = tmp_path / "eval"
    rc = main(
        [
            "eval",
            "--limit",
            "2",
            "--dataset",
            "synthetic",
            "--embedding",
            "hashing",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["meta"]["command"].startswith("marag eval --llm facts --dataset synthetic")
    assert doc["guarantee"]["holds"] and doc["meta"]["n_queries"] == 2
    systems = {r["system"] for r in doc["records"]}
    assert systems == {"single_pass", "marag_unguarded", "product"}
    for r in doc["records"]:
        for k in (
            "fact_precision",
            "hallucination_rate",
            "temporal_fidelity",
            "sbert_similarity",
            "claim_accuracy",
            "numbers_without_context",
            "llm_calls",
            "wall_s",
        ):
            assert k in r
    md = (out / "report.md").read_text()
    assert "marag eval --llm facts" in md and "| synthetic | single_session | product |" in md
    assert "plotly" in (out / "report.html").read_text()[:5000].lower()


def test_bad_systems_flag_is_a_usage_error(tmp_path: Path, capsys):
    rc = main(["eval", "--systems", "nope", "--embedding", "hashing", "--out", str(tmp_path)])
    assert rc == 2 and "--systems" in capsys.readouterr().err


def test_product_removes_planted_errors_that_baselines_keep(tmp_path: Path):
    _, qs = load_queries()
    q = next(q for q in qs if q.id == "syn-tr-02")  # patient 5: motor 33 -> 38 (+5)
    bad = "Patient 5's motor score improved from 33 to 31 at visit 4; patient 9 was worse."
    llm = FakeLLM(script=lambda r: bad)
    ds = {"synthetic": open_dataset("synthetic")}
    recs = run_eval(Config.load({}, env={}), llm, [q], ds, embed=hashing_embedder())
    by = {r.system: r for r in recs}
    assert by["single_pass"].metrics["llm_calls"] == 1
    assert by["single_pass"].metrics["hallucination_rate"] > 0
    assert by["marag_unguarded"].metrics["claim_accuracy"] < 1.0
    prod = by["product"]
    assert prod.metrics["hallucination_rate"] == 0.0 and prod.metrics["claim_accuracy"] == 1.0
    assert prod.extra["fallback_used"] and prod.extra["regenerations"] > 0
    # 4 domain agents + final, each with 2 regenerations, all on the same fake
    assert prod.metrics["llm_calls"] == by["marag_unguarded"].metrics["llm_calls"] * 3
    dicts = [r.to_dict() for r in recs]
    assert product_guarantee(dicts)["holds"]
    rows = aggregate(dicts)
    assert {r["system"] for r in rows} == {"single_pass", "marag_unguarded", "product"}
    paths = write_report(
        tmp_path,
        {
            "title": "t",
            "command": "marag eval",
            "query_set": "v1",
            "n_queries": 1,
            "llm": "fake",
            "model": "fake",
            "systems": ["a"],
            "sbert_model": "hashing",
            "kb": "mem",
            "date": "d",
            "wall_s": 0.0,
        },
        dicts,
    )
    assert paths["md"].exists() and paths["html"].exists()
