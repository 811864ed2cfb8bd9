"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009): score = sum over rankings of
1 / (k + rank), rank starting at 1, k = 60. Items a ranking does not list get nothing from it."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

RRF_K = 60


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K) -> dict[Hashable, float]:
    out: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            out[key] = out.get(key, 0.0) + 1.0 / (k + rank)
    return out
