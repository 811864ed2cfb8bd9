"""engine.engine_factory.open_engine: the one way to build an Engine (CLI, dashboard, eval, bench)."""

from __future__ import annotations

import marag_engine_fixtures as fx
import pytest
from fakes import FakeLLM

from engine.config import Config
from engine.engine_factory import open_engine
from kb_store.kb_location import KBMissingError


def test_given_kb_and_facts_backend():
    kb = fx.kb()
    eng = open_engine(Config.load({"llm": "facts"}, env={}), kb=kb)
    assert eng.kb is kb and eng.llm is None and eng.backend == "facts"


def test_given_llm_wins_over_the_configured_backend():
    llm = FakeLLM()
    eng = open_engine(Config.load({"llm": "facts"}, env={}), kb=fx.kb(), llm=llm)
    assert eng.llm is llm and eng.backend == "fake"


def test_no_kb_at_the_configured_place_is_a_clear_error(tmp_path):
    cfg = Config.load({"kb_dir": str(tmp_path / "none"), "embedding": "hashing"}, env={})
    with pytest.raises(KBMissingError, match=str(tmp_path / "none")):
        open_engine(cfg)


def test_public_api_asks_a_question_over_the_configured_kb(tmp_path):
    """`from engine import open_engine, Config`: the KB that Config names (a real Chroma KB, hashing
    embeddings), planned from the query text, answered by the facts backend."""
    import engine
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    assert sorted(engine.__all__) == ["Config", "open_engine"]
    cfg = engine.Config.load(
        {"kb_dir": str(tmp_path / "kb"), "embedding": "hashing", "llm": "facts"}, env={}
    )
    cfg.kb.build(load_sources([default_sample_path()]).sessions)
    result = engine.open_engine(cfg).ask("How did patient 3's motor score change over time?")
    assert result.plan.patients == (3,) and result.plan.analysis == "trajectory"
    assert "patient 3" in result.summary.lower()
    assert result.verification["unsupported"] == []
    with pytest.raises(AttributeError, match="no attribute 'Engine'"):
        _ = engine.Engine
