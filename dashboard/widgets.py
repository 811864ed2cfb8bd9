"""Plan widgets shared by the analysis pages, the "ask in words" box and the Run step.

The widgets build an `engine.types.Plan` directly (patients, analysis, instruments, visit filter
with N); every widget is bound to a query parameter, so a URL reproduces a view (`run=1` in the URL
also runs the plan once when the page opens). A query typed in words is parsed by the engine's
planner into the widgets for the user to check before running; nothing runs on parse.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import streamlit as st

from dashboard import services, session
from dashboard.messages import plain
from dashboard.services import EngineHandle
from engine.clinical.item_cohort import PREFIX, item_concepts
from engine.clinical.item_cohort import concept_id as item_concept_id
from engine.query_input import MAX_QUERY_CHARS, check_query
from engine.types import Plan, Result
from kb_store.kb_health import kb_read_errors
from kb_store.profiles import INSTRUMENT_LABELS as PROFILE_INSTRUMENT_LABELS

VISIT_KINDS: dict[str, str] = {
    "none": "All visits",
    "baseline": "Baseline only",
    "latest_visit": "Latest visit",
    "baseline_vs_latest": "Baseline vs latest",
    "visit_N": "Visit N",
    "first_N_visits": "First N visits",
    "last_N_visits": "Last N visits",
}
#: Short labels: bound widgets put the label in the URL (e.g. ?instruments=MDS-UPDRS).
INSTRUMENT_LABELS = PROFILE_INSTRUMENT_LABELS
ANALYSIS_LABELS = {
    "trajectory": "Trajectory",
    "single_session": "Single session",
    "comparison": "Comparison",
    "cohort": "Cohort",
}
#: Cohort "Rank by" widget: the plan's statistic; "" = chosen from the question's words
STATISTIC_CHOICES = ("", "latest", "change", "slope_visit", "slope_year", "mean")
STATISTIC_LABELS = {
    "": "From the question",
    "latest": "Latest score",
    "change": "Change, first to latest",
    "slope_visit": "Slope per assessment",
    "slope_year": "Slope per year",
    "mean": "Cohort mean",
}
#: The "N" of visit_N / first_N_visits / last_N_visits: its range and default in the widget
N_RANGE = (1, 99)
N_DEFAULT = 2
#: Which page shows which analyses (used to route a plan parsed from words).
PAGE_FOR_ANALYSIS = {
    "trajectory": "views/patient.py",
    "single_session": "views/patient.py",
    "comparison": "views/compare.py",
    "cohort": "views/cohort.py",
}


def split_visit_filter(vf: str) -> tuple[str, int]:
    """'last_3_visits' -> ('last_N_visits', 3); 'baseline' -> ('baseline', 2)."""
    m = re.fullmatch(r"(visit|first|last)_(\d+)(_visits)?", vf)
    if not m:
        return vf, 2
    kind = "visit_N" if m.group(1) == "visit" else f"{m.group(1)}_N_visits"
    return kind, int(m.group(2))


def join_visit_filter(kind: str, n: int) -> str:
    return kind.replace("N", str(int(n))) if "N" in kind else kind


#: the statistic of an item question: "item:<concept>" (engine.clinical.item_cohort)
ITEM_PREFIX = PREFIX


def item_concept_labels(handle: EngineHandle) -> dict[str, str]:
    """The Cohort page's item questions: the engine's red-flag rules as item concepts (id ->
    label; engine.clinical.item_cohort), "falls" -> "falling"."""
    rules = handle.engine.contexts.red_flags
    return {c.id: c.label for c in item_concepts(rules).values()}


def apply_plan(plan: Plan, patient_key: str) -> None:
    """Put a plan into this page's widget state (before the widgets are drawn)."""
    if patient_key == "patient":
        if plan.patients:
            st.session_state["patient"] = plan.patients[0]
        st.session_state["analysis"] = plan.analysis
    elif patient_key == "question":
        st.session_state["question"] = plan.query or st.session_state.get("question")
        # an item question ("Which patients have falls?") selects its item concept
        st.session_state["item_concept"] = item_concept_id(plan.statistic) or ""
    else:
        st.session_state[patient_key] = list(plan.patients)
    st.session_state["instruments"] = list(plan.instruments)
    kind, n = split_visit_filter(plan.visit_filter)
    st.session_state["visits"] = kind
    st.session_state["n"] = n


