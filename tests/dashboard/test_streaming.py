"""Streaming each agent's text as it is written, and cancelling (issue 12, point 9)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

import marag_engine_fixtures as fx  # noqa: E402
from fakes import FakeLLM  # noqa: E402

from dashboard.streaming import Unmarked, run_streaming  # noqa: E402
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
    # the final digest cites statements: the stream shows it without a marker, as released
    final = text.split("**final**")[1]
    assert "[S" not in final and final.split()[:3] == box["result"].summary.split()[:3]


def test_markers_split_across_pieces_never_show():
    u = Unmarked()
    pieces = ["[", "S4", "] Motor rose to 30", " [S", "5,", " S6] at visit 4. [", "x] ok [S7"]
    shown = "".join(u.feed(p) for p in pieces) + u.flush()
    assert shown == "Motor rose to 30 at visit 4. [x] ok [S7"  # no marker: shown, as released


def test_closing_the_stream_cancels_generation():
    eng = fx.engine(FakeLLM(fx.echo_facts))
    stream, box = run_streaming(lambda sink: eng.run(TRAJ, sink=sink))
    for _ in range(5):
        next(stream)
    stream.close()  # what a rerun (Cancel clicked) does to st.write_stream's generator
    assert isinstance(box.get("error"), Cancelled) and "result" not in box


def test_progress_reaches_the_page_before_the_text_in_the_script_thread():
    import threading

    from dashboard.streaming import NODE, Progress, progress_label

    eng = fx.engine(FakeLLM(fx.echo_facts))
    seen: list[tuple[str, Progress]] = []
    page = threading.current_thread()

    def on_progress(p: Progress) -> None:
        assert threading.current_thread() is page  # Streamlit calls only from the script thread
        seen.append(("progress", p))

    stream, box = run_streaming(
        lambda sink: eng.run(TRAJ, on_node=sink.on_node, sink=sink), on_progress
    )
    for piece in stream:
        seen.append(("text", piece))
    assert "result" in box
    assert seen[0] == ("progress", Progress("retrieve", NODE))  # before any model work
    first_text = next(i for i, (kind, _) in enumerate(seen) if kind == "text")
    assert any(kind == "progress" and p.agent == "motor" for kind, p in seen[:first_text])
    final = [p for kind, p in seen if kind == "progress" and p.agent == "final"]
    counts = [p.tokens for p in final if p.stage == "writing"]
    assert counts == sorted(counts) and counts[-1] == final[-1].tokens
    assert progress_label(final[-1]) == f"Summary agent: done, {counts[-1]} tokens"


def test_progress_labels():
    from dashboard.streaming import NODE, QUEUED, Progress, progress_label

    assert progress_label(Progress("final", "writing", 42)) == "Summary agent: writing, 42 tokens"
    assert progress_label(Progress("motor", "writing", 1)) == "Motor agent: writing, 1 token"
    assert (
        progress_label(Progress("qol", "loading model"))
        == "Quality-of-life agent: loading model..."
    )
    assert progress_label(Progress("domain_agents", NODE)) == "Running: domain agents..."
    assert progress_label(Progress("", QUEUED, 2)).startswith("Waiting for the model: position 2")
