"""Facts from the KB's columnar session table (kb_store.fact_table): per-patient fact rows and the
long frame of a cohort over any number of patients, vectorised (its statistics:
engine.clinical.table_stats).

Why: fetching every session document from Chroma and rebuilding facts from it costs ~110 ms per
patient at 100,000 documents; a cohort question over 10,000 patients would take minutes. The
session table holds the same metadata (same build, same generation, checked stamps), so:

- `patient_facts` gives exactly the `Fact` rows `engine.retrieve.facts_from_doc` builds from the
  documents (same order, same values) for the plan's patients, from an index on ``proj_id``;
- `cohort_frame` + `table_stats.compute_cohort_table` give exactly what `engine.clinical.cohort.compute_cohort`
  gives from Fact objects (the tests compare both on the 44-patient and the MA-RAG KB, and every
  statistic with pandas on the source CSV at 2,000 patients), with numpy over one long frame:
  sums are taken in the same left-to-right order as the Python loops, so rounded values agree;
- `table_stats.answer_scope` names the patients a cohort answer talks about (the top of the ranking, ties,
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
from kb_store.profiles import DOMAINS, load_profile


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


def _long_frame(a: dict[str, np.ndarray], off_mask: np.ndarray) -> pd.DataFrame:
    """One row per kept session and scored domain, sorted by patient, visit and domain."""
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
    return long


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
    long = _long_frame(a, off_mask)
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
