"""Facts from the session table equal the facts built from documents, and the cohort
statistics computed over one long frame equal `compute_cohort` over Fact objects: every
statistic, domain, instrument subset and visit filter on the 44-patient sample and the MA-RAG
study files. A cohort answer's facts and ledger cover the patients it names, not the cohort."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import pytest

from engine.agents.final import cohort_t_patients
from engine.clinical import cohort_table, item_cohort, table_stats
from engine.clinical.cohort import STATISTIC_FLAGS, compute_cohort
from engine.config import Config
from engine.grounding.guard import check_numbers
from engine.pipeline import Engine
from engine.retrieve import NoFactsError, fetch_facts, retrieve_node
from engine.state import State
from engine.types import Plan
from kb_store import synth
from kb_store.documents import build_documents
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB

REPO = Path(__file__).resolve().parents[2]
MARAG = REPO.parent / "shared" / "data" / "ma-rag"
SAMPLE = REPO / "kb_store" / "data" / "synthetic_default.csv"
QUERIES = [
    "Which patient has the highest total UPDRS burden?",
    "Which patient has the lowest total UPDRS burden?",
    "Which patient's motor score is worsening fastest?",
    "Which patient's ADL score is worsening fastest?",
    "fastest non-motor",
    "Which patient's quality of life (PDQ-8) is worsening fastest?",
    "Which patient is the most stable?",
    "most improved motor",
    "What is the average motor score?",
    "What is the average PDQ-8 score?",
    "highest nonmotor",
    "lowest adl",
]
FILTERS = [
    "none",
    "baseline",
    "latest_visit",
    "baseline_vs_latest",
    "visit_2",
    "visit_5",
    "first_2_visits",
    "last_2_visits",
    "last_9_visits",
]
INSTRUMENTS = [("updrs", "pdq8"), ("updrs",), ("pdq8",)]


class DocsOnlyKB:
    """The same documents without a session table: the engine reads documents (the old path)."""

    def __init__(self, kb: InMemoryKB):
        self._kb = kb

    def patient_ids(self):
        return self._kb.patient_ids()

    def session_docs(self, proj_id, instruments=None):
        return self._kb.session_docs(proj_id, instruments)

    def get_docs(self, ids):
        return self._kb.get_docs(ids)


def _kb(src: Path, fmt: str = "auto") -> InMemoryKB:
    return InMemoryKB(build_documents(load_sources([src], fmt).sessions))


DATASETS = [pytest.param((SAMPLE, "auto"), id="synthetic44")]
if MARAG.is_dir():
    DATASETS.append(pytest.param((MARAG, "marag"), id="marag"))


@pytest.fixture(scope="module", params=DATASETS)
def kb(request) -> InMemoryKB:
    return _kb(*request.param)


def test_patient_facts_from_the_table_equal_facts_from_documents(kb):
    """Caveats included: the documents' facts are judged per patient (caveats.mark_facts), the
    table's read from its codes, judged once over the whole table."""
    docs_only = DocsOnlyKB(kb)
    caveats: set[str] = set()
    for inst in INSTRUMENTS:
        plan = Plan(tuple(kb.patient_ids()), "trajectory", inst)
        a, b = fetch_facts(plan, docs_only), fetch_facts(plan, kb)
        assert a["facts"] == b["facts"] and a["on_facts"] == b["on_facts"]
        assert a["notes"] == b["notes"] and a["subsets"] == b["subsets"]
        caveats |= {f.caveat for f in b["facts"]}
    assert caveats - {""}, "no fact carries a caveat: the comparison would not test them"


def test_every_cohort_statistic_equals_the_per_fact_computation(kb):
    table = kb.fact_table()
    pats = tuple(kb.patient_ids())
    compared = 0
    for vf, inst, flag in itertools.product(FILTERS, INSTRUMENTS, ("", *STATISTIC_FLAGS)):
        plan = Plan(pats, "cohort", inst, vf)
        long, notes = cohort_table.cohort_frame(table, pats, inst, vf)
        try:
            ref = fetch_facts(plan, DocsOnlyKB(kb))
        except NoFactsError:
            assert long.empty, (vf, inst)
            continue
        assert notes == ref["notes"], (vf, inst)
        for q in QUERIES:
            try:
                want = compute_cohort(ref["facts"], q, inst, statistic=flag)
            except ValueError as e:
                with pytest.raises(ValueError, match=str(e)[:30]):
                    table_stats.compute_cohort_table(long, q, inst, flag)
                continue
            got = table_stats.compute_cohort_table(long, q, inst, flag)
            assert got == want, (vf, inst, flag, q)
            compared += 1
    assert compared > 1000
    with pytest.raises(ValueError, match="unknown visit filter"):
        cohort_table.cohort_frame(table, pats, INSTRUMENTS[0], "latest_2")


