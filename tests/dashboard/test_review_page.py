"""The review workflow under AppTest (real Engine over the in-memory KB, real SQLite trail in tmp):
a run on the Patient page is recorded as a release and, once submitted for review, the Review page
lists it as awaiting review, opens the stored result as released with its trajectory chart,
refuses a rejection without a comment, records the rejection with its comment, and the rejected
summary then carries a banner on the Patient page and in the Review list; a sign-off of another
release moves it to "Reviewed"; running the same plan again queues nothing new. Four eyes: the
releases are reviewed by another user; the user a release names is told before clicking that they
cannot review it, and a click is refused and recorded."""

from __future__ import annotations

from pathlib import Path

from engine.audit.store import AuditStore

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def _trail(tmp_path) -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite3'}")


def _run_patient(at, pid: int, *, submit: bool = False):
    at.switch_page("views/patient.py").run()
    at.selectbox(key="patient").set_value(pid).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    if submit:
        at.button(key="submit_review_patient").click().run()
        assert not at.exception, at.exception
    return at


def test_release_review_reject_banner_and_sign_off(handle, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_USER", "dr.local")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    _run_patient(at, 8, submit=True)  # release #1, submitted (#2)
    _run_patient(at, 3, submit=True)  # release #3, submitted (#4)
    trail = _trail(tmp_path)
    released = trail.entries(actions=("ask",))
    assert [(e.id, e.user, e.patients) for e in released] == [
        (1, "dr.local", [8]),
        (3, "dr.local", [3]),
    ]
    summary8 = released[0].result["summary"]
    assert "patient 8" in summary8.lower()

    monkeypatch.setenv("MARAG_USER", "dr.review")  # four eyes: another person reviews
    at.switch_page("views/review.py").run()
    assert not at.exception, at.exception
    assert at.header[0].value == "Review"
    pick = at.selectbox(key="review_entry")
    assert pick.options[0].startswith("#3") and pick.options[1].startswith("#1")  # newest first
    pick.set_value(1).run()
    shown = at.get("text")
    assert shown and shown[0].value == summary8  # the stored text, exactly as released
    assert any("matches its recorded hash" in m.value for m in at.markdown)
    assert len(at.get("plotly_chart")) == 1  # the release's trajectory chart

    at.button(key="review_reject").click().run()  # no comment: refused
    assert any("needs a comment" in e.value for e in at.error)
    assert trail.entries(actions=("reject",)) == []

    at.text_area(key="review_comment_1").set_value(
        "Visit 3 non-motor 0 is a data-entry error ![x](http://img.example/p.png)"
    ).run()
    at.button(key="review_reject").click().run()
    assert not at.exception, at.exception
    rej = trail.entries(actions=("reject",))
    assert [(r.subject, r.user, r.comment) for r in rej] == [
        (1, "dr.review", "Visit 3 non-motor 0 is a data-entry error ![x](http://img.example/p.png)")
    ]
    assert rej[0].detail["result_hash"] == released[0].result_hash
    # entry 1 left the queue; entry 3 is still awaiting review
    assert [o[:2] for o in at.selectbox(key="review_entry").options] == ["#3"]

    # the rejected summary carries its banner wherever it is shown again
    at.segmented_control(key="review_status").set_value("reviewed").run()
    at.selectbox(key="review_entry").set_value(1).run()
    assert any("Rejected in review" in e.value and "data-entry error" in e.value for e in at.error)
    # the comment is shown as written, never as Markdown (no image fetched from another host)
    banner = next(e.value for e in at.error if "Rejected in review" in e.value)
    assert "![x](" not in banner and "!\\[x\\]" in banner
    _run_patient(at, 8)
    assert any("Rejected in review" in e.value for e in at.error)
    # the re-run says the same as release #1: it is that queue item, not a new one
    assert at.button(key="submit_review_patient").disabled
    assert [i.value for i in at.info if "review queue" in i.value] == [
        "Already in the review queue as #1 (rejected)"
    ]
    _run_patient(at, 3)
    assert not any("Rejected in review" in e.value for e in at.error)

    # sign off the other release
    at.switch_page("views/review.py").run()
    at.segmented_control(key="review_status").set_value("pending").run()
    # the re-runs above are releases in the trail (#6 patient 8, #7 patient 3), not queue items
    assert [e.id for e in trail.entries(actions=("ask",))] == [1, 3, 6, 7]
    assert [o.split(" ")[0] for o in at.selectbox(key="review_entry").options] == ["#3"]
    at.selectbox(key="review_entry").set_value(3).run()
    at.button(key="review_sign_off").click().run()
    assert not at.exception, at.exception
    assert [(e.action, e.subject) for e in trail.entries(actions=("sign_off", "reject"))] == [
        ("reject", 1),
        ("sign_off", 3),
    ]
    assert trail.verify().ok
    assert trail.entries(actions=("review_refused",)) == []


def test_own_release_cannot_be_reviewed_on_the_review_page(handle, tmp_path, monkeypatch):
    """The user a release names sees, before clicking, that they cannot review it; Sign off and
    Reject are each refused with that message and recorded as `review_refused`; the chain still
    verifies and another reviewer then signs it off."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_USER", "dr.local")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    _run_patient(at, 8, submit=True)
    at.switch_page("views/review.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="review_entry").options[0].endswith("your release")
    assert [w.value for w in at.warning if "your own release" in w.value] == [
        "You cannot review your own release: entry #1 was released to dr.local. "
        "Four eyes: another reviewer must sign it off or reject it."
    ]

    at.button(key="review_sign_off").click().run()
    assert not at.exception, at.exception
    assert any("You cannot sign off your own release" in e.value for e in at.error)
    at.text_area(key="review_comment_1").set_value("looks fine to me").run()
    at.button(key="review_reject").click().run()
    assert any("You cannot reject your own release" in e.value for e in at.error)

    trail = _trail(tmp_path)
    assert trail.entries(actions=("sign_off", "reject")) == []
    refused = trail.entries(actions=("review_refused",))
    assert [(r.user, r.subject, r.detail["attempted"]) for r in refused] == [
        ("dr.local", 1, "sign_off"),
        ("dr.local", 1, "reject"),
    ]
    assert trail.verify().ok
    assert [o[:2] for o in at.selectbox(key="review_entry").options] == ["#1"]  # still pending

    monkeypatch.setenv("MARAG_USER", "dr.review")
    at.switch_page("views/review.py").run()
    assert not any("your own release" in w.value for w in at.warning)
    assert not at.selectbox(key="review_entry").options[0].endswith("your release")
    at.button(key="review_sign_off").click().run()
    assert not at.exception, at.exception
    signed = trail.entries(actions=("sign_off",))
    assert [(e.user, e.subject) for e in signed] == [("dr.review", 1)]
    assert trail.verify().ok


def test_review_shows_the_release_as_stored_after_a_kb_rebuild(handle, tmp_path, monkeypatch):
    """A result released from KB generation 1 opens on the Review page from its stored copy, with
    its generation and a note that the live KB (generation 2, other content) has changed."""
    from streamlit.testing.v1 import AppTest

    from engine.audit import record
    from engine.audit.review import submit
    from engine.config import Config
    from engine.types import Plan
    from kb_store.chroma_kb import build_kb
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    kb_dir = tmp_path / "kb"
    monkeypatch.setenv("MARAG_KB_DIR", str(kb_dir))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    sessions = load_sources([default_sample_path()]).sessions
    build_kb(sessions, kb_dir, embedding="hashing")
    result = handle.run(
        Plan(
            patients=(8,), analysis="trajectory", instruments=("updrs", "pdq8"), visit_filter="none"
        )
    )
    released = record(Config.load(), "ask", user="dr.a", role="clinician", result=result)
    assert released.kb_generation == "gen-000001"
    assert submit(_trail(tmp_path), released, "dr.a").created
    build_kb([s for s in sessions if s.proj_id != 44], kb_dir, embedding="hashing")  # rebuilt

    at = AppTest.from_file(str(APP), default_timeout=30).run()
    at.switch_page("views/review.py").run()
    assert not at.exception, at.exception
    assert at.get("text")[0].value == result.summary
    notes = " ".join(w.value for w in at.warning)
    assert "The KB has changed since this was released (now `gen-000002`)" in notes
    assert any("gen-000001" in m.value for m in at.markdown)
    assert len(at.get("plotly_chart")) == 1  # drawn from the stored copy


def test_export_buttons_record_nothing_until_a_file_is_requested(handle, tmp_path, monkeypatch):
    """Drawing (or clicking, in AppTest) the downloads records no export and reruns nothing: the
    export entry is written when the browser requests the file (dashboard.downloads; recorded in
    tests/dashboard/test_downloads.py and test_browser.py)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_USER", "dr.local")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    _run_patient(at, 8)
    keys = {b.key for b in at.get("download_button")}
    assert {"dl_pdf_patient", "dl_html_patient", "dl_md_patient", "dl_json_patient"} <= keys
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    assert {b.key for b in at.get("download_button")} >= {"dl_facts_prov", "dl_json_prov"}
    assert _trail(tmp_path).entries(actions=("export",)) == []
