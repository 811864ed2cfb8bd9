"""Facts from the KB's columnar session table (kb_store.fact_table): per-patient fact rows and the
cohort statistics over any number of patients, vectorised.

Why: fetching every session document from Chroma and rebuilding facts from it costs ~110 ms per
patient at 100,000 documents; a cohort question over 10,000 patients would take minutes. The
session table holds the same metadata (same build, same generation, checked stamps), so:

- `patient_facts` gives exactly the `Fact` rows `engine.retrieve.facts_from_doc` builds from the
  documents (same order, same values) for the plan's patients, from an index on ``proj_id``;
- `cohort_frame` + `compute_cohort_table` give exactly what `engine.clinical.cohort.compute_cohort`
  gives from Fact objects (the tests compare both on the 44-patient and the MA-RAG KB, and every
  statistic with pandas on the source CSV at 2,000 patients), with numpy over one long frame:
  sums are taken in the same left-to-right order as the Python loops, so rounded values agree;
- `answer_scope` names the patients a cohort answer talks about (the top of the ranking, ties,
  the top of the PDQ-8 ranking): only their facts, series and ledger values are materialised, so
  the final text and the claim check scale with the answer, not with the cohort.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.clinical.visit_filter import select_visits
from engine.types import Fact
from kb_store.fact_table import FactTable
from kb_store.profiles import DOMAINS, TOTAL, UPDRS_DOMAINS, load_profile

#: patients of the ranking a cohort answer can name: the cohort prompt shows the top 10, the
#: final text the top 5, the PDQ-8 ranking its top 5 (engine.clinical.cohort.render_cohort_facts)
SCOPE_RANKING = 10
SCOPE_PDQ8 = 5
#: patients holding each domain's cohort maximum / minimum (the statistics line states both)
SCOPE_EXTREMES = 1


def table_of(kb: Any) -> FactTable | None:
    """The KB's verified session table, or None when the reader has none (a KB built before
    the table existed, or a test double): callers then read documents."""
    get = getattr(kb, "fact_table", None)
    return get() if callable(get) else None


# ---------------------------------------------------------------------------------------------
# per-patient facts
# ---------------------------------------------------------------------------------------------


def _index(table: FactTable) -> dict[int, np.ndarray]:
    idx = table.__dict__.get("_by_patient")
    if idx is None:
        df = table.frame()
        idx = {int(k): v for k, v in df.groupby("proj_id", sort=False).indices.items()}
        table.__dict__["_by_patient"] = idx
    return idx


def _codes(profile: str, domain: str) -> list[str]:
    return [i.code for i in load_profile(profile).items_of(domain)]


def row_facts(r: dict[str, Any]) -> list[Fact]:
    """The Fact rows of one table row, as `facts_from_doc` builds them from the document."""
    prof = load_profile(r["profile"])
    items_all = json.loads(r["items_json"] or "{}")
    out = []
    for dom in DOMAINS:
        miss = r.get(f"missing_{dom}")
        if dom not in prof.domains or miss is None or pd.isna(miss):
            continue
        score = r.get(f"score_{dom}")
        out.append(
            Fact(
                patient=int(r["proj_id"]),
                visit=int(r["visit"]),
                date=str(r["date"]),
                instrument=str(r["instrument"]),
                domain=dom,
                score=None if score is None or pd.isna(score) else float(score),
                items={c: items_all.get(c) for c in _codes(r["profile"], dom)},
                doc_id=str(r["doc_id"]),
                missing=int(miss),
                profile=str(r["profile"]),
                condition=str(r["condition"] or ""),
            )
        )
    return out


def _columns(table: FactTable) -> dict[str, np.ndarray]:
    cols = table.__dict__.get("_columns")
    if cols is None:
        df = table.frame()
        cols = {c: df[c].to_numpy(dtype=object) for c in df.columns}
        table.__dict__["_columns"] = cols
    return cols


def patient_rows(table: FactTable, proj_id: int, instruments: Sequence[str] | None) -> list[dict]:
    """One patient's session rows (instrument filter), sorted like `KBReader.session_docs`."""
    pos = _index(table).get(int(proj_id))
    if pos is None:
        return []
    cols = _columns(table)
    rows = [{c: a[i] for c, a in cols.items()} for i in pos.tolist()]
    wanted = set(instruments or ())
    rows = [r for r in rows if not wanted or r["instrument"] in wanted]
    return sorted(rows, key=lambda r: (r["visit"], r["instrument"], r["doc_id"]))


