"""Streamlit components that show a Result: the summary with its grounding badge and highlighted
unsupported numbers, the flags panel, and the export buttons. Pages compose these; the data work
behind them lives in the pure modules (provenance, tables, charts, report).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard import (
    cited_sentences,
    downloads,
    export,
    provenance_link,
    review_submit,
    session,
    trail,
)
from dashboard.headline import headline_figures
from dashboard.number_links import (
    grounding_status,
    highlighted_markdown,
    link_numbers,
    md_escape,
    summary_record,
)
from dashboard.table_columns import show_table
from engine.grounding.screening import DECISION_SUPPORT_NOTE
from engine.report.model import latest_red_flags
from engine.types import Result
from kb_store.documents import fmt_num
from kb_store.exclusions import iso_date
from kb_store.profiles import DOMAIN_LABELS


def grounding_badge(result: Result) -> None:
    status, line = grounding_status(result.verification or {})
    icon, colour = {
        "passed": (":material/verified:", "green"),
        "failed": (":material/error:", "red"),
    }.get(status, (":material/help:", "gray"))
    st.badge(line, icon=icon, color=colour)
    v = result.verification or {}
    if v.get("fallback_used"):
        agents = ", ".join(v.get("fallback_agents") or []) or "an agent"
        st.caption(
            f"The model's text for {agents} did not pass the check after "
            f"{v.get('rounds', 0)} critique round(s); the deterministic facts text was used instead."
        )
    elif result.llm_calls == 0 and status != "unchecked":
        st.caption(
            "Facts backend: the text is written from the fact table by code and measured, not regenerated."
        )


def _cited_html(result: Result, links: list, windows: list[tuple[int, int]]) -> dict:
    """Each window of `result.summary` as HTML whose cited sentences show their statements on
    hover (dashboard.cited_sentences); {} when the final text's record has no citations of it.
    Built once per result and release (a rerun re-renders it)."""
    release = trail.release_id(result)

    def build() -> dict[tuple[int, int], str]:
        rec = summary_record(result.verification or {})
        cits, sentences = cited_sentences.summary_citations(result.summary, rec)
        if not cits:
            return {}
        by_id = {s.id: s for s in result.statements}
        claims = result.claims.get("final", ())
        out = {}
        for w in windows:
            pieces = cited_sentences.sentence_pieces(
                result.summary, cits, by_id.values(), sentences=sentences, claims=claims, window=w
            )
            out[w] = cited_sentences.pieces_html(
                pieces, lambda p: provenance_link.href(release, p.start), links
            )
        return out

    return session.derived(result, f"cited_html:{release}:{windows}", build)


def _summary_text(result: Result, links: list, window: tuple[int, int], html: dict) -> None:
    """One stretch of the summary: with the hover of its cited sentences, else as markdown with
    its unsupported numbers highlighted (as before citations)."""
    if window in html:
        st.html(cited_sentences.HOVER_CSS + html[window])
        return
    a, b = window
    mine = [lk for lk in links if a <= lk.start and lk.end <= b]
    shifted = [replace(lk, start=lk.start - a, end=lk.end - a) for lk in mine]
    st.markdown(highlighted_markdown(result.summary[a:b], shifted) or "_(empty summary)_")


def _paragraph_windows(result: Result) -> list[tuple[int, int] | None]:
    """Where each details paragraph (in section order) lies in the summary; None for one that is
    not a stretch of it."""
    out: list[tuple[int, int] | None] = []
    pos = len(result.digest)
    for _head, paras in result.sections:
        for p in paras:
            at = result.summary.find(p, pos) if p else -1
            out.append(None if at < 0 else (at, at + len(p)))
            pos = pos if at < 0 else at + len(p)
    return out


def summary_panel(result: Result) -> None:
    st.subheader("Summary")
    trail.rejection_banner(result.summary)  # audit trail: rejected in review
    grounding_badge(result)
    links = link_numbers(result)
    digest = result.digest
    if digest and result.sections and result.summary.startswith(digest):
        # the digest first; the details under their headings, one expander each
        paras = iter(_paragraph_windows(result))
        windows = [(0, len(digest)), *(w for w in _paragraph_windows(result) if w)]
        html = _cited_html(result, links, windows)
        with st.container(border=True, key="summary_box"):
            _summary_text(result, links, (0, len(digest)), html)
        for i, (head, texts) in enumerate(result.sections):
            with st.expander(head, expanded=False, key=f"details_{i}"):
                for p in texts:
                    w = next(paras)
                    if w is None:  # not a stretch of the released text: as written, no hover
                        st.markdown(md_escape(p))
                    else:
                        _summary_text(result, links, w, html)
        if DECISION_SUPPORT_NOTE in result.summary:
            st.caption(DECISION_SUPPORT_NOTE)
    else:
        whole = (0, len(result.summary))
        with st.container(border=True, key="summary_box"):
            _summary_text(result, links, whole, _cited_html(result, links, [whole]))
    st.caption(
        f"Backend: {result.backend or 'n/a'} \u00b7 LLM calls: {result.llm_calls} \u00b7 "
        f"{len(result.facts)} fact rows \u00b7 numbers checked: {(result.verification or {}).get('numbers', 'n/a')}"
    )


def _v(x: Any) -> str:
    return fmt_num(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def flag_line(row: dict[str, Any]) -> str:
    """One flag as a line naming patient, visit, domain / item and scores (markdown)."""
    where = f"**Patient {row.get('patient', '?')}, visit {row.get('visit', '?')}**" + (
        f" ({row['date']})" if row.get("date") else ""
    )
    dom = DOMAIN_LABELS.get(str(row.get("domain")), row.get("domain"))
    if "elevated_domain" in row:  # incongruence
        vals = row.get("values") or {}
        el = row["elevated_domain"]
        return (
            f"{where}: {dom} **{_v(vals.get(row.get('domain')))}** while "
            f"{DOMAIN_LABELS.get(el, el)} **{_v(vals.get(el))}** (moderate cut-off {_v(row.get('cutoff'))})"
        )
    if "item" in row:  # red-flag item
        # the rationale lives here and in provenance, never in the summary text
        why = f" — {row['why']}" if row.get("why") else ""
        if row.get("source"):
            why += f" (source: {row['source']})"
        return (
            f"{where}: {dom} · {row.get('item_label', row['item'])} ({row['item']}) "
            f"**{_v(row.get('value'))}** (flag at ≥ {_v(row.get('threshold'))}){why}"
        )
    rest = "; ".join(
        f"{k.replace('_', ' ')}: {_v(v)}"
        for k, v in row.items()
        if k not in {"patient", "visit", "date"} and v not in (None, "", [], {})
    )
    return f"{where}: {rest}"


def flags_panel(result: Result) -> None:
    """Incongruence flags and red-flag items, prominent, beside the summary."""
    inc = (result.flags or {}).get("incongruence") or []
    red = (result.flags or {}).get("red_flags") or []
    st.subheader("Flags")
    with st.container(key="flags_box"):
        if not inc and not red:
            st.success(
                "No incongruence flags and no red-flag items in the selected visits.",
                icon=":material/check_circle:",
            )
            return
        if inc:
            st.error(
                f"**{len(inc)} incongruence flag{'s' if len(inc) != 1 else ''}** "
                "(a domain at 0 while another is at or above its moderate cut-off)",
                icon=":material/warning:",
            )
            with st.container(height=min(40 + 56 * len(inc), 260), border=False):
                for r in inc:
                    st.markdown(f"- {flag_line(r)}")
        if red:
            _red_flag_items(red)


def _red_flag_items(red: list[dict[str, Any]]) -> None:
    """Red flags one per patient and item (its latest flagged visit): current ones first, the
    items flagged earlier but not at the latest assessment apart, collapsed."""
    current, earlier = latest_red_flags({"red_flags": red})
    if current:
        st.warning(
            f"**{len(current)} current red-flag item{'s' if len(current) != 1 else ''}** "
            "(at or above the flag threshold at the latest assessment)",
            icon=":material/flag:",
        )
        with st.container(height=min(40 + 56 * len(current), 260), border=False):
            for r in current:
                st.markdown(f"- {flag_line(r)}")
    else:
        st.success("No current red-flag items.", icon=":material/check_circle:")
    if earlier:
        label = (
            f"{len(earlier)} earlier red-flag item{'s' if len(earlier) != 1 else ''}, "
            "not flagged at the latest assessment"
        )
        with st.expander(label, expanded=False):
            for r in earlier:
                st.markdown(f"- {flag_line(r)}")


def excluded_panel(result: Result) -> None:
    """Sessions of the plan's patients left out at ingest (nothing is excluded
    in silence), as the engine reported them, with a link to the Data page's validation report."""
    rows = getattr(result, "excluded_sessions", None) or []
    if not rows:
        return
    st.info(
        f"**{len(rows)} session{'s' if len(rows) != 1 else ''} left out at data import**",
        icon=":material/block:",
    )
    show_table(
        [
            {
                **{k: r.get(k) for k in ("patient", "instrument")},
                # the parsed date, or a description: a rejected cell is never quoted
                "date": iso_date(dict(r)) or "unreadable date (see the Data report)",
                **{k: r.get(k) for k in ("file", "row", "rule")},
            }
            for r in rows
        ],
        hide_index=True,
        key="excluded_sessions",
    )
    st.page_link("views/data.py", label="Why? Open the Data report", icon=":material/database:")


