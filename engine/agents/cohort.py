"""Cohort Agent: G = L_cohort(q, mu, ranking, C). The statistics are computed in code
(engine.cohort_stats); the LLM (when configured) only explains `mu`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.cohort_stats import render_cohort_facts
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt


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
