"""A real Chroma KB of the MA-RAG study files with hashing embeddings (fast), built once."""

from __future__ import annotations

from pathlib import Path

import pytest

MARAG = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "ma-rag"


@pytest.fixture(scope="session")
def marag_sessions():
    from kb_store.ingest import load_sources

    return load_sources([str(MARAG)], "marag").sessions


@pytest.fixture(scope="session")
def marag_kb_dir(tmp_path_factory, marag_sessions):
    from kb_store.chroma_kb import build_kb

    d = tmp_path_factory.mktemp("marag_kb")
    build_kb(marag_sessions, d, embedding="hashing")
    return d


@pytest.fixture(scope="session")
def marag_kb(marag_kb_dir):
    from kb_store.chroma_reader import open_kb

    return open_kb(marag_kb_dir, embedding="hashing")


@pytest.fixture(scope="session")
def index(marag_kb):
    from engine.search import SearchIndex

    return SearchIndex.from_kb(marag_kb)
