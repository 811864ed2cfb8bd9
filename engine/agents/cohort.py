"""Cohort Agent: G = L_cohort(q, mu, ranking, C). The statistics are computed in code
(engine.cohort_stats); the LLM (when configured) only explains `mu`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine import facts_text
from engine.agents.guard import Generation, prompt_text, with_allowed
from engine.cohort_stats import compute_cohort, render_cohort_facts
from engine.ledger import cohort_values
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.state import NodeContext, State


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


def cohort_node(state: State, ctx: NodeContext) -> dict:
    """The cohort statistics (added to the ledger), then G = the text that explains mu."""
    cohort = compute_cohort(
        state.facts, state.query, state.plan.instruments, statistic=state.plan.statistic
    )
    ledger = state.ledger + cohort_values(cohort)
    gen = Generation(state, ctx, ledger)
    req = cohort_request(state.query, cohort, ctx.contexts.combined, state.notes + cohort["notes"])
    req = with_allowed(req, req.user)
    fallback = facts_text.cohort_text(cohort)
    (text,) = gen.texts([req], [fallback])
    g = gen.release("cohort", req, text, fallback)
    return {
        "cohort": cohort,
        "ledger": ledger,
        "narratives": {**state.narratives, "cohort": g},
        "upstream": g,
        "prompts": {**state.prompts, "cohort": prompt_text(req)},
        **gen.changes(),
    }
