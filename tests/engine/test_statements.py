"""Statements first: every finding of a run is stated once as data, the ledger is the union of
the statements' values, writers cite the statements they render, and the release record of a
rendered text is looked up from its citations (the prose checker is the oracle).

Over both datasets: the MA-RAG study data in ../shared (skipped where it is absent) and the
shipped synthetic sample."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from engine.agents.rendered_record import rendered_record
from engine.clinical.ledger import build_ledger, ledger_values
from engine.clinical.statements import Statement, Statements, ledger_of
from engine.grounding.coverage import key_facts
from engine.types import FactValue, Plan
from engine.writing.citing import cite, finish, plain
from tools import golden_records


@pytest.fixture(scope="module")
def engines() -> dict[str, Any]:
    if not golden_records.STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    return golden_records._engines()


def _trajectory(engines: dict[str, Any], patient: int = 4) -> Any:
    eng = engines["marag"]
    return eng, eng.run(Plan([patient], "trajectory", ["updrs", "pdq8"]))


def test_cite_marks_spans_and_finish_returns_the_plain_text() -> None:
    a = Statement("S1", "score", 1, "motor", (2,), "", ())
    b = Statement("S2", "change", 1, "motor", (1, 2), "worsened", ())
    marked = cite("Motor went " + cite("12 at visit 2", [a]) + " (change +3).", [b])
    r = finish(marked)
    assert r.text == "Motor went 12 at visit 2 (change +3)." == plain(marked)
    inner, outer = sorted(r.citations, key=lambda c: -c.depth)
    assert r.text[inner.start : inner.end] == "12 at visit 2" and inner.ids == ("S1",)
    assert (outer.start, outer.end, outer.ids) == (0, len(r.text), ("S2",))
    assert [c.ids for c in r.at(r.text.index("12"))] == [("S1",), ("S2",)]
    assert cite("no statements", []) == "no statements"


def test_the_ledger_is_the_union_of_the_statements_values(engines: dict[str, Any]) -> None:
    eng, res = _trajectory(engines)
    from engine.clinical.findings import course_and_findings
    from engine.clinical.series import series
    from engine.retrieve import fetch_facts

    facts = fetch_facts(res.plan, eng.kb)["facts"]
    ser = series(facts, eng.contexts)
    clin = course_and_findings(facts, eng.contexts, res.plan.patients)
    old = build_ledger(facts, ser, eng.contexts) + ledger_values(
        clin["courses"], clin["findings"], res.excluded_sessions
    )
    assert [asdict(v) for v in res.ledger] == [asdict(v) for v in old]
    assert len(res.ledger) > 300


def _statements(eng: Any, plan: Plan) -> Statements:
    """The run's statements (the retrieve node's), for a trajectory or single-session plan."""
    from engine.retrieve import retrieve_node
    from engine.state import State

    return retrieve_node(State(query="", plan=plan), eng.context)["statements"]


def test_a_study_patient_has_each_kind_of_statement_once(engines: dict[str, Any]) -> None:
    eng = engines["marag"]
    sts = _statements(eng, Plan([4], "trajectory", ["updrs", "pdq8"]))
    kinds = {s.kind for s in sts}
    assert {
        "score",
        "session",
        "change",
        "course",
        "band",
        "trend",
        "new_onset",
        "red_flag",
        "reference",
        "count",
        "monitor",
    } <= kinds
    # one change statement per part of each instrument, with the label of the one MCID rule
    changes = [s for s in sts if s.kind == "change" and s.label and len(s.visits) == 2]
    assert len({(s.patient, s.subject) for s in changes}) == len(changes)
    assert {s.label for s in changes} <= {
        "worsened",
        "improved",
        "stable",
        "unchanged",
        "possible missing data",
    }
    # patient 4's new-onset hallucinations are current (scored 1 at the latest assessment)
    onset = [s for s in sts if s.kind == "new_onset"]
    assert onset and all(s.label == "current" and s.key for s in onset)
    # every value a judgement states is a value of the ledger (the same object)
    ids = {id(v) for v in ledger_of(s for s in sts if s.kind in ("score", "session", "change"))}
    assert ids and all(isinstance(v, FactValue) for s in sts for v in s.values)


def _key_of(k: Any, sts: Statements) -> list[Statement]:
    if k.kind == "label":
        return [
            s
            for s in sts.find("change", k.patient, k.domain)
            if s.visits == (k.ref_visit, k.visit) and s.label
        ]
    if k.kind == "score":
        return [s for s in sts.find("score", k.patient, k.domain, k.visit) if s.values[0].kind]
    if k.kind == "red_flag":
        return [
            s
            for kind in ("red_flag", "new_onset")
            for s in sts.find(kind, k.patient, k.item, k.visit)
        ]
    return [s for s in sts.find("incongruence", k.patient, k.domain, k.visit)]


@pytest.mark.slow
def test_key_statements_are_the_checkers_key_facts(engines: dict[str, Any]) -> None:
    """One definition (engine.clinical.key_facts): for every study and synthetic patient, the
    statements the engine marks key are exactly what the checker's coverage asks of the text."""
    checked = 0
    for name, eng in engines.items():
        for p in sorted(eng.kb.patient_ids()):
            for plan in (
                Plan([p], "trajectory", ["updrs", "pdq8"]),
                Plan([p], "single_session", ["updrs", "pdq8"], "latest_visit"),
            ):
                res = eng.run(plan)
                sts = _statements(eng, plan)
                want = key_facts("final", res.ledger, res.flags, None, plan.analysis)
                got = set()
                for k in want:
                    hit = [s for s in _key_of(k, sts) if s.key]
                    assert hit, f"{name} patient {p} {plan.analysis}: {k.describe()} not key"
                    got.update(s.id for s in hit)
                extra = [s for s in sts.key_facts if s.id not in got]
                assert not extra, f"{name} patient {p}: key but not a key fact: {extra[:2]}"
                checked += len(want)
    assert checked > 500


