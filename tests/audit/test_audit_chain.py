"""The audit chain on SQLite and on a real PostgreSQL server: entries are stored as appended and
verify; an edited row (any field, with or without a recomputed hash), a deleted row in the middle
and deleted rows at the end are each detected and named; the store never rewrites an entry."""

from __future__ import annotations

import sqlalchemy as sa

from engine.audit.chain import GENESIS, entry_hash
from engine.audit.store import AuditStore, log


def _fill(store: AuditStore, n: int = 6) -> None:
    for i in range(1, n + 1):
        store.append(
            user=f"user{i % 2}",
            role="clinician",
            action="ask",
            patients=[i, 40],
            plan={"patients": [i, 40], "analysis": "comparison"},
            kb_generation="gen-000001",
            kb_hash="ab" * 32,
            backend="facts",
            result={"summary": f"patient {i}: motor 44 at visit 1", "facts": []},
            verification={"passed": True, "numbers": 3},
        )


def _raw(url: str, sql: str, **params) -> None:
    eng = sa.create_engine(url)
    with eng.begin() as c:
        c.execute(sa.text(sql), params)
    eng.dispose()


def test_entries_chain_and_verify(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    entries = store.entries()
    assert [e.id for e in entries] == [1, 2, 3, 4, 5, 6]
    assert entries[0].prev_hash == GENESIS
    for a, b in zip(entries, entries[1:], strict=False):
        assert b.prev_hash == a.hash
    v = store.verify()
    assert v.ok and v.entries == 6, v.line()
    # filters: user, patient, action; JSON fields round-trip
    assert [e.id for e in store.entries(user="user1")] == [1, 3, 5]
    assert [e.id for e in store.entries(patient=4)] == [4]
    assert len(store.entries(patient=40)) == 6
    assert store.get(3).result["summary"] == "patient 3: motor 44 at visit 1"
    assert store.get(3).plan == {"patients": [3, 40], "analysis": "comparison"}
    assert store.entries(since="2999-01-01") == []
    store.close()


def test_edited_row_is_detected(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    # someone changes a number in a released summary
    _raw(
        audit_url,
        "UPDATE audit_log SET result = :r WHERE id = 3",
        r='{"facts":[],"summary":"patient 3: motor 14 at visit 1"}',
    )
    v = store.verify()
    assert not v.ok and v.broken_id == 3, v.line()
    assert "edited" in v.reason
    store.close()


def test_edited_user_field_is_detected(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    _raw(audit_url, 'UPDATE audit_log SET "user" = :u WHERE id = 5', u="someone-else")
    v = store.verify()
    assert not v.ok and v.broken_id == 5, v.line()


def test_edited_row_with_recomputed_hash_breaks_the_next_link(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    eng = sa.create_engine(audit_url)
    with eng.begin() as c:  # a careful forger re-hashes the row it edits
        row = dict(c.execute(sa.select(log).where(log.c.id == 2)).mappings().one())
        row["comment"] = "quietly changed"
        c.execute(
            log.update().where(log.c.id == 2).values(comment=row["comment"], hash=entry_hash(row))
        )
    eng.dispose()
    v = store.verify()
    assert not v.ok and v.broken_id == 3, v.line()  # entry 3 still names entry 2's old hash
    assert "previous-hash" in v.reason


def test_deleted_middle_row_is_detected(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    _raw(audit_url, "DELETE FROM audit_log WHERE id = 4")
    v = store.verify()
    assert not v.ok and v.broken_id == 4, v.line()
    assert "missing" in v.reason


def test_deleted_last_rows_are_detected(audit_url):
    store = AuditStore(audit_url)
    _fill(store)
    _raw(audit_url, "DELETE FROM audit_log WHERE id >= 5")
    v = store.verify()
    assert not v.ok and v.broken_id == 5, v.line()
    assert "head record" in v.reason


def test_append_continues_the_chain_after_reopen(audit_url):
    AuditStore(audit_url).append(user="a", role="r", action="sign_in")
    store = AuditStore(audit_url)
    e = store.append(user="b", role="reviewer", action="sign_off", subject=1, comment="ok")
    assert e.id == 2 and e.prev_hash == store.get(1).hash
    assert store.verify().ok
    assert [r.id for r in store.reviews_of(1)] == [2]
    assert store.review_status()[1].action == "sign_off"


def test_unknown_action_and_empty_user_are_refused(tmp_path):
    import pytest

    store = AuditStore(f"sqlite:///{tmp_path / 'a.db'}")
    with pytest.raises(ValueError, match="unknown audit action"):
        store.append(user="a", role="r", action="delete_everything")
    with pytest.raises(ValueError, match="needs a user"):
        store.append(user="", role="r", action="ask")
    assert store.count() == 0


def test_sqlite_store_uses_wal(tmp_path):
    store = AuditStore(f"sqlite:///{tmp_path / 'a.db'}")
    store.append(user="a", role="r", action="ask")
    with store.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_log_table_has_no_update_path():
    """The store's module never issues UPDATE or DELETE on the log table (only on the head)."""
    import inspect

    from engine.audit import store

    src = inspect.getsource(store)
    assert "log.update(" not in src and "log.delete(" not in src
    assert log.name == "audit_log"
