"""The rows of the audit store: the actions an entry may name, an entry as read back (Entry), the
stored columns of a new entry and the decoding of a stored row (engine.audit.store writes and reads
them)."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from engine.audit.chain import FIELDS, GENESIS, canonical, sha256

ACTIONS = (
    "ask",
    "check",
    "export",
    "kb_build",
    "sign_off",
    "reject",
    "review_refused",
    "submit_review",
    "sign_in",
    "denied",
    "trusted_network",
    "audit_init",  # `marag audit init`: a chain started (detail: the head it replaces, if any)
)


@dataclass(frozen=True)
class Entry:
    """One audit entry as stored. JSON fields are decoded; `patients` is a list of ids."""

    id: int
    ts: str
    user: str
    role: str
    action: str
    patients: list[int] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    kb_generation: str | None = None
    kb_hash: str | None = None
    backend: str | None = None
    model: str | None = None
    result: dict[str, Any] | None = None
    result_hash: str | None = None
    verification: dict[str, Any] | None = None
    subject: int | None = None
    comment: str | None = None
    detail: dict[str, Any] | None = None
    prev_hash: str = GENESIS
    hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*FIELDS, "hash")}

    def brief(self) -> dict[str, Any]:
        """The fields `audit list` shows (no result body)."""
        summary = (self.result or {}).get("summary") or ""
        return {
            "id": self.id,
            "ts": self.ts,
            "user": self.user,
            "role": self.role,
            "action": self.action,
            "patients": self.patients,
            "backend": self.backend,
            "kb_generation": self.kb_generation,
            "subject": self.subject,
            "comment": self.comment,
            "summary": summary[:120],
        }


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


#: a stored result longer than this is kept zlib-compressed (base64 text, PACKED prefix); the
#: chain hashes the canonical JSON either way, so a packed entry verifies like a plain one
PACK_OVER = 16_384
PACKED = "zlib:"


def pack_result(text: str | None) -> str | None:
    """The `result` column as stored: canonical JSON, or PACKED + base64(zlib) when long (a
    trajectory result is 170-360 KB of JSON, a 10,000-patient cohort answer 5 MB; JSON of
    repeated keys compresses about tenfold)."""
    if text is None or len(text) <= PACK_OVER:
        return text
    return PACKED + base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")


def unpack_result(text: str | None) -> str | None:
    """The canonical JSON of a stored `result` column (stored plain, or packed)."""
    if text is None or not text.startswith(PACKED):
        return text
    return zlib.decompress(base64.b64decode(text[len(PACKED) :])).decode("utf-8")


def unpacked(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row with its `result` as canonical JSON (what the chain hashes); a packed result
    that no longer decodes (edited in the store) is kept as stored, so its hash check fails."""
    try:
        return {**row, "result": unpack_result(row.get("result"))}
    except (ValueError, zlib.error):  # binascii.Error and UnicodeDecodeError are ValueErrors
        return dict(row)


def _dumps(obj: Any) -> str | None:
    return None if obj is None else canonical(obj)


def _patients_text(patients: Any) -> str:
    ids = sorted({int(p) for p in patients or ()})
    return "," + ",".join(map(str, ids)) + "," if ids else ""


def entry_from_row(row: Mapping[str, Any]) -> Entry:
    pats = [int(p) for p in (row["patients"] or "").strip(",").split(",") if p]
    return Entry(
        id=row["id"],
        ts=row["ts"],
        user=row["user"],
        role=row["role"],
        action=row["action"],
        patients=pats,
        plan=_loads(row["plan"]),
        kb_generation=row["kb_generation"],
        kb_hash=row["kb_hash"],
        backend=row["backend"],
        model=row["model"],
        result=_loads(unpack_result(row["result"])),
        result_hash=row["result_hash"],
        verification=_loads(row["verification"]),
        subject=row["subject"],
        comment=row["comment"],
        detail=_loads(row["detail"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


def new_row(
    *,
    user: str,
    role: str,
    action: str,
    patients: Any = (),
    plan: dict[str, Any] | None = None,
    kb_generation: str | None = None,
    kb_hash: str | None = None,
    backend: str | None = None,
    model: str | None = None,
    result: dict[str, Any] | None = None,
    verification: dict[str, Any] | None = None,
    subject: int | None = None,
    comment: str | None = None,
    detail: dict[str, Any] | None = None,
    ts: datetime | None = None,
) -> dict[str, Any]:
    """The stored columns of a new entry (without id and chain hashes); ValueError for an unknown
    action or an entry without a user."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r} (one of {', '.join(ACTIONS)})")
    if not user:
        raise ValueError("an audit entry needs a user")
    result_text = _dumps(result)
    return {
        "ts": (ts or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds"),
        "user": user,
        "role": role or "",
        "action": action,
        "patients": _patients_text(patients),
        "plan": _dumps(plan),
        "kb_generation": kb_generation,
        "kb_hash": kb_hash,
        "backend": backend,
        "model": model,
        "result": result_text,
        "result_hash": None if result_text is None else sha256(result_text),
        "verification": _dumps(verification),
        "subject": subject,
        "comment": comment,
        "detail": _dumps(detail),
    }


def since_iso(since: str | date | datetime) -> str:
    if isinstance(since, datetime):
        dt = since
    elif isinstance(since, date):
        dt = datetime(since.year, since.month, since.day)
    else:
        try:
            dt = datetime.fromisoformat(since.strip())
        except ValueError as e:
            raise ValueError(
                f"--since must be an ISO date or date-time (2026-01-31), got {since!r}"
            ) from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec="microseconds")
