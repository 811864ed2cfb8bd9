"""The Provenance page's panel for one summary sentence, opened from its hover link
(dashboard.provenance_link): the sentence, every statement it cites with their values (kind,
number, patient, visit, part, item, source) and the KB documents behind those values. A
projection of the release record's citations and the run's statements
(dashboard.cited_sentences); nothing is matched or recomputed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import cited_sentences
from dashboard.number_links import NumberLink, md_escape, summary_record
from dashboard.table_columns import show_table
from engine.types import Result


def show(result: Result, start: int, links: Sequence[NumberLink], kb: Any) -> int | None:
    """Draw the panel of the sentence at offset `start` of the summary; returns the index in
    `links` of its first number (the page traces it), or None."""
    cits, sentences = cited_sentences.summary_citations(
        result.summary, summary_record(result.verification or {})
    )
    piece, sts = cited_sentences.cited_statements(
        start,
        result.summary,
        cits,
        result.statements,
        sentences,
        result.claims.get("final", ()),
    )
    with st.container(border=True, key="sentence_provenance"):
        st.subheader("The linked sentence")
        if piece is None:
            st.info(
                "The link names no cited sentence of this summary (a changed or older result).",
                icon=":material/link_off:",
            )
            return None
        st.markdown("> " + md_escape(piece.text.replace("\n", " ")))
        st.caption(
            f"It cites {len(sts)} statement{'s' if len(sts) != 1 else ''}: each one's values, "
            "the numbers the text may state for it, with the KB document each comes from."
        )
        for line in (cited_sentences.statement_line(s) for s in sts):
            st.markdown(f"- {md_escape(line)}")
        show_table(
            pd.DataFrame(cited_sentences.statement_rows(sts)),
            hide_index=True,
            key="sentence_statements",
        )
        ids = [v.source for s in sts for v in s.values if v.source[:2] in {"s-", "l-"}]
        docs = kb.get_docs(list(dict.fromkeys(ids))) if ids else []
        if docs:
            with st.expander(f"KB documents ({len(docs)})"):
                for d in docs:
                    st.markdown(f"`{d.id}` \u00b7 source `{d.metadata.get('source', '')}`")
                    st.text(d.text)
    return next((i for i, lk in enumerate(links) if piece.start <= lk.start < piece.end), None)
