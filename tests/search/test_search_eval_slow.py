"""The retrieval evaluation with the real all-MiniLM-L6-v2: the MA-RAG files built into a real
Chroma KB (stored vectors, as `marag kb build` does), the committed labelled query set, and
hybrid at least as good as the better of BM25 and dense on P@10 and nDCG@10 (docs/search.md)."""

from __future__ import annotations

import json

import pytest

from engine.search import SearchIndex
from engine.search.evaluation import QUERY_FILE, evaluate, markdown_table
from kb_store.chroma_kb import build_kb
from kb_store.chroma_reader import open_kb

pytestmark = pytest.mark.slow


def test_hybrid_is_not_below_the_better_of_bm25_and_dense(tmp_path, marag_sessions):
    stats = build_kb(marag_sessions, tmp_path, embedding="minilm")
    assert stats.embedded == stats.total
    kb = open_kb(tmp_path, embedding="minilm")
    index = SearchIndex.from_kb(kb)
    qset = json.loads(QUERY_FILE.read_text(encoding="utf-8"))
    result = evaluate(index, qset)
    print(markdown_table(result))
    t = result["table"]
    for metric in ("p10", "ndcg10"):
        better = max(t["bm25"]["all"][metric], t["dense"]["all"][metric])
        assert t["hybrid"]["all"][metric] >= better, (metric, t)
    assert t["hybrid"]["all"]["n"] >= 30
    # dense uses the stored vectors: a note's full text finds its own session, at cosine 1
    unit = index.unit("s-20-v2-updrs")
    assert unit.note is not None
    top = index.search(unit.note.text, k=1, system="dense")
    assert top[0].doc_id == "s-20-v2-updrs" and top[0].score == pytest.approx(1.0, abs=1e-3)
    # an unchanged rebuild embeds nothing
    again = build_kb(marag_sessions, tmp_path, embedding="minilm")
    assert (again.added, again.updated, again.embedded) == (0, 0, 0)
