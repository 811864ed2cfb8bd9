"""The audit trail cannot vanish in silence: a head record outside the store (engine.audit.anchor)
makes `marag audit verify` fail (exit 1, one line naming what is missing) on an emptied, dropped,
truncated or deleted store and on a plain copy of a live one; verify opens read-only and never
creates anything (a mistyped --audit-db); a store the head names but that is missing refuses
releases until `marag audit init --force` (recorded as `audit_init`); a store file deleted while
it is open refuses the next append; `marag audit backup FILE` takes a consistent copy that
verifies with the same count; `verify --head HASH` checks that the chain holds a hash kept
elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.audit.errors import AuditError
from engine.audit.store import AuditStore, database_url
from engine.cli import main
from engine.config import Config


@pytest.fixture
def db(monkeypatch, tmp_path) -> Path:
    path = tmp_path / "trail" / "audit.sqlite3"
    monkeypatch.setenv("MARAG_AUDIT_DB", str(path))
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.delenv("MARAG_USER", raising=False)
    yield path
    from engine.audit.trail import forget_stores

    forget_stores()


def _fill(db: Path, n: int = 4) -> AuditStore:
    store = AuditStore(database_url(db))
    for i in range(n):
        store.append(user=f"user{i % 2}", role="clinician", action="ask", patients=[i + 1])
    return store


def _head(db: Path) -> dict:
    return json.loads(Path(f"{db}.head.json").read_text())


def _raw(db: Path, *sql: str) -> None:
    con = sqlite3.connect(db)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def _verify(capsys, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["audit", "verify", *extra])
    out = capsys.readouterr()
    return rc, (out.out + out.err).strip()


def _cfg() -> Config:
    return Config.load()


def test_every_append_moves_the_head_record_outside_the_store(db, capsys):
    store = _fill(db)
    head = _head(db)
    last = store.entries()[-1]
    assert (head["count"], head["last_id"], head["last_hash"]) == (4, 4, last.hash)
    assert head["store"] == f"sqlite:///{db}"
    capsys.readouterr()
    assert main(["audit", "head", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["last_hash"] == last.hash
    assert main(["audit", "head"]) == 0
    assert f"4 entries, last #4 hash {last.hash}" in capsys.readouterr().out
    rc, out = _verify(capsys)
    assert rc == 0 and out.startswith("audit chain holds: 4 entries verified"), out


def test_emptied_tables_fail_verify(db, capsys):
    _fill(db).close()
    _raw(db, "DELETE FROM audit_log", "DELETE FROM audit_head")
    rc, out = _verify(capsys)
    assert rc == 1 and len(out.splitlines()) == 1, out
    assert "holds 0 entries" in out and "says 4" in out and "#1 to #4 are missing" in out
    # and a release refuses to start a new chain in the emptied store
    with pytest.raises(AuditError, match="#1 to #4 are missing"):
        AuditStore(database_url(db)).append(user="u", role="r", action="ask")


def test_dropped_tables_fail_verify_and_are_not_recreated(db, capsys):
    _fill(db).close()
    _raw(db, "DROP TABLE audit_log", "DROP TABLE audit_head")
    rc, out = _verify(capsys)
    assert rc == 1 and len(out.splitlines()) == 1, out
    assert "has no audit tables" in out and "says 4 entries" in out
    con = sqlite3.connect(db)
    tables = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    con.close()
    assert tables == []  # verify created nothing
    with pytest.raises(AuditError, match=r"is missing \(head says 4 entries, last #4"):
        AuditStore(database_url(db))


def test_a_mistyped_path_fails_verify_and_creates_nothing(db, capsys, tmp_path):
    _fill(db).close()
    typo = tmp_path / "trial" / "audit.sqlite3"
    rc, out = _verify(capsys, "--audit-db", str(typo))
    assert (rc, out) == (1, f"no audit store at {typo}")
    assert not typo.exists() and not typo.parent.exists()


def test_a_deleted_store_refuses_releases_until_init_force(db, capsys):
    store = _fill(db)
    store.close()
    for p in db.parent.glob("audit.sqlite3*"):
        if not p.name.endswith(".head.json"):
            p.unlink()
    rc, out = _verify(capsys)
    assert (rc, out) == (1, f"no audit store at {db}")
    # the next release stops with a clear error instead of starting a new chain at #1
    from engine.audit.trail import record

    with pytest.raises(AuditError) as e:
        record(_cfg(), "ask", user="dr.x", with_kb=False)
    assert "is missing (head says 4 entries, last #4" in str(e.value)
    assert "marag audit init --force" in str(e.value)
    assert not db.exists()
    capsys.readouterr()
    assert main(["audit", "init"]) == 2
    assert "is missing (head says 4 entries" in capsys.readouterr().err
    assert main(["audit", "init", "--force", "--user", "admin"]) == 0
    assert "entry #1 (audit_init)" in capsys.readouterr().out
    (first,) = AuditStore(database_url(db)).entries()
    assert (first.action, first.user) == ("audit_init", "admin")
    assert first.detail["forced"] is True and first.detail["previous_head"]["last_id"] == 4
    assert _head(db)["last_id"] == 1
    assert record(_cfg(), "ask", user="dr.x", with_kb=False).id == 2
    rc, out = _verify(capsys)
    assert rc == 0 and out.startswith("audit chain holds: 2 entries verified"), out


def test_a_fresh_location_initialises_on_first_use_and_init_is_recorded(db, capsys, tmp_path):
    from engine.audit.trail import record

    entry = record(_cfg(), "ask", user="dr.first", with_kb=False)
    assert entry.id == 1 and _head(db)["last_id"] == 1
    capsys.readouterr()
    assert main(["audit", "init"]) == 0  # a store that holds entries is left alone
    assert "already holds 1 entries: nothing to do" in capsys.readouterr().out
    assert main(["audit", "init", "--force"]) == 2
    assert "never starts a chain over a store that holds entries" in capsys.readouterr().err
    other = tmp_path / "other" / "audit.sqlite3"
    assert main(["audit", "init", "--audit-db", str(other), "--user", "admin"]) == 0
    (first,) = AuditStore(database_url(other)).entries()
    assert (first.id, first.action, first.detail["previous_head"]) == (1, "audit_init", None)


def test_a_truncated_wal_fails_verify(db, capsys, tmp_path):
    store = _fill(db, 1)
    with store.engine.connect() as c:
        c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    for i in range(3):
        store.append(user="u", role="r", action="ask", patients=[i])
    wal = Path(f"{db}-wal")
    assert wal.stat().st_size > 0  # entries 2-4 are in the WAL only
    copy = tmp_path / "copy" / "audit.sqlite3"
    copy.parent.mkdir()
    for suffix in ("", "-wal", ".head.json"):
        shutil.copy(f"{db}{suffix}", f"{copy}{suffix}")
    os.truncate(f"{copy}-wal", 0)  # 3 of 4 entries gone
    rc, out = _verify(capsys, "--audit-db", str(copy))
    assert rc == 1 and len(out.splitlines()) == 1, out
    assert "holds 1 entries" in out and "#2 to #4 are missing" in out
    store.close()


def test_a_plain_copy_of_a_live_store_fails_but_a_backup_verifies(db, capsys, tmp_path):
    store = _fill(db, 1)
    with store.engine.connect() as c:
        c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    for i in range(4):
        store.append(user="u", role="r", action="ask", patients=[i])
    plain = tmp_path / "plain" / "audit.sqlite3"
    plain.parent.mkdir()
    shutil.copy(db, plain)  # what `cp` takes of a live WAL store: the checkpointed part only
    shutil.copy(f"{db}.head.json", f"{plain}.head.json")
    rc, out = _verify(capsys, "--audit-db", str(plain))
    assert rc == 1 and "holds 1 entries" in out and "says 5" in out, out
    backup = tmp_path / "backups" / "audit-copy.sqlite3"
    capsys.readouterr()
    assert main(["audit", "backup", str(backup)]) == 0
    out = capsys.readouterr().out
    assert f"backed up 5 entries to {backup}" in out
    rc, out = _verify(capsys, "--audit-db", str(backup))
    assert rc == 0 and out.startswith("audit chain holds: 5 entries verified"), out
    assert json.loads(Path(f"{backup}.head.json").read_text())["backup_of"] == f"sqlite:///{db}"
    assert main(["audit", "backup", str(backup)]) == 2  # never overwrites
    # a JSON-lines export verifies with the same count; a cut-off one does not
    export = tmp_path / "backups" / "audit.jsonl"
    assert main(["audit", "backup", str(export)]) == 0
    rc, out = _verify(capsys, "--file", str(export))
    assert rc == 0 and out == "audit chain holds: 5 entries verified", out
    lines = export.read_text().splitlines()
    export.write_text("\n".join(lines[:-2]) + "\n")
    rc, out = _verify(capsys, "--file", str(export))
    assert rc == 1 and "cut off" in out, out
    store.close()


def test_verify_head_checks_a_hash_kept_elsewhere(db, capsys, tmp_path):
    store = _fill(db, 3)
    kept = store.get(2).hash  # an auditor notes entry #2's hash
    rc, out = _verify(capsys, "--head", kept)
    assert rc == 0 and f"entry #2 has the hash {kept}" in out, out
    rc, out = _verify(capsys, "--head", kept[:12])
    assert rc == 0, out
    store.close()
    # the trail is replaced by another chain (store and head rebuilt): the kept hash is gone
    for p in db.parent.glob("audit.sqlite3*"):
        p.unlink()
    _fill(db, 5).close()
    rc, out = _verify(capsys, "--head", kept)
    assert rc == 1 and f"no entry of the audit chain has the hash {kept}" in out, out
    assert _verify(capsys, "--head", "abc")[0] == 1


def test_a_store_deleted_while_open_refuses_the_next_append(db, capsys):
    from engine.audit.trail import open_store, record

    cfg = _cfg()
    store = open_store(cfg)
    record(cfg, "ask", user="dr.x", with_kb=False)
    db.unlink()  # someone deletes the DB while the dashboard holds it open
    with pytest.raises(AuditError, match="was deleted while this process had it open"):
        store.append(user="dr.x", role="clinician", action="ask")
    with pytest.raises(AuditError, match=r"is missing \(head says 1 entries"):
        record(cfg, "ask", user="dr.x", with_kb=False)  # reopened: refused, not a new chain
    assert not db.exists()


def test_a_store_replaced_by_a_restored_backup_is_reopened(db, capsys, tmp_path):
    from engine.audit.trail import open_store, record

    cfg = _cfg()
    record(cfg, "ask", user="dr.x", with_kb=False)
    record(cfg, "ask", user="dr.x", with_kb=False)
    backup = tmp_path / "b.sqlite3"
    assert main(["audit", "backup", str(backup)]) == 0
    old = open_store(cfg)
    db.unlink()
    shutil.copy(backup, db)  # restore
    with pytest.raises(AuditError, match="replaced by another file"):
        old.append(user="dr.x", role="clinician", action="ask")
    assert record(cfg, "ask", user="dr.x", with_kb=False).id == 3
    assert _verify(capsys)[0] == 0


def test_a_head_one_behind_the_store_still_verifies(db, capsys):
    """Two writers racing after their commits may leave the head one entry behind, never ahead."""
    store = _fill(db, 3)
    from engine.audit.anchor import write_head

    second = store.get(2)
    write_head(
        Path(f"{db}.head.json"),
        last_id=2,
        last_hash=second.hash,
        store=store.safe_url,
        force=True,
    )
    assert _verify(capsys)[0] == 0
    assert store.append(user="u", role="r", action="ask").id == 4
    assert _head(db)["last_id"] == 4
    store.close()


def test_an_emptied_store_fails_on_sqlite_and_postgresql(audit_url, tmp_path):
    """Both databases, the head record named explicitly (for PostgreSQL engine.audit.trail puts
    it beside the KB directory); the JSON-lines backup verifies with the same count."""
    import sqlalchemy as sa

    from engine.audit.backup import backup, verify_file

    head = tmp_path / "anchor" / "trail.head.json"
    store = AuditStore(audit_url, head=head)
    for i in range(3):
        store.append(user="u", role="r", action="ask", patients=[i])
    copy = AuditStore(audit_url, head=head, mode="read")
    verdict = backup(copy, tmp_path / "copy.jsonl")
    copy.close()
    assert verdict.ok and verdict.entries == 3
    assert verify_file(tmp_path / "copy.jsonl").entries == 3
    eng = sa.create_engine(audit_url)
    with eng.begin() as c:
        c.execute(sa.text("DELETE FROM audit_log"))
        c.execute(sa.text("DELETE FROM audit_head"))
    eng.dispose()
    v = store.verify()
    assert not v.ok and "holds 0 entries" in v.line() and "says 3" in v.line(), v.line()
    with pytest.raises(AuditError, match="#1 to #3 are missing"):
        store.append(user="u", role="r", action="ask")
    store.close()
