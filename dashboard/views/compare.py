"""Compare page (study staff): two or more patients; table B colour-coded by change, trajectories
side by side and the comparison summary with its flags."""

from __future__ import annotations

import streamlit as st

from dashboard import link_params, render, tables, trajectory_chart, widgets
from dashboard.page import open_analysis_page
from dashboard.table_columns import show_table

ANALYSES = ("comparison",)

cfg, handle, refs, ids = open_analysis_page(
    "Compare patients",
    min_patients=2,
    too_few="A comparison needs at least two patients in the knowledge base.",
    pending_key="patients",
    analyses=ANALYSES,
    link=link_params.PageLink("patients"),
)
with widgets.plan_box("compare"):
    patients = st.multiselect(
        "Patients (two or more)", ids, default=ids[:2], key="patients", bind="query-params"
    )
    instruments, visit_filter = widgets.common_widgets()
    plan = None
    if len(patients) < 2:
        st.warning("Choose at least two patients to compare.")
    else:
        plan = widgets.make_plan(sorted(patients), "comparison", instruments, visit_filter)
    widgets.ask_box(handle, "compare", ANALYSES)
result = widgets.run_step(handle, plan, "compare")
if result is None:
    st.info(
        "Choose the patients and the plan above, then press **Run**.", icon=":material/touch_app:"
    )
    st.stop()

with render.summary_beside(result):
    st.subheader("Table B")
    st.caption(
        "Change from the previous selected visit; decrease = improvement; "
        "stable = smaller than the domain's MCID."
    )
    tb = tables.table_b_frame(result)
    show_table(tables.style_changes(tb), hide_index=True, key="table_b")
    st.subheader("Trajectories")
    o1, o2 = st.columns(2)
    side = o1.toggle("Side by side (one chart per patient)", value=False, key="side_by_side")
    show_bands = o2.toggle("Severity bands", value=True, key="show_bands")
    pats = list(result.plan.patients)
    colours = trajectory_chart.patient_colours(pats)  # one colour per patient on every chart
    if side:
        y_ranges = trajectory_chart.shared_y_ranges(result)  # one scale per domain
        cols = st.columns(min(len(pats), 3))
        for i, p in enumerate(pats):
            with cols[i % len(cols)]:
                st.markdown(f"**Patient {p}**")
                st.plotly_chart(
                    trajectory_chart.trajectory_figure(
                        result,
                        zero_level=refs.zero_level,
                        patients=[p],
                        show_bands=show_bands,
                        months=True,
                        colours=colours,
                        y_ranges=y_ranges,
                        height_per_domain=180,
                    ),
                    theme=None,
                    key=f"trajectory_chart_{p}",
                    width="stretch",
                )
    else:
        st.plotly_chart(
            trajectory_chart.trajectory_figure(
                result,
                zero_level=refs.zero_level,
                show_bands=show_bands,
                months=True,
                colours=colours,
            ),
            theme=None,
            key="trajectory_chart",
            width="stretch",
        )

render.export_buttons(result, "compare")
st.page_link(
    "views/provenance.py",
    label="Where does each number come from? Open Provenance",
    icon=":material/fact_check:",
)
