"""Every path that shows a result records it first, through one function: dashboard.trail.
record_release. The test enumerates dashboard/views/*.py: each page is either one that can show a
result (it must reach record_release: directly, or through widgets.run_step) or one that shows
none (Data: KB builds, recorded as kb_build; Review: entries already in the trail). A new page
fails here until it is classified. For each page that shows a result, showing it writes an audit
entry naming it, and when record_release refuses (the trail is unavailable) nothing is shown.

AppTest over the in-memory KB of tests/dashboard/helpers.py; the trail is in each test's tmp
(conftest.py)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from dashboard import trail, widgets
from engine.audit.store import AuditStore

VIEWS = Path(__file__).resolve().parents[2] / "dashboard" / "views"
#: page -> how it reaches record_release ("run_step" or "record_release"); None: shows no result
PAGES = {
    "patient": "run_step",
    "compare": "run_step",
    "cohort": "run_step",
    "search": "record_release",
    "provenance": "record_release",
    "data": None,
    "review": None,
}
#: what a page's source does when it gets or shows a result
SHOWS = re.compile(r"run_step\(|current_result\(|handle\.run\(|check_against_result\(")


def _entries(tmp_path, action: str = "ask") -> list:
    db = tmp_path / "audit.sqlite3"
    return AuditStore(f"sqlite:///{db}").entries(actions=(action,)) if db.exists() else []


def _text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [e.value for e in at.error])


def test_every_page_is_classified_and_reaches_record_release():
    pages = {p.stem for p in VIEWS.glob("*.py") if p.stem != "__init__"}
    assert pages == set(PAGES), "classify the new page in PAGES (does it show a result?)"
    for page, via in PAGES.items():
        src = (VIEWS / f"{page}.py").read_text(encoding="utf-8")
        if via is None:
            assert not SHOWS.search(src), f"{page} gets a result: it must call record_release"
            continue
        assert f"{'widgets.run_step(' if via == 'run_step' else 'trail.record_release('}" in src
    # run_step's release records before it stores (and so before any page can show it)
    release = inspect.getsource(widgets._release)
    assert release.index("trail.record_release(") < release.index("session.store_result(")
    # Search records before it stores the result and opens Provenance
    search = (VIEWS / "search.py").read_text(encoding="utf-8")
    assert search.index("trail.record_release(") < search.index("session.store_result(")
    prov = (VIEWS / "provenance.py").read_text(encoding="utf-8")
    assert prov.index("trail.record_release(result") < prov.index("render.summary_panel(")


def _run_patient(at):
    at.selectbox(key="patient").set_value(8).run()
    at.button(key="run_patient").click().run()
    return at


def _run_compare(at):
    at.switch_page("views/compare.py").run()
    at.multiselect(key="patients").set_value([3, 8]).run()
    at.button(key="run_compare").click().run()
    return at


def _run_cohort(at):
    at.switch_page("views/cohort.py").run()
    at.button(key="run_cohort").click().run()
    return at


def _search_to_provenance(at):
    at.switch_page("views/search.py").run()
    at.text_input(key="search_text").set_value("motor").run()
    at.button(key="prov_1").click().run()
    return at


SCENARIOS = {
    "patient": (_run_patient, {8}),
    "compare": (_run_compare, {3, 8}),
    "cohort": (_run_cohort, None),
    "search": (_search_to_provenance, None),
}


def _shown(at) -> bool:
    return "Grounding check passed" in _text(at) or any(h.value == "Provenance" for h in at.header)


@pytest.mark.parametrize("page", sorted(SCENARIOS))
def test_showing_a_result_records_it_first(app, handle, tmp_path, page):
    drive, patients = SCENARIOS[page]
    at = drive(app.run())
    assert not at.exception, at.exception
    assert _shown(at)
    (entry,) = _entries(tmp_path)
    assert entry.result is not None and entry.result.get("summary")
    if patients is not None:
        assert set(entry.patients) == patients
    if page == "search":  # Provenance shows the very result Search recorded: no second entry
        shown = json.loads(at.json[0].value)
        assert entry.plan["analysis"] == shown["analysis"] == "single_session"
        assert entry.patients == shown["patients"]


@pytest.mark.parametrize("page", sorted(SCENARIOS))
def test_a_result_that_cannot_be_recorded_is_not_shown(app, handle, tmp_path, page, monkeypatch):
    refused: list = []

    def refuse(result, cfg=None, **kw):
        refused.append(result)
        return False

    monkeypatch.setattr(trail, "record_release", refuse)
    drive, _ = SCENARIOS[page]
    at = drive(app.run())
    assert not at.exception, at.exception
    assert refused and not _shown(at)
    assert _entries(tmp_path) == []


def test_provenance_records_a_result_the_session_holds_unrecorded(app, handle, tmp_path):
    at = _run_patient(app.run())
    (first,) = _entries(tmp_path)
    at.switch_page("views/provenance.py").run()
    assert len(_entries(tmp_path)) == 1  # the Patient page's release: not recorded again
    at.session_state[trail.ENTRY_IDS] = {}  # a result in the session without its entry
    at.session_state[trail.RELEASED] = {}
    at.switch_page("views/patient.py").run()
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    entries = _entries(tmp_path)
    assert len(entries) == 2 and entries[1].result_hash == first.result_hash


def test_provenance_check_a_text_records_the_check(app, handle, tmp_path):
    at = _run_patient(app.run())
    at.switch_page("views/provenance.py").run()
    at.text_area(key="check_text").set_value("Patient 8 had a motor score of 35.").run()
    at.button(key="check_button").click().run()
    assert not at.exception, at.exception
    (check,) = _entries(tmp_path, "check")
    assert check.patients == [8] and "sentences_total" in check.result
