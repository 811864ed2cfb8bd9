"""Free-text search over the KB's session documents and clinician notes.

Hybrid retrieval after MedAgent-RAG: BM25 (bm25s) and dense MiniLM scores (the embeddings the KB
build stored) fused by reciprocal rank fusion, plus a concept channel that maps clinical words to
instrument items through the profiles' labels and `terms`, so that sessions scoring the item rank
above keyword noise. Modules: text (tokens), concepts (words -> items), bm25, dense, fusion (RRF),
index (the searchable sessions, filters, hits with their reasons), evaluation (labelled queries,
P@10 / nDCG@10), search_cli (`marag search`, `marag similar`).

The pipeline never uses this: its retrieval stays exact metadata match (DESIGN.md).
"""

from engine.search.index import Hit, SearchFilters, SearchIndex

__all__ = ["Hit", "SearchFilters", "SearchIndex"]
