"""The audit trail's anchor outside the store: a small head record (JSON) that every append moves
on, so that a store which is emptied, dropped, truncated, deleted or replaced by an older copy no
longer matches what was written (engine.audit.store checks it before each append; `verify` checks
it too).

Where it lives: beside a SQLite store (`audit.sqlite3.head.json` beside `audit.sqlite3`); for a
PostgreSQL store beside the KB directory (`audit-head-<12 hex of the store URL>.json`, see
engine.audit.trail.head_path). It holds {count, last_id, last_hash, store, updated}; it is written
atomically (a temporary file, then os.replace) and only moves forward: two writers racing after
their commits leave it at the later entry or one behind, never ahead of the store. So the rule a
store must meet is: it holds at least `last_id` entries and entry `last_id` has `last_hash`.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.audit.errors import AuditError

HEAD_SUFFIX = ".head.json"


@dataclass(frozen=True)
class Head:
    """A head record as read from its file."""

    path: Path
    count: int
    last_id: int
    last_hash: str
    store: str
    updated: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "count": self.count,
            "last_id": self.last_id,
            "last_hash": self.last_hash,
            "store": self.store,
            "updated": self.updated,
        }

    def line(self) -> str:
        return (
            f"head record {self.path}: {self.count} entries, last #{self.last_id} "
            f"hash {self.last_hash} (store {self.store}, updated {self.updated})"
        )


def default_head_path(sqlite_file: Path | None) -> Path | None:
    """Beside a SQLite file: `<file>.head.json`; None for other stores (the caller names one)."""
    return None if sqlite_file is None else sqlite_file.with_name(sqlite_file.name + HEAD_SUFFIX)


def read_head(path: Path | None) -> Head | None:
    """The head record at `path`, None when there is none; AuditError when it is unreadable."""
    if path is None or not path.exists():
        return None
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return Head(
            path=path,
            count=int(d["count"]),
            last_id=int(d["last_id"]),
            last_hash=str(d["last_hash"]),
            store=str(d.get("store", "")),
            updated=str(d.get("updated", "")),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise AuditError(f"the audit head record {path} is unreadable: {e}") from None


def write_head(
    path: Path | None,
    *,
    last_id: int,
    last_hash: str,
    store: str,
    force: bool = False,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write the head record atomically; unless `force`, only when it moves forward."""
    if path is None:
        return
    if not force:
        try:
            current = read_head(path)
        except AuditError:
            current = None
        if current is not None and current.last_id >= last_id:
            return
    body = {
        "count": last_id,
        "last_id": last_id,
        "last_hash": last_hash,
        "store": store,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise AuditError(f"the audit head record {path} could not be written: {e}") from None


def missing_message(where: str, head: Head) -> str:
    """The refusal when a head record exists but the store it anchors is missing or empty."""
    return (
        f"the audit trail at {where} is missing (head says {head.count} entries, last "
        f"#{head.last_id}; {head.path}): restore it from a backup (marag audit backup) or run "
        "`marag audit init --force` to start a new chain, which is recorded"
    )


def mismatch(head: Head | None, last_id: int, hash_at_head: str | None) -> str | None:
    """Why a store whose last entry is `last_id` (and whose entry head.last_id has hash
    `hash_at_head`) does not match `head`, or None when it does."""
    if head is None or head.last_id == 0:
        return None
    if last_id < head.last_id:
        return (
            f"the store holds {last_id} entries but the head record {head.path} says "
            f"{head.count}, last #{head.last_id}: entries #{last_id + 1} to #{head.last_id} are "
            "missing (the store was emptied, truncated or replaced by an older copy)"
        )
    if hash_at_head != head.last_hash:
        return (
            f"entry #{head.last_id} does not have the hash the head record {head.path} names "
            f"({head.last_hash[:16]}...): the store was replaced by another chain"
        )
    return None
