"""What every analysis page does first: the configuration for the chosen backend, the cached
engine (or a clear message pointing to the Data page when there is no KB yet), the clinical
references for the charts, and, for the Patient, Compare and Cohort pages, the KB's patient ids,
the check of the page's deep link (dashboard.link_params) and any plan handed over by "ask in
words"."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import link_params, services, widgets
from dashboard.clinical import ClinicalRefs
from dashboard.messages import plain
from dashboard.services import EngineHandle
from engine.config import Config

BACKEND_KEY = "backend"


def current_config() -> Config:
    return services.config_for(st.session_state.get(BACKEND_KEY))


def kb_missing_message(cfg: Config, detail: str = "") -> None:
    st.warning(
        f"There is no knowledge base at `{Path(cfg.kb_dir).name}` yet. Build one on the **Data** page "
        "(default sample, your CSV files, or the MA-RAG / PPMI formats), or run "
        "`marag kb build --source synthetic` (what `make run` does).",
        icon=":material/database:",
    )
    if detail:
        st.caption(detail)
    from dashboard import trail

    if "data_manager" in trail.identity().roles:  # the Data page is the data manager's only
        st.page_link("views/data.py", label="Open the Data page", icon=":material/database:")


def engine_or_stop() -> tuple[Config, EngineHandle, ClinicalRefs]:
    """(config, engine handle, clinical refs); stops the page with a message when no KB exists."""
    try:
        cfg = current_config()
    except ValueError as e:
        st.error(f"Configuration error: {plain(e)}")
        st.stop()
    try:
        handle = services.get_engine(cfg)
    except services.KBUnavailable as e:
        kb_missing_message(cfg, plain(e))
        st.stop()
    except (ValueError, OSError, RuntimeError, ImportError) as e:
        st.error(
            f"Could not start the `{cfg.llm}` backend: {plain(e)}. Choose another backend in the "
            "sidebar."
        )
        st.stop()
    refs = services.clinical_refs(cfg)
    if refs.note:
        st.caption(f"Severity bands / MCID markers unavailable: {refs.note}")
    return cfg, handle, refs


def open_analysis_page(
    title: str,
    *,
    min_patients: int,
    too_few: str,
    pending_key: str,
    analyses: tuple[str, ...],
    link: link_params.PageLink,
) -> tuple[Config, EngineHandle, ClinicalRefs, list[int]]:
    """The header, the engine and the patient ids; stops with `too_few` when the KB has fewer
    than `min_patients`. The page's link is checked (a bad value: an error, and nothing runs)
    and a plan parsed from words is moved into the widgets, both before the widgets draw."""
    st.header(title, divider="gray")
    cfg, handle, refs = engine_or_stop()
    ids = services.patient_ids(handle, cfg)
    if len(ids) < min_patients:
        st.warning(too_few)
        st.stop()
    link_params.check_link(link, ids)
    widgets.take_pending(pending_key, analyses)
    widgets.show_parsed_note()
    return cfg, handle, refs, ids
