"""Streaming each agent's text as it is written, and cancelling (issue 12, point 9)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

import marag_engine_fixtures as fx  # noqa: E402
from fakes import FakeLLM  # noqa: E402

from dashboard.streaming import run_streaming  # noqa: E402
from engine.llm.base import Cancelled  # noqa: E402
from engine.types import Plan  # noqa: E402

TRAJ = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "trajectory of patient 1")


def test_every_agent_text_is_streamed_under_its_heading():
    eng = fx.engine(FakeLLM(fx.echo_facts))
    stream, box = run_streaming(lambda sink: eng.run(TRAJ, sink=sink))
    text = "".join(stream)
    assert "error" not in box and box["result"].summary
    for agent in ("motor", "adl", "nonmotor", "qol", "final"):
        assert f"**{agent}**" in text
    # the streamed motor text is the text the model wrote (and the guard released as written)
    motor = text.split("**motor**")[1].split("**adl**")[0]
    assert " ".join(motor.split()) == " ".join(box["result"].narratives["motor"].split())


def test_closing_the_stream_cancels_generation():
    eng = fx.engine(FakeLLM(fx.echo_facts))
    stream, box = run_streaming(lambda sink: eng.run(TRAJ, sink=sink))
    for _ in range(5):
        next(stream)
    stream.close()  # what a rerun (Cancel clicked) does to st.write_stream's generator
    assert isinstance(box.get("error"), Cancelled) and "result" not in box
