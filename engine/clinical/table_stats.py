"""Cohort statistics over the long frame of engine.clinical.cohort_table.cohort_frame, vectorised.

`compute_cohort_table` gives exactly what engine.clinical.cohort.compute_cohort gives from Fact
objects (slopes per visit and per year, each patient's latest score, the cohort max / min / mean,
the ranking), with numpy over one frame; sums run in the same left-to-right order as the Python
loops, so rounded values agree. `answer_scope` names the patients a cohort answer talks about, so
that only their facts, series and ledger values are built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from kb_store.profiles import DOMAINS, TOTAL, UPDRS_DOMAINS

#: patients of the ranking a cohort answer can name: the cohort prompt shows the top 10, the
#: final text the top 5, the PDQ-8 ranking its top 5 (engine.clinical.cohort.render_cohort_facts)
SCOPE_RANKING = 10
SCOPE_PDQ8 = 5
#: patients holding each domain's cohort maximum / minimum (the statistics line states both)
SCOPE_EXTREMES = 1


def _seq_sum(mat: np.ndarray) -> np.ndarray:
    """Row sums of a (groups x k) matrix (NaN = absent), added left to right like `sum()`."""
    acc = np.zeros(mat.shape[0])
    for j in range(mat.shape[1]):
        col = mat[:, j]
        acc = np.where(np.isnan(col), acc, acc + col)
    return acc


def _slopes(groups: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope per group (`least_squares_slope` per group, same arithmetic order);
    groups must be sorted and contiguous. Returns (unique groups, slope or NaN)."""
    ug, start, counts = np.unique(groups, return_index=True, return_counts=True)
    k = int(counts.max()) if len(counts) else 0
    pos = np.arange(len(groups)) - np.repeat(start, counts)
    gi = np.repeat(np.arange(len(ug)), counts)
    X = np.full((len(ug), max(k, 1)), np.nan)
    Y = np.full((len(ug), max(k, 1)), np.nan)
    X[gi, pos] = xs
    Y[gi, pos] = ys
    mx = _seq_sum(X) / counts
    my = _seq_sum(Y) / counts
    dx = X - mx[:, None]
    # np.power with an array exponent calls C pow() like Python's `**` (`dx**2` would be dx*dx,
    # which differs in the last bit and can flip a rounding at 2 decimals)
    sxx = _seq_sum(np.power(dx, np.full_like(dx, 2.0)))
    sxy = _seq_sum(dx * (Y - my[:, None]))
    with np.errstate(invalid="ignore"):
        spread = np.nanmax(X, axis=1) > np.nanmin(X, axis=1)  # at least 2 distinct xs
    ok = (counts >= 2) & spread
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(ok, sxy / np.where(sxx == 0, np.nan, sxx), np.nan)
    return ug, slope


def _round2(a: np.ndarray) -> list[float | None]:
    """Python's round(x, 2), NaN -> None, vectorised: numpy's rint(100 x) / 100 gives the same
    float wherever 100 x is not within rounding error of a half (both are the nearest float to
    k / 100 for the same k); those few values are rounded by Python itself."""
    a = np.asarray(a, dtype=float)
    scaled = a * 100.0
    out = np.rint(scaled) / 100.0
    near_half = np.abs(np.abs(scaled - np.floor(scaled)) - 0.5) < 1e-6
    vals = out.tolist()
    for i in np.flatnonzero(near_half).tolist():
        vals[i] = round(float(a[i]), 2)
    return [None if x != x else x for x in vals]


