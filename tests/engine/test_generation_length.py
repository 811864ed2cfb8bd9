"""The generation length rule (engine.llm.lengths) and every agent request sized by it
(engine.agents.budget), for the local and the OpenAI-compatible backends alike."""

from __future__ import annotations

import marag_engine_fixtures as fx
from fakes import FakeLLM

from engine.agents.budget import agent_statements
from engine.agents.citable import key_statements
from engine.config import PAPER_MAX_NEW_TOKENS
from engine.llm.lengths import (
    BASE_TOKENS,
    CAP_TOKENS,
    FLOOR_TOKENS,
    TOKENS_PER_STATEMENT,
    generation_length,
    statements_within,
)
from engine.types import Plan

AGENTS = ("motor", "adl", "nonmotor", "qol", "final")


def test_length_grows_with_the_statements_between_floor_and_cap():
    lengths = [generation_length(n) for n in range(0, 80)]
    assert lengths == sorted(lengths)  # never shrinks as the statements grow
    assert lengths[0] == FLOOR_TOKENS and min(lengths) >= FLOOR_TOKENS
    assert generation_length(10) == BASE_TOKENS + 10 * TOKENS_PER_STATEMENT > FLOOR_TOKENS
    assert generation_length(11) - generation_length(10) == TOKENS_PER_STATEMENT
    assert max(lengths) == CAP_TOKENS == generation_length(10_000)


def test_configured_maximum_caps_the_length():
    assert generation_length(10, cap=100) == 100
    assert generation_length(0, cap=16) == 16  # below the floor too: the setting wins
    assert generation_length(3, cap=5000) == generation_length(3)  # never raised by it


def _requests(llm: FakeLLM, plan: Plan, **cfg) -> dict[str, int | None]:
    eng = fx.engine(llm, **cfg)
    eng.run(plan)
    return {r.agent: r.max_new_tokens for r in llm.calls}


def test_every_agent_request_carries_its_length_from_its_statements():
    plan = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "trajectory of patient 1")
    llm = FakeLLM(fx.echo_facts)
    eng = fx.engine(llm)
    result = eng.run(plan)
    got = {r.agent: r.max_new_tokens for r in llm.calls}
    assert set(got) == set(AGENTS)
    for agent in AGENTS[:4]:
        n = len(agent_statements(agent, result.statements, plan.patients))
        assert n > 0
        assert got[agent] == generation_length(n, eng.cfg.max_new_tokens)
    assert eng.cfg.max_new_tokens == PAPER_MAX_NEW_TOKENS  # the default is no cap on the rule
    # a model writes only the summary's digest, from the key statements (the details are
    # rendered): its length follows from those
    keys = key_statements(result.statements, plan.patients)
    assert keys and got["final"] == generation_length(len(keys), eng.cfg.max_new_tokens)


def test_more_visits_more_tokens():
    one = Plan((1,), "trajectory", ("updrs",), "last_2_visits", "q")
    four = Plan((1,), "trajectory", ("updrs",), "none", "q")
    short = _requests(FakeLLM(fx.echo_facts), one)
    long = _requests(FakeLLM(fx.echo_facts), four)
    assert long["motor"] > short["motor"]
    # the digest is sized from the key statements, one per part and flag whatever the visits
    assert long["final"] >= short["final"]


def test_an_explicit_maximum_caps_every_agent():
    plan = Plan((1, 2), "comparison", ("updrs", "pdq8"), "none", "compare 1 and 2")
    free = _requests(FakeLLM(fx.echo_facts), plan)
    capped = _requests(FakeLLM(fx.echo_facts), plan, max_new_tokens=90)
    assert set(free) == set(capped) == {"comparison", "final"}
    assert max(free.values()) > 90 and set(capped.values()) == {90}


def test_cohort_answer_is_sized_from_its_scope():
    plan = Plan((), "cohort", ("updrs",), "none", "which patient has the highest motor score")
    got = _requests(FakeLLM(fx.echo_facts), plan)
    assert set(got) == {"cohort", "final"}
    assert all(FLOOR_TOKENS <= v <= CAP_TOKENS for v in got.values() if v is not None)


def test_lines_to_cite_follow_from_the_length_a_text_may_write():
    """A request lists no more statements to cite than its text has room to state
    (statements_within, the inverse of generation_length): one at the CPU's 64 tokens, the run's
    key statements first; the rest of the key facts are completed by the repair."""
    assert statements_within(64) == 1 and statements_within(16) == 1
    for n in (1, 5, 20, 40):
        assert statements_within(generation_length(n)) == n
    plan = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "trajectory of patient 1")
    for cap, lines in ((64, 1), (PAPER_MAX_NEW_TOKENS, None)):
        llm = FakeLLM(fx.echo_facts)
        result = fx.engine(llm, max_new_tokens=cap).run(plan)
        for req in llm.calls:
            listed = [sid for sid, _nums in req.citable or ()]
            if lines is not None:
                assert len(listed) == lines, req.agent
                assert result.statements.get(listed[0]).key, req.agent
            else:
                assert len(listed) > 1, req.agent
