"""The review workflow over the audit trail: which released summaries await review, whether a
stored result is intact, and the sign-off or rejection itself (an audit entry that names the
released entry and the hash of the result it judged)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from engine.audit.chain import canonical, sha256
from engine.audit.store import RELEASE_ACTIONS, AuditStore, Entry

STATUSES = ("pending", "reviewed", "all")


@dataclass(frozen=True)
class QueueItem:
    entry: Entry
    review: Entry | None  # the latest sign-off / rejection, None while pending

    @property
    def status(self) -> str:
        if self.review is None:
            return "awaiting review"
        return "signed off" if self.review.action == "sign_off" else "rejected"


def queue(
    store: AuditStore,
    *,
    status: str = "pending",
    patient: int | None = None,
    user: str | None = None,
    since: str | date | datetime | None = None,
) -> list[QueueItem]:
    """Released results (newest first) filtered by review status, patient, user and date."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    released = store.entries(
        actions=RELEASE_ACTIONS, patient=patient, user=user, since=since, newest_first=True
    )
    reviews = store.review_status([e.id for e in released])
    items = [QueueItem(e, reviews.get(e.id)) for e in released if e.result is not None]
    if status == "pending":
        return [i for i in items if i.review is None]
    if status == "reviewed":
        return [i for i in items if i.review is not None]
    return items


def intact(entry: Entry) -> bool:
    """True when the stored result still hashes to the hash recorded with it."""
    return entry.result is not None and sha256(canonical(entry.result)) == entry.result_hash


def sign(
    store: AuditStore,
    entry_id: int,
    decision: str,
    *,
    user: str,
    role: str,
    comment: str = "",
    **extra: Any,
) -> Entry:
    """Record a sign-off or a rejection (which needs a comment) of a released result."""
    if decision not in ("sign_off", "reject"):
        raise ValueError(f"decision must be sign_off or reject, got {decision!r}")
    comment = (comment or "").strip()
    if decision == "reject" and not comment:
        raise ValueError("a rejection needs a comment saying what is wrong")
    released = store.get(entry_id)
    if released is None or released.action not in RELEASE_ACTIONS or released.result is None:
        raise ValueError(f"audit entry {entry_id} is not a released result")
    return store.append(
        user=user,
        role=role,
        action=decision,
        patients=released.patients,
        subject=released.id,
        comment=comment or None,
        detail={"result_hash": released.result_hash, **extra},
    )
