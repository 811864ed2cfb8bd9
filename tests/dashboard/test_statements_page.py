"""Provenance page, statement-level grounding (issue 12): removed sentences with their reasons,
how each agent text was released, and the "Check a text" box."""

from __future__ import annotations

import threading

import pytest


@pytest.fixture
def repair_handle(monkeypatch, helpers):
    """A fake model whose final text restates the facts plus one sentence the facts cannot
    support: the guard repairs it (removes the sentence) instead of replacing the text."""
    import streamlit as st
    from fakes import FakeLLM

    from dashboard import services
    from engine import engine_factory
    from engine.config import Config
    from engine.pipeline import Engine

    def script(req):
        text = helpers.restate_facts(req)
        if req.agent == "final":
            return text + "\n\nPatient 8 was started on levodopa."
        return text

    st.cache_resource.clear()
    st.cache_data.clear()
    kb = helpers.kb()
    engine = Engine(Config.load(env={}), kb, FakeLLM(script=script))
    hd = services.EngineHandle(engine, kb, engine.backend, threading.Lock())
    monkeypatch.setattr(engine_factory, "open_engine", lambda cfg, **kw: engine)
    yield hd
    st.cache_resource.clear()
    st.cache_data.clear()


def test_removed_sentence_and_check_box(repair_handle, helpers):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    app = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
    at = AppTest.from_file(str(app), default_timeout=30).run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    frames = [d.value for d in at.dataframe]
    removed = next(f for f in frames if "removed sentence" in f.columns)
    assert list(removed["removed sentence"]) == ["Patient 8 was started on levodopa."]
    assert "medication" in removed["why"].iloc[0]
    agents = next(f for f in frames if "released" in f.columns)
    assert dict(zip(agents.agent, agents.released, strict=True))["final"] == "repaired"

    at.text_area(key="check_text").input("Patient 8 is 72 years old.").run()
    at.button(key="check_button").click().run()
    assert not at.exception, at.exception
    assert any("Fails" in e.value for e in at.error)
    frames = [d.value for d in at.dataframe]
    res = next(f for f in frames if "status" in f.columns and "sentence" in f.columns)
    assert list(res.status) == ["unsupported"] and "demographic" in res.why.iloc[0]