def _updrs_totals(
    pat: np.ndarray,
    vis: np.ndarray,
    dom_i: np.ndarray,
    ys: np.ndarray,
    date: np.ndarray,
    day: np.ndarray,
    notes: list[str],
) -> tuple[np.ndarray, ...]:
    """(patient, visit, total, date, day) of every visit with all three UPDRS parts scored, the
    date being the motor exam's; visits with one or two parts are noted, with no total. Summed
    in the order I + II + III, as the per-fact computation does."""
    ui = {d: DOMAINS.index(d) for d in UPDRS_DOMAINS}
    is_up = np.isin(dom_i, list(ui.values()))
    key = pat[is_up] * 1_000_000 + vis[is_up]
    ukeys, inv = np.unique(key, return_inverse=True)
    per = {}
    for d, i in ui.items():
        m = dom_i[is_up] == i
        col = np.full(len(ukeys), np.nan)
        col[inv[m]] = ys[is_up][m]
        per[d] = col
    motor_date = np.full(len(ukeys), None, dtype=object)
    motor_day = np.zeros(len(ukeys), dtype=np.int64)
    mm = dom_i[is_up] == ui["motor"]
    motor_date[inv[mm]] = date[is_up][mm]
    motor_day[inv[mm]] = day[is_up][mm]
    have = np.vstack([~np.isnan(per[d]) for d in UPDRS_DOMAINS])
    full = have.all(axis=0)
    for j in np.flatnonzero(~full):
        parts = sorted(d for k, d in enumerate(UPDRS_DOMAINS) if have[k, j])
        p, v = divmod(int(ukeys[j]), 1_000_000)
        notes.append(
            f"Patient {p}, visit {v}: UPDRS total not computed (scored parts: {', '.join(parts)})."
        )
    t_pat, t_vis = np.divmod(ukeys[full], 1_000_000)
    t_val = (0 + per["nonmotor"][full]) + per["adl"][full] + per["motor"][full]
    return t_pat, t_vis, t_val, motor_date[full], motor_day[full]


