"""The review workflow over the audit trail: putting a release in the review queue, which
submitted releases await review, whether a stored result is intact, and the sign-off or rejection
itself (an audit entry that names the released entry and the hash of the result it judged).

Every release (`ask`, `check`) is in the trail, but only a release someone submits for review
(`submit`, a `submit_review` entry naming it) is a queue item, and only once per review key: the
plan (its canonical hash), the KB (kb_source: directory or server and collection, since two KBs
can share a generation label), the KB generation and the result's content hash (the result JSON
without the run's timing trace, which differs between two runs of the same thing). Submitting a
release whose key is already queued returns the existing item. `queue` lists the items of one KB
(and generation) when asked; the queue number of an item is the id of the release it names.

Four eyes: nobody reviews their own release. `sign` refuses a sign-off or rejection by the user the
released entry names, records the attempt (`review_refused`, naming the release and the decision
tried) and raises SelfReviewError; every review path (the dashboard's Review page, scripts) calls
`sign`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from engine.audit.chain import canonical, sha256
from engine.audit.store import RELEASE_ACTIONS, SUBMIT_ACTIONS, AuditStore, Entry

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
    entry: Entry  # the release reviewed (its id is the queue number)
    review: Entry | None  # the latest sign-off / rejection, None while pending
    submission: Entry | None = None  # the `submit_review` entry that queued it

    @property
    def status(self) -> str:
        if self.review is None:
            return "awaiting review"
        return "signed off" if self.review.action == "sign_off" else "rejected"

    @property
    def number(self) -> int:
        return self.entry.id

    @property
    def kb(self) -> str | None:
        return ((self.submission and self.submission.detail) or {}).get("kb")


@dataclass(frozen=True)
class Submission:
    """What `submit` did: the queue item, and whether this call created it."""

    item: QueueItem
    created: bool

    @property
    def message(self) -> str:
        if self.created:
            return f"Submitted for review as #{self.item.number}"
        return f"Already in the review queue as #{self.item.number} ({self.item.status})"


def content_hash(result: dict[str, Any] | None) -> str | None:
    """SHA-256 of a stored result without its timing trace (what two runs of one plan on one KB
    generation share when they say the same)."""
    if result is None:
        return None
    return sha256(canonical({k: v for k, v in result.items() if k != "trace"}))


def review_key(release: Entry, kb: str | None = None) -> dict[str, Any]:
    """The fields that identify a queue item, and `key`, their hash. `kb` stands in for a release
    recorded before releases named their KB (`detail.kb`)."""
    fields = {
        "plan_hash": sha256(canonical(release.plan)) if release.plan is not None else None,
        "kb": (release.detail or {}).get("kb") or kb,
        "kb_generation": release.kb_generation,
        "content_hash": content_hash(release.result),
    }
    return {**fields, "key": sha256(canonical(fields))}


def _release(store: AuditStore, release: Entry | int) -> Entry:
    entry = store.get(release) if isinstance(release, int) else release
    if entry is None or entry.action not in RELEASE_ACTIONS or entry.result is None:
        rid = release if isinstance(release, int) else release.id
        raise ValueError(f"audit entry {rid} is not a released result")
    return entry


def _item(store: AuditStore, submission: Entry) -> QueueItem:
    released = store.get(submission.subject or 0)
    if released is None:
        raise ValueError(f"submission #{submission.id} names no stored release")
    return QueueItem(released, store.review_status([released.id]).get(released.id), submission)


def _same_key(key: str) -> Callable[[Entry], bool]:
    """True for a submission whose review key is `key`."""
    return lambda e: (e.detail or {}).get("key") == key


def submit(
    store: AuditStore,
    release: Entry | int,
    user: str,
    *,
    role: str = "",
    kb: str | None = None,
    comment: str | None = None,
) -> Submission:
    """Put a release (an entry or its id) in the review queue: a `submit_review` entry naming it
    (`subject`) with its review key in `detail`, unless an item with the same key exists, which is
    returned instead (Submission.created False; nothing is appended). ValueError when the entry
    is not a released result."""
    released = _release(store, release)
    key = review_key(released, kb)
    entry, created = store.append_once(
        match=_same_key(key["key"]),
        like=key["key"],
        user=user,
        role=role,
        action=SUBMIT_ACTIONS[0],
        patients=released.patients,
        kb_generation=released.kb_generation,
        kb_hash=released.kb_hash,
        subject=released.id,
        comment=(comment or "").strip() or None,
        detail={**key, "result_hash": released.result_hash},
    )
    return Submission(_item(store, entry), created)


def queued(store: AuditStore, release: Entry | int, kb: str | None = None) -> QueueItem | None:
    """The queue item a release belongs to (its own submission or an earlier one with the same
    review key), or None when it was never submitted."""
    same = _same_key(review_key(_release(store, release), kb)["key"])
    first = next((e for e in store.entries(actions=SUBMIT_ACTIONS) if same(e)), None)
    return None if first is None else _item(store, first)


def _in_kb(submission: Entry, kb: str | None, generation: str | None) -> bool:
    if kb is not None and (submission.detail or {}).get("kb") != kb:
        return False
    return generation is None or submission.kb_generation == generation


def queue(
    store: AuditStore,
    *,
    status: str = "pending",
    patient: int | None = None,
    user: str | None = None,
    since: str | date | datetime | None = None,
    kb: str | None = None,
    kb_generation: str | None = None,
) -> list[QueueItem]:
    """Submitted releases (newest submission first) filtered by review status, patient, the user
    they were released to, submission date, KB (kb_source) and KB generation."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    subs = store.entries(actions=SUBMIT_ACTIONS, patient=patient, since=since, newest_first=True)
    subs = [s for s in subs if s.subject is not None and _in_kb(s, kb, kb_generation)]
    releases = {e.id: e for e in store.entries(ids=[s.subject for s in subs])}
    reviews = store.review_status(list(releases))
    items: dict[int, QueueItem] = {}
    for s in reversed(subs):  # oldest first: a release's first submission stands
        e = releases.get(s.subject or 0)
        if e is not None and e.result is not None and (user is None or e.user == user):
            items.setdefault(e.id, QueueItem(e, reviews.get(e.id), s))
    out = sorted(items.values(), key=lambda i: i.submission.id if i.submission else 0, reverse=True)
    if status == "pending":
        return [i for i in out if i.review is None]
    if status == "reviewed":
        return [i for i in out if i.review is not None]
    return out


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