def test_visit_filtered_cohorts_read_the_session_table_with_the_same_answer(kb):
    """Every cohort plan reads the session table (one long frame), visit-filtered ones included,
    and releases what the per-patient document path releases."""
    cfg = Config.load(env={})
    for vf in FILTERS[1:]:
        plan = Plan((), "cohort", visit_filter=vf, query=QUERIES[0])
        eng = Engine(cfg, kb, None)
        state = State(
            query=plan.query, plan=Plan(tuple(kb.patient_ids()), "cohort", visit_filter=vf)
        )
        with contextlib.suppress(NoFactsError):
            assert "cohort_frame" in retrieve_node(state, eng.context), vf
        try:
            old = Engine(cfg, DocsOnlyKB(kb), None).run(plan)
        except (NoFactsError, ValueError) as e:
            with pytest.raises(type(e)):
                Engine(cfg, kb, None).run(plan)
            continue
        new = Engine(cfg, kb, None).run(plan)
        assert new.summary == old.summary and new.cohort == old.cohort, vf
        assert new.verification["notes"] == old.verification["notes"]


def test_cohort_answer_is_unchanged_and_scoped_to_the_patients_it_names(kb):
    cfg = Config.load(env={})
    for q in QUERIES[::2]:  # one query per statistic kind
        plan = Plan((), "cohort", query=q)
        new = Engine(cfg, kb, None).run(plan)
        old = Engine(cfg, DocsOnlyKB(kb), None).run(plan)
        assert new.summary == old.summary and new.cohort == old.cohort
        assert new.narratives == old.narratives
        assert new.verification["unsupported"] == old.verification["unsupported"]
        scope = set(table_stats.answer_scope(new.cohort))
        assert {f.patient for f in new.facts} == cohort_t_patients(new.cohort) <= scope
        assert {v.patient for v in new.ledger if v.patient is not None} <= scope
        full_facts, full_ledger = Engine(cfg, kb, None).evidence(new)
        assert {f.patient for f in full_facts} == set(kb.patient_ids())
        assert len(full_ledger) > len(new.ledger)
        # the scoped ledger judges the texts exactly as the whole fact table does
        for text in (new.summary, new.narratives["cohort"]):
            a = check_numbers(text, new.ledger, new.plan.patients)
            b = check_numbers(text, full_ledger, new.plan.patients)
            found = [[(u["span"], u["reason"]) for u in x["unsupported"]] for x in (a, b)]
            assert found[0] == found[1] and a["numbers"] == b["numbers"] > 0


def test_ledger_and_final_text_do_not_grow_with_the_cohort(tmp_path):
    sizes = {}
    for n in (44, 400):
        csv = tmp_path / f"c{n}.csv"
        synth.generate(patients=n, seed=11).to_csv(csv, index=False)
        kb = _kb(csv)
        r = Engine(Config.load(env={}), kb, None).run(
            Plan((), "cohort", query="Which patient has the highest total UPDRS burden?")
        )
        assert r.cohort["n_patients"] == n and len(r.cohort["ranking"]) == n
        assert r.verification["unsupported"] == [] and r.verification["numbers"] > 0
        bound = (
            table_stats.SCOPE_RANKING
            + table_stats.SCOPE_PDQ8
            + 2 * table_stats.SCOPE_EXTREMES * len(r.cohort["domain_stats"])
            + len(r.cohort["ties"])
        )
        assert len({v.patient for v in r.ledger if v.patient is not None}) <= bound
        assert len({f.patient for f in r.facts}) <= 5 + len(r.cohort["ties"])
        sizes[n] = (len(r.ledger), len(r.summary))
    # 9x the patients: the ledger and the text stay within the same bound, not 9x
    assert sizes[400][0] < 2 * sizes[44][0] and sizes[400][1] < 1.5 * sizes[44][1]


def test_item_questions_agree_over_both_cohort_paths(kb):
    """An item question ("item:<concept>", engine.clinical.item_cohort) gives the same answer
    from Fact objects and from the session table's selection: every red-flag concept, instrument
    set and visit filter; and the same released texts through the engine."""
    cfg = Config.load(env={})
    eng = Engine(cfg, kb, None)
    table = kb.fact_table()
    pats = tuple(kb.patient_ids())
    concepts = item_cohort.item_concepts(eng.contexts.red_flags)
    compared = listed = 0
    for vf, inst in itertools.product(FILTERS, INSTRUMENTS):
        sel, _ = cohort_table.cohort_frame(table, pats, inst, vf, all_patients=True)
        try:
            facts = fetch_facts(Plan(pats, "cohort", inst, vf), DocsOnlyKB(kb))["facts"]
        except NoFactsError:
            assert sel.empty, (vf, inst)
            continue
        for concept in concepts.values():
            want = item_cohort.item_cohort_facts(facts, concept)
            got = item_cohort.item_cohort_table(table, sel, concept)
            assert got == want, (vf, inst, concept.id)
            compared += 1
            listed += len(got["ranking"])
    assert compared > 100 and listed > 100
    for concept in ("falls", "hallucinations", "severe_item"):
        plan = Plan((), "cohort", query="item question", statistic=f"item:{concept}")
        new, old = Engine(cfg, kb, None).run(plan), Engine(cfg, DocsOnlyKB(kb), None).run(plan)
        assert new.summary == old.summary and new.cohort == old.cohort, concept
        assert new.narratives == old.narratives
        assert new.verification["unsupported"] == [] == old.verification["unsupported"]
        scope = set(table_stats.answer_scope(new.cohort))
        assert {v.patient for v in new.ledger if v.patient is not None} <= scope
