"""Search page: free text over the session documents and the clinicians' notes (hybrid BM25 +
MiniLM + clinical concepts, engine.search), with filters; each hit says why it matched, shows the
provenance of its session (KB document, source file and row, document text, note) and opens the
patient at that visit."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from dashboard import search_services, services, session, trail
from dashboard.messages import plain
from dashboard.page import engine_or_stop
from dashboard.table_columns import show_table
from engine.query_input import MAX_SEARCH_CHARS
from engine.search import SearchFilters
from engine.types import Plan

st.header("Search", divider="gray")
cfg, handle, refs = engine_or_stop()
ids = services.patient_ids(handle, cfg)

with st.container(border=True, key="search_box"):
    text = st.text_input(
        "Search sessions and clinician notes",
        key="search_text",
        max_chars=MAX_SEARCH_CHARS,
        placeholder="e.g. falls and freezing, hallucinations, orthostatic, moderate sleep disturbance",
    )
    c1, c2, c3, c4 = st.columns([2, 1, 2, 1])
    patients = c1.multiselect("Patients (none = all)", ids, key="search_patients")
    instrument = c2.selectbox("Instrument", ["any", "updrs", "pdq8"], key="search_instrument")
    use_dates = c3.toggle("Date range", value=False, key="search_use_dates")
    dates = None
    if use_dates:
        dates = c3.date_input(
            "From - to",
            value=(dt.date(2019, 1, 1), dt.date.today()),
            key="search_dates",
        )
    k = c4.number_input("Hits", 1, 100, 10, key="search_k")
    i1, i2 = st.columns([2, 1])
    item = i1.text_input(
        "Item at least (code or label, optional)", key="search_item", placeholder="e.g. FALL_PROB"
    )
    item_min = i2.number_input("Minimum value", 0.0, 4.0, 1.0, step=1.0, key="search_item_min")

if not text.strip():
    st.info(
        "Type clinical words or words from the clinicians' notes. Clinical concepts are mapped to "
        "instrument items (\u201cfalls\u201d \u2192 Falling, \u201corthostatic\u201d \u2192 "
        "Light-headedness on standing), so sessions that score the item come first.",
        icon=":material/search:",
    )
    st.stop()

date_from = date_to = None
if dates and isinstance(dates, tuple | list) and len(dates) == 2:
    date_from, date_to = (d.isoformat() for d in dates)
filters = SearchFilters(
    patients=tuple(int(p) for p in patients),
    instrument=None if instrument == "any" else instrument,
    date_from=date_from,
    date_to=date_to,
    item_min=((item.strip(), float(item_min)),) if item.strip() else (),
)
try:
    hits = search_services.search_index(handle).search(text, filters, k=int(k))
except ValueError as e:
    st.error(plain(e))
    st.stop()

st.subheader(f"{len(hits)} session(s)")
if not hits:
    st.info("No session matches the filters.")
    st.stop()
show_table(
    pd.DataFrame(
        [
            {
                "rank": n,
                "patient": h.patient,
                "visit": h.visit,
                "date": h.date,
                "instrument": h.instrument,
                "relevance": round(h.score, 3),
                "why": h.why,
                "doc_id": h.doc_id,
            }
            for n, h in enumerate(hits, start=1)
        ]
    ),
    hide_index=True,
    key="search_hits",
)
index = search_services.search_index(handle)
for n, h in enumerate(hits, start=1):
    with st.container(border=True, key=f"hit_{n}"):
        st.markdown(
            f"**{n}. Patient {h.patient}**, visit {h.visit}, {h.date}, {h.instrument.upper()} "
            f"\u2014 score {h.score:.3f}"
        )
        st.caption(f"Why: {h.why}")
        if h.negated:
            st.warning(
                f"The clinician note mentions {', '.join(h.negated)} only negated: not a finding.",
                icon=":material/block:",
            )
        st.text(h.snippet)  # plain text: a note is never rendered as Markdown
        with st.expander("Provenance of this session"):
            unit = index.unit(h.doc_id)
            st.markdown(f"KB document `{h.doc_id}` \u00b7 source `{h.source}`")
            st.code(unit.doc.text, language=None, wrap_lines=True)
            if unit.note is not None:
                st.markdown(f"Clinician note `{unit.note.id}`")
                st.code(unit.note.text, language=None, wrap_lines=True)
        plan = Plan(
            patients=(h.patient,),
            analysis="single_session",
            instruments=(h.instrument,),
            visit_filter=f"visit_{h.visit}",
        )
        b1, b2 = st.columns(2)
        if b1.button(
            f"Open patient {h.patient} at visit {h.visit}",
            key=f"open_{n}",
            icon=":material/person:",
        ):
            session.set_pending(plan)
            st.session_state["marag_parsed_note"] = (
                f"From search \u201c{text}\u201d: patient {h.patient}, visit {h.visit} "
                f"({h.date}, {h.instrument}). Press **Run**; the Provenance page then links every "
                "number to this session's KB document."
            )
            st.switch_page("views/patient.py")
        if b2.button(
            "Open the provenance of this session",
            key=f"prov_{n}",
            icon=":material/fact_check:",
            help="Runs the single-session analysis of this session and opens Provenance",
        ):
            with st.spinner(f"Running the single-session analysis ({handle.backend})..."):
                try:
                    result = handle.run(plan)
                except ValueError as e:
                    st.error(plain(e))
                    st.stop()
            if not trail.record_release(result, services.base_config()):  # recorded first
                st.stop()
            session.store_result(plan, handle.backend, result)
            st.switch_page("views/provenance.py")
