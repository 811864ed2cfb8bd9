"""Cohort statistics over a plan's selection of the session table (engine.clinical.cohort_index),
vectorised.

`compute_cohort_table` gives exactly what engine.clinical.cohort.compute_cohort gives from Fact
objects (slopes per visit and per year, each patient's latest score, the cohort max / min / mean,
the ranking), with numpy over the selection's per-domain points; sums run in the same
left-to-right order as the Python loops, so rounded values agree. Only what the answer asks is
computed up front: the per-domain statistics, the asked ranking (and the PDQ-8 one) as
columns (engine.clinical.rows.Rows, a row's dict built when read), the slopes of the ranked
domain when a slope is asked; every other slope is computed when read (`LazyRows`: all of them
for the Cohort page's chart, only the named patients' for the ledger). `answer_scope` names the
patients a cohort answer talks about, so that only their facts, series and ledger values are
built.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from engine.clinical.cohort import CHANGE_ERROR, SLOPE_ERROR, rank_cohort
from engine.clinical.cohort_index import Selection, View
from engine.clinical.item_cohort import is_item_answer, item_scope
from engine.clinical.rows import LazyRows, Rows
from engine.clinical.series import per_year_allowed
from engine.clinical.unranked import listed
from engine.types import CohortAnswer
from kb_store.profiles import TOTAL

#: patients of the ranking a cohort answer can name: the cohort prompt shows the top 10, the
#: final text the top 5, the PDQ-8 ranking its top 5 (engine.clinical.cohort.render_cohort_facts)
SCOPE_RANKING = 10
SCOPE_PDQ8 = 5
#: patients holding each domain's cohort maximum / minimum (the statistics line states both)
SCOPE_EXTREMES = 1
SLOPE_NULLABLE = ("slope", "slope_year")


def _columns(counts: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per position j of a group (0, 1, ...): the groups that have a j-th point and that point's
    index, for points grouped in runs of `counts` (every count at least 1)."""
    start = np.r_[0, np.cumsum(counts)[:-1]] if len(counts) else np.array([], int)
    out = []
    for j in range(int(counts.max()) if len(counts) else 0):
        groups = np.flatnonzero(counts > j) if j else np.arange(len(counts))
        out.append((groups, start[groups] + j))
    return out


