"""Cached engine objects for the Search page and the similar-patients panel.

The search index (engine.search.SearchIndex: BM25 matrix, stored vectors) is built once per live
KB generation (read from the KB on every page run) and kept with st.cache_resource; the fact table for similar patients likewise. The
numbers (scores, distances, features) all come from engine code; nothing is recomputed here.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.services import EngineHandle
from engine.search import SearchIndex
from engine.similar import SimilarResult, kb_facts, similar_patients, trajectories
from engine.types import Fact


def _kb_key(handle: EngineHandle) -> str:
    """The cache key of the KB's live generation: read on every page run, so a rebuild by
    another process (`marag kb build`, another dashboard) gives a new index, not a stale one."""
    kb = handle.kb
    live = getattr(kb, "live_generation", None)  # the Chroma KB; the in-memory KB never changes
    return f"{id(kb)}:{live() if callable(live) else getattr(kb, 'generation', '')}"


@st.cache_resource(max_entries=2, show_spinner="Indexing the sessions and notes for search...")
def _index(key: str, _kb: Any) -> SearchIndex:  # noqa: ARG001  # Streamlit cache key
    return SearchIndex.from_kb(_kb)


@st.cache_resource(max_entries=2, show_spinner=False)
def _facts(key: str, _kb: Any) -> list[Fact]:  # noqa: ARG001  # Streamlit cache key
    return kb_facts(_kb)


def search_index(handle: EngineHandle) -> SearchIndex:
    return _index(_kb_key(handle), handle.kb)


def all_facts(handle: EngineHandle) -> list[Fact]:
    return _facts(_kb_key(handle), handle.kb)


def similar(
    handle: EngineHandle, patient: int, k: int = 5, instrument: str | None = None
) -> tuple[SimilarResult, list[dict]]:
    """The similar patients and the overlay rows (patient first, then the neighbours)."""
    facts = all_facts(handle)
    result = similar_patients(facts, patient, k=k, instrument=instrument)
    ids = [patient, *(n.patient for n in result.neighbours)]
    return result, trajectories(facts, ids, instrument or "updrs")