class _Groups:
    """The cohort's points grouped per (domain, patient), sorted by domain order, patient and
    visit: the slopes, each group's latest point and the per-domain statistics."""

    def __init__(self, long: pd.DataFrame) -> None:
        sc = long["score"].to_numpy(dtype=float)
        ok = ~np.isnan(sc)
        pat, vis = long["patient"].to_numpy()[ok], long["visit"].to_numpy()[ok]
        dom_i, ys = long["dom_i"].to_numpy()[ok], sc[ok]
        date, day = long["date"].to_numpy()[ok], long["day"].to_numpy()[ok]
        self.notes: list[str] = []
        t_pat, t_vis, t_val, t_date, t_day = _updrs_totals(
            pat, vis, dom_i, ys, date, day, self.notes
        )
        present = [
            d for d in ("motor", "adl", "nonmotor", "qol") if (dom_i == DOMAINS.index(d)).any()
        ]
        self.domains = present + ([TOTAL] if len(t_pat) else [])
        d_order = np.array(
            [
                present.index(DOMAINS[i]) if DOMAINS[i] in present else -1
                for i in range(len(DOMAINS))
            ]
        )
        P = np.concatenate([pat, t_pat])
        V = np.concatenate([vis, t_vis])
        D = np.concatenate([d_order[dom_i], np.full(len(t_pat), len(present))])
        Y = np.concatenate([ys, t_val])
        DT = np.concatenate([date, t_date])
        DAY = np.concatenate([day, t_day])
        order = np.lexsort((V, P, D))
        self.V, self.Y, self.DT, self.DAY = V[order], Y[order], DT[order], DAY[order]
        self.gkey = D[order] * (10**12) + P[order]
        ug, self.start, self.counts = np.unique(self.gkey, return_index=True, return_counts=True)
        self.last = self.start + self.counts - 1
        self.g_d = (ug // (10**12)).astype(np.int64)
        self.g_pat_arr = ug % (10**12)
        self.g_pat = self.g_pat_arr.tolist()
        self.bounds = np.searchsorted(self.g_d, np.arange(len(self.domains) + 1))

    def slopes(self) -> list[dict[str, Any]]:
        """Per group: slope per visit and per year (least squares), visits and their range."""
        _, slope_v = _slopes(self.gkey, self.V.astype(float), self.Y)
        years = (self.DAY - np.repeat(self.DAY[self.start], self.counts)) / 365.25
        _, slope_y = _slopes(self.gkey, years, self.Y)
        g_dom = [self.domains[int(x)] for x in self.g_d.tolist()]
        first_v, last_v = self.V[self.start].tolist(), self.V[self.last].tolist()
        sv, sy, cnt = _round2(slope_v), _round2(slope_y), self.counts.tolist()
        return [
            {
                "patient": self.g_pat[i],
                "domain": g_dom[i],
                "slope": sv[i],
                "slope_year": sy[i],
                "n_visits": cnt[i],
                "first_visit": first_v[i],
                "last_visit": last_v[i],
            }
            for i in range(len(self.g_pat))
        ]

    def _span(self, dom: str) -> range:
        k = self.domains.index(dom)
        return range(int(self.bounds[k]), int(self.bounds[k + 1]))

    def domain_stats(self) -> dict[str, dict[str, Any]]:
        """Per domain over each patient's latest scored visit: max, min, mean and who."""
        out: dict[str, dict[str, Any]] = {}
        last_s = self.Y[self.last]
        for dom in self.domains:
            r = self._span(dom)
            if not len(r):
                continue
            vals, pats = last_s[r.start : r.stop], self.g_pat_arr[r.start : r.stop]
            mx, mn = float(vals.max()), float(vals.min())
            out[dom] = {
                "max": mx,
                "max_patients": pats[vals == mx].tolist(),
                "min": mn,
                "min_patients": pats[vals == mn].tolist(),
                "mean": round(sum(vals.tolist()) / len(vals), 2),  # left-to-right, as sum() of F
                "n_patients": len(vals),
            }
        return out

    def latest_rows(self, dom: str) -> list[dict[str, Any]]:
        last_s, last_v = self.Y[self.last].tolist(), self.V[self.last].tolist()
        last_d = self.DT[self.last].tolist()
        return [
            {"patient": self.g_pat[i], "value": last_s[i], "visit": last_v[i], "date": last_d[i]}
            for i in self._span(dom)
        ]

    def points_of(self, dom: str) -> dict[int, list[tuple[int, str, float]]]:
        """{patient: [(visit, date, score)]} of one domain, patients in order (change stats)."""
        v_l, d_l, y_l = self.V.tolist(), self.DT.tolist(), self.Y.tolist()
        out: dict[int, list[tuple[int, str, float]]] = {}
        for i in self._span(dom):
            s0, s1 = int(self.start[i]), int(self.last[i]) + 1
            out[self.g_pat[i]] = list(zip(v_l[s0:s1], d_l[s0:s1], y_l[s0:s1], strict=True))
        return out


def compute_cohort_table(
    long: pd.DataFrame, query: str, instruments: Sequence[str], statistic: str = ""
) -> dict[str, Any]:
    """`compute_cohort` over the long frame of `cohort_frame`: same keys, same values."""
    from engine.clinical.cohort import rank_cohort

    groups = _Groups(long)
    domain_stats = groups.domain_stats()
    return rank_cohort(
        query,
        instruments,
        statistic,
        domains=groups.domains,
        domain_stats=domain_stats,
        slopes=groups.slopes(),
        notes=groups.notes,
        latest_rows=groups.latest_rows,
        points_of=groups.points_of,
        n_patients=len(np.unique(long["patient"].to_numpy())),
        has_qol="qol" in domain_stats,
    )


def answer_scope(cohort: dict[str, Any]) -> list[int]:
    """The patients a cohort answer can name: the top of the ranking, the ties, the top of the
    PDQ-8 ranking and (one each) a patient at each domain's cohort maximum and minimum.
    Bounded by those constants and the ties, never by the cohort's size."""
    ps = [r["patient"] for r in cohort["ranking"][:SCOPE_RANKING]]
    ps += list(cohort.get("ties") or [])
    ps += [r["patient"] for r in (cohort.get("pdq8_ranking") or [])[:SCOPE_PDQ8]]
    for st in (cohort.get("domain_stats") or {}).values():
        ps += st["max_patients"][:SCOPE_EXTREMES] + st["min_patients"][:SCOPE_EXTREMES]
    return sorted({int(p) for p in ps if p is not None})
