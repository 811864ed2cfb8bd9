"""A long result is stored once, zlib-compressed (engine.audit.rows.pack_result), and the chain
hashes its canonical JSON either way: a packed entry reads back identical, verifies, survives a
backup, and an edit of the packed text breaks the chain."""

from __future__ import annotations

import sqlite3

from engine.audit import rows
from engine.audit.store import AuditStore


def _result(n: int) -> dict:
    return {
        "summary": "Patient 7: motor 20 at visit 3.",
        "facts": [{"patient": 7, "visit": v, "domain": "motor", "score": 20 + v} for v in range(n)],
    }


def test_a_long_result_is_stored_packed_and_reads_back_identical(tmp_path):
    db = tmp_path / "a.sqlite3"
    store = AuditStore(f"sqlite:///{db}")
    small, big = _result(3), _result(4000)
    a = store.append(user="u", role="r", action="ask", result=small)
    b = store.append(user="u", role="r", action="ask", result=big)
    raw = dict(sqlite3.connect(db).execute("select id, result from audit_log").fetchall())
    assert not raw[a.id].startswith(rows.PACKED)  # short: plain canonical JSON
    assert raw[b.id].startswith(rows.PACKED)
    plain = rows.canonical(big)
    assert len(raw[b.id]) * 8 < len(plain)  # stored once, at under an eighth of its size
    assert store.get(b.id).result == big and b.result_hash == rows.sha256(plain)
    assert store.verify().ok
    copy = tmp_path / "copy.sqlite3"
    from engine.audit.backup import backup

    assert backup(store, copy).ok
    assert AuditStore(f"sqlite:///{copy}").get(b.id).result == big


def test_an_edited_packed_result_breaks_the_chain(tmp_path):
    db = tmp_path / "a.sqlite3"
    store = AuditStore(f"sqlite:///{db}")
    e = store.append(user="u", role="r", action="ask", result=_result(4000))
    store.append(user="u", role="r", action="ask", result=_result(2))
    con = sqlite3.connect(db)
    (text,) = con.execute("select result from audit_log where id = ?", (e.id,)).fetchone()
    edited = rows.pack_result(rows.canonical({**_result(4000), "summary": "Patient 7: motor 2."}))
    con.execute("update audit_log set result = ? where id = ?", (edited, e.id))
    con.commit()
    v = AuditStore(f"sqlite:///{db}").verify()
    assert not v.ok and v.broken_id == e.id
    con.execute("update audit_log set result = ? where id = ?", (text[:-8] + "AAAAAAA=", e.id))
    con.commit()
    v = AuditStore(f"sqlite:///{db}").verify()  # no longer decodes: a broken chain, no traceback
    assert not v.ok and v.broken_id == e.id
