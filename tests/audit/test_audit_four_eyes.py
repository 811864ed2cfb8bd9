"""Four eyes in the review workflow (engine.audit.review.sign), on SQLite and on PostgreSQL: the user
a release names cannot sign it off or reject it (names compared case-insensitively); each refused
attempt is an audit entry (`review_refused`) naming who tried which decision on which release; the
release stays awaiting review, the chain still verifies (store and `marag audit verify`), and
another reviewer can still sign it off or reject it."""

from __future__ import annotations

import pytest

from engine.audit.review import SelfReviewError, own_release, queue, sign, submit
from engine.audit.store import AuditStore, Entry
from engine.cli import main


def _release(store: AuditStore, user: str = "dr.alice@hospital.example") -> Entry:
    return store.append(
        user=user,
        role="clinician,reviewer",
        action="ask",
        patients=[8],
        plan={"patients": [8], "analysis": "trajectory"},
        backend="facts",
        result={"summary": "patient 8: motor 44 at visit 1", "facts": []},
        verification={"passed": True, "numbers": 1},
    )


@pytest.mark.parametrize(
    ("decision", "comment"), [("sign_off", ""), ("reject", "visit 3 looks wrong"), ("reject", "")]
)
def test_own_release_cannot_be_reviewed_and_the_attempt_is_recorded(audit_url, decision, comment):
    store = AuditStore(audit_url)
    released = _release(store)
    with pytest.raises(SelfReviewError) as err:
        sign(
            store,
            released.id,
            decision,
            user="Dr.Alice@hospital.example ",  # the same person, however the name is spelt
            role="reviewer",
            comment=comment,
        )
    verb = "sign off" if decision == "sign_off" else "reject"
    assert f"You cannot {verb} your own release" in str(err.value)
    assert f"entry #{released.id}" in str(err.value)
    assert isinstance(err.value, ValueError)  # the dashboard and the CLI show it as one line

    assert store.entries(actions=("sign_off", "reject")) == []
    refused = store.entries(actions=("review_refused",))
    assert len(refused) == 1 and refused[0] == err.value.refusal
    r = refused[0]
    assert (r.user, r.role, r.subject, r.patients) == (
        "Dr.Alice@hospital.example ",
        "reviewer",
        released.id,
        [8],
    )
    assert r.detail["attempted"] == decision
    assert r.detail["reason"] == "own release"
    assert r.detail["released_to"] == released.user
    assert r.detail["result_hash"] == released.result_hash
    assert "your own release" in r.comment
    # once submitted it awaits review, and the refusal is not a review
    submit(store, released, released.user)
    assert [i.entry.id for i in queue(store, status="pending")] == [released.id]
    assert store.review_status() == {}
    v = store.verify()
    assert v.ok and v.entries == 3, v.line()
    store.close()


def test_another_reviewer_can_still_review_after_a_refusal(audit_url):
    store = AuditStore(audit_url)
    first, second = _release(store), _release(store)
    submit(store, first, first.user)  # the second says the same: it is the same queue item
    assert [i.entry.id for i in queue(store, status="pending")] == [first.id]
    with pytest.raises(SelfReviewError):
        sign(store, first.id, "sign_off", user=first.user, role="reviewer")
    done = sign(store, first.id, "sign_off", user="dr.bob@hospital.example", role="reviewer")
    assert (done.action, done.subject, done.user) == (
        "sign_off",
        first.id,
        "dr.bob@hospital.example",
    )
    rej = sign(
        store, second.id, "reject", user="dr.bob@hospital.example", role="reviewer", comment="x"
    )
    assert (rej.action, rej.subject) == ("reject", second.id)
    assert [i.entry.id for i in queue(store, status="pending")] == []
    assert {k: e.action for k, e in store.review_status().items()} == {
        first.id: "sign_off",
        second.id: "reject",
    }
    assert [e.action for e in store.entries()] == [
        "ask",
        "ask",
        "submit_review",
        "review_refused",
        "sign_off",
        "reject",
    ]
    assert store.verify().ok
    store.close()


def test_other_checks_come_first_or_after_as_before(tmp_path):
    """An unknown release is still a plain ValueError (nothing recorded); a rejection by another
    reviewer still needs a comment."""
    store = AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite3'}")
    released = _release(store)
    with pytest.raises(ValueError, match="not a released result") as err:
        sign(store, 99, "sign_off", user=released.user, role="reviewer")
    assert not isinstance(err.value, SelfReviewError)
    with pytest.raises(ValueError, match="needs a comment"):
        sign(store, released.id, "reject", user="dr.bob", role="reviewer")
    assert store.count() == 1
    assert own_release(released, "DR.ALICE@hospital.example")
    assert not own_release(released, "dr.bob")
    assert not own_release(released, "")


def test_marag_audit_verify_passes_after_a_refused_attempt(tmp_path, capsys):
    db = tmp_path / "audit.sqlite3"
    store = AuditStore(f"sqlite:///{db}")
    released = _release(store)
    with pytest.raises(SelfReviewError):
        sign(store, released.id, "reject", user=released.user, role="reviewer", comment="no")
    store.close()
    capsys.readouterr()
    assert main(["audit", "verify", "--audit-db", str(db)]) == 0
    assert "2 entries verified" in capsys.readouterr().out
    assert main(["audit", "list", "--audit-db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "review_refused on #1" in out and "your own release" in out
