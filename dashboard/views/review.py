"""Review page (reviewers): the review queue of the KB this dashboard serves, i.e. the released
summaries submitted for review from it (a Run alone is recorded but not queued; see
dashboard.review_submit), filtered by status, patient, user and date; one opened shows the stored
result exactly as released, its trajectory chart drawn from the stored copy
(dashboard.stored_result), and its provenance (KB generation and content hash, backend and model,
verification), even after the KB was rebuilt; the reviewer signs it off or rejects it with a
comment, both recorded in the audit trail. Four eyes: a release of the reviewer's own is marked in
the list and says so before the buttons; a click is refused by engine.audit.review.sign, which
records the attempt."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import services, stored_result, trail, trajectory_chart
from dashboard.messages import plain
from dashboard.number_links import md_escape
from dashboard.table_columns import show_table
from engine.audit.errors import AuditError
from engine.audit.review import intact, own_release, queue, self_review_message, sign
from engine.audit.trail import kb_identity

STATUS_LABELS = {"pending": "Awaiting review", "reviewed": "Reviewed", "all": "All"}
CHARTED = ("trajectory", "single_session", "comparison")  # a cohort answer has no trajectory chart


def _trajectory(stored: dict, zero_level: str | None) -> None:
    """The release's trajectory chart, from the stored result (never the current KB)."""
    st.markdown("**Trajectories (as released)**")
    result = stored_result.result_from_json(stored)
    if result is None:
        st.info(
            "The stored result cannot be drawn as a chart (it is not in the shape this version "
            "reads); the summary and the tables below are shown as stored.",
            icon=":material/info:",
        )
        return
    if result.plan.analysis not in CHARTED or not result.facts:
        st.caption("This result has no trajectory chart (a cohort answer, or no scores).")
        return
    fig = trajectory_chart.trajectory_figure(
        result, zero_level=zero_level, months=result.plan.analysis == "comparison"
    )
    st.plotly_chart(fig, theme=None, key="review_trajectory_chart", width="stretch")


st.header("Review", divider="gray")
cfg = services.base_config()
kb = trail.kb_source()
st.caption(
    f"The review queue of the KB `{kb}`: results submitted for review from this KB (a Run is "
    "recorded in the audit trail; it is queued only when someone presses **Submit for review**)."
)
try:
    store = trail.store()
    everything = queue(store, status="all", kb=kb)
except AuditError as e:
    st.error(f"The audit trail is unavailable: {plain(e)}")
    st.stop()
ident = trail.identity()

f1, f2, f3, f4 = st.columns([3, 1, 2, 2])
status = f1.segmented_control(
    "Show",
    list(STATUS_LABELS),
    format_func=STATUS_LABELS.get,
    default="pending",
    key="review_status",
)
patients = sorted({p for i in everything for p in i.entry.patients})
patient = f2.selectbox(
    "Patient",
    [None, *patients],
    format_func=lambda p: "all" if p is None else str(p),
    key="review_patient",
)
users = sorted({i.entry.user for i in everything})
user = f3.selectbox(
    "Released to",
    [None, *users],
    format_func=lambda u: "anyone" if u is None else u,
    key="review_user",
)
since = f4.date_input("Since", value=None, key="review_since")
items = queue(store, status=status or "all", patient=patient, user=user, since=since, kb=kb)

if not items:
    st.info(
        "Nothing to show: no summary submitted for review from this KB matches"
        + (" and awaits review." if status == "pending" else "."),
        icon=":material/task_alt:",
    )
    st.stop()

show_table(
    pd.DataFrame(
        [
            {
                "entry": i.entry.id,
                "released (UTC)": i.entry.ts[:16].replace("T", " "),
                "to": i.entry.user,
                "submitted (UTC)": (i.submission.ts if i.submission else "")[:16].replace("T", " "),
                "patients": ", ".join(map(str, i.entry.patients)) or "all",
                "analysis": (i.entry.plan or {}).get("analysis"),
                "backend": i.entry.backend,
                "KB": i.entry.kb_generation,
                "status": i.status,
                "summary": (i.entry.result or {}).get("summary", "")[:90],
            }
            for i in items
        ]
    ),
    hide_index=True,
    key="review_table",
)
by_id = {i.entry.id: i for i in items}
pick = st.selectbox(
    "Open a submitted summary",
    list(by_id),
    format_func=lambda k: (
        f"#{k} \u00b7 {by_id[k].entry.ts[:16].replace('T', ' ')} \u00b7 "
        f"{by_id[k].entry.user} \u00b7 patients {', '.join(map(str, by_id[k].entry.patients)) or 'all'}"
        f" \u00b7 {by_id[k].status}"
        + (" \u00b7 your release" if own_release(by_id[k].entry, ident.user) else "")
    ),
    key="review_entry",
)
item = by_id[pick]
entry, result = item.entry, item.entry.result or {}