def common_widgets() -> tuple[list[str], str]:
    """Instruments and visit filter (with N when the filter needs one)."""
    instruments = st.multiselect(
        "Instruments",
        list(INSTRUMENT_LABELS),
        default=["updrs", "pdq8"],
        format_func=lambda i: INSTRUMENT_LABELS[i],
        key="instruments",
        bind="query-params",
        help="MDS-UPDRS: motor (Part III), ADL (Part II), non-motor (Part I); PDQ-8: quality of life",
    )
    c1, c2 = st.columns([3, 1])
    with c1:
        kind = st.selectbox(
            "Visits",
            list(VISIT_KINDS),
            format_func=lambda k: VISIT_KINDS[k],
            key="visits",
            bind="query-params",
        )
    with c2:
        n = st.number_input(
            "N",
            min_value=N_RANGE[0],
            max_value=N_RANGE[1],
            value=N_DEFAULT,
            step=1,
            key="n",
            bind="query-params",
            disabled="N" not in kind,
            help="Visit number, or how many visits, for the filters that need it",
        )
    return instruments, join_visit_filter(kind, int(n))


def make_plan(
    patients: Sequence[int],
    analysis: str,
    instruments: Sequence[str],
    visit_filter: str,
    query: str = "",
    statistic: str = "",
) -> Plan | None:
    """The Plan, or None after showing what is wrong with the widgets."""
    if not instruments:
        st.warning("Choose at least one instrument.")
        return None
    try:
        return Plan(tuple(patients), analysis, tuple(instruments), visit_filter, query, statistic)
    except ValueError as e:
        st.error(f"The plan is not valid: {plain(e)}")
        return None


def ask_box(handle: EngineHandle, page: str, analyses: tuple[str, ...]) -> None:
    """Optional 'ask in words': parse a query with the engine's planner into the widgets."""
    with st.expander("Ask in words (fills in the plan for you to check)", expanded=False):
        text = st.text_input(
            "Question",
            key=f"ask_{page}",
            max_chars=MAX_QUERY_CHARS,
            placeholder="e.g. How has patient 3's motor score changed over the last 3 visits?",
        )
        if st.button("Fill in the plan", key=f"parse_{page}", disabled=not text.strip()):
            try:
                plan = handle.plan(check_query(text))
            except ValueError as e:
                st.error(plain(e))
                return
            session.set_pending(plan)
            target = PAGE_FOR_ANALYSIS[plan.analysis]
            st.session_state["marag_parsed_note"] = (
                f"Parsed \u201c{text}\u201d as a **{ANALYSIS_LABELS[plan.analysis].lower()}** plan "
                f"(patients {', '.join(map(str, plan.patients)) or 'all'}; instruments "
                f"{', '.join(plan.instruments)}; visits {plan.visit_filter}). "
                "Check the widgets, then press **Run**."
            )
            if plan.analysis in analyses:
                st.rerun()
            else:
                st.switch_page(target)


def take_pending(patient_key: str, analyses: tuple[str, ...]) -> None:
    """Apply a plan parsed from words to this page's widgets (call before drawing them)."""
    plan = session.pop_pending(analyses)
    if plan is not None:
        apply_plan(plan, patient_key)


def show_parsed_note() -> None:
    note = st.session_state.pop("marag_parsed_note", None)
    if note:
        st.info(note, icon=":material/edit_note:")


def _shown_key(page: str) -> str:
    return f"marag_result_shown_{page}"


def plan_box(page: str) -> Any:
    """The plan form's container: open until the page shows a result, then collapsed into an
    expander so the page opens with the result (the Run button stays below it)."""
    if not st.session_state.get(_shown_key(page)):
        return st.container(border=True, key="plan_box")
    return st.expander("Plan: patients, analysis, instruments, visits", icon=":material/tune:")


