"""Provenance page (QA reviewers): for the current result, every number in the summary linked to
the ledger values and fact rows it came from and to the KB documents (id and text); the plan,
each agent's narrative and prompt, the statement verdicts (how each agent text was released, the
sentences removed with their reasons) and a "Check a text" box, the verification record,
screening findings, the node trace, and CSV downloads of the fact table and the number links.

A summary sentence's hover links here (`?release=N&sentence=S`, dashboard.provenance_link): the
release is reopened from the audit trail when this session does not hold it, and the linked
sentence's statements come first (dashboard.sentence_panel), its first number traced below."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import (
    downloads,
    export,
    provenance_link,
    render,
    sentence_panel,
    services,
    session,
    tables,
    trail,
)
from dashboard.number_links import link_numbers, links_table
from dashboard.page import engine_or_stop
from dashboard.table_columns import show_table
from engine.query_input import MAX_CHECK_CHARS

st.header("Provenance", divider="gray")
result = session.current_result()
release, sentence = provenance_link.requested(st.query_params)
if release is not None and (result is None or trail.release_id(result) != release):
    reopened, why = provenance_link.open_release(release)  # a link from a summary sentence
    if reopened is None:
        st.warning(f"The linked release is not shown: {why}.", icon=":material/link_off:")
    result = reopened or result
if result is None:
    st.info(
        "No result yet. Run an analysis on the Patient, Compare or Cohort page; its provenance "
        "appears here.",
        icon=":material/fact_check:",
    )
    st.page_link("views/patient.py", label="Open the Patient page", icon=":material/person:")
    st.stop()
if not trail.record_release(result, services.base_config()):  # audit trail: recorded first
    st.stop()
cfg, handle, refs = engine_or_stop()

c1, c2 = st.columns([1, 2])
with c1:
    st.subheader("Plan")
    st.json(result.plan.to_dict(), expanded=True)
    if result.plan.query:
        st.caption(f"Query: {result.plan.query}")
with c2:
    render.summary_panel(result)
    dense = getattr(result, "summary_dense", "")
    if dense and dense != result.summary:
        with st.expander("Dense facts text (every visit, as the engine's facts backend lists it)"):
            st.text(dense)

links = link_numbers(result)
first_in_sentence = (
    sentence_panel.show(result, sentence, links, handle.kb) if sentence is not None else None
)
st.subheader(f"Numbers in the summary ({len(links)})")
st.caption(
    "Each number, the ledger values it can stand for (kind, patient, visit, domain), the fact "
    "rows they are computed from and the KB documents behind them. Red = unsupported."
)
rows = links_table(links)
df = pd.DataFrame(rows)
for col in ("patient", "visit"):
    if col in df.columns:
        df[col] = df[col].astype("Int64")
if not df.empty:
    show_table(
        df.style.map(lambda v: "" if v else "background-color: #F6DEDA", subset=["supported"]),
        hide_index=True,
        key="links_table",
    )
    labels = [
        f"#{i} \u201c{lk.text}\u201d at {lk.start}-{lk.end}"
        + ("" if lk.supported else " (unsupported)")
        for i, lk in enumerate(links, start=1)
    ]
    first_value = next((i for i, lk in enumerate(links) if lk.values and lk.facts), 0)
    if first_in_sentence is not None:  # the linked sentence's first number
        first_value = first_in_sentence
    pick = st.selectbox(
        "Trace one number to its sources",
        range(len(links)),
        format_func=lambda i: labels[i],
        index=first_value,
        key="trace_number",
    )
    lk = links[pick]
    s = max(0, lk.start - 60)
    st.markdown(
        "> \u2026"
        + result.summary[s : lk.start].replace("\n", " ")
        + f"**[{lk.text}]**"
        + result.summary[lk.end : lk.end + 60].replace("\n", " ")
        + "\u2026"
    )
    if not lk.supported:
        st.error(f"Unsupported: {lk.reason or 'no fact has this value'}")
    a, b = st.columns(2)
    with a:
        st.markdown("**Ledger values**")
        show_table(
            pd.DataFrame([v.__dict__ for v in lk.values]), hide_index=True, key="trace_values"
        )
        st.markdown("**Fact rows**")
        show_table(tables.facts_frame(lk.facts), hide_index=True, key="trace_facts")
    with b:
        st.markdown("**KB documents**")
        docs = handle.kb.get_docs(lk.doc_ids) if lk.doc_ids else []
        if not docs:
            st.caption(
                "No KB document: this value is computed (e.g. a slope or cohort statistic) "
                "or comes from contexts/."
                if lk.values
                else "No source found."
            )
        for d in docs:
            with st.container(border=True):
                st.markdown(f"`{d.id}` \u00b7 source `{d.metadata.get('source', '')}`")
                st.text(d.text)
elif "final" in result.claims:
    st.caption("The summary contains no numbers.")
else:
    st.caption("This result carries no grounding record of its summary: no number can be linked.")

st.subheader("Agents")
for agent, text in result.narratives.items():
    with st.expander(f"{agent}: narrative and prompt"):
        st.markdown("**Narrative**")
        st.text(text)
        st.markdown("**Prompt**")
        st.code(
            result.prompts.get(agent, "(no prompt recorded: deterministic text)"),
            language=None,
            wrap_lines=True,
        )
for agent in [a for a in result.prompts if a not in result.narratives]:
    with st.expander(f"{agent}: prompt"):
        st.code(result.prompts[agent], language=None, wrap_lines=True)

red = (result.flags or {}).get("red_flags") or []
if red:
    st.subheader(f"Red-flag rules ({len(red)})")
    st.caption("Why each flag matters and the rule's source (the summary states the finding only).")
    show_table(pd.DataFrame(tables.flag_rule_rows(red)), hide_index=True, key="flag_rules")

# ---- statement-level grounding: verdicts, repairs, and a box to check any text
st.subheader("Statements")
st.caption(
    "Every sentence of every agent text is supported (its assertions match the facts), neutral "
    "(a listed safe form) or unsupported. Unsupported sentences are removed or replaced by the "
    "facts sentence before release; a text that still fails, or misses its key facts, is "
    "regenerated and then replaced by the facts text."
)
ver = result.verification or {}
released = ver.get("released") or {}
if released:
    show_table(pd.DataFrame(tables.statement_rows(ver)), hide_index=True, key="statements_agents")
removed = ver.get("removed_sentences") or []
if removed:
    st.markdown(f"**Removed sentences ({len(removed)})**")
    show_table(pd.DataFrame(tables.removed_rows(removed)), hide_index=True, key="removed")
else:
    st.caption("No sentence was removed from the released texts.")
rejected = tables.rejected_sentence_rows(ver)
if rejected:
    with st.expander(f"Sentences of replaced drafts ({len(rejected)})"):
        show_table(pd.DataFrame(rejected), hide_index=True, key="rejected_sentences")

with st.expander("Check a text", icon=":material/rule:"):
    st.caption(
        "Paste a text (a clinician's draft, another system's output): each sentence is checked "
        "against the facts of this result's plan, as `marag check` does."
    )
    draft = st.text_area("Text to check", key="check_text", height=160, max_chars=MAX_CHECK_CHARS)
    if st.button("Check", key="check_button", disabled=not draft.strip()):
        from engine.check_command import REPORT_ONLY, check_against_result, coverage_line

        rec = check_against_result(result, draft, handle.engine.contexts, REPORT_ONLY)
        if not trail.record_release(rec, services.base_config(), action="check", plan=result.plan):
            st.stop()  # audit trail: a checked text is a release (as `marag check`)
        (st.success if rec["passed"] else st.error)(
            f"{'Passes' if rec['passed'] else 'Fails'}: {rec['unsupported_sentences']} of "
            f"{rec['sentences_total']} sentence(s) unsupported; "
            f"{coverage_line(rec['coverage'], rec['coverage_min'])}."
        )
        show_table(pd.DataFrame(tables.check_rows(rec)), hide_index=True, key="check_result")
        if rec["missing_key_facts"]:
            st.markdown("**Key facts not stated:** " + "; ".join(rec["missing_key_facts"]))

v1, v2 = st.columns(2)
with v1:
    st.subheader("Verification record")
    st.json(result.verification or {}, expanded=False)
with v2:
    st.subheader("Screening findings")
    if result.screening:
        show_table(tables.flags_frame(result.screening), hide_index=True, key="screening")
    else:
        st.caption("No screening findings.")
    st.subheader("Pipeline trace")
    show_table(pd.DataFrame([t.__dict__ for t in result.trace]), hide_index=True, key="trace")

st.subheader("Downloads")
d1, d2, d3 = st.columns(3)
downloads.download(
    d1,
    "Fact table (CSV)",
    lambda: export.facts_csv(result),
    result=result,
    fmt="facts_csv",
    file_name="marag-facts.csv",
    mime="text/csv",
    key="dl_facts_prov",
    icon=":material/table:",
)
downloads.download(
    d2,
    "Number links (CSV)",
    lambda: export.provenance_csv(result),
    result=result,
    fmt="links_csv",
    file_name="marag-provenance.csv",
    mime="text/csv",
    key="dl_links_prov",
    icon=":material/link:",
)
downloads.download(
    d3,
    "Result (JSON)",
    lambda: json.dumps(result.to_json(), indent=1, default=str),
    result=result,
    fmt="json",
    file_name="marag-result.json",
    mime="application/json",
    key="dl_json_prov",
    icon=":material/data_object:",
)
