"""The Retrieve Node: intent map, exact-metadata fetch, visit filter, fact table F and its subsets.

Only the plan's patients are fetched (`KBReader.session_docs(proj_id, instruments)`, an exact
metadata match, never similarity search), so no other patient's data can enter the run. Facts are
built from document metadata (score_<domain>, missing_<domain>, items_json), never from prose.
PPMI ON-exam documents (condition "ON") are kept apart from the domain path and noted.
"""

from __future__ import annotations

import json
from collections import defaultdict

from engine.clinical import caveats, cohort_table
from engine.clinical.findings import course_and_findings
from engine.clinical.series import series
from engine.clinical.statement_build import build_statements
from engine.clinical.visit_filter import select_per_instrument
from engine.contexts import Contexts
from engine.state import NodeContext, State
from engine.types import Fact, Plan
from kb_store.documents import KBDoc
from kb_store.profiles import DOMAINS, load_profile
from kb_store.reader import KBReader

#: Fixed lookup from the planner's analysis label to the pipeline's internal intent.
INTENT_MAP: dict[str, str] = {
    "trajectory": "trajectory",
    "single_session": "single_session",
    "single-session": "single_session",
    "comparison": "comparison",
    "cohort": "cohort",
}


class NoFactsError(ValueError):
    """Nothing left to analyse after retrieval and the visit filter."""


def facts_from_doc(doc: KBDoc) -> list[Fact]:
    """One Fact per domain of the document's profile (of the four product domains)."""
    m = doc.metadata
    prof = load_profile(m["profile"])
    items_all = json.loads(m.get("items_json") or "{}")
    out = []
    for dom in DOMAINS:
        if dom not in prof.domains or f"missing_{dom}" not in m:
            continue
        codes = [i.code for i in prof.items_of(dom)]
        score = m.get(f"score_{dom}")
        out.append(
            Fact(
                patient=int(m["proj_id"]),
                visit=int(m["visit"]),
                date=str(m["date"]),
                instrument=str(m["instrument"]),
                domain=dom,
                score=None if score is None else float(score),
                items={c: items_all.get(c) for c in codes},
                doc_id=doc.id,
                missing=int(m.get(f"missing_{dom}", 0)),
                profile=str(m["profile"]),
                condition=str(m.get("condition", "") or ""),
            )
        )
    return out


def _patient_facts(
    p: int, plan: Plan, kb: KBReader, rule: caveats.CaveatRule
) -> tuple[list[Fact], list[Fact]]:
    """(OFF/untreated facts with their caveats, ON-exam facts) of one patient: from the KB's
    session table when it has one (same rows, same order; the caveats the table's codes give),
    else from the session documents' metadata (caveats judged here)."""
    rows: list[Fact] = []
    on_rows: list[Fact] = []
    table = cohort_table.table_of(kb)
    if table is not None:
        for cond, fs in cohort_table.patient_facts(table, p, list(plan.instruments), rule):
            (on_rows if cond.upper() == "ON" else rows).extend(fs)
        return rows, on_rows
    for d in kb.session_docs(p, list(plan.instruments)):
        if int(d.metadata["proj_id"]) != p or d.metadata.get("granularity") != "session":
            raise ValueError(f"KB returned document {d.id} outside the request for patient {p}")
        on = str(d.metadata.get("condition", "")).upper() == "ON"
        (on_rows if on else rows).extend(facts_from_doc(d))
    return caveats.mark_facts(rows, rule), on_rows


def fetch_facts(plan: Plan, kb: KBReader, ctx: Contexts | None = None) -> dict:
    """The state fields intent, facts, subsets, on_facts, notes of a plan. Each fact carries
    its caveat (engine.clinical.caveats: partial or possibly not examined), judged over the
    patient's whole OFF record before the visit filter (`ctx`: the run's contexts; None = the
    shipped ones)."""
    rule = caveats.rule_of(ctx)
    intent = INTENT_MAP.get(plan.analysis)
    if intent is None:
        raise ValueError(f"no intent for analysis {plan.analysis!r}")
    facts: list[Fact] = []
    on_facts: list[Fact] = []
    notes: list[str] = []
    for p in plan.patients:
        rows, on_rows = _patient_facts(p, plan, kb, rule)
        on_facts.extend(on_rows)
        if not rows:
            notes.append(
                f"Patient {p}: no {' or '.join(plan.instruments)} sessions in the knowledge base."
            )
            continue
        kept_all, inst_notes = select_per_instrument(rows, plan.visit_filter)
        notes += [f"Patient {p}: {n}." for n in inst_notes]
        facts.extend(f for f in rows if (f.instrument, f.visit) in kept_all)
    if on_facts:
        n = len({(f.patient, f.visit) for f in on_facts})
        notes.append(
            f"{n} ON-medication exam session(s) kept apart: ON and OFF exams are not comparable "
            "and are never averaged; the analysis uses OFF/untreated exams."
        )
    if not facts:
        raise NoFactsError(
            "no facts remain for the plan: " + (" ".join(notes) or "the KB holds no sessions")
        )
    facts.sort(key=lambda f: (f.patient, f.visit, DOMAINS.index(f.domain)))
    subsets: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        subsets[f.domain].append(f)
    return {
        "intent": intent,
        "facts": facts,
        "subsets": {d: subsets.get(d, []) for d in DOMAINS},
        "on_facts": on_facts,
        "notes": notes,
    }


def retrieve_node(state: State, ctx: NodeContext) -> dict:
    """F and its subsets, the course of each domain (engine.clinical.series.series) and the ledger.

    A cohort plan (any visit filter) over a KB with a session table retrieves the plan's selection
    of the table's cohort index instead (no per-fact objects for 10,000 patients; a mask over
    arrays built once per table generation); the cohort node computes the statistics from it and
    then the facts, series and ledger of the patients its answer names."""
    plan = state.plan
    table = cohort_table.table_of(ctx.kb) if plan.analysis == "cohort" else None
    if table is not None:
        known = ctx.kb.patient_ids()
        sel, notes = cohort_table.cohort_frame(
            table,
            plan.patients,
            plan.instruments,
            plan.visit_filter,
            all_patients=len(plan.patients) == len(known),
            rule=caveats.rule_of(ctx.contexts),
        )
        if sel.empty:
            raise NoFactsError(
                "no facts remain for the plan: " + (" ".join(notes) or "the KB holds no sessions")
            )
        return {"intent": INTENT_MAP["cohort"], "cohort_frame": sel, "notes": notes}
    out = fetch_facts(state.plan, ctx.kb, ctx.contexts)
    out["series"] = series(out["facts"], ctx.contexts)
    # the whole course per instrument, item findings, and the sessions excluded at ingest for
    # the plan's patients; then every statement of the run, whose values are the ledger
    out.update(course_and_findings(out["facts"], ctx.contexts, state.plan.patients))
    out["statements"] = build_statements(
        out["facts"],
        out["series"],
        out["courses"],
        out["findings"],
        state.excluded,
        ctx.contexts,
        analysis=plan.analysis,
    )
    out["ledger"] = out["statements"].ledger
    return out
