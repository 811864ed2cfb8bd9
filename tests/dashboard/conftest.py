"""Fixtures for the dashboard tests: a real Engine over an in-memory KB (fast), injected into the
app by replacing the engine factory (engine.engine_factory.open_engine, which dashboard.services
calls; AppTest runs the app in this process), and Streamlit caches cleared between tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
APP = REPO / "dashboard" / "app.py"

if "dash_helpers" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("dash_helpers", HERE / "helpers.py")
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["dash_helpers"] = _mod
    _spec.loader.exec_module(_mod)
h = sys.modules["dash_helpers"]


@pytest.fixture(autouse=True)
def _audit_trail_in_tmp(monkeypatch, tmp_path):
    """Issue 14: the app records every released result; keep each test's trail in its tmp."""
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "audit.sqlite3"))
    monkeypatch.delenv("MARAG_TRUSTED_NETWORK", raising=False)
    monkeypatch.delenv("MARAG_USER", raising=False)


@pytest.fixture
def helpers():
    return h


def _final_script(req):
    """Fake LLM: each agent names itself, then restates the facts of its prompt (issue 12: a
    text must state its key facts to be released)."""
    return f"{req.agent} narrative:\n" + h.restate_facts(req)


@pytest.fixture
def handle(monkeypatch, request):
    import streamlit as st
    from fakes import FakeLLM

    from dashboard import services
    from dashboard.run_gate import RunGate
    from engine import engine_factory
    from engine.config import Config
    from engine.pipeline import Engine

    st.cache_resource.clear()
    st.cache_data.clear()
    kb = h.kb()
    llm = FakeLLM(script=_final_script) if getattr(request, "param", "facts") == "fake" else None
    engine = Engine(Config.load(env={}), kb, llm)
    hd = services.EngineHandle(engine, kb, engine.backend, RunGate(1))
    monkeypatch.setattr(engine_factory, "open_engine", lambda cfg, **kw: engine)
    yield hd
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app(handle):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(APP), default_timeout=20)