def patient_facts(
    table: FactTable, proj_id: int, instruments: Sequence[str] | None
) -> list[tuple[str, list[Fact]]]:
    """[(condition, facts of one session document)] for one patient, in document order."""
    return [
        (str(r["condition"] or ""), row_facts(r)) for r in patient_rows(table, proj_id, instruments)
    ]


# ---------------------------------------------------------------------------------------------
# cohort: one long frame (patient, visit, date, domain, score) and the statistics over it
# ---------------------------------------------------------------------------------------------


def _arrays(table: FactTable) -> dict[str, np.ndarray]:
    """Per-table numpy columns for the cohort path (built once per table generation)."""
    arr = table.__dict__.get("_arrays")
    if arr is None:
        df = table.frame()
        arr = {
            "proj_id": df["proj_id"].to_numpy(dtype=np.int64),
            "visit": df["visit"].to_numpy(dtype=np.int64),
            "instrument": df["instrument"].to_numpy(dtype=object),
            "date": df["date"].to_numpy(dtype=object),
            "day": pd.to_datetime(df["date"], format="%Y-%m-%d")
            .to_numpy()
            .astype("datetime64[D]")
            .astype(np.int64),
            "on": df["condition"].str.upper().eq("ON").to_numpy(),
        }
        for dom in DOMAINS:
            if f"missing_{dom}" in df.columns:
                arr[f"has_{dom}"] = df[f"missing_{dom}"].notna().to_numpy()
                arr[f"score_{dom}"] = df[f"score_{dom}"].to_numpy(dtype=float)
        table.__dict__["_arrays"] = arr
    return arr


LONG_COLUMNS = ("patient", "visit", "date", "day", "dom_i", "score")


