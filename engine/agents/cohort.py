"""Cohort Agent: G = L_cohort(q, mu, ranking, C). The statistics are computed in code
(engine.clinical.cohort); the LLM (when configured) only explains `mu`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.agents.digest_request import digest_request
from engine.agents.final import cohort_t_patients
from engine.agents.guard import Generation, prompt_text
from engine.clinical import cohort_table, item_cohort, table_stats
from engine.clinical.cohort import compute_cohort, render_cohort_facts
from engine.clinical.findings import course_and_findings
from engine.clinical.series import series
from engine.clinical.statement_build import build_statements
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.retrieve import fetch_facts
from engine.state import NodeContext, State
from engine.types import CohortAnswer, Plan
from engine.writing import dense
from kb_store.profiles import DOMAINS


def cohort_request(
    query: str, cohort: dict[str, Any], context: str, notes: Sequence[str]
) -> LLMRequest:
    p = load_prompt("cohort")
    stat, ranking = render_cohort_facts(cohort)
    note_txt = ("\nNotes: " + " ".join(notes) + "\n") if notes else ""
    return LLMRequest(
        system=p["system"].format(context=context),
        user=p["user"].format(query=query, statistic=stat, ranking=ranking, notes=note_txt),
        agent="cohort",
    )


def answer_facts(state: State, ctx: NodeContext, cohort: CohortAnswer) -> dict:
    """The facts, series and ledger of the patients the answer names, not of the whole
    cohort. F, the series and the final table T hold the top of the ranking and the ties
    (engine.agents.final.cohort_t_patients); the ledger adds the scoped cohort values (ranks,
    ranked scores, slopes and extremes of engine.clinical.table_stats.answer_scope). So the final text and
    the claim check cost the same at 44 and at 10,000 patients."""
    shown = cohort_t_patients(cohort)
    if state.cohort_frame is not None and not shown:  # an item question nobody is listed for
        facts = []
    elif state.cohort_frame is not None:
        plan = state.plan
        sub = Plan(tuple(sorted(shown)), plan.analysis, plan.instruments, plan.visit_filter)
        facts = fetch_facts(sub, ctx.kb, ctx.contexts)["facts"]
    else:
        facts = [f for f in state.facts if f.patient in shown]
    ser = series(facts, ctx.contexts)
    # the clinical courses and findings of the same patients, with their ledger rows
    clin = course_and_findings(facts, ctx.contexts, sorted(shown))
    statements = build_statements(
        facts,
        ser,
        clin["courses"],
        clin["findings"],
        state.excluded,
        ctx.contexts,
        analysis=state.plan.analysis,
        cohort=cohort,
        scope=table_stats.answer_scope(cohort),
    )
    subsets = {d: [f for f in facts if f.domain == d] for d in DOMAINS}
    return {
        "facts": facts,
        "subsets": subsets,
        "series": ser,
        "ledger": statements.ledger,
        "statements": statements,
        **clin,
    }


def cohort_answer(state: State, ctx: NodeContext) -> CohortAnswer:
    """The cohort statistics, from the session table's selection when retrieve built one, else
    from F; an item question ("item:<concept>") by the item (engine.clinical.item_cohort)."""
    plan = state.plan
    if item_cohort.concept_id(plan.statistic) is not None:
        concept = item_cohort.concept_for(plan.statistic, ctx.contexts.red_flags)
        table = cohort_table.table_of(ctx.kb) if state.cohort_frame is not None else None
        if table is not None:
            return item_cohort.item_cohort_table(table, state.cohort_frame, concept)
        return item_cohort.item_cohort_facts(state.facts, concept)
    if state.cohort_frame is not None:
        return table_stats.compute_cohort_table(
            state.cohort_frame, state.query, plan.instruments, plan.statistic
        )
    return compute_cohort(state.facts, state.query, plan.instruments, statistic=plan.statistic)


def cohort_node(state: State, ctx: NodeContext) -> dict:
    """The cohort statistics, the answer's facts and ledger, then G = the text that explains
    mu."""
    cohort = cohort_answer(state, ctx)
    scoped = answer_facts(state, ctx, cohort)
    gen = Generation(state, ctx, scoped["ledger"], scoped["statements"])
    req = cohort_request(state.query, cohort, ctx.contexts.combined, state.notes + cohort["notes"])
    shown = cohort_t_patients(cohort)
    req = gen.sized(gen.citing(gen.allowing(req, req.user), patients=shown), shown)
    fallback = dense.cohort_text(cohort, scoped["statements"])
    drafts = dict(state.drafts)
    if gen.model_writes:  # the final digest in the same batch (engine.agents.digest_request)
        draft = (
            digest_request(gen, state.query, "cohort", shown, cohort.get("patient"))
            if state.sink is None
            else None
        )
        (text,), new = gen.generate_with_draft([req], draft)
        drafts.update(new)
    else:
        text = fallback
    g = gen.release("cohort", req, text, fallback)
    return {
        **scoped,
        "cohort": cohort,
        "narratives": {**state.narratives, "cohort": g},
        "upstream": g,
        "prompts": {**state.prompts, "cohort": prompt_text(req)},
        "drafts": drafts,
        **gen.changes(),
    }
