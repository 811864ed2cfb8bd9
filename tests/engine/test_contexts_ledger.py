"""contexts/ loading and validation; the ledger; the facts backend prose."""

from __future__ import annotations

import json
import shutil

import marag_engine_fixtures as fx
import pytest

from engine.clinical.ledger import allowed_numbers
from engine.config import REPO_ROOT
from engine.contexts import ContextError, load_contexts
from engine.grounding.guard import guard_text
from engine.types import Plan

CTX_DIR = REPO_ROOT / "contexts"


def test_contexts_load_with_sources():
    c = fx.CONTEXTS
    assert set(c.texts) == {"motor", "adl", "nonmotor", "qol"}
    assert all("Source note" in t for t in c.texts.values())
    m = c.mcid_for("mds-updrs", "motor")
    assert (m.improvement, m.worsening) == (-3.25, 4.63) and "Horvath" in m.source
    assert c.mcid_for("pdq8", "qol") is None and "no verified MCID" in c.mcid_note["pdq8"]
    assert [b.level for b in c.severity["mds-updrs"]["motor"]] == ["mild", "moderate", "severe"]
    assert (
        c.severity["marag-updrs44"] == {}
        and "no severity label" in c.severity_source["marag-updrs44"]
    )
    assert (
        c.moderate_cutoff("mds-updrs", "adl") == 13
        and "proportional" in c.moderate_source["marag-updrs44"]
    )
    assert all(r.source for r in c.red_flags)
    assert "Part III" in c.combined and "PDQ-8" in c.combined


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["mcid"]["mds-updrs"]["domains"]["motor"].pop("source"),
            "mcid.mds-updrs.domains.motor: missing field 'source'",
        ),
        (
            lambda d: d["severity"]["mds-updrs"]["domains"]["adl"][0].update(min="x"),
            "expected a number",
        ),
        (
            lambda d: d["mcid"]["mds-updrs"]["domains"]["adl"].update(improvement=3.05),
            "improvement must be < 0",
        ),
        (lambda d: d.pop("red_flags"), "missing field 'red_flags'"),
        (lambda d: d["mcid"]["pdq8"].pop("note"), "null MCID needs a 'note'"),
    ],
)
def test_invalid_thresholds_are_clear_errors(tmp_path, mutate, message):
    d = tmp_path / "contexts"
    shutil.copytree(CTX_DIR, d)
    raw = json.loads((d / "thresholds.json").read_text())
    mutate(raw)
    (d / "thresholds.json").write_text(json.dumps(raw))
    with pytest.raises(ContextError, match=message) as e:
        load_contexts(d)
    assert "thresholds.json" in str(e.value)


def test_missing_context_file(tmp_path):
    d = tmp_path / "contexts"
    shutil.copytree(CTX_DIR, d)
    (d / "adl.md").unlink()
    with pytest.raises(ContextError, match=r"adl\.md: missing context file for domain adl"):
        load_contexts(d)


def test_facts_text_states_numbers_with_context():
    r = fx.engine().run(Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "q"))
    assert (
        "Patient 1, visit 3 (2021-05-20): motor 26 (mild), +4 from visit 2 (stable; below MCID 4.63), "
        "+6 from baseline (worsened; at or above MCID 4.63)."
    ) in r.narratives["motor"]
    assert "no verified minimal clinically important difference" in r.narratives["qol"].lower()
    # the trajectory summary is the readable text; the dense form is kept for QA
    assert (
        "Red-flag items: patient 1, visit 4: non-motor item Hallucinations and psychosis 2"
        in r.summary_dense
    )
    # one to-monitor judgement (engine.clinical.monitor): both texts list the same items
    dense = next(x for x in r.summary_dense.split("\n\n") if x.startswith("Domains to monitor"))
    readable = next(x for x in r.summary.split("\n\n") if x.startswith("To monitor: "))
    assert dense.startswith("Domains to monitor most closely: patient 1 motor (worsened beyond its")
    assert dense.split(": ", 1)[1].replace("patient 1 ", "") == readable.split(": ", 1)[1]
    assert "Red flag (current): hallucinations and psychosis at or above 2 at visit 4" in r.summary


def test_every_facts_backend_number_is_in_the_ledger():
    eng = fx.engine()
    for plan in (
        Plan((1,), "trajectory"),
        Plan((1, 3), "comparison"),
        Plan((2,), "single_session", visit_filter="visit_2"),
        Plan((), "cohort", query="which patient is the most stable in motor"),
        Plan((), "cohort", query="average UPDRS"),
        Plan((3,), "trajectory", visit_filter="last_2_visits"),
    ):
        r = eng.run(plan)
        texts = dict(r.narratives, summary=r.summary)
        for name, text in texts.items():
            rec = guard_text(
                text, r.ledger, None, lambda t=text: t, max_rounds=0, plan_patients=r.plan.patients
            ).record
            assert rec["unsupported"] == [], (plan, name, rec["unsupported"])
        assert r.verification["fact_precision"] == 1.0


def test_ledger_kinds_and_tolerance():
    r = fx.engine().run(Plan((), "cohort", query="Which patient is progressing fastest?"))
    kinds = {v.kind for v in r.ledger}
    assert {
        "score",
        "item",
        "visit",
        "date",
        "delta",
        "cumulative",
        "slope",
        "max",
        "min",
        "mean",
        "rank",
        "count",
        "threshold",
        "pdq8_si",
    } <= kinds
    # the fixture's assessments span under 180 days: no rate per year is given
    # (engine.clinical.series.per_year_allowed)
    assert "slope_year" not in kinds
    slope = next(
        v for v in r.ledger if v.kind == "slope" and v.patient == 1 and v.domain == "total"
    )
    assert slope.value == 7.0 and slope.tolerance == 0.005
    mcid = [
        v
        for v in r.ledger
        if v.kind == "threshold" and v.item == "mcid_worsening" and v.domain == "motor"
    ]
    assert mcid and mcid[0].value == 4.63 and mcid[0].source == "contexts/thresholds.json"
    assert r.cohort["patient"] == 1 and r.cohort["value"] == 7.0


def test_allowed_numbers():
    assert allowed_numbers("motor 26, +4 from visit 2 (MCID 4.63)") == frozenset(
        {"26", "+4", "4", "2", "4.63"}
    )


def test_one_to_monitor_list_on_both_pages_for_every_study_trajectory():
    """The dense text (Provenance page) and the readable summary list the same to-monitor items
    for every patient of the study data (engine.clinical.monitor is the one judgement)."""
    from tools.golden_records import STUDY

    if not STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    from kb_store.documents import build_documents
    from kb_store.ingest import load_sources
    from kb_store.reader import InMemoryKB

    kb = InMemoryKB(build_documents(load_sources([STUDY]).sessions))
    eng = fx.Engine(fx.cfg(), kb, None, fx.CONTEXTS)
    for p in kb.patient_ids():
        r = eng.run(Plan((p,), "trajectory", ("updrs", "pdq8")))
        dense = next(x for x in r.summary_dense.split("\n\n") if x.startswith("Domains to monitor"))
        readable = next(x for x in r.summary.split("\n\n") if x.startswith("To monitor: "))
        assert dense.split(": ", 1)[1].replace(f"patient {p} ", "") == readable.split(": ", 1)[1]
