"""BM25 over the searchable sessions (bm25s; Lucene variant, k1 1.5, b 0.75)."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np


class BM25Index:
    def __init__(self, docs_tokens: Sequence[list[str]]):
        self.n = len(docs_tokens)
        self._model = bm25s.BM25()
        # an empty document still needs one token for bm25s; it never matches a query
        self._model.index([t or ["\x00"] for t in docs_tokens], show_progress=False)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        if not query_tokens or self.n == 0:
            return np.zeros(self.n, dtype=np.float32)
        vocab = self._model.vocab_dict
        known = [t for t in query_tokens if t in vocab]
        if not known:
            return np.zeros(self.n, dtype=np.float32)
        return np.asarray(self._model.get_scores(known), dtype=np.float32)