def test_a_wrong_number_in_a_cited_span_is_unsupported(engines: dict[str, Any]) -> None:
    eng = engines["marag"]
    sts = _statements(eng, Plan([4], "trajectory", ["updrs", "pdq8"]))
    [change] = [s for s in sts.find("change", 4, "motor") if s.label]
    first = change.values[0]
    good = finish(cite(f"Motor went {first.value:g} at visit {first.visit}.", [change]))
    rec = rendered_record(good, sts, agent="motor")
    assert not rec["unsupported"] and rec["checked_by"] == "lookup"
    value = rec["claims"][0]
    assert value["role"] == "value" and value["matched"][0]["visit"] == first.visit
    assert value["statements"] == [change.id]
    wrong = finish(cite(f"Motor went {first.value + 97:g} at visit {first.visit}.", [change]))
    rec = rendered_record(wrong, sts, agent="motor")
    assert [u["text"] for u in rec["unsupported"]] == [f"{first.value + 97:g}"]
    assert rec["statements"]["unsupported_sentences"] == 1 and not rec["statements_passed"]
    uncited = finish("Motor went 12 at visit 3.")
    rec = rendered_record(uncited, sts, agent="motor")
    assert {u["reason"] for u in rec["unsupported"]} == {"not rendered from a statement"}
    bad_visit = finish(cite(f"Motor went {first.value:g} at visit 99.", [change]))
    assert rendered_record(bad_visit, sts, agent="motor")["unsupported"][0]["text"] == "99"


def test_coverage_of_a_rendered_text_counts_the_key_statements_its_numbers_state(
    engines: dict[str, Any],
) -> None:
    eng = engines["marag"]
    sts = _statements(eng, Plan([4], "trajectory", ["updrs", "pdq8"]))
    keys = [s for s in sts.key_facts if s.patient == 4]
    changes = [s for s in keys if s.kind == "change"]
    assert len(keys) >= 4 and len(changes) >= 2
    # citing a key statement is not stating it: a number of the text must match its values
    named = finish(cite("Patient 4.", keys))
    cov = rendered_record(named, sts, agent="final", plan_patients=(4,))["coverage"]
    assert cov == 0.0
    text = " ".join(
        cite(f"{s.subject} went {s.values[0].value:g} at visit {s.values[0].visit}.", [s])
        for s in changes[:2]
    )
    rec = rendered_record(finish(text), sts, agent="final", plan_patients=(4,))
    cov = rec["statements"]["coverage_detail"]
    assert (cov["stated"], cov["total"]) == (2, len(keys)) and not rec["statements_passed"]
    assert len(cov["missing"]) == len(keys) - 2


