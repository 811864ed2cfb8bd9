"""A facts-backend run pauses the cyclic collector and restores it (engine.collector); a model
run leaves it alone. The speed this buys is measured in bench/README.md, not here."""

from __future__ import annotations

import gc

import marag_engine_fixtures as mf
import pytest
from fakes import FakeLLM

from engine.collector import paused_collector
from engine.types import Plan


def test_paused_collector_restores_the_switch_it_found() -> None:
    assert gc.isenabled()
    with paused_collector():
        assert not gc.isenabled()
        with paused_collector():  # nested: the inner block leaves it to the outer one
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_collector():
        raise RuntimeError("a failing run")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_collector():
            pass
        assert not gc.isenabled()  # off before: off after
    finally:
        gc.enable()


def test_a_facts_run_runs_without_the_collector_and_restores_it() -> None:
    eng = mf.engine()
    seen: list[bool] = []
    res = eng.run(
        Plan((eng.kb.patient_ids()[0],), "trajectory"),
        on_node=lambda _n, _s: seen.append(gc.isenabled()),
    )
    assert res.summary and seen and not any(seen)
    assert gc.isenabled()


def test_a_model_run_leaves_the_collector_on() -> None:
    eng = mf.engine(FakeLLM(mf.echo_facts))
    seen: list[bool] = []
    eng.run(
        Plan((eng.kb.patient_ids()[0],), "trajectory"),
        on_node=lambda _n, _s: seen.append(gc.isenabled()),
    )
    assert seen and all(seen)
