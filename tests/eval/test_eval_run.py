"""`marag eval` end to end on small subsets: the facts backend through the real CLI, and a scripted
fake LLM whose planted wrong numbers the baselines keep and the product removes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FakeLLM

from engine.cli import main
from engine.config import Config
from engine.eval.eval_report import aggregate, product_guarantee, write_report
from engine.eval.harness import open_dataset, run_eval
from engine.eval.queries import load_queries
from engine.metrics import hashing_embedder


def _eval_args(out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--limit",
        "2",
        "--dataset",
        "synthetic",
        "--embedding",
        "hashing",
        "--out",
        str(out),
        *extra,
    ]


def test_marag_eval_limit_2_writes_the_report(tmp_path: Path, capsys, monkeypatch):
    out = tmp_path / "eval"
    monkeypatch.delenv("MARAG_MAX_NEW_TOKENS", raising=False)
    monkeypatch.setenv("MARAG_TORCH_THREADS", "1")  # recorded so the command reproduces the run
    assert main(_eval_args(out)) == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["meta"]["command"].startswith(
        "MARAG_TORCH_THREADS=1 marag eval --llm facts --dataset synthetic"
    )
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
    assert (
        "MARAG_TORCH_THREADS=1 marag eval --llm facts" in md
        and "| synthetic | single_session | product |" in md
    )
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


class _Interrupted(BaseException):
    """Stands in for Ctrl-C or a killed job partway through a run."""


def _interrupt_after(monkeypatch, n_records: int) -> None:
    import engine.eval.harness as harness

    real = harness.run_eval

    def cut(*args, on_record=None, **kw):
        seen = []

        def keep(rec):
            on_record(rec)
            seen.append(rec)
            if len(seen) == n_records:
                raise _Interrupted

        return real(*args, on_record=keep, **kw)

    monkeypatch.setattr(harness, "run_eval", cut)


def test_resume_keeps_finished_queries_and_reruns_the_half_done_one(
    tmp_path: Path, monkeypatch, capsys
):
    out = tmp_path / "eval"
    _interrupt_after(monkeypatch, 4)  # query 1 has all 3 systems, query 2 only one
    with pytest.raises(_Interrupted):
        main(_eval_args(out))
    monkeypatch.undo()
    partial = [json.loads(x) for x in (out / "records.partial.jsonl").read_text().splitlines()]
    assert len(partial) == 4 and (out / "run.partial.json").exists()
    first = partial[0]["id"]
    # Mark a kept record so the report proves it was reused, not recomputed.
    partial[0]["wall_s"] = 4321.0
    (out / "records.partial.jsonl").write_text("".join(json.dumps(r) + "\n" for r in partial))

    assert main(_eval_args(out, "--resume")) == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["meta"]["n_queries"] == 2 and len(doc["records"]) == 6
    assert doc["meta"]["command"].endswith("--resume")
    kept = [r for r in doc["records"] if r["id"] == first and r["wall_s"] == 4321.0]
    assert len(kept) == 1
    assert any("kept 1 finished queries (3 records)" in n for n in doc["meta"]["notes"])
    assert any("dropped 1 records" in n for n in doc["meta"]["notes"])
    assert not (out / "records.partial.jsonl").exists() and not (out / "run.partial.json").exists()
    assert "this invocation" in (out / "report.md").read_text()


def test_resume_refuses_records_made_with_other_settings(tmp_path: Path, monkeypatch, capsys):
    out = tmp_path / "eval"
    _interrupt_after(monkeypatch, 3)
    with pytest.raises(_Interrupted):
        main(_eval_args(out))
    monkeypatch.undo()
    rc = main([*_eval_args(out, "--resume"), "--systems", "product"])
    err = capsys.readouterr().err
    assert rc == 2 and "run.partial.json" in err and "systems" in err
    # The interrupted run's records are still there to resume with the right settings.
    assert len((out / "records.partial.jsonl").read_text().splitlines()) == 3


def test_guarantee_counts_replaced_agent_texts_and_says_when_most_were_replaced():
    def rec(i: int, agents: list[str], regen: int) -> dict:
        return {
            "id": f"q{i}",
            "system": "product",
            "hallucination_rate": 0.0,
            "claim_accuracy": 1.0,
            "fallback_used": bool(agents),
            "fallback_agents": agents,
            "regenerations": regen,
        }

    g = product_guarantee([rec(1, ["final"], 2), rec(2, ["motor", "final"], 4), rec(3, [], 0)])
    assert g["fallback_used"] == 2 and g["regenerated"] == 2
    assert g["fallback_agents"] == {"final": 2, "motor": 1}
    from engine.eval.eval_report import _fallback_line

    line = _fallback_line(g)
    assert "2 of 3 queries (agent texts replaced: final 2, motor 1)" in line
    assert "on most queries" in line
    assert "on most queries" not in _fallback_line(product_guarantee([rec(1, [], 1)]))


def test_report_gives_the_wall_ratio_to_single_pass_and_the_share_of_citing_sentences():
    from engine.eval.eval_report import _model_lines, wall_ratios
    from engine.eval.harness import cited_counts

    counts = cited_counts(
        {
            "motor": {"cited": {"sentences": 3, "total": 4}},
            "final": {"cited": {"sentences": 1, "total": 2}},
            "adl": {"released": "replaced"},  # written without statements to cite: not counted
        }
    )
    assert counts == {"cited_sentences": 4, "cite_total": 6}

    def row(system: str, wall: float) -> dict:
        return {"dataset": "synthetic", "task": "trajectory", "system": system, "wall_s": wall}

    rows = [
        {**row("product", 30.0), "cited_sentences": 4, "cite_total": 6},
        row("single_pass", 10.0),
        {**row("product", 12.0), "task": "cohort", "cited_sentences": 0, "cite_total": 0},
    ]
    assert wall_ratios(rows) == {("synthetic", "trajectory"): 3.0}
    lines = "\n".join(_model_lines(rows))
    assert "synthetic, trajectory: wall ratio 3.00; citing sentences 4 of 6 (0.67)" in lines
    assert "synthetic, cohort: wall ratio n/a; citing sentences none written" in lines
    assert _model_lines([row("single_pass", 10.0)]) == []