def screening_notes(result: Result) -> None:
    if result.screening:
        with st.expander(f"Screening findings ({len(result.screening)})"):
            for s in result.screening:
                st.markdown(f"- **{s.get('rule', 'finding')}**: {s.get('message', '')}")


def summary_beside(result: Result) -> DeltaGenerator:
    """The summary and its screening notes on the left; returns the right-hand column, which
    starts with the flags, for the page's own charts and tables."""
    headline_row(result)
    left, right = st.columns([2, 3], gap="large")
    with left:
        summary_panel(result)
        screening_notes(result)
    with right:
        flags_panel(result)
        excluded_panel(result)
    return right


def export_buttons(result: Result, key: str) -> None:
    """The printable report (PDF, HTML, Markdown), the verification record (JSON) and the fact
    table (CSV) of the current result, each built on click and recorded as an export."""
    review_submit.submit_button(result, key)  # the review queue: only a submitted release
    cols = st.columns(5)
    labels = {"pdf": "Report (PDF)", "html": "Report (HTML)", "md": "Report (Markdown)"}
    audit_fmt = {"pdf": "pdf", "html": "html", "md": "markdown"}
    context = trail.report_context(result)  # now: the deferred callables run outside the script
    for col, fmt in zip(cols, ("pdf", "html", "md"), strict=False):
        downloads.download(
            col,
            labels[fmt],
            lambda fmt=fmt: export.report(result, fmt, **context),
            result=result,
            fmt=audit_fmt[fmt],
            file_name=f"marag-report.{fmt}",
            mime=export.REPORT_MIME[fmt],
            key=f"dl_{fmt}_{key}",
            icon=":material/print:" if fmt == "pdf" else ":material/description:",
        )
    downloads.download(
        cols[3],
        "Verification record (JSON)",
        lambda: export.verification_json(result),
        result=result,
        fmt="json",
        file_name="marag-verification.json",
        mime="application/json",
        key=f"dl_json_{key}",
        icon=":material/verified:",
    )
    downloads.download(
        cols[4],
        "Fact table (CSV)",
        lambda: export.facts_csv(result),
        result=result,
        fmt="facts_csv",
        file_name="marag-facts.csv",
        mime="text/csv",
        key=f"dl_csv_{key}",
        icon=":material/table:",
    )


def headline_row(result: Result) -> None:
    """The headline figures (dashboard.headline) as one row of st.metric per patient, above the
    summary; a page of several patients labels each row."""
    patients = list(result.plan.patients)[:4]
    for p in patients:
        figures = headline_figures(result, p)
        if not figures:
            continue
        if len(patients) > 1:
            st.caption(f"Patient {p}")
        cols = st.columns(len(figures), border=True)
        for col, h in zip(cols, figures, strict=True):
            col.metric(
                h.label,
                h.value,
                h.delta,
                delta_color="inverse" if h.worse_up else "normal",
                help=h.help or None,
            )
