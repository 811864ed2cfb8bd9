"""The final agent's request when a model writes: the summary's opening digest, from the key
statements given as citable lines (engine.agents.citable), not from the agents' narratives.

The details of the summary stay rendered in code (engine.agents.final.facts_summary), so the
request needs nothing an agent writes: the domain, comparison and cohort nodes put it in the
same `llm.generate` batch as their own requests and hand the text to the final node as a draft
(engine.state.Draft), which guards and releases it. Its length follows from the key statements
it must cover (engine.llm.lengths.generation_length).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from engine.agents import budget
from engine.agents.citable import key_statements, with_citable
from engine.agents.guard import Generation
from engine.llm.base import LLMRequest
from engine.llm.lengths import generation_length
from engine.prompts import load_prompt


def digest_request(
    gen: Generation,
    query: str,
    mode: str,
    patients: Collection[int] | None = None,
    answer: int | None = None,
) -> LLMRequest | None:
    """The final digest request of a run in `mode` (None with the facts backend): its key
    statements about `patients` (default: the plan's) listed as citable lines; a cohort answer
    adds the cohort statements about the `answer` patient and the cohort's statistics (its
    key statement states the rank, not the value)."""
    if not gen.model_writes:
        return None
    p = load_prompt("final")
    shown = sorted(gen.plan_patients if patients is None else patients)
    keys = key_statements(gen.statements, shown)
    if mode == "cohort" and answer is not None:
        more = budget.agent_statements("cohort", gen.statements, [answer])
        keys += [s for s in more if s not in keys]
    req = LLMRequest(
        system=p["digest_system"],
        user=p["digest_user"].format(
            query=query, mode=mode, structure=p["digest_structures"][mode]
        ),
        agent="final",
    )
    req = with_citable(gen.allowing(req), keys, gen.citable_lines)
    return replace(req, max_new_tokens=generation_length(len(keys), gen.ctx.cfg.max_new_tokens))
