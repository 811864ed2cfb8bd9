"""Domain Agents (motor, adl, nonmotor, qol): N_d = L_domain(q, F_d, C_d).

The per-visit deltas, cumulative change from baseline, MCID labels and severity are computed in
code (common.series) and rendered into the prompt's facts table; an empty subset is skipped (no
request, no LLM call).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.course import SeriesRow, render_series_table
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from kb_store.profiles import DOMAIN_WORDS

AGENT_NAMES = {"motor": "motor", "adl": "adl", "nonmotor": "nonmotor", "qol": "qol"}


def domain_request(
    domain: str, query: str, rows: Sequence[SeriesRow], context: str, notes: Sequence[str] = ()
) -> LLMRequest | None:
    if not rows:
        return None
    p = load_prompt("domain")
    label = DOMAIN_WORDS[domain]
    note_txt = ("\nNotes: " + " ".join(notes) + "\n") if notes else ""
    return LLMRequest(
        system=p["system"].format(domain_label=label, context=context),
        user=p["user"].format(
            domain_label=label, query=query, facts=render_series_table(rows), notes=note_txt
        ),
        agent=AGENT_NAMES[domain],
    )
