"""`marag audit backup FILE` and `marag audit verify --file FILE`: a consistent copy of a live
store, which verifies with the same count.

A SQLite store is copied with SQLite's online backup API (sqlite3 Connection.backup, from a
read-only connection: the copy holds what the WAL holds too, in one snapshot, while writers go
on), into a new file beside which a head record of its own is written (`FILE.head.json`, naming
the store it was taken from), so `marag audit verify --audit-db FILE` checks it like the live
store. A PostgreSQL store (or any store, when FILE ends in `.jsonl`) is exported as JSON lines:
a header line, one line per entry (the stored columns and hash), and an end line with the count
and last hash (a cut-off file has no end line); `marag audit verify --file FILE` checks it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engine.audit.anchor import default_head_path, write_head
from engine.audit.chain import Verdict, verify_rows
from engine.audit.errors import AuditError
from engine.audit.store import AuditStore, database_url, sa_url

EXPORT_KEY = "marag_audit_export"


def backup(store: AuditStore, target: Path) -> Verdict:
    """Copy `store` (opened read-only) to `target` (a new file) and return the copy's verdict."""
    target = Path(target).expanduser().resolve()
    if target.exists():
        raise ValueError(f"{target} exists: a backup never overwrites a file")
    if store.file is None and store.dialect == "sqlite":
        raise ValueError("an in-memory audit store cannot be backed up")
    target.parent.mkdir(parents=True, exist_ok=True)
    if store.dialect != "sqlite" or target.suffix == ".jsonl":
        return _export(store, target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    src = sqlite3.connect(f"file:{quote(str(store.file))}?mode=ro", uri=True, timeout=60)
    try:
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file (no -wal)
        finally:
            dst.close()
    except sqlite3.Error as e:
        tmp.unlink(missing_ok=True)
        raise AuditError(f"audit store {store.safe_url} could not be backed up: {e}") from None
    finally:
        src.close()
    os.replace(tmp, target)
    url = database_url(target)
    copy = AuditStore(url, head=None, mode="read")
    try:
        last = copy.entries(newest_first=True, limit=1)
    finally:
        copy.close()
    write_head(
        default_head_path(target),
        last_id=last[0].id if last else 0,
        last_hash=last[0].hash if last else "0" * 64,
        store=sa_url(url),
        force=True,
        extra={"backup_of": store.safe_url},
    )
    check = AuditStore(url, mode="read")
    try:
        return check.verify()
    finally:
        check.close()


def _export(store: AuditStore, target: Path) -> Verdict:
    """The JSON-lines export of every entry (one snapshot), then its own verdict."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    n, last_id, last_hash = 0, 0, "0" * 64
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps({EXPORT_KEY: 1, "store": store.safe_url, "exported": now}) + "\n")
        for row in store.export_rows():
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            n, last_id, last_hash = n + 1, int(row["id"]), row["hash"]
        end = {"end": True, "count": n, "last_id": last_id, "last_hash": last_hash}
        f.write(json.dumps(end) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    return verify_file(target)


def verify_file(path: Path) -> Verdict:
    """Check a JSON-lines export: the chain, and that it ends where its end line says."""
    path = Path(path).expanduser()
    if not path.is_file():
        return Verdict(False, 0, None, note=f"no audit export at {path}")
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or not isinstance(lines[0], dict) or EXPORT_KEY not in lines[0]:
        return Verdict(False, 0, None, note=f"{path} is not an audit export (marag audit backup)")
    end: dict[str, Any] = lines[-1] if lines[-1].get("end") else {}
    if not end:
        return Verdict(False, 0, None, note=f"the audit export {path} is cut off (no end line)")
    rows = lines[1:-1]
    verdict = verify_rows(rows, {"last_id": end["last_id"], "last_hash": end["last_hash"]})
    if verdict.ok and verdict.entries != int(end["count"]):
        return Verdict(
            False,
            verdict.entries,
            None,
            note=f"{path}: the end line says "
            f"{end['count']} entries, the file holds {verdict.entries}",
        )
    return verdict
