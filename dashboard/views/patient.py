"""Patient page (clinicians): one patient, a single session or the trajectory; the summary and
its flags beside the per-domain trajectories, the item heatmap and the fact table."""

from __future__ import annotations

import streamlit as st

from dashboard import charts, link_params, render, similar_panel, tables, trajectory_chart, widgets
from dashboard.page import open_analysis_page
from dashboard.table_columns import show_table

ANALYSES = ("trajectory", "single_session")

cfg, handle, refs, ids = open_analysis_page(
    "Patient",
    min_patients=1,
    too_few="The knowledge base has no patients. Rebuild it on the Data page.",
    pending_key="patient",
    analyses=ANALYSES,
    link=link_params.PageLink("patient", single_patient=True, analyses=ANALYSES),
)
with widgets.plan_box("patient"):
    c1, c2 = st.columns([1, 2])
    patient = c1.selectbox("Patient", ids, key="patient", bind="query-params")
    analysis = c2.radio(
        "Analysis",
        ANALYSES,
        format_func=lambda a: widgets.ANALYSIS_LABELS[a],
        key="analysis",
        bind="query-params",
        horizontal=True,
    )
    instruments, visit_filter = widgets.common_widgets()
    if analysis == "single_session" and visit_filter == "none":
        visit_filter = "latest_visit"
        st.caption("Single session: the latest visit (choose *Visit N* for another one).")
    plan = widgets.make_plan([patient], analysis, instruments, visit_filter)
    widgets.ask_box(handle, "patient", ANALYSES)
result = widgets.run_step(handle, plan, "patient")
if result is None:
    st.info("Choose a patient and the plan above, then press **Run**.", icon=":material/touch_app:")
    st.stop()

with render.summary_beside(result):
    st.subheader("Trajectories")
    o1, o2 = st.columns(2)
    show_bands = o1.toggle("Severity bands", value=True, key="show_bands")
    show_mcid = o2.toggle(
        "MCID verdicts",
        value=True,
        key="show_mcid",
        help="First-to-latest changes the summary calls beyond the MCID, at the latest visit",
    )
    t1, t2, t3 = st.tabs(["Domain scores", "Item heatmap", "Fact table"])
    with t1:
        st.plotly_chart(
            trajectory_chart.trajectory_figure(
                result, zero_level=refs.zero_level, show_bands=show_bands, show_mcid=show_mcid
            ),
            theme=None,
            key="trajectory_chart",
            width="stretch",
        )
    with t2:
        st.plotly_chart(
            charts.item_heatmap(result.facts, result.plan.patients[0]),
            theme=None,
            key="heatmap_chart",
            width="stretch",
        )
    with t3:
        show_table(tables.facts_frame(result.facts), hide_index=True, key="facts_table")

similar_panel.render_similar(handle, result.plan.patients[0], list(result.plan.instruments))
render.export_buttons(result, "patient")
st.page_link(
    "views/provenance.py",
    label="Where does each number come from? Open Provenance",
    icon=":material/fact_check:",
)
