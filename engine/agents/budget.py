"""What each agent must say, counted: the statements an agent's text renders, and the request
with the generation length they give (engine.llm.lengths.generation_length).

Every agent node sizes its request here, so the local and the OpenAI-compatible backends write at
most as much as the agent has to say (docs/engine.md, "Generation length"). The facts backend
makes no request, so its text does not depend on this module.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from engine.clinical.statements import Statement, Statements
from engine.llm.base import LLMRequest
from engine.llm.lengths import generation_length

#: bookkeeping statements (a session's date, counts, thresholds): stated inside other sentences
BOOKKEEPING = frozenset({"session", "count", "reference"})
DOMAIN_AGENTS = frozenset({"motor", "adl", "nonmotor", "qol"})
#: the comparison agent explains table B: one change per patient, part and visit
COMPARISON_KINDS = frozenset({"change"})


def agent_statements(
    agent: str, statements: Statements | None, patients: Collection[int] | None
) -> list[Statement]:
    """The statements `agent`'s text renders: the findings about `patients` (None: every patient
    of the run's statements) and the cohort statistics, without the bookkeeping ones; a
    domain agent's about its own part, the comparison agent's the changes of table B, the cohort
    agent's the cohort statistics and ranks."""
    if statements is None:
        return []
    wanted = None if patients is None else set(patients)
    out = []
    for s in statements:
        if s.kind in BOOKKEEPING or not _about(s, wanted):
            continue
        if _renders(agent, s):
            out.append(s)
    return out


def _about(s: Statement, patients: set[int] | None) -> bool:
    """A statement about one of `patients` (None: any), or a cohort statistic of no patient."""
    if s.patient is None:
        return s.kind == "cohort"
    return patients is None or s.patient in patients


def _renders(agent: str, s: Statement) -> bool:
    """Whether `agent`'s text renders statement `s` (its kind and subject)."""
    if agent in DOMAIN_AGENTS:
        return s.subject == agent
    if agent == "comparison":
        return s.kind in COMPARISON_KINDS
    if agent == "cohort":
        return s.kind == "cohort"
    return True  # the final agent: every finding


def sized(
    req: LLMRequest,
    statements: Statements | None,
    patients: Collection[int] | None,
    cap: int | None,
    renders: str | None = None,
) -> LLMRequest:
    """`req` with max_new_tokens from the statements its agent renders (or the agent `renders`
    names: the final text of a cohort answer renders what the cohort agent's does), at most
    `cap` (cfg.max_new_tokens)."""
    n = len(agent_statements(renders or req.agent, statements, patients))
    return replace(req, max_new_tokens=generation_length(n, cap))
