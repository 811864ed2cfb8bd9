"""Data page: build or rebuild the KB from the default synthetic sample, uploaded CSV files or a
folder in the MA-RAG / PPMI formats. The validation report is shown first; nothing replaces the
current KB until the user confirms after reading it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from dashboard import services, session, trail
from dashboard.page import current_config
from kb_store.exclusions import excluded_from_ingest, write_excluded

SOURCES = {
    "sample": "Default synthetic sample (shipped)",
    "upload": "Upload CSV files",
    "folder": "A file or folder on the server (MA-RAG study CSVs, PPMI export)",
}
INGEST_KEY = "marag_ingest"

st.header("Data", divider="gray")
cfg = current_config()

kb = cfg.kb
try:
    exists = kb.exists()
except Exception as e:  # noqa: BLE001 - show, never hide
    exists = False
    st.caption(f"KB status unavailable: {e}")
with st.container(border=True):
    st.markdown(
        f"**Current KB:** `{kb.kb_dir}` (collection `{kb.collection}`, embedding "
        f"`{kb.embedding}`{', server ' + kb.chroma_url if kb.chroma_url else ''})"
    )
    if exists:
        try:
            n = len(services.get_engine(services.config_for("facts")).kb.patient_ids())
            st.success(f"The KB exists: {n} patients.", icon=":material/database:")
        except Exception as e:  # noqa: BLE001
            st.warning(f"The KB exists but could not be opened: {e}")
    else:
        st.warning("No KB yet: build one below.", icon=":material/database:")

st.subheader("1. Choose the source and validate")
source = st.radio("Source", list(SOURCES), format_func=lambda s: SOURCES[s], key="data_source")
fmt = st.selectbox(
    "Format",
    ["auto", "generic", "marag", "ppmi"],
    key="data_format",
    help="auto detects the generic session CSV, the MA-RAG study files and PPMI exports",
)
paths: list[Path] = []
if source == "sample":
    from kb_store.synth import default_sample_path

    paths = [default_sample_path()]
    st.caption(f"`{paths[0]}`")
elif source == "upload":
    files = st.file_uploader(
        "CSV files", type=["csv"], accept_multiple_files=True, key="data_files"
    )
    if files:
        tmp = Path(tempfile.mkdtemp(prefix="marag-upload-"))
        for f in files:
            (tmp / Path(f.name).name).write_bytes(f.getvalue())
            paths.append(tmp / Path(f.name).name)
else:
    p = st.text_input(
        "Path", key="data_path", placeholder="/path/to/ma-rag or /path/to/ppmi-export"
    )
    if p.strip():
        paths = [Path(p.strip()).expanduser()]

if st.button("Validate", key="validate", disabled=not paths, icon=":material/rule:"):
    from kb_store.ingest import load_sources
    from kb_store.ingest_report import format_report

    try:
        res = load_sources(paths, fmt, visit_window_days=kb.visit_window_days)
    except (ValueError, FileNotFoundError) as e:
        st.session_state.pop(INGEST_KEY, None)
        st.error(str(e))
    else:
        st.session_state[INGEST_KEY] = {
            "result": res,
            "report": format_report(res),
            "paths": [str(x) for x in paths],
            "format": fmt,
        }

ing = st.session_state.get(INGEST_KEY)
if ing:
    res = ing["result"]
    errors = [i for i in res.issues if i.severity == "error"]
    warnings = [i for i in res.issues if i.severity != "error"]
    st.subheader("2. Validation report")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Sessions accepted", len(res.sessions))
    m2.metric("Patients", len({s.proj_id for s in res.sessions}))
    m3.metric("Rejected rows (errors)", len(errors))
    m4.metric("Warnings", len(warnings))
    st.code(ing["report"], language=None, wrap_lines=True)
    st.subheader("3. Replace the current KB")
    if not res.sessions:
        st.error("Nothing to build: no session passed validation.")
    else:
        st.caption(
            f"Sources: {', '.join(ing['paths'])} (format {ing['format']}). Building replaces the KB "
            f"at `{kb.kb_dir}`; unchanged documents are not re-embedded; a failure keeps the old KB."
        )
        if st.button(
            f"Build the KB from these {len(res.sessions)} sessions",
            type="primary",
            key="build",
            icon=":material/construction:",
        ):
            with st.status("Building the knowledge base...", expanded=True) as status:
                try:
                    stats = kb.build(res.sessions)
                    # issue 11: the rejected sessions every answer names (kb_store.exclusions)
                    write_excluded(
                        excluded_from_ingest(res, [Path(x) for x in ing["paths"]]), kb.kb_dir
                    )
                except Exception as e:  # noqa: BLE001 - the old KB stays; say why
                    status.update(label="Build failed; the previous KB is unchanged", state="error")
                    st.error(str(e))
                else:
                    status.write(
                        f"added {stats.added}, updated {stats.updated}, unchanged {stats.unchanged}, "
                        f"deleted {stats.deleted}; {stats.total} documents in {stats.seconds:.1f} s"
                    )
                    status.update(label="KB built", state="complete")
                    # audit trail (issue 14): who replaced the KB, from which sources
                    trail.record_kb_build(
                        cfg, {"sources": ing["paths"], "format": ing["format"], **stats.to_dict()}
                    )
                    services.clear_engines()
                    session.clear_results()
                    st.session_state.pop(INGEST_KEY, None)
                    st.success("The KB was replaced. Earlier results were cleared.")
