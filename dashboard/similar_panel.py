"""The Patient page's "Similar patients" section: the neighbours from engine.similar with the
features that made them close, and their trajectories overlaid (dashboard.similar_chart). It says
plainly that this is descriptive, not a prognosis."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import search_services
from dashboard.services import EngineHandle
from dashboard.similar_chart import similar_trajectories_figure
from dashboard.table_columns import show_table
from kb_store.profiles import DOMAIN_LABELS

DESCRIPTIVE = (
    "Descriptive, not a prognosis: these are the patients of this knowledge base whose baseline "
    "scores, slopes and red-flag items were closest to this patient's (standardised features; "
    "docs/search.md). How they went on says nothing certain about how this patient will."
)


def render_similar(handle: EngineHandle, patient: int, instruments: list[str]) -> None:
    st.subheader("Similar patients")
    st.caption(DESCRIPTIVE)
    c1, c2 = st.columns([1, 3])
    k = c1.number_input("How many", 1, 20, 5, key="similar_k")
    inst = instruments[0] if len(instruments) == 1 else None
    try:
        result, rows = search_services.similar(handle, int(patient), int(k), inst)
    except ValueError as e:
        st.info(str(e))
        return
    if not result.neighbours:
        st.info("No other patient shares enough features with this one.")
        return
    table = pd.DataFrame(
        [
            {
                "rank": i,
                "patient": n.patient,
                "distance": round(n.distance, 3),
                "shared features": len(n.features),
                "sessions": n.sessions,
                "closest features (theirs vs this patient's)": n.reasons(),
            }
            for i, n in enumerate(result.neighbours, start=1)
        ]
    )
    show_table(table, hide_index=True, key="similar_table")
    domains = sorted({r["domain"] for r in rows}, key=list(DOMAIN_LABELS).index)
    if not domains:
        return
    dom = c2.radio(
        "Domain",
        domains,
        format_func=lambda d: DOMAIN_LABELS.get(d, d),
        horizontal=True,
        key="similar_domain",
        index=domains.index("motor") if "motor" in domains else 0,
    )
    st.plotly_chart(
        similar_trajectories_figure(
            rows, int(patient), dom, [n.patient for n in result.neighbours]
        ),
        theme=None,
        key="similar_chart",
        width="stretch",
    )
