"""The session table's vectorised slopes use Python's arithmetic, bit for bit (the Fact path,
engine.clinical.series.least_squares_slope, is the reference)."""

from __future__ import annotations

import numpy as np

from engine.clinical.series import least_squares_slope
from engine.clinical.table_stats import _slopes, _squares


def test_squares_are_pythons_squares() -> None:
    rng = np.random.default_rng(11)
    dx = rng.uniform(-10, 10, 200_000) * rng.choice([1e-3, 0.1, 1.0, 10.0, 100.0], 200_000)
    dx[:8] = [0.0, -0.0, 0.5, -1.5, 2.0, 1024.0, 3.0, -0.25]
    want = np.array([x**2 for x in dx.tolist()])
    # x * x alone differs from libm's pow in about 1 value in 1,000
    assert np.array_equal(_squares(dx.copy()), want)


def test_slopes_equal_the_fact_paths() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 7, 3000)
    ys = rng.integers(0, 60, int(counts.sum())).astype(float)
    days = np.concatenate([np.sort(rng.choice(3000, k, replace=False)) for k in counts])
    xs_year = days / 365.25
    xs_index = np.concatenate([np.arange(k) for k in counts]).astype(float)
    for xs in (xs_year, xs_index):
        got = _slopes(counts, xs, ys)
        at = 0
        for g, k in enumerate(counts.tolist()):
            ref = least_squares_slope(xs[at : at + k].tolist(), ys[at : at + k].tolist())
            assert np.isnan(got[g]) if ref is None else got[g] == ref, (g, got[g], ref)
            at += k