st.subheader(f"Entry #{entry.id}")
trail.rejection_banner(result.get("summary"))
if item.review is not None and item.review.action == "sign_off":
    st.success(
        f"Signed off by {md_escape(item.review.user)} on {item.review.ts[:10]} "
        f"(entry #{item.review.id})"
        + (f": {md_escape(item.review.comment)}" if item.review.comment else ""),
        icon=":material/verified:",
    )
left, right = st.columns([3, 2], gap="large")
with left:
    st.caption(
        f"Released to **{entry.user}** ({entry.role}) at {entry.ts[:19].replace('T', ' ')} UTC; "
        "shown exactly as stored in the audit trail."
    )
    with st.container(border=True, key="review_summary"):
        st.text(result.get("summary") or "(empty summary)")
with right:
    st.markdown("**Provenance**")
    live_gen, live_hash = kb_identity(cfg)
    st.markdown(
        f"- KB generation: `{entry.kb_generation or 'n/a'}`\n"
        f"- KB content hash: `{(entry.kb_hash or 'n/a')[:16]}\u2026`\n"
        f"- Backend: {entry.backend or 'n/a'}" + (f" ({entry.model})" if entry.model else "")
    )
    if entry.kb_hash and live_hash and live_hash != entry.kb_hash:
        st.warning(
            f"The KB has changed since this was released (now `{live_gen}`); what you see is "
            "the result as released, from the stored copy.",
            icon=":material/history:",
        )
    if intact(entry):
        st.badge("Stored result matches its recorded hash", icon=":material/lock:", color="green")
    else:
        st.badge("Stored result does NOT match its hash", icon=":material/warning:", color="red")
    v = entry.verification or {}
    st.markdown(
        f"- Grounding check: {'passed' if v.get('passed') else 'failed' if v.get('passed') is False else 'n/a'}\n"
        f"- Numbers checked: {v.get('numbers', 'n/a')}, unsupported: {v.get('unsupported', 'n/a')}\n"
        f"- Deterministic fallback used: {v.get('fallback_used', 'n/a')}"
    )
    st.json(entry.plan or {}, expanded=False)
    _trajectory(result, services.clinical_refs(cfg).zero_level)  # beside the summary

tab_facts, tab_flags, tab_narr, tab_ver = st.tabs(
    ["Fact table", "Flags", "Agent narratives", "Verification record"]
)
with tab_facts:
    facts = pd.DataFrame(result.get("facts") or [])
    if not facts.empty:
        facts = facts.drop(columns=[c for c in ("items",) if c in facts.columns])
    show_table(facts, hide_index=True)
with tab_flags:
    flags = result.get("flags") or {}
    for kind in ("incongruence", "red_flags"):
        rows = flags.get(kind) or []
        st.markdown(f"**{kind.replace('_', ' ')}** ({len(rows)})")
        if rows:
            show_table(pd.DataFrame(rows), hide_index=True)
with tab_narr:
    for agent, text in (result.get("narratives") or {}).items():
        st.markdown(f"**{agent}**")
        st.text(text)
with tab_ver:
    st.json(result.get("verification") or {}, expanded=False)

reviews = store.reviews_of(entry.id)
if reviews:
    st.markdown("**Reviews**")
    for r in reviews:
        st.markdown(
            f"- {'signed off' if r.action == 'sign_off' else 'rejected'} by {md_escape(r.user)} "
            f"at {r.ts[:19].replace('T', ' ')} UTC (entry #{r.id})"
            + (f": {md_escape(r.comment)}" if r.comment else "")
        )

st.subheader("Your review")
if own_release(entry, ident.user):
    st.warning(self_review_message(entry), icon=":material/group:")
comment = st.text_area(
    "Comment (required to reject)",
    key=f"review_comment_{entry.id}",
    placeholder="What you checked, or what is wrong",
    max_chars=2000,
)
b1, b2, _ = st.columns([1, 1, 4])
decision = None
if b1.button("Sign off", type="primary", icon=":material/verified:", key="review_sign_off"):
    decision = "sign_off"
if b2.button("Reject", icon=":material/block:", key="review_reject"):
    decision = "reject"
if decision:
    try:
        done = sign(
            store,
            entry.id,
            decision,
            user=ident.user,
            role=ident.role_label,
            comment=comment,
        )
    except ValueError as e:
        st.error(plain(e))
    except AuditError as e:
        st.error(f"Not recorded: {plain(e)}")
    else:
        st.toast(
            f"{'Signed off' if decision == 'sign_off' else 'Rejected'} entry #{entry.id} "
            f"(audit entry #{done.id})",
            icon=":material/check:",
        )
        st.rerun()
