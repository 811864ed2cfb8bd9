"""The read side of the KB as the engine sees it, and an in-memory implementation for fast tests.

The engine depends only on `KBReader`; the Chroma store (kb_store.chroma_kb) and `InMemoryKB`
both satisfy it. Retrieval for the pipeline is exact metadata match, never similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kb_store.documents import KBDoc
from kb_store.fact_table import FactTable


class KBReader(Protocol):
    def patient_ids(self) -> list[int]: ...

    def session_docs(self, proj_id: int, instruments: Sequence[str] | None = None) -> list[KBDoc]:
        """Documents with proj_id == proj_id and granularity == session (optionally one of
        `instruments`), sorted by visit then instrument."""
        ...

    def get_docs(self, ids: Sequence[str]) -> list[KBDoc]: ...


class InMemoryKB:
    """A KBReader over a list of documents; used by unit tests and the dashboard's fake engine."""

    def __init__(self, docs: Sequence[KBDoc], excluded: Sequence[dict] = ()):
        self._docs = {d.id: d for d in docs}
        self._excluded = list(excluded)
        self._table: FactTable | None = None

    def excluded_sessions(self) -> list[dict]:
        """Sessions rejected at ingest (kb_store.exclusions rows)."""
        return list(self._excluded)

    def fact_table(self) -> FactTable:
        """The session table over these documents (built once, in memory), as the Chroma KB's."""
        if self._table is None:
            self._table = FactTable.from_docs(list(self._docs.values()))
        return self._table

    def patient_ids(self) -> list[int]:
        return sorted({int(d.metadata["proj_id"]) for d in self._docs.values()})

    def session_docs(self, proj_id: int, instruments: Sequence[str] | None = None) -> list[KBDoc]:
        out = [
            d
            for d in self._docs.values()
            if d.metadata["proj_id"] == proj_id
            and d.metadata["granularity"] == "session"
            and (not instruments or d.metadata["instrument"] in instruments)
        ]
        return sorted(out, key=lambda d: (d.metadata["visit"], d.metadata["instrument"], d.id))

    def get_docs(self, ids: Sequence[str]) -> list[KBDoc]:
        return [self._docs[i] for i in ids if i in self._docs]

    def all_docs(
        self, granularities: Sequence[str] = ("session", "note"), *, embeddings: bool = False
    ) -> list[tuple[KBDoc, None]]:
        """Every document of the given granularities (no stored embeddings in memory)."""
        del embeddings  # nothing stored to return: every document comes with None
        wanted = set(granularities)
        docs = [d for d in self._docs.values() if d.metadata.get("granularity") in wanted]
        return [(d, None) for d in sorted(docs, key=lambda d: d.id)]
