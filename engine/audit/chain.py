"""The hash chain of the audit trail: how one entry is hashed and how a sequence of stored entries
is checked. Pure functions, no database: the store (engine.audit.store) feeds rows in.

Each entry's hash is SHA-256 over the canonical JSON of every stored field except the hash itself,
including the previous entry's hash, so editing any field of any entry, deleting an entry or
reordering entries breaks the chain at that point. A separate head record (last id and hash,
written in the same transaction as each append) exposes deleting entries at the end.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64

#: fields covered by an entry's hash, in the order they are stored
FIELDS = (
    "id",
    "ts",
    "user",
    "role",
    "action",
    "patients",
    "plan",
    "kb_generation",
    "kb_hash",
    "backend",
    "model",
    "result",
    "result_hash",
    "verification",
    "subject",
    "comment",
    "detail",
    "prev_hash",
)


def canonical(obj: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, non-ASCII kept; what every hash is taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(row: Mapping[str, Any]) -> str:
    return sha256(canonical({k: row.get(k) for k in FIELDS}))


@dataclass(frozen=True)
class Verdict:
    """Result of checking the chain: ok, the number of entries checked, and the first break."""

    ok: bool
    entries: int
    broken_id: int | None = None
    reason: str = ""
    note: str = ""  # the whole line when set (a missing store, `verify --head`)

    def line(self) -> str:
        if self.note:
            return self.note
        if self.ok:
            return f"audit chain holds: {self.entries} entries verified"
        return f"audit chain broken at entry {self.broken_id}: {self.reason}"


def verify_rows(rows: Iterable[Mapping[str, Any]], head: Mapping[str, Any] | None) -> Verdict:
    """Check rows (in id order) against the chain rules and the head record."""
    prev_hash, expected_id, n = GENESIS, 1, 0
    for row in rows:
        rid = int(row["id"])
        if rid != expected_id:
            return Verdict(
                False,
                n,
                expected_id,
                f"entry {expected_id} is missing (deleted); the next stored entry is {rid}",
            )
        if row["prev_hash"] != prev_hash:
            return Verdict(
                False,
                n,
                rid,
                "its previous-hash field does not match the hash of entry "
                f"{rid - 1} (an earlier entry was edited, or this one was)",
            )
        if entry_hash(row) != row["hash"]:
            return Verdict(False, n, rid, "its content does not match its hash (entry edited)")
        prev_hash, expected_id, n = row["hash"], rid + 1, n + 1
    last_id = expected_id - 1
    if head is not None and (int(head["last_id"]), head["last_hash"]) != (last_id, prev_hash):
        return Verdict(
            False,
            n,
            last_id + 1 if int(head["last_id"]) > last_id else int(head["last_id"]),
            f"the chain ends at entry {last_id} but the head record names entry "
            f"{head['last_id']} (entries at the end were deleted, or the head was edited)",
        )
    if head is None and n > 0:
        return Verdict(False, n, 1, "the head record is missing")
    return Verdict(True, n)