def run_step(handle: EngineHandle, plan: Plan | None, page: str) -> Result | None:
    """The Run button and progress per pipeline node; returns the stored result for this plan and
    backend (no engine run when one is stored), or the new one after Run. Nothing runs and nothing
    is returned in the script run that opened a bad link (dashboard.link_params)."""
    if plan is None or session.link_rejected():
        st.session_state[_shown_key(page)] = False
        st.button(
            "Run", type="primary", key=f"run_{page}", icon=":material/play_arrow:", disabled=True
        )
        return None
    backend = handle.backend
    existing = session.get_result(plan, backend)
    autorun_flag = f"marag_autorun_{page}"
    auto = (
        existing is None
        and st.query_params.get("run") == "1"
        and not st.session_state.get(autorun_flag)
    )
    st.session_state[autorun_flag] = True
    clicked = st.button(
        "Run",
        type="primary",
        key=f"run_{page}",
        icon=":material/play_arrow:",
        help="Run the pipeline for this plan (cached results are reused)",
    )
    if not (clicked or auto):
        if existing is not None:
            session.set_current(plan, backend)
        st.session_state[_shown_key(page)] = existing is not None
        return existing
    starts: dict[str, float] = {}
    with st.status(
        f"Running the {plan.analysis} pipeline ({backend})...", expanded=False
    ) as status:

        def on_node(node: str, what: str) -> None:
            if what == "start":
                starts[node] = time.perf_counter()
                status.update(label=f"Running: {node}...")
            else:
                ms = (time.perf_counter() - starts.get(node, time.perf_counter())) * 1000
                status.write(f"\u2713 {node} ({what}, {ms:.0f} ms)")

        def on_wait(position: int) -> None:
            status.update(
                label=f"Waiting for the {backend} model: position {position} in the queue "
                "(one run at a time)..."
            )

        t0 = time.perf_counter()
        try:
            if backend == "facts":
                result = handle.run(plan, on_node, on_wait)
            else:
                result = _run_streamed(handle, plan, page, status)
                if result is None:
                    return None
        except ValueError as e:
            status.update(label="The run stopped", state="error", expanded=True)
            st.error(plain(e))
            return None
        except kb_read_errors() as e:  # the KB vanished or broke under the cached engine
            services.clear_engines()  # the next run reopens the KB instead of staying broken
            status.update(label="The run stopped", state="error", expanded=True)
            st.error(
                f"The knowledge base could not be read ({plain(e)}); press Run again to reopen it."
            )
            return None
        status.update(
            label=f"Done in {time.perf_counter() - t0:.1f} s, {result.llm_calls} LLM call"
            f"{'s' if result.llm_calls != 1 else ''} ({backend})",
            state="complete",
        )
    return _release(plan, backend, result, page)


def _release(plan: Plan, backend: str, result: Result, page: str) -> Result | None:
    """Record the new result in the audit trail before it is shown, store it, and draw the page
    again with the plan form collapsed."""
    # --- audit trail: a result is recorded before it is shown ---
    from dashboard import trail

    if not trail.record_release(result, services.base_config()):
        return None
    # --- end audit trail ---
    session.store_result(plan, backend, result)
    st.query_params["run"] = "1"
    if not st.session_state.get(_shown_key(page)):
        st.session_state[_shown_key(page)] = True
        st.rerun()  # the result is stored: the rerun shows it without running again
    return result


def _run_streamed(handle, plan, page: str, status):
    """Run with the model's text streamed into the page as it is written, the status label
    following each agent's progress (which agent, what it does, tokens so far), and a Cancel
    button (dashboard.streaming). Returns the result, or None when cancelled."""
    from dashboard.streaming import run_streaming
    from engine.llm.base import Cancelled

    if st.button("Cancel", key=f"cancel_{page}", icon=":material/stop:"):
        st.session_state[f"marag_cancelled_{page}"] = True
    status.update(label=f"Starting the {handle.backend} run: reading the facts...", expanded=True)
    status.caption(
        "The model's text as it is written; each text is then checked sentence by sentence "
        "and may be repaired or replaced before release."
    )
    stream, box = run_streaming(
        lambda sink: handle.run(plan, sink.on_node, sink.on_wait, sink=sink),
        _label_updater(status),
    )
    with status:
        st.write_stream(stream)
    if isinstance(box.get("error"), Cancelled):
        status.update(label="Cancelled", state="error")
        st.info("Generation cancelled.")
        return None
    if "error" in box:
        raise box["error"]
    return box["result"]


#: seconds between two label updates while the tokens count up (a new stage shows at once)
LABEL_EVERY_S = 0.25


def _label_updater(status: Any) -> Any:
    """A progress callback (script thread) that puts dashboard.streaming's label for each event
    on the status box: at once when the agent or the stage changes, else at most every
    LABEL_EVERY_S while the token count rises."""
    from dashboard.streaming import Progress, progress_label

    last: dict[str, Any] = {"key": None, "t": 0.0}

    def update(p: Progress) -> None:
        now = time.perf_counter()
        key = (p.agent, p.stage)
        if key == last["key"] and now - last["t"] < LABEL_EVERY_S:
            return
        last.update(key=key, t=now)
        status.update(label=progress_label(p))

    return update
