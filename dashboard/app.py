"""MA-RAG clinician dashboard: the entry point. `streamlit run dashboard/app.py` (what `make run` does).

st.navigation over thin pages in dashboard/views/ (not `pages/`, which Streamlit would auto-discover):
Patient (clinicians), Compare (study staff), Cohort, Provenance (QA reviewers) and Data. The
sidebar chooses the LLM backend; engines are cached per configuration in dashboard.services.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import gate, services
from dashboard.messages import plain
from dashboard.page import BACKEND_KEY
from engine import logs

st.set_page_config(
    page_title="MA-RAG clinician dashboard",
    # a file shipped with the package: a :material/...: page icon is fetched from fonts.gstatic.com
    page_icon=str(Path(__file__).with_name("favicon.png")),
    layout="wide",
    initial_sidebar_state="expanded",
)

# An invalid MARAG_* value stops the page with one line naming the variable (no traceback).
try:
    startup_config = services.base_config()
except ValueError as exc:
    st.error(f"The dashboard cannot start: invalid configuration. {exc}")
    st.stop()
logs.configure(startup_config.log_level)  # the "marag" loggers (MARAG_LOG_LEVEL)

# --- access control: refuse an open network bind, sign in, roles -> pages ---
identity = gate.enter(startup_config)
# --- end access control ---

pages = {
    "Analyse": [
        st.Page("views/patient.py", title="Patient", icon=":material/person:", default=True),
        st.Page(
            "views/compare.py",
            title="Compare",
            icon=":material/compare_arrows:",
            url_path="compare",
        ),
        st.Page("views/cohort.py", title="Cohort", icon=":material/groups:", url_path="cohort"),
        st.Page("views/search.py", title="Search", icon=":material/search:", url_path="search"),
    ],
    "Review": [
        st.Page(
            "views/provenance.py",
            title="Provenance",
            icon=":material/fact_check:",
            url_path="provenance",
        ),
        st.Page(
            "views/review.py", title="Review", icon=":material/rate_review:", url_path="review"
        ),
    ],
    "Manage": [st.Page("views/data.py", title="Data", icon=":material/database:", url_path="data")],
}
nav = st.navigation(gate.visible(pages, identity))

with st.sidebar:
    gate.sidebar(identity)  # who is signed in, or "local single-user mode"
    st.markdown("### MA-RAG")
    st.caption(
        "Grounded summaries of longitudinal MDS-UPDRS and PDQ-8 assessments. "
        "Every number comes from the fact table and is checked before release."
    )
    try:
        base = services.base_config()
        backends = services.available_backends(base)
    except ValueError as e:
        st.error(f"Configuration error: {plain(e)}")
        base, backends = None, ["facts"]
    default = base.llm if base is not None and base.llm in backends else "facts"
    st.selectbox(
        "LLM backend",
        backends,
        index=backends.index(default),
        key=BACKEND_KEY,
        bind="query-params",
        help="facts: deterministic text from the fact table, no model. local: the in-process "
        "model (loaded once, cached). openai: an OpenAI-compatible server.",
    )
    chosen = st.session_state.get(BACKEND_KEY, default)
    st.caption(services.BACKEND_LABELS.get(chosen, ""))
    if base is not None and chosen == "local" and base.model is None:
        st.warning(services.DEMO_MODEL_NOTE, icon=":material/science:")
    if base is not None:
        st.caption(f"KB: `{base.kb_dir}`")

nav.run()