@pytest.mark.slow
def test_every_rendered_text_is_looked_up_and_passes_the_prose_checker(
    engines: dict[str, Any],
) -> None:
    """The oracle: every text the facts backend releases, in every run of both datasets (the
    golden snapshot's plans and the evaluation queries), has a record looked up from its
    citations with no unsupported number and full coverage, and the prose checker passes it."""
    from engine.eval.queries import load_queries
    from engine.grounding.guard import StatementSpec, guard_text
    from engine.grounding.verify import context_phrases

    runs = [
        (eng, plan)
        for name, eng in engines.items()
        for _id, plan in golden_records._plans(eng, name)
    ]
    _, queries = load_queries()
    runs += [(engines[q.dataset], q.plan) for q in queries]
    texts = 0
    for eng, plan in runs:
        res = eng.run(plan)
        for agent, rec in res.verification["per_agent"].items():
            assert rec["checked_by"] == "lookup", (plan, agent)
            assert not rec["unsupported"] and rec["coverage"] == 1.0, (
                plan,
                agent,
                rec["unsupported"],
            )
            assert rec["released"] == "as_written"
        out = {**res.narratives, "final": res.summary}
        for agent, text in out.items():
            spec = StatementSpec(
                agent=agent,
                flags=res.flags if agent == "final" else None,
                cohort=res.cohort,
                phrases=context_phrases(eng.contexts),
                coverage_min=eng.cfg.coverage_min,
                analysis=plan.analysis,
            )
            oracle = guard_text(
                text,
                res.ledger,
                None,
                lambda text=text: text,
                max_rounds=0,
                plan_patients=res.plan.patients,
                statements=spec,
                repair=False,
            ).record
            assert oracle["passed"], (plan, agent, oracle["unsupported"][:3])
            texts += 1
    assert len(runs) >= 300 and texts >= 1000


ITEM_QUESTIONS = (
    "Which patients have falls?",
    "Who has falls?",
    "Which patients fell?",
    "Who has hallucinations now?",
    "Which patients have any item at 4?",
)


def test_item_questions_are_looked_up_with_no_unsupported_number(engines: dict[str, Any]) -> None:
    """Cohort questions over an item (engine.clinical.item_cohort), as the rules planner plans
    them, on both datasets: every number of every text is a value of the statements it cites
    (the ledger values cohort_values adds: ratings with patient, visit and item; counts; the
    threshold), coverage is full, and the prose checker passes the texts too."""
    from engine.grounding.guard import StatementSpec, guard_text
    from engine.grounding.verify import context_phrases
    from engine.plan import parse_query

    for name, eng in engines.items():
        for q in ITEM_QUESTIONS:
            plan = parse_query(q, eng.contexts.red_flags)
            assert plan.statistic.startswith("item:"), q
            res = eng.run(plan)
            assert res.cohort["statistic"] == "item"
            for agent, rec in res.verification["per_agent"].items():
                assert rec["checked_by"] == "lookup", (name, q, agent)
                assert rec["unsupported"] == [] and rec["coverage"] == 1.0, (name, q, agent)
                assert rec["numbers"] > 0 and rec["released"] == "as_written"
            for agent, text in {**res.narratives, "final": res.summary}.items():
                spec = StatementSpec(
                    agent=agent,
                    flags=res.flags if agent == "final" else None,
                    cohort=res.cohort,
                    phrases=context_phrases(eng.contexts),
                    coverage_min=eng.cfg.coverage_min,
                    analysis=plan.analysis,
                )
                oracle = guard_text(
                    text,
                    res.ledger,
                    None,
                    lambda text=text: text,
                    max_rounds=0,
                    plan_patients=res.plan.patients,
                    statements=spec,
                    repair=False,
                ).record
                assert oracle["passed"], (name, q, agent, oracle["unsupported"][:3])
