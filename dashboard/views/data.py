"""Data page: build or rebuild the KB from the default synthetic sample, uploaded CSV files or a
file or folder inside the configured data folders (MARAG_DATA_ROOTS). The validation report is
shown first; nothing replaces the current KB until the user confirms after reading it, and Build
builds exactly the files that were validated (a changed selection asks for a new validation)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import services, session, trail
from dashboard.data_sources import ServerPathError, UploadStore, fingerprint, resolve_server_path
from dashboard.messages import plain
from dashboard.page import current_config
from kb_store.exclusions import excluded_from_ingest, write_excluded

SOURCES = {
    "sample": "Default synthetic sample (shipped)",
    "upload": "Upload CSV files",
    "folder": "A file or folder on the server (MA-RAG study CSVs, PPMI export)",
}
INGEST_KEY = "marag_ingest"
UPLOADS_KEY = "marag_uploads"

st.header("Data", divider="gray")
cfg = current_config()

kb = cfg.kb
try:
    exists = kb.exists()
except Exception as e:  # noqa: BLE001 - show, never hide
    exists = False
    st.caption(f"KB status unavailable: {plain(e)}")
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
            st.warning(f"The KB exists but could not be opened: {plain(e)}")
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
o1, o2 = st.columns(2)
date_order = o1.selectbox(
    "Day/month order of numeric dates",
    ["", "dmy", "mdy"],
    format_func=lambda k: {"": "decided by each column", "dmy": "day first", "mdy": "month first"}[
        k
    ],
    key="data_date_order",
    help="For a date column whose own values do not decide it (every day 12 or less): without "
    "an order such a column refuses the build. A column that decides its order keeps it.",
)
allow_skipped = o2.checkbox(
    "Build even when a folder file matches no format",
    key="data_allow_skipped",
    help="The skipped file's rows stay rejected rows in the report",
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
    # one temporary folder per browser session, written once per set of uploads, removed when the
    # uploads change or the session ends (dashboard.data_sources.UploadStore)
    store = st.session_state.get(UPLOADS_KEY)
    if store is None or store.closed:
        store = st.session_state[UPLOADS_KEY] = UploadStore()
    paths = store.paths(files or [])
else:
    if not cfg.data_roots:
        st.info(
            "Reading files on the server is off: no data folders are configured "
            "(set MARAG_DATA_ROOTS to the folders this page may read).",
            icon=":material/lock:",
        )
    else:
        st.caption("Data folders: " + ", ".join(f"`{r}`" for r in cfg.data_roots))
    p = st.text_input(
        "Path",
        key="data_path",
        placeholder="/path/to/ma-rag or /path/to/ppmi-export",
        disabled=not cfg.data_roots,
    )
    if p.strip() and cfg.data_roots:
        try:
            paths = [resolve_server_path(p, cfg.data_roots)]
        except ServerPathError as e:
            st.error(plain(e))
selection = fingerprint(
    source, f"{fmt}|{date_order}|{allow_skipped}", paths, cfg.visit_window_days
)  # an option changed after validation asks for a new validation

if st.button("Validate", key="validate", disabled=not paths, icon=":material/rule:"):
    from kb_store.ingest import load_sources
    from kb_store.ingest_report import format_report

    try:
        res = load_sources(
            paths,
            fmt,
            visit_window_days=kb.visit_window_days,
            date_order=date_order or None,
            allow_skipped_files=allow_skipped,
        )
    except (ValueError, FileNotFoundError) as e:
        st.session_state.pop(INGEST_KEY, None)
        st.error(plain(e))
    else:
        st.session_state[INGEST_KEY] = {
            "result": res,
            "report": format_report(res),
            "paths": [str(x) for x in paths],
            "format": fmt,
            "selection": selection,
        }

ing = st.session_state.get(INGEST_KEY)
if ing:
    res = ing["result"]
    warnings = [i for i in res.issues if i.severity == "warning"]
    st.subheader("2. Validation report")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Sessions accepted", len(res.sessions))
    m2.metric("Patients", len({s.proj_id for s in res.sessions}))
    m3.metric(
        "Rejected rows",
        res.stats.get("rows_rejected", 0),
        help="data rows that made no session (each is in the report with its rule)",
    )
    m4.metric("Warnings", len(warnings))
    st.code(ing["report"], language=None, wrap_lines=True)
    st.subheader("3. Replace the current KB")
    if ing.get("selection") != selection:
        st.warning(
            "The files or options changed since this report: press **Validate** again before "
            "building (Build builds exactly the files validated).",
            icon=":material/sync_problem:",
        )
    elif res.blocking:
        first = res.blocking[0]
        where = f"{first.file}, row {first.row}" if first.row else str(first.file)
        st.error(
            f"Build refused: {len(res.blocking)} finding(s) would lose or change rows (first: "
            f"{where}: [{first.rule}] {plain(first.message)}). Fix the file, or set the option "
            "above where one applies, and validate again."
        )
    elif not res.sessions:
        st.error("Nothing to build: no session passed validation.")
    else:
        st.caption(
            f"Sources: {', '.join(Path(x).name for x in ing['paths'])} (format {ing['format']}). Building replaces the KB "
            f"at `{kb.kb_dir}`; unchanged documents are not re-embedded; a failure keeps the old KB."
        )
        if st.button(
            f"Build the KB from these {len(res.sessions)} sessions",
            type="primary",
            key="build",
            icon=":material/construction:",
        ):
            with st.status("Building the knowledge base...", expanded=True) as status:
                bar = st.progress(0.0, text="Comparing with the current KB...")

                def progress(done: int, total: int) -> None:
                    bar.progress(
                        done / total if total else 1.0,
                        text=f"Embedding documents: {done} of {total}",
                    )

                try:
                    stats = kb.build(res.sessions, progress=progress)
                    # the rejected sessions every answer names (kb_store.exclusions)
                    write_excluded(
                        excluded_from_ingest(res, [Path(x) for x in ing["paths"]]), kb.kb_dir
                    )
                except Exception as e:  # noqa: BLE001 - the old KB stays; say why
                    status.update(label="Build failed; the previous KB is unchanged", state="error")
                    st.error(plain(e))
                else:
                    bar.progress(1.0, text=f"{stats.embedded} documents embedded")
                    status.write(
                        f"added {stats.added}, updated {stats.updated}, unchanged {stats.unchanged}, "
                        f"deleted {stats.deleted}; {stats.total} documents in {stats.seconds:.1f} s"
                    )
                    status.update(label="KB built", state="complete")
                    # audit trail: who replaced the KB, from which sources
                    trail.record_kb_build(
                        cfg, {"sources": ing["paths"], "format": ing["format"], **stats.to_dict()}
                    )
                    services.clear_engines()
                    session.clear_results()
                    st.session_state.pop(INGEST_KEY, None)
                    st.success("The KB was replaced. Earlier results were cleared.")
