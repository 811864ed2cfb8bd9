"""Cohort page: the cohort question (highest / lowest burden, fastest worsening per domain, most
stable, averages) or an item question (which patients have falls, hallucinations, any item at 4:
the plan the rules planner makes of "Which patients have falls?"), the ranking table and every
patient's slope per domain with one highlighted."""

from __future__ import annotations

import streamlit as st

from dashboard import charts, link_params, render, session, tables, widgets
from dashboard.page import open_analysis_page
from dashboard.table_columns import show_table
from engine.clinical.unranked import ranking_rule

ANALYSES = ("cohort",)
QUESTIONS = [
    "Which patient has the highest total UPDRS burden?",
    "Which patient has the lowest total UPDRS burden?",
    "Which patient's motor score is worsening fastest?",
    "Which patient has the steepest motor slope per visit?",
    "Rank patients by motor progression",
    "Which patient's ADL score is worsening fastest?",
    "Which patient's non-motor score is worsening fastest?",
    "Which patient's quality of life (PDQ-8) is worsening fastest?",
    "Which patient is the most stable?",
    "What is the average motor score?",
    "What is the average PDQ-8 score?",
]

cfg, handle, refs, ids = open_analysis_page(
    "Cohort",
    min_patients=1,
    too_few="The knowledge base has no patients. Rebuild it on the Data page.",
    pending_key="question",
    analyses=ANALYSES,
    link=link_params.PageLink("cohort_patients", statistic=True),
)
with widgets.plan_box("cohort"):
    question = st.selectbox(
        "Cohort question",
        QUESTIONS,
        key="question",
        bind="query-params",
        accept_new_options=True,
        help="Pick one or type your own; the cohort agent picks the statistic by keywords",
    )
    concepts = widgets.item_concept_labels(handle)
    item = st.selectbox(
        "Item question (instead of the ranking)",
        ("", *concepts),
        format_func=lambda k: concepts.get(k, "(none: answer the cohort question)"),
        key="item_concept",
        help="Which patients have this item now: each patient's rating at the latest assessment "
        "that scored it and whether it was ever at or above its red-flag threshold",
    )
    subset = st.multiselect(
        "Restrict to patients (empty = every patient)",
        ids,
        key="cohort_patients",
        bind="query-params",
    )
    statistic = st.selectbox(
        "Rank by",
        widgets.STATISTIC_CHOICES,
        format_func=lambda k: widgets.STATISTIC_LABELS[k],
        key="statistic",
        bind="query-params",
        disabled=bool(item),
        help="What the ranking uses; 'from the question' lets the question's words decide",
    )
    instruments, visit_filter = widgets.common_widgets()
    plan = widgets.make_plan(
        sorted(subset),
        "cohort",
        instruments,
        visit_filter,
        query=f"Which patients have {concepts[item]}?" if item else question or "",
        statistic=widgets.ITEM_PREFIX + item if item else statistic or "",
    )
    widgets.ask_box(handle, "cohort", ANALYSES)
result = widgets.run_step(handle, plan, "cohort")
if result is None:
    st.info("Choose the cohort question above, then press **Run**.", icon=":material/touch_app:")
    st.stop()

left, right = st.columns([2, 3], gap="large")
with left:
    render.summary_panel(result)
    render.flags_panel(result)
    render.excluded_panel(result)
    render.screening_notes(result)
# frames and figures once per stored result: a rerun without a new run stays fast at 10,000
answer, ranking, stats = session.derived(
    result, "cohort_frames", lambda: tables.cohort_frames(result.cohort)
)
with right:
    st.subheader("Answer")
    show_table(answer, hide_index=True, key="cohort_answer")
    st.subheader("Ranking")
    cohort = result.cohort or {}
    if cohort.get("statistic") not in (None, "", "item"):
        st.caption(f"Ranking rule: {ranking_rule(str(cohort['statistic']))}")
    show_table(ranking, hide_index=True, key="cohort_ranking", height=260)
    left_out = session.derived(result, "not_ranked", lambda: tables.not_ranked_frame(cohort))
    if len(left_out):
        with st.expander(
            f"Not ranked: {len(left_out)} of {cohort.get('n_patients')} patients, and why"
        ):
            show_table(left_out, hide_index=True, key="cohort_not_ranked")
    st.subheader("Slopes")
    in_result = sorted({f.patient for f in result.facts})
    highlight = st.selectbox(
        "Highlight patient", in_result, index=None, key="highlight", placeholder="(none)"
    )
    slopes = session.derived(result, "slopes", lambda: charts.result_slopes(result))
    # the chart's unit is the ranked statistic's: per year for a per-year ranking, else per
    # assessment of the instrument
    per_year = str((result.cohort or {}).get("statistic") or "").endswith("_year")
    st.plotly_chart(
        session.derived(
            result,
            f"slope_figure:{highlight}:{per_year}",
            lambda: charts.cohort_slope_figure(slopes, highlight, per_year=per_year),
        ),
        theme=None,
        key="slope_chart",
        width="stretch",
    )
    with st.expander("Per-domain statistics (each patient's latest scored visit)"):
        show_table(stats, hide_index=True, key="cohort_stats")

render.export_buttons(result, "cohort")
st.page_link(
    "views/provenance.py",
    label="Where does each number come from? Open Provenance",
    icon=":material/fact_check:",
)
