"""The review workflow over the audit trail: which released summaries await review, whether a
stored result is intact, and the sign-off or rejection itself (an audit entry that names the
released entry and the hash of the result it judged).

Four eyes: nobody reviews their own release. `sign` refuses a sign-off or rejection by the user the
released entry names, records the attempt (`review_refused`, naming the release and the decision
tried) and raises SelfReviewError; every review path (the dashboard's Review page, scripts) calls
`sign`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from engine.audit.chain import canonical, sha256
from engine.audit.store import RELEASE_ACTIONS, AuditStore, Entry

STATUSES = ("pending", "reviewed", "all")
DECISIONS = {"sign_off": "sign off", "reject": "reject"}


class SelfReviewError(ValueError):
    """A reviewer tried to sign off or reject a release of their own (four eyes); the attempt is
    in the audit trail as `refusal`."""

    def __init__(self, message: str, refusal: Entry) -> None:
        super().__init__(message)
        self.refusal = refusal


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


def same_user(a: str | None, b: str | None) -> bool:
    """True when two recorded user names are the same person (e-mails are case-insensitive)."""
    return bool(a and b) and a.strip().casefold() == b.strip().casefold()


def own_release(entry: Entry, user: str | None) -> bool:
    """True when `entry` was released to `user`, who therefore may not review it."""
    return same_user(entry.user, user)


def self_review_message(entry: Entry, decision: str | None = None) -> str:
    """The plain sentence a reviewer sees for their own release (before or after trying)."""
    verb = DECISIONS.get(decision or "", "review")
    return (
        f"You cannot {verb} your own release: entry #{entry.id} was released to {entry.user}. "
        "Four eyes: another reviewer must sign it off or reject it."
    )


def _refuse_self_review(
    store: AuditStore, released: Entry, decision: str, *, user: str, role: str
) -> SelfReviewError:
    """Record the refused attempt and return the error to raise."""
    message = self_review_message(released, decision)
    refusal = store.append(
        user=user,
        role=role,
        action="review_refused",
        patients=released.patients,
        subject=released.id,
        comment=message,
        detail={
            "attempted": decision,
            "reason": "own release",
            "released_to": released.user,
            "result_hash": released.result_hash,
        },
    )
    return SelfReviewError(f"{message} (refused; audit entry #{refusal.id})", refusal)


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
    """Record a sign-off or a rejection (which needs a comment) of a released result.

    Raises SelfReviewError (a ValueError), after recording the attempt as `review_refused`, when
    `user` is the user the release names; ValueError for anything else that is not a review."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be sign_off or reject, got {decision!r}")
    released = store.get(entry_id)
    if released is None or released.action not in RELEASE_ACTIONS or released.result is None:
        raise ValueError(f"audit entry {entry_id} is not a released result")
    if own_release(released, user):
        raise _refuse_self_review(store, released, decision, user=user, role=role)
    comment = (comment or "").strip()
    if decision == "reject" and not comment:
        raise ValueError("a rejection needs a comment saying what is wrong")
    return store.append(
        user=user,
        role=role,
        action=decision,
        patients=released.patients,
        subject=released.id,
        comment=comment or None,
        detail={"result_hash": released.result_hash, **extra},
    )