def _seq_sum(v: np.ndarray, cols: list[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """Per group, the sum of its points of `v` added left to right like `sum()` (from 0)."""
    acc = np.zeros(n)
    for groups, at in cols:
        acc[groups] = acc[groups] + v[at]
    return acc


#: Dekker's splitting constant (2**27 + 1): a float64 splits into two halves whose products
#: are exact
_SPLIT = 134217729.0
#: how far from a rounding midpoint, in units of the last place, a square must be for libm's pow
#: (within 0.52 ulp of the exact value) to give the correctly rounded product
_POW_SAFE = 0.02


def _squares(dx: np.ndarray) -> np.ndarray:
    """`x ** 2` for each x as Python computes it (C pow(x, 2.0) of the platform's libm), fast.

    The product x * x is the correctly rounded square; libm's pow is within 0.52 ulp of the
    exact square, so it gives the same float except where the exact square lies within 0.02 ulp
    of a midpoint between two floats. The exact error of the product (Dekker's two-product)
    finds those few values (and inexact squares at a power of two, where the spacing changes),
    which Python squares itself; an exact square (err 0) is what pow returns. numpy's own power
    loop is no substitute: on some CPUs (AVX-512) it is a vector routine that differs from libm
    in the last bit for about 3 % of values, which can flip a slope's rounding at 2 decimals
    against the Fact path (engine.clinical.series)."""
    p = dx * dx
    twice = dx * 2.0
    if len(dx) and np.array_equal(twice, np.rint(twice)) and float(np.abs(dx).max()) < 2.0**26:
        return p  # halves of integers (the per-visit slope's x = 0, 1, 2 ...): exact squares
    c = _SPLIT * dx
    hi = c - (c - dx)
    lo = dx - hi
    err = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    with np.errstate(invalid="ignore", divide="ignore"):
        off = np.abs(np.abs(err) / np.spacing(p) - 0.5)
    risky = ~(off >= _POW_SAFE) | ((np.frexp(p)[0] == 0.5) & (err != 0))
    for i in np.flatnonzero(risky).tolist():
        p[i] = float(dx[i]) ** 2
    return p


def _slopes(counts: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Least-squares slope per group (`least_squares_slope` per group, same arithmetic order) of
    points grouped in runs of `counts`; NaN where a group has fewer than 2 distinct xs."""
    n = len(counts)
    if not n:
        return np.array([], float)
    cols = _columns(counts)
    mx = _seq_sum(xs, cols, n) / counts
    my = _seq_sum(ys, cols, n) / counts
    dx = xs - np.repeat(mx, counts)
    sxx = _seq_sum(_squares(dx), cols, n)
    sxy = _seq_sum(dx * (ys - np.repeat(my, counts)), cols, n)
    first = xs[cols[0][1]]
    spread = np.zeros(n, bool)  # at least 2 distinct xs
    for groups, at in cols[1:]:
        spread[groups] |= xs[at] != first[groups]
    ok = (counts >= 2) & spread
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, sxy / np.where(sxx == 0, np.nan, sxx), np.nan)


def _round2(a: np.ndarray) -> np.ndarray:
    """Python's round(x, 2) (NaN stays NaN), vectorised: numpy's rint(100 x) / 100 gives the
    same float wherever 100 x is not within rounding error of a half (both are the nearest float
    to k / 100 for the same k); those few values are rounded by Python itself."""
    a = np.asarray(a, dtype=float)
    scaled = a * 100.0
    out = np.rint(scaled) / 100.0
    near_half = np.abs(np.abs(scaled - np.floor(scaled)) - 0.5) < 1e-6
    for i in np.flatnonzero(near_half).tolist():
        out[i] = round(float(a[i]), 2)
    return out


def _ranked(cols: dict[str, np.ndarray], key: str, descending: bool) -> Rows:
    """Competition ranking (1, 1, 3) on cols[key]; ties keep patient order (`_ranked` of
    engine.clinical.cohort on columns). The rows come in patient order (one per patient), so a
    stable sort on the key alone orders ties by patient."""
    val = cols[key]
    order = np.argsort(-val if descending else val, kind="stable")
    out = {k: v[order] for k, v in cols.items()}
    sv = out[key]
    new = np.r_[True, sv[1:] != sv[:-1]] if len(sv) else np.array([], bool)
    out["rank"] = np.maximum.accumulate(np.where(new, np.arange(1, len(sv) + 1), 0))
    return Rows(out, nullable=("slope_year", "slope_visit"))


def _slope_columns(
    parts: Sequence[tuple[str, View, np.ndarray | None]],
) -> dict[str, np.ndarray]:
    """The slope rows' columns of (domain, view, groups) parts in order: every group of the view
    (groups None) or those groups; one computation for all parts."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("patient", "domain", "n", "vis", "y")}
    cols["day"] = []
    for dom, v, groups in parts:
        start, counts = v.start, v.counts
        if groups is not None:
            start, counts = start[groups], counts[groups]
        first = np.r_[0, np.cumsum(counts)[:-1]] if len(counts) else np.array([], int)
        pos = np.repeat(start - first, counts) + np.arange(int(counts.sum()))
        cols["patient"].append(v.g_pat if groups is None else v.g_pat[groups])
        cols["domain"].append(np.full(len(counts), dom, dtype=object))
        cols["n"].append(counts)
        cols["vis"].append(v.vis[pos])
        cols["y"].append(v.y[pos])
        cols["day"].append(v.day(pos))
    c = {k: np.concatenate(x) for k, x in cols.items()}
    counts, vis, day = c["n"], c["vis"], c["day"]
    first = np.r_[0, np.cumsum(counts)[:-1]] if len(counts) else np.array([], int)
    # engine.clinical.series.slope_of on columns: x = 0, 1, 2, ... over each patient's points
    # (per assessment of the instrument), years from the first date, and its per-year rule
    index = (np.arange(len(vis)) - np.repeat(first, counts)).astype(float)
    days = day - np.repeat(day[first], counts)
    span = days[first + counts - 1] if len(counts) else np.array([], float)
    per_year = _slopes(counts, days / 365.25, c["y"])
    per_year[~per_year_allowed(counts, span)] = np.nan
    return {
        "patient": c["patient"],
        "domain": c["domain"],
        "slope": _round2(_slopes(counts, index, c["y"])),
        "slope_year": _round2(per_year),
        "n_visits": counts,
        "first_visit": vis[first],
        "last_visit": vis[first + counts - 1],
    }


def _concat(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def _readable(v: View) -> View | None:
    """The points of `v` without a caveat (None when none is left)."""
    if v.unread is None or not v.unread.any():
        return v
    m = ~v.unread
    if not m.any():
        return None
    return View(v.pat[m], v.vis[m], v.y[m], v.src, v.pos[m], v.unread[m])


def _latest_read(v: View) -> np.ndarray:
    """Positions of each patient's latest point of `v` that carries no caveat; a patient whose
    latest point carries one is left out."""
    last = v.last
    return last if v.unread is None else last[~v.unread[last]]


class TableSource:
    """What rank_cohort reads, from a selection: domains, per-domain statistics, notes, the
    slopes (computed when read) and the rankings (as columns)."""

    def __init__(self, sel: Selection):
        # `views`: the points without a caveat (slopes, changes); `every`: all scored points
        # (latest values: a patient whose latest score carries a caveat has none), as
        # engine.clinical.cohort.FactSource reads Fact objects
        self.views: dict[str, View] = {}
        self.every: dict[str, View] = {}
        for d in ("motor", "adl", "nonmotor", "qol"):
            v, va = sel.view(d), sel.view_all(d)
            if va is not None:
                self.every[d] = va
            if v is not None:
                self.views[d] = v
        total, notes = sel.totals
        if total is not None:
            self.every[TOTAL] = total
            read = _readable(total)
            if read is not None:
                self.views[TOTAL] = read
        self.notes: list[str] = list(notes)
        self.domains = list(self.every)
        self.n_patients = sel.n_patients
        ix = sel.index
        self._patients = ix.patients[ix.has_patient(sel.kept & ix.scored)].tolist()
        self.domain_stats = {}
        for d, va in self.every.items():
            st = self._stats(va)
            if st is not None:
                self.domain_stats[d] = st
        self._slope_cols: dict[str, dict[str, np.ndarray]] = {}
        self.slopes = LazyRows(
            sum(len(v.start) for v in self.views.values()), self._all_slopes, self._slopes_of
        )

    @staticmethod
    def _stats(v: View) -> dict[str, Any] | None:
        """Max, min, mean and who over each patient's latest scored visit (None: every latest
        score carries a caveat)."""
        at = _latest_read(v)
        if not len(at):
            return None
        vals, pats = v.y[at], v.pat[at]
        mx, mn = float(vals.max()), float(vals.min())
        return {
            "max": mx,
            "max_patients": pats[vals == mx].tolist(),
            "min": mn,
            "min_patients": pats[vals == mn].tolist(),
            # added left to right, as sum() of F: a running sum (never numpy's pairwise sum)
            "mean": round(float(np.cumsum(vals)[-1]) / len(vals), 2),
            "n_patients": len(vals),
        }

    def domain_slopes(self, dom: str) -> dict[str, np.ndarray]:
        cols = self._slope_cols.get(dom)
        if cols is None:
            cols = self._slope_cols[dom] = _slope_columns([(dom, self.views[dom], None)])
        return cols

    def _all_slopes(self) -> Rows:
        return Rows(_concat([self.domain_slopes(d) for d in self.views]), SLOPE_NULLABLE)

    def _slopes_of(self, patients: Collection[int]) -> list[dict[str, Any]]:
        """The slope rows of `patients` (domain order, then patient), computed for them only
        (the ranked domain's from its computed columns)."""
        want = np.fromiter((int(p) for p in patients), dtype=np.int64)
        todo = []
        for d, v in self.views.items():
            g = np.flatnonzero(np.isin(v.g_pat, want))
            todo.append((d, v, g))
        if not any(len(g) for _, _, g in todo):
            return []
        compute = [t for t in todo if t[0] not in self._slope_cols]
        cols = _slope_columns(compute) if compute else {}
        # in domain order: the computed parts are contiguous runs of `cols`
        parts, at = [], 0
        for d, _, g in todo:
            if d in self._slope_cols:
                parts.append({k: c[g] for k, c in self._slope_cols[d].items()})
            else:
                parts.append({k: c[at : at + len(g)] for k, c in cols.items()})
                at += len(g)
        return Rows(_concat(parts), SLOPE_NULLABLE).to_list()

    def latest_ranking(self, domain: str, descending: bool) -> Rows:
        v = self.every[domain]
        at = _latest_read(v)
        cols = {"patient": v.pat[at], "value": v.y[at], "visit": v.vis[at]}
        return _ranked({**cols, "date": v.date(at)}, "value", descending)

    def change_ranking(self, statistic: str, domain: str) -> Rows:
        v = self.views.get(domain)
        if v is None:
            raise ValueError(CHANGE_ERROR)
        two = v.counts >= 2
        if not two.any():
            raise ValueError(CHANGE_ERROR)
        s, e = v.start[two], v.last[two]
        cols = {
            "patient": v.g_pat[two],
            "value": v.y[e] - v.y[s],
            "first_visit": v.vis[s],
            "last_visit": v.vis[e],
            "n_visits": v.counts[two],
        }
        return _ranked(cols, "value", descending=statistic == "largest_change")

    def slope_ranking(self, statistic: str, domain: str) -> Rows:
        if domain not in self.views:
            raise ValueError(SLOPE_ERROR)
        sl = self.domain_slopes(domain)
        key = "slope_year" if statistic.endswith("_year") else "slope"
        ok = ~np.isnan(sl[key])
        if not ok.any():
            raise ValueError(SLOPE_ERROR)
        cols = {
            "patient": sl["patient"][ok],
            "value": sl[key][ok],
            "slope_year": sl["slope_year"][ok],
            "slope_visit": sl["slope"][ok],
            "n_visits": sl["n_visits"][ok],
        }
        if statistic.startswith("smallest_abs_slope"):
            cols["abs_slope"] = np.abs(cols["value"])
            return _ranked(cols, "abs_slope", descending=False)
        return _ranked(cols, "value", descending=statistic.startswith("steepest_slope"))

    def no_per_year(self, domain: str) -> int:
        sl = self.domain_slopes(domain)
        return int((~np.isnan(sl["slope"]) & np.isnan(sl["slope_year"])).sum())

    def cohort_patients(self) -> Sequence[int]:
        return self._patients

    def usable_counts(self, domain: str) -> dict[int, int]:
        v = self.views.get(domain)
        return {} if v is None else dict(zip(v.g_pat.tolist(), v.counts.tolist(), strict=True))


def compute_cohort_table(
    sel: Selection, query: str, instruments: Sequence[str], statistic: str = ""
) -> CohortAnswer:
    """`compute_cohort` over a plan's selection of the session table: same keys, equal values
    (the ranking and slopes as row tables equal to their lists)."""
    return rank_cohort(query, instruments, statistic, TableSource(sel))


def answer_scope(cohort: dict[str, Any]) -> list[int]:
    """The patients a cohort answer can name: the top of the ranking, the ties, the top of the
    PDQ-8 ranking and (one each) a patient at each domain's cohort maximum and minimum.
    Bounded by those constants and the ties, never by the cohort's size. An item answer: the
    patients it names (engine.clinical.item_cohort.item_scope)."""
    if is_item_answer(cohort):
        return item_scope(cohort)
    ps = [r["patient"] for r in cohort["ranking"][:SCOPE_RANKING]]
    ps += list(cohort.get("ties") or [])
    ps += [r["patient"] for r in (cohort.get("pdq8_ranking") or [])[:SCOPE_PDQ8]]
    for st in (cohort.get("domain_stats") or {}).values():
        ps += st["max_patients"][:SCOPE_EXTREMES] + st["min_patients"][:SCOPE_EXTREMES]
    ps += listed(cohort.get("not_ranked") or [])
    return sorted({int(p) for p in ps if p is not None})
