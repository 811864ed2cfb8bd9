"""The review queue on the dashboard under AppTest (real Engine over the in-memory KB, real SQLite
trail in tmp): Runs are recorded but queue nothing; "Submit for review" queues the release once,
says so and stays disabled, and a later Run of the same plan is the same queue item; the Review
page lists only the queue of the KB this dashboard serves (another KB's submissions, even at the
same generation label, stay out) and draws the selected item's trajectory chart from the stored
result, or says plainly that it cannot. The stored result rebuilt as a Result draws the same
chart as the result it was stored from."""

from __future__ import annotations

import json
from pathlib import Path

from engine.audit.chain import canonical
from engine.audit.review import queue, submit
from engine.audit.store import AuditStore
from engine.types import Plan

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
PLAN = Plan(patients=(8,), analysis="trajectory", instruments=("updrs", "pdq8"))


def _trail(tmp_path) -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite3'}")


def _run_patient(at, pid: int = 8):
    at.switch_page("views/patient.py").run()
    at.selectbox(key="patient").set_value(pid).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    return at


def _notes(at) -> list[str]:
    return [m.value for m in (*at.success, *at.info) if "review" in m.value]


def test_runs_queue_nothing_and_a_submission_queues_once(handle, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_USER", "dr.local")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    _run_patient(at)
    _run_patient(at)  # Run twice: two releases in the trail, nothing awaiting review
    trail = _trail(tmp_path)
    assert [e.id for e in trail.entries(actions=("ask",))] == [1, 2]
    assert queue(trail, status="all") == []
    button = at.button(key="submit_review_patient")
    assert button.label == "Submit for review" and not button.disabled
    at.switch_page("views/review.py").run()
    assert any("Nothing to show" in i.value for i in at.info)

    _run_patient(at)  # release #3
    at.button(key="submit_review_patient").click().run()
    assert not at.exception, at.exception
    assert _notes(at) == ["Submitted for review as #3"]
    assert at.button(key="submit_review_patient").disabled
    at.run()  # stays so on the next script run
    assert _notes(at) == ["Submitted for review as #3"]
    assert at.button(key="submit_review_patient").disabled

    _run_patient(at)  # release #5: the same plan, KB generation and result
    assert _notes(at) == ["Already in the review queue as #3 (awaiting review)"]
    assert at.button(key="submit_review_patient").disabled
    assert [e.action for e in trail.entries()] == ["ask", "ask", "ask", "submit_review", "ask"]
    assert [i.number for i in queue(trail)] == [3]
    assert trail.verify().ok

    at.switch_page("views/review.py").run()
    assert not at.exception, at.exception
    assert [o.split(" ")[0] for o in at.selectbox(key="review_entry").options] == ["#3"]


def test_review_page_lists_only_this_kbs_queue_with_the_chart(handle, tmp_path, monkeypatch):
    """Two KBs whose releases both name generation `gen-000001`: the Review page of this KB lists
    only its own submission, names the KB, and draws the selected item's chart; an item whose
    stored result is not a Result says so instead of a chart."""
    from streamlit.testing.v1 import AppTest

    from engine.audit import record
    from engine.audit.trail import kb_source
    from engine.config import Config

    here = Config.load()
    other = Config.load({"kb_dir": tmp_path / "other" / "kb"})
    trail = _trail(tmp_path)
    result = handle.run(PLAN)
    mine = record(here, "ask", user="dr.a", role="clinician", result=result)
    theirs = record(other, "ask", user="dr.a", role="clinician", result=result)
    assert mine.detail["kb"] != theirs.detail["kb"]
    assert submit(trail, mine, "dr.a").created and submit(trail, theirs, "dr.a").created
    odd = trail.append(
        user="dr.c",
        role="clinician",
        action="check",
        patients=[3],
        result={"summary": "patient 3: motor 20 at visit 1", "passed": True},
        detail={"kb": kb_source(here)},
    )
    assert submit(trail, odd, "dr.c").created
    assert len(queue(trail)) == 3

    monkeypatch.setenv("MARAG_USER", "dr.review")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    at.switch_page("views/review.py").run()
    assert not at.exception, at.exception
    assert any(kb_source(here) in c.value for c in at.caption)
    pick = at.selectbox(key="review_entry")
    assert [o.split(" ")[0] for o in pick.options] == [f"#{odd.id}", f"#{mine.id}"]
    assert f"#{theirs.id}" not in " ".join(pick.options)

    pick.set_value(mine.id).run()
    assert not at.exception, at.exception
    assert at.get("text")[0].value == result.summary
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    figure = json.loads(charts[0].proto.spec)
    assert {t.get("name") for t in figure["data"]} >= {"Patient 8"}

    at.selectbox(key="review_entry").set_value(odd.id).run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 0
    assert any("cannot be drawn as a chart" in i.value for i in at.info)


def test_a_stored_result_rebuilds_to_the_same_chart(handle):
    from dashboard.stored_result import result_from_json
    from dashboard.trajectory_chart import trajectory_figure

    for plan in (PLAN, Plan(patients=(3, 8), analysis="comparison")):
        result = handle.run(plan)
        stored = json.loads(canonical(result.to_json()))  # as the audit trail keeps it
        rebuilt = result_from_json(stored)
        assert rebuilt is not None
        assert canonical(rebuilt.to_json()) == canonical(result.to_json())
        a = trajectory_figure(result, months=plan.analysis == "comparison")
        b = trajectory_figure(rebuilt, months=plan.analysis == "comparison")
        assert canonical(a.to_plotly_json()) == canonical(b.to_plotly_json())
    assert result_from_json({"summary": "x", "passed": True}) is None  # a `marag check` result
    assert result_from_json({"plan": {"analysis": "nonsense"}}) is None
    assert result_from_json(None) is None
