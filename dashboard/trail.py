"""The dashboard's side of the audit trail (engine.audit): every result released on a page,
every export, sign-in, denied attempt, submission for review, sign-off and rejection is recorded
under the person of this session (set by dashboard.gate), and a summary whose review rejected it
carries a banner wherever it is shown again. A released result enters the review queue of this
dashboard's KB (kb_source) only when submitted (submit_for_review)."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

import streamlit as st

from dashboard import services
from dashboard.access import Identity
from dashboard.messages import plain
from dashboard.number_links import md_escape
from engine.audit.chain import sha256
from engine.audit.errors import AuditError

IDENTITY_KEY = "marag_identity"
ENTRY_IDS = "marag_audit_entry_ids"  # result object id -> its audit entry id (this session)
RELEASED = "marag_audit_released"  # result object id -> a weak reference to that result


def identity() -> Identity:
    ident = st.session_state.get(IDENTITY_KEY)
    if ident is None:  # a page opened without the app's gate (AppTest of one view)
        from dashboard.access import ROLES
        from engine.audit import resolve_user

        ident = Identity(resolve_user(services.base_config()), frozenset(ROLES), "local")
    return ident


def store() -> Any:
    from engine.audit import open_store

    return open_store(services.base_config())


def record(action: str, **kw: Any) -> Any:
    """Append an entry for this session's user; raises AuditError when the store is unavailable."""
    from engine.audit import record as audit_record

    ident = identity()
    cfg = kw.pop("cfg", None) or services.base_config()
    return audit_record(cfg, action, user=ident.user, role=ident.role_label, **kw)


def record_once(flag: str, action: str, **kw: Any) -> None:
    """Record `action` once per browser session (sign-in, denied)."""
    if st.session_state.get(flag):
        return
    try:
        record(action, **kw)
    except AuditError as e:
        st.error(f"The audit trail is unavailable: {plain(e)}")
        st.stop()
    st.session_state[flag] = True


def record_release(result: Any, cfg: Any = None, *, action: str = "ask", plan: Any = None) -> bool:
    """The one function every page calls before it shows a result (widgets.run_step for the
    Patient, Compare and Cohort pages; Search before it opens Provenance; Provenance for its
    result and for a checked text): record it in the audit trail first. A result this session
    already recorded is not recorded again. False (with the error shown) when it cannot be
    recorded: the caller shows nothing."""
    if _recorded(result):
        return True
    try:
        entry = record(action, result=result, plan=plan or getattr(result, "plan", None), cfg=cfg)
    except AuditError as e:
        st.error(f"Not shown: the result could not be recorded in the audit trail ({plain(e)}).")
        return False
    st.session_state.setdefault(ENTRY_IDS, {})[id(result)] = entry.id  # not queued: see submit
    with contextlib.suppress(TypeError):  # a dict (a checked text): recorded each time shown
        st.session_state.setdefault(RELEASED, {})[id(result)] = weakref.ref(result)
    return True


def adopt_release(result: Any, entry_id: int) -> None:
    """`result`, rebuilt from audit entry `entry_id`, is that release in this session (a
    Provenance link reopened it): shown and exported as it, never recorded again."""
    st.session_state.setdefault(ENTRY_IDS, {})[id(result)] = entry_id
    st.session_state.setdefault(RELEASED, {})[id(result)] = weakref.ref(result)


def _recorded(result: Any) -> bool:
    """Whether this session recorded this very object (not another one that reuses its id)."""
    ref = st.session_state.get(RELEASED, {}).get(id(result))
    return ref is not None and ref() is result and release_id(result) is not None


def kb_source() -> str:
    """Which KB this dashboard serves (engine.audit.trail.kb_source): the review queue's KB."""
    from engine.audit.trail import kb_source as source

    return source(services.base_config())


def release_id(result: Any) -> int | None:
    """The audit entry this session recorded when `result` was released, or None."""
    return st.session_state.get(ENTRY_IDS, {}).get(id(result))


def submit_for_review(result: Any) -> Any:
    """Put the release of `result` in this KB's review queue (engine.audit.review.submit, once
    per plan, KB generation and result) and return the Submission. ValueError when the result was
    not recorded; AuditError when the trail is unavailable."""
    from engine.audit.review import submit

    entry_id = release_id(result)
    if entry_id is None:
        raise ValueError("this result was not recorded in the audit trail, so it cannot be queued")
    ident = identity()
    return submit(store(), entry_id, ident.user, role=ident.role_label, kb=kb_source())


def queue_item(result: Any) -> Any:
    """The review queue item the release of `result` belongs to, or None (not submitted, or not
    recorded). Raises AuditError when the trail is unavailable."""
    from engine.audit.review import queued

    entry_id = release_id(result)
    return None if entry_id is None else queued(store(), entry_id, kb_source())


def _review_line(entry_id: int, review: Any, item: Any) -> str:
    """The report header's review status of release `entry_id`."""
    if review is not None:
        verb = "signed off" if review.action != "reject" else "rejected"
        number = item.number if item is not None else entry_id
        return f"{verb} by {review.user} (audit entry #{number})"
    if item is not None:
        return f"not reviewed (audit entry #{entry_id}, in the review queue as #{item.number})"
    return f"not reviewed (audit entry #{entry_id}, not submitted for review)"


def report_context(result: Any) -> dict[str, Any]:
    """What the printed report's header says beyond the result: the KB generation the release was
    recorded against, this session's user and the release's review status in the trail (its own
    review, or that of the queue item it belongs to)."""
    ctx: dict[str, Any] = {"user": identity().user, "review_status": "not recorded"}
    entry_id = release_id(result)
    if entry_id is None:
        return ctx
    try:
        audit = store()
        entry = audit.get(entry_id)
        item = queue_item(result)
        review = audit.review_status([entry_id]).get(entry_id) or (item and item.review)
    except (AuditError, ValueError):
        return {**ctx, "review_status": f"unknown (audit entry #{entry_id})"}
    ctx["kb_generation"] = entry.kb_generation if entry else None
    ctx["review_status"] = _review_line(entry_id, review, item)
    return ctx


def record_kb_build(cfg: Any, detail: dict[str, Any]) -> None:
    """A KB build on the Data page (after it succeeded)."""
    try:
        record("kb_build", cfg=cfg, with_kb=True, detail=detail)
    except AuditError as e:
        st.error(f"The KB was built, but the build could not be recorded: {plain(e)}")


def rejection(summary: str | None) -> Any:
    """The rejection entry of this summary text, or None."""
    if not summary:
        return None
    try:
        return store().rejected_summaries().get(sha256(summary))
    except AuditError:
        return None


def rejection_banner(summary: str | None) -> None:
    rej = rejection(summary)
    if rej is not None:
        st.error(
            f"**Rejected in review** by {md_escape(rej.user)} on {rej.ts[:10]} (audit entry "
            f"#{rej.id}): {md_escape(rej.comment or 'no comment')}",  # a comment is plain text
            icon=":material/block:",
        )