def _ranks(proj: np.ndarray, visit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row order by patient and visit, 1-based rank of each ordered row within its patient,
    the patient's number of rows) for one instrument's sessions."""
    order = np.lexsort((visit, proj))
    p = proj[order]
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
    sizes = np.diff(np.r_[starts, len(p)])
    first = np.repeat(starts, sizes)
    return order, np.arange(len(p)) - first + 1, np.repeat(sizes, sizes)


def _kept_by_rank(rank: np.ndarray, count: np.ndarray, visit_filter: str) -> np.ndarray:
    """Rows kept by a filter that counts the instrument's own assessments (engine.retrieve:
    baseline = the first session of that instrument, whatever its shared visit number)."""
    if visit_filter == "baseline":
        return rank == 1
    if visit_filter == "latest_visit":
        return rank == count
    if visit_filter == "baseline_vs_latest":
        return (rank == 1) | (rank == count)
    m = re.fullmatch(r"(first|last)_(\d+)_visits", visit_filter)
    if m is None:
        raise ValueError(f"unknown visit filter {visit_filter!r}")
    n = int(m.group(2))
    return rank <= n if m.group(1) == "first" else rank > count - n


def _rank_note(count: int, visit_filter: str) -> str | None:
    """The per-instrument note engine.clinical.visit_filter.select_visits writes for a patient with `count`
    assessments of that instrument."""
    return select_visits(list(range(1, count + 1)), visit_filter)[1]


def _visit_selection(
    a: dict[str, np.ndarray], base: np.ndarray, instruments: Sequence[str], visit_filter: str
) -> tuple[np.ndarray, dict[int, list[str]]]:
    """(mask of the session rows a visit filter keeps, per-patient notes in the retrieve node's
    order and words) over the OFF sessions in `base` that score at least one domain."""
    keep = np.zeros(len(base), dtype=bool)
    notes: dict[int, list[str]] = {}
    m = re.fullmatch(r"visit_(\d+)", visit_filter)
    if m:  # the shared visit index: the retrieve node keeps visit N of every instrument
        n = int(m.group(1))
        keep = base & (a["visit"] == n)
        idx = np.flatnonzero(base)
        missing = set(a["proj_id"][idx].tolist()) - set(a["proj_id"][keep].tolist())
        for p in sorted(missing):
            visits = sorted(set(a["visit"][idx[a["proj_id"][idx] == p]].tolist()))
            notes[p] = [f"no visit {n} (visits on record: {', '.join(map(str, visits))})"]
        return keep, notes
    for inst in sorted(instruments):
        idx = np.flatnonzero(base & (a["instrument"] == inst))
        if not len(idx):
            continue
        order, rank, count = _ranks(a["proj_id"][idx], a["visit"][idx])
        keep[idx[order[_kept_by_rank(rank, count, visit_filter)]]] = True
        last = rank == count
        for p, c in zip(a["proj_id"][idx][order][last].tolist(), count[last].tolist(), strict=True):
            note = _rank_note(c, visit_filter)
            if note:
                notes.setdefault(p, []).append(f"{inst}: {note}")
    return keep, notes


def cohort_frame(
    table: FactTable,
    patients: Sequence[int],
    instruments: Sequence[str],
    visit_filter: str,
    all_patients: bool = False,
) -> tuple[pd.DataFrame, list[str]]:
    """(long frame of the facts the retrieve node would keep, its notes): OFF/untreated sessions
    of `patients` and `instruments` that the visit filter keeps (engine.retrieve: baseline, latest
    and first/last N count each instrument's own assessments; visit_N is the shared index).
    Columns: patient, visit, date, day (days since 1970), domain, dom_i, score (NaN = not
    scored), sorted by patient, visit and domain. Notes are the retrieve node's, in its order."""
    a = _arrays(table)
    mask = np.zeros(len(a["proj_id"]), dtype=bool)
    for inst in instruments:
        key = f"inst_{inst}"
        if key not in a:
            a[key] = a["instrument"] == inst
        mask |= a[key]
    if not all_patients:
        mask &= np.isin(a["proj_id"], np.asarray(list(patients), dtype=np.int64))
    on_mask, off_mask = mask & a["on"], mask & ~a["on"]
    scored = np.zeros(len(off_mask), dtype=bool)
    for dom in DOMAINS:
        if f"has_{dom}" in a:
            scored |= a[f"has_{dom}"]
    present = set(np.unique(a["proj_id"][off_mask & scored]).tolist())
    per_patient: dict[int, list[str]] = {}
    if visit_filter != "none":
        selected, per_patient = _visit_selection(a, off_mask & scored, instruments, visit_filter)
        off_mask = off_mask & selected
    parts: dict[str, list[np.ndarray]] = {c: [] for c in LONG_COLUMNS}
    for i, dom in enumerate(DOMAINS):
        if f"has_{dom}" not in a:
            continue
        m = off_mask & a[f"has_{dom}"]
        if not m.any():
            continue
        n = int(m.sum())
        parts["patient"].append(a["proj_id"][m])
        parts["visit"].append(a["visit"][m])
        parts["date"].append(a["date"][m])
        parts["day"].append(a["day"][m])
        parts["dom_i"].append(np.full(n, i, dtype=np.int64))
        parts["score"].append(a[f"score_{dom}"][m])
    cols = {
        c: (np.concatenate(v) if v else np.array([], dtype=object if c == "date" else float))
        for c, v in parts.items()
    }
    if len(cols["patient"]):
        order = np.lexsort((cols["dom_i"], cols["visit"], cols["patient"]))
        cols = {c: v[order] for c, v in cols.items()}
    # explicit dtypes: object dates stay object (no conversion of 300,000 strings)
    long = pd.DataFrame(
        {c: pd.Series(v, dtype=object if c == "date" else None) for c, v in cols.items()},
        columns=list(LONG_COLUMNS),
    )
    notes: list[str] = []
    for p in patients:
        if p not in present:
            notes.append(
                f"Patient {p}: no {' or '.join(instruments)} sessions in the knowledge base."
            )
        else:
            notes += [f"Patient {p}: {n}." for n in per_patient.get(p, ())]
    if on_mask.any():
        keys = np.unique(a["proj_id"][on_mask] * 1_000_000 + a["visit"][on_mask])
        notes.append(
            f"{len(keys)} ON-medication exam session(s) kept apart: ON and OFF exams are not "
            "comparable and are never averaged; the analysis uses OFF/untreated exams."
        )
    return long, notes


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
    """Python's round(x, 2) (not numpy's, which differs at some halves), NaN -> None."""
    return [None if x != x else round(x, 2) for x in a.tolist()]


def compute_cohort_table(
    long: pd.DataFrame, query: str, instruments: Sequence[str], statistic: str = ""
) -> dict[str, Any]:
    """`compute_cohort` over the long frame of `cohort_frame`: same keys, same values."""
    from engine.clinical.cohort import rank_cohort

    pat_all = long["patient"].to_numpy()
    patients = np.unique(pat_all).tolist()
    sc = long["score"].to_numpy(dtype=float)
    ok = ~np.isnan(sc)
    pat, vis = pat_all[ok], long["visit"].to_numpy()[ok]
    dom_i, ys = long["dom_i"].to_numpy()[ok], sc[ok]
    date, day = long["date"].to_numpy()[ok], long["day"].to_numpy()[ok]
    notes: list[str] = []

    # per-visit UPDRS totals (all three parts scored); sum in the loop's order I + II + III
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
    for j in np.flatnonzero(~full):  # visits with one or two parts: noted, no total
        parts = sorted(d for k, d in enumerate(UPDRS_DOMAINS) if have[k, j])
        p, v = divmod(int(ukeys[j]), 1_000_000)
        notes.append(
            f"Patient {p}, visit {v}: UPDRS total not computed (scored parts: {', '.join(parts)})."
        )
    t_pat, t_vis = np.divmod(ukeys[full], 1_000_000)
    t_val = (0 + per["nonmotor"][full]) + per["adl"][full] + per["motor"][full]
    present = [d for d in ("motor", "adl", "nonmotor", "qol") if (dom_i == DOMAINS.index(d)).any()]
    domains = present + ([TOTAL] if full.any() else [])
    # points: (domain order, patient, visit) for every domain and the total
    d_order = np.array(
        [present.index(DOMAINS[i]) if DOMAINS[i] in present else -1 for i in range(len(DOMAINS))]
    )
    P = np.concatenate([pat, t_pat])
    V = np.concatenate([vis, t_vis])
    D = np.concatenate([d_order[dom_i], np.full(len(t_pat), len(present))])
    Y = np.concatenate([ys, t_val])
    DT = np.concatenate([date, motor_date[full]])
    DAY = np.concatenate([day, motor_day[full]])
    order = np.lexsort((V, P, D))
    P, V, D, Y, DT, DAY = P[order], V[order], D[order], Y[order], DT[order], DAY[order]

    gkey = D * (10**12) + P
    ug, start, counts = np.unique(gkey, return_index=True, return_counts=True)
    _, slope_v = _slopes(gkey, V.astype(float), Y)
    years = (DAY - np.repeat(DAY[start], counts)) / 365.25
    _, slope_y = _slopes(gkey, years, Y)
    last = start + counts - 1
    g_dom = [domains[int(x)] for x in (ug // (10**12)).tolist()]
    g_pat = (ug % (10**12)).tolist()
    first_v, last_v = V[start].tolist(), V[last].tolist()
    last_s, last_d = Y[last].tolist(), DT[last].tolist()
    sv, sy, cnt = _round2(slope_v), _round2(slope_y), counts.tolist()
    slopes = [
        {
            "patient": g_pat[i],
            "domain": g_dom[i],
            "slope": sv[i],
            "slope_year": sy[i],
            "n_visits": cnt[i],
            "first_visit": first_v[i],
            "last_visit": last_v[i],
        }
        for i in range(len(g_pat))
    ]
    # each group's latest scored visit; domain statistics with numpy, rows only where needed
    g_d = (ug // (10**12)).astype(np.int64)
    last_s_arr, g_pat_arr = Y[last], ug % (10**12)
    bounds = np.searchsorted(g_d, np.arange(len(domains) + 1))
    present_doms = [d for k, d in enumerate(domains) if bounds[k + 1] > bounds[k]]

    def latest_rows(dom: str) -> list[dict[str, Any]]:
        k = domains.index(dom)
        return [
            {"patient": g_pat[i], "value": last_s[i], "visit": last_v[i], "date": last_d[i]}
            for i in range(int(bounds[k]), int(bounds[k + 1]))
        ]

    domain_stats: dict[str, dict[str, Any]] = {}
    for dom in present_doms:
        k = domains.index(dom)
        vals = last_s_arr[bounds[k] : bounds[k + 1]]
        pats = g_pat_arr[bounds[k] : bounds[k + 1]]
        mx, mn = float(vals.max()), float(vals.min())
        domain_stats[dom] = {
            "max": mx,
            "max_patients": pats[vals == mx].tolist(),
            "min": mn,
            "min_patients": pats[vals == mn].tolist(),
            "mean": round(sum(vals.tolist()) / len(vals), 2),  # left-to-right, as sum() of F
            "n_patients": len(vals),
        }

    def points_of(dom: str) -> dict[int, list[tuple[int, str, float]]]:
        """{patient: [(visit, date, score)]} of one domain, patients in order (change stats)."""
        k = domains.index(dom)
        v_l, d_l, y_l = V.tolist(), DT.tolist(), Y.tolist()
        out: dict[int, list[tuple[int, str, float]]] = {}
        for i in range(int(bounds[k]), int(bounds[k + 1])):
            s0, s1 = int(start[i]), int(last[i]) + 1
            out[g_pat[i]] = list(zip(v_l[s0:s1], d_l[s0:s1], y_l[s0:s1], strict=True))
        return out

    return rank_cohort(
        query,
        instruments,
        statistic,
        domains=domains,
        domain_stats=domain_stats,
        slopes=slopes,
        notes=notes,
        latest_rows=latest_rows,
        points_of=points_of,
        n_patients=len(patients),
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
