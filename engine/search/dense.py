"""Dense scores: cosine of the query's MiniLM vector with the vectors the KB build stored.

Vectors are unit length (the embedding functions normalise), so cosine is a dot product. Exact
over the candidate sessions (no approximate index): deterministic, and filters apply exactly.
"""

from __future__ import annotations

import numpy as np


def unit_rows(vectors: list) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float32)
    if m.ndim != 2:
        return m.reshape(len(vectors), -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    q = np.asarray(query, dtype=np.float32)
    n = float(np.linalg.norm(q))
    return matrix @ (q / n if n else q)
