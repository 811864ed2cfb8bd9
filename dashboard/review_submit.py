"""The "Submit for review" button of a released result (drawn with its export buttons,
dashboard.render): a Run is recorded in the audit trail but awaits no review; this button puts the
release in the review queue of this dashboard's KB (dashboard.trail.submit_for_review, once per
plan, KB generation and result). It then says "Submitted for review as #N", or "Already in the
review queue as #N" when the same result was submitted before (by this release or an earlier run
of the same plan), and stays disabled."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import trail
from dashboard.messages import plain
from engine.audit.errors import AuditError

OUTCOMES = "marag_review_submitted"  # release entry id -> (message, created), this session
ERRORS = "marag_review_submit_errors"  # release entry id -> the error of the last attempt


def _on_submit(result: Any, entry_id: int) -> None:
    """Button callback (runs before the script): submit and keep what happened for the page."""
    st.session_state.setdefault(ERRORS, {}).pop(entry_id, None)
    try:
        done = trail.submit_for_review(result)
    except (AuditError, ValueError) as e:
        st.session_state[ERRORS][entry_id] = plain(e)
        return
    st.session_state.setdefault(OUTCOMES, {})[entry_id] = (done.message, done.created)


def _outcome(result: Any, entry_id: int) -> tuple[str, bool] | None:
    """(confirmation, created) once the release is in the queue: this session's submission, or
    the queue item it already belongs to; None while it is not queued or the trail is down."""
    done = st.session_state.get(OUTCOMES, {}).get(entry_id)
    if done is not None:
        return done
    try:
        item = trail.queue_item(result)
    except (AuditError, ValueError):
        return None
    if item is None:
        return None
    return f"Already in the review queue as #{item.number} ({item.status})", False


def submit_button(result: Any, key: str) -> None:
    """The button and, after submitting, its confirmation; nothing for an unrecorded result."""
    entry_id = trail.release_id(result)
    if entry_id is None:
        return
    outcome = _outcome(result, entry_id)
    st.button(
        "Submit for review",
        key=f"submit_review_{key}",
        icon=":material/rate_review:",
        disabled=outcome is not None,
        on_click=_on_submit,
        args=(result, entry_id),
        help="Put this result in the review queue of this KB; a reviewer (not you) signs it off "
        "or rejects it. A Run alone is recorded in the audit trail but is not queued.",
    )
    error = st.session_state.get(ERRORS, {}).get(entry_id)
    if error:
        st.error(f"Not submitted for review: {error}")
    elif outcome is not None:
        message, created = outcome
        if created:
            st.success(message, icon=":material/check:")
        else:
            st.info(message, icon=":material/info:")
