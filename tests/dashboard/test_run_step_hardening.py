"""Issue 13 items 8-10 in the dashboard: the ask box has a length limit and refuses control
characters; a run queued behind the local model shows its position; a KB that vanished under the
cached engine (Chroma NotFoundError) is an error message and a reopened engine, not a broken page."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from engine.query_input import MAX_QUERY_CHARS

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def _text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [e.value for e in at.error])


def test_ask_box_limits_length_and_refuses_control_characters(app):
    at = app.run()
    box = at.text_input(key="ask_patient")
    assert box.max_chars == MAX_QUERY_CHARS
    box.input("patient\x1b 3").run()
    at.button(key="parse_patient").click().run()
    assert not at.exception, at.exception
    assert "control or invisible character" in "\n".join(e.value for e in at.error)


def test_queued_run_shows_its_position(app, handle, monkeypatch):
    from dashboard import services
    from dashboard.run_gate import RunGate

    gate = RunGate(1)  # as for the local model: one run at a time
    monkeypatch.setattr(services.RunGate, "for_backend", classmethod(lambda cls, b, m: gate))
    release = threading.Event()

    def hold() -> None:
        with gate.slot():
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    time.sleep(0.05)
    shown: list[int] = []
    run = services.EngineHandle.run

    def recording_run(self, plan, on_node=None, on_wait=None):
        def wait(pos: int) -> None:
            shown.append(pos)
            on_wait(pos)  # run_step's: updates the st.status label
            release.set()  # the other run ends; this one gets the slot

        return run(self, plan, on_node, wait)

    monkeypatch.setattr(services.EngineHandle, "run", recording_run)
    at = app.run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    other.join()
    assert not at.exception, at.exception
    assert shown == [1] and "Grounding check passed" in _text(at)


def test_vanished_kb_is_a_message_and_the_engine_is_reopened(app, handle, monkeypatch):
    from chromadb.errors import NotFoundError

    from dashboard import services

    cleared = []
    monkeypatch.setattr(services, "clear_engines", lambda: cleared.append(1))

    def broken(*a, **k):
        raise NotFoundError("Collection [abc] does not exist.")

    monkeypatch.setattr(handle.engine, "run", broken)
    at = app.run()
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    assert "knowledge base could not be read" in "\n".join(e.value for e in at.error)
    assert cleared == [1]
