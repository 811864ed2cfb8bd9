"""End to end with the real bundled SmolLM2-135M model (slow): one run per analysis type over the
shipped synthetic sample, grounding guard on.

What must hold whatever the tiny model writes: the paper's call counts (domain agents batched),
every released text passes the claim-level check (hallucination rate 0, claim accuracy 1 over
claims with context), rounds stay within the bound, and no other patient's number reaches a prompt.
max_new_tokens is lowered (configuration only) so the four runs fit a 2-core CI machine.
"""

from __future__ import annotations

import os

import pytest

from engine.config import Config
from engine.pipeline import Engine
from engine.types import Plan
from kb_store.documents import build_documents
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB
from kb_store.synth import default_sample_path

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-llm")]

PLANS = {
    "single_session": Plan(
        (5,),
        "single_session",
        ("updrs",),
        "baseline",
        "What is the baseline status of proj id 5 using UPDRS?",
    ),
    "trajectory": Plan(
        (12,),
        "trajectory",
        ("updrs", "pdq8"),
        "none",
        "Show me the UPDRS and PDQ-8 trajectory of proj id 12.",
    ),
    "comparison": Plan(
        (3, 8),
        "comparison",
        ("updrs",),
        "none",
        "Compare the disease progression on UPDRS between proj id 3 and proj id 8.",
    ),
    "cohort": Plan((), "cohort", ("updrs",), "none", "Which patient has the highest UPDRS score?"),
}
#: planner excluded (plan given): one call per domain agent with facts + final (the UPDRS-only
#: single session has 3 domains), or comparison/cohort agent + final
BASE_CALLS = {"single_session": 3 + 1, "trajectory": 4 + 1, "comparison": 1 + 1, "cohort": 1 + 1}


@pytest.fixture(scope="module")
def engine() -> Engine:
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))
    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    cfg = Config.load({"llm": "local", "device": "cpu", "max_new_tokens": 48}, env=env)
    from engine.llm.backends import make_llm

    res = load_sources([default_sample_path()], "generic")
    kb = InMemoryKB(build_documents(res.sessions))
    return Engine(cfg, kb, make_llm(cfg))


@pytest.mark.parametrize("analysis", list(PLANS))
def test_real_model_run_is_grounded(engine: Engine, analysis: str) -> None:
    plan = PLANS[analysis]
    res = engine.run(plan)
    v = res.verification

    assert res.backend != "facts"
    assert res.summary.strip()
    # call counts: the paper's table minus the planner; each regeneration adds exactly one call
    skipped = v["call_counts"]["skipped_prompt_too_long"]  # prompts beyond the 8k context
    assert res.llm_calls + skipped == BASE_CALLS[analysis] + v["rounds"], v["call_counts"]
    assert v["call_counts"]["planner"] == 0
    # the released texts are grounded, whatever the model wrote
    assert v["hallucination_rate"] == 0.0, v["unsupported"]
    assert not v["unsupported"]
    for agent, rec in v["per_agent"].items():
        assert rec["rounds"] <= engine.cfg.grounding_rounds, agent
        assert rec["passed"], (agent, rec)
    if "claim_accuracy" in v:
        assert v["claim_accuracy"] in (None, 1.0)
    # patient scope: no other patient's id is written as a patient in any prompt
    allowed = set(plan.patients) or set(engine.kb.patient_ids())
    assert {f.patient for f in res.facts} <= allowed
