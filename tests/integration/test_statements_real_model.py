"""Statement-level grounding with the real bundled SmolLM2-135M (slow): whatever the model
writes, the released texts contain no unsupported sentence and state their key facts, on two
MA-RAG study patients (single session of patient 3, trajectory of patient 1)."""

from __future__ import annotations

import os

import pytest

from engine.config import Config
from engine.eval.harness import default_marag_dir
from engine.grounding.verify import context_phrases, verify_text
from engine.pipeline import Engine
from engine.types import Plan

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("local-llm"),
    pytest.mark.skipif(not default_marag_dir().is_dir(), reason="MA-RAG study data not found"),
]

PLANS = [
    Plan((3,), "single_session", ("updrs", "pdq8"), "baseline", "baseline status of proj id 3"),
    Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "trajectory of proj id 1"),
]


@pytest.fixture(scope="module")
def engine() -> Engine:
    import torch

    from engine.llm.backends import make_llm
    from kb_store.documents import build_documents
    from kb_store.ingest import load_sources
    from kb_store.reader import InMemoryKB

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))
    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    cfg = Config.load({"llm": "local", "device": "cpu", "max_new_tokens": 48}, env=env)
    res = load_sources([default_marag_dir()])
    return Engine(cfg, InMemoryKB(build_documents(res.sessions)), make_llm(cfg))


@pytest.mark.parametrize("plan", PLANS, ids=[p.analysis for p in PLANS])
def test_released_texts_have_no_unsupported_sentence(engine: Engine, plan: Plan) -> None:
    res = engine.run(plan)
    v = res.verification
    assert res.backend != "facts" and res.llm_calls > 0
    assert v["unsupported_sentences"] == 0
    for agent, rec in v["per_agent"].items():
        assert rec["released"] in ("as_written", "repaired", "regenerated", "replaced"), agent
        assert rec["unsupported_sentences"] == 0 and rec["coverage"] >= engine.cfg.coverage_min
    # re-check the released texts from scratch (not the record): every sentence holds
    texts = {**res.narratives, "final": res.summary}
    texts.pop("comparison", None)
    for agent, text in texts.items():
        rec = verify_text(
            text,
            res.ledger,
            res.plan.patients,
            agent=None,
            phrases=context_phrases(engine.contexts),
        )
        assert rec["unsupported_sentences"] == 0, (agent, rec["removable"])
    for r in v["removed_sentences"]:  # what repair removed, each with its reason
        assert r["text"] and r["reasons"]
