"""The session table's cohort index and the selection of one cohort plan over it.

`CohortIndex` holds what a cohort question needs that does not depend on its plan, built once
per table generation and kept on the `FactTable` object the KB reader holds (a new generation is
a new table object, so the index can never outlive its rows):

- per domain, every scored point of the table (row, patient, visit, score, day, date) sorted by
  patient and visit, ties in table order: the order `cohort_frame`'s long frame had, so a plan's
  points are a mask over these arrays and stay sorted;
- per session row, its rank among the patient's OFF scored sessions of its instrument and their
  count (baseline, latest and first/last N count each instrument's own assessments; a patient's
  ranks do not depend on which other patients or instruments a plan selects);
- the (patient, visit) keys of the UPDRS parts, for the per-visit totals.

`select` gives a plan's `Selection`: the session rows the retrieve node would keep (instruments,
patients, OFF/untreated, visit filter) and its notes, in the retrieve node's order and words.
`Selection.view` gives one domain's kept points (`View`), `Selection.totals` the UPDRS totals.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from engine.clinical.visit_filter import select_visits
from kb_store.profiles import DOMAINS, UPDRS_DOMAINS

KEY = 1_000_000  # (patient, visit) key = patient * KEY + visit


@dataclass(frozen=True)
class Points:
    """One domain's scored points: table row, patient, visit, score, day (days since 1970) and
    ISO date, sorted by patient and visit."""

    row: np.ndarray
    pat: np.ndarray
    vis: np.ndarray
    score: np.ndarray
    day: np.ndarray
    date: np.ndarray
    unread: np.ndarray  # the score carries a caveat (engine.clinical.caveats)


def ranks(proj: np.ndarray, visit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row order by patient and visit, 1-based rank of each ordered row within its patient,
    the patient's number of rows) for one instrument's sessions."""
    order = np.lexsort((visit, proj))
    p = proj[order]
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if len(p) else np.array([], int)
    sizes = np.diff(np.r_[starts, len(p)])
    first = np.repeat(starts, sizes)
    return order, np.arange(len(p)) - first + 1, np.repeat(sizes, sizes)


class CohortIndex:
    """Plan-independent arrays of one session table (see the module docstring)."""

    def __init__(self, a: dict[str, np.ndarray], caveat: dict[str, np.ndarray] | None = None):
        """`caveat`: per domain and row, engine.clinical.caveats' code; rows with one are no
        points (no statistic or rank is read from a partial or possibly-not-examined score)."""
        self.a = a
        proj, visit = a["proj_id"], a["visit"]
        self.patients, self.pid = np.unique(proj, return_inverse=True)
        self.scored = np.zeros(len(proj), dtype=bool)
        for dom in DOMAINS:
            if f"has_{dom}" in a:
                self.scored |= a[f"has_{dom}"]
        off_scored = self.scored & ~a["on"]
        self.rank = np.zeros(len(proj), dtype=np.int64)
        self.count = np.zeros(len(proj), dtype=np.int64)
        self._inst: dict[str, np.ndarray] = {}
        for inst in sorted(set(a["instrument"][off_scored].tolist())):
            idx = np.flatnonzero(off_scored & self.inst_mask(inst))
            order, rank, count = ranks(proj[idx], visit[idx])
            self.rank[idx[order]], self.count[idx[order]] = rank, count
        self.points: dict[str, Points] = {}
        for dom in DOMAINS:
            if f"has_{dom}" not in a:
                continue
            s = a[f"score_{dom}"]
            rows = np.flatnonzero(a[f"has_{dom}"] & ~np.isnan(s))
            rows = rows[np.lexsort((visit[rows], proj[rows]))]
            code = caveat.get(dom) if caveat is not None else None
            unread = code[rows] != 0 if code is not None else np.zeros(len(rows), dtype=bool)
            self.points[dom] = Points(
                rows, proj[rows], visit[rows], s[rows], a["day"][rows], a["date"][rows], unread
            )
        ups = [self.points[d] for d in UPDRS_DOMAINS if d in self.points]
        keys = np.concatenate([p.pat * KEY + p.vis for p in ups]) if ups else np.array([], int)
        self.keys = np.unique(keys)
        self.key_of = {
            d: np.searchsorted(self.keys, self.points[d].pat * KEY + self.points[d].vis)
            for d in UPDRS_DOMAINS
            if d in self.points
        }

    def inst_mask(self, inst: str) -> np.ndarray:
        m = self._inst.get(inst)
        if m is None:
            m = self._inst[inst] = self.a["instrument"] == inst
        return m

    def has_patient(self, mask: np.ndarray) -> np.ndarray:
        """Per patient of `self.patients`: whether any row of `mask` is theirs."""
        out = np.zeros(len(self.patients), dtype=bool)
        out[self.pid[mask]] = True
        return out


@dataclass
class View:
    """One domain's kept points of a selection, sorted by patient and visit: patient, visit and
    score arrays; day and date read from `src` at `pos`. Groups are the patients' runs."""

    pat: np.ndarray
    vis: np.ndarray
    y: np.ndarray
    src: Points
    pos: np.ndarray
    unread: np.ndarray | None = None  # per point: carries a caveat (views of every score)

    def __len__(self) -> int:
        return len(self.pat)

    @cached_property
    def start(self) -> np.ndarray:
        p = self.pat
        if not len(p):
            return np.array([], dtype=np.int64)
        return np.concatenate(([0], np.flatnonzero(p[1:] != p[:-1]) + 1))

    @cached_property
    def counts(self) -> np.ndarray:
        return np.diff(np.append(self.start, len(self.pat)))

    @cached_property
    def last(self) -> np.ndarray:
        return self.start + self.counts - 1

    @cached_property
    def g_pat(self) -> np.ndarray:
        return self.pat[self.start]

    def day(self, at: np.ndarray | slice = slice(None)) -> np.ndarray:
        return self.src.day[self.pos[at]]

    def date(self, at: np.ndarray | slice = slice(None)) -> np.ndarray:
        return self.src.date[self.pos[at]]


class Selection:
    """The session rows one cohort plan keeps (`kept`) over a `CohortIndex`, and per domain its
    points (`view`, built on first read); `totals` adds the UPDRS totals and their notes."""

    def __init__(self, index: CohortIndex, kept: np.ndarray):
        self.index = index
        self.kept = kept
        self._views: dict[str, View | None] = {}

    @cached_property
    def empty(self) -> bool:
        """No kept session scores any domain (nothing to analyse)."""
        return not (self.kept & self.index.scored).any()

    @cached_property
    def n_patients(self) -> int:
        """Patients with a kept session scoring at least one domain."""
        return int(self.index.has_patient(self.kept & self.index.scored).sum())

    def view(self, dom: str) -> View | None:
        """The kept points of `dom` without a caveat (slopes, changes)."""
        return self._view(dom, True)

    def view_all(self, dom: str) -> View | None:
        """Every kept point of `dom`, with `unread` (latest values: a patient whose latest
        score carries a caveat has none)."""
        return self._view(dom, False)

    def _view(self, dom: str, readable: bool) -> View | None:
        key = dom if readable else f"all:{dom}"
        if key not in self._views:
            src = self.index.points.get(dom)
            v = None
            if src is not None:
                keep = self.kept[src.row] & (~src.unread if readable else True)
                pos = np.flatnonzero(keep)
                v = View(src.pat[pos], src.vis[pos], src.score[pos], src, pos, src.unread[pos])
            self._views[key] = v if v is not None and len(v) else None
        return self._views[key]

    @cached_property
    def totals(self) -> tuple[View | None, list[str]]:
        """(the UPDRS total of every kept visit with all three parts scored, summed I + II + III
        and dated by the motor exam, `unread` where a part carries a caveat; notes for the
        visits with one or two parts)."""
        ix = self.index
        k = len(ix.keys)
        present = np.zeros(k, dtype=bool)
        cols: dict[str, np.ndarray] = {}
        motor_at = np.full(k, -1, dtype=np.int64)
        unread = np.zeros(k, dtype=bool)
        for d in UPDRS_DOMAINS:
            col = np.full(k, np.nan)
            v = self.view_all(d)
            if v is not None:
                kid = ix.key_of[d][v.pos]
                col[kid] = v.y
                present[kid] = True
                unread[kid] |= v.unread  # type: ignore[arg-type]
                if d == "motor":
                    motor_at[kid] = v.pos
            cols[d] = col
        have = np.vstack([~np.isnan(cols[d]) for d in UPDRS_DOMAINS])
        full = have.all(axis=0)
        notes = []
        for j in np.flatnonzero(present & ~full).tolist():
            parts = sorted(d for i, d in enumerate(UPDRS_DOMAINS) if have[i, j])
            p, vis = divmod(int(ix.keys[j]), KEY)
            notes.append(
                f"Patient {p}, visit {vis}: UPDRS total not computed "
                f"(scored parts: {', '.join(parts)})."
            )
        if not full.any():
            return None, notes
        t_pat, t_vis = np.divmod(ix.keys[full], KEY)
        t_val = (0 + cols["nonmotor"][full]) + cols["adl"][full] + cols["motor"][full]
        src = ix.points["motor"]
        return View(t_pat, t_vis, t_val, src, motor_at[full], unread[full]), notes


# ---------------------------------------------------------------------------------------------
# the plan's selection and its notes
# ---------------------------------------------------------------------------------------------


def kept_by_rank(rank: np.ndarray, count: np.ndarray, visit_filter: str) -> np.ndarray:
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


def _shared_visit(
    ix: CohortIndex, base: np.ndarray, n: int
) -> tuple[np.ndarray, dict[int, list[str]]]:
    """visit_N: the shared visit index (every instrument's visit N); a note for each patient with
    scored sessions but no visit N, naming the visits on record."""
    a = ix.a
    keep = base & (a["visit"] == n)
    missing = ix.has_patient(base) & ~ix.has_patient(keep)
    notes: dict[int, list[str]] = {}
    if missing.any():
        rows = np.flatnonzero(base & missing[ix.pid])
        pv = np.unique(a["proj_id"][rows] * KEY + a["visit"][rows])  # sorted: patient, visit
        pats, visits = np.divmod(pv, KEY)
        cut = np.flatnonzero(np.r_[True, pats[1:] != pats[:-1], True])
        for s, e in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True):
            on_record = ", ".join(map(str, visits[s:e].tolist()))
            notes[int(pats[s])] = [f"no visit {n} (visits on record: {on_record})"]
    return keep, notes


def _visit_selection(
    ix: CohortIndex, base: np.ndarray, instruments: Sequence[str], visit_filter: str
) -> tuple[np.ndarray, dict[int, list[str]]]:
    """(mask of the session rows a visit filter keeps, per-patient notes in the retrieve node's
    order and words) over the OFF sessions in `base` that score at least one domain."""
    m = re.fullmatch(r"visit_(\d+)", visit_filter)
    if m:
        return _shared_visit(ix, base, int(m.group(1)))
    keep = base & kept_by_rank(ix.rank, ix.count, visit_filter)
    notes: dict[int, list[str]] = {}
    said: dict[int, str | None] = {}  # assessments on record -> select_visits' note
    for inst in sorted(instruments):
        last = np.flatnonzero(base & ix.inst_mask(inst) & (ix.rank == ix.count))
        counts = ix.count[last]
        for c in np.unique(counts).tolist():
            if c not in said:
                said[c] = select_visits(list(range(1, c + 1)), visit_filter)[1]
        noted = [c for c, note in said.items() if note]
        if not noted:
            continue
        at = last[np.isin(counts, noted)]
        for p, c in zip(ix.a["proj_id"][at].tolist(), ix.count[at].tolist(), strict=True):
            notes.setdefault(p, []).append(f"{inst}: {said[c]}")
    return keep, notes


def select(
    ix: CohortIndex,
    patients: Sequence[int],
    instruments: Sequence[str],
    visit_filter: str,
    all_patients: bool = False,
) -> tuple[Selection, list[str]]:
    """(the plan's selection, its notes): OFF/untreated sessions of `patients` and
    `instruments` that the visit filter keeps; notes are the retrieve node's, in its order."""
    a = ix.a
    mask = np.zeros(len(a["proj_id"]), dtype=bool)
    for inst in instruments:
        mask |= ix.inst_mask(inst)
    if not all_patients:
        mask &= np.isin(a["proj_id"], np.asarray(list(patients), dtype=np.int64))
    on_mask, off_mask = mask & a["on"], mask & ~a["on"]
    base = off_mask & ix.scored
    per_patient: dict[int, list[str]] = {}
    kept = off_mask
    if visit_filter != "none":
        selected, per_patient = _visit_selection(ix, base, instruments, visit_filter)
        kept = off_mask & selected
    notes = _patient_notes(ix, base, patients, instruments, per_patient)
    if on_mask.any():
        keys = np.unique(a["proj_id"][on_mask] * KEY + a["visit"][on_mask])
        notes.append(
            f"{len(keys)} ON-medication exam session(s) kept apart: ON and OFF exams are not "
            "comparable and are never averaged; the analysis uses OFF/untreated exams."
        )
    return Selection(ix, kept), notes


def _patient_notes(
    ix: CohortIndex,
    base: np.ndarray,
    patients: Sequence[int],
    instruments: Sequence[str],
    per_patient: dict[int, list[str]],
) -> list[str]:
    """Per plan patient in order: no sessions at all, or the visit filter's notes."""
    pats = np.asarray(list(patients), dtype=np.int64)
    if not len(pats):
        return []
    has = ix.has_patient(base)
    at = np.minimum(np.searchsorted(ix.patients, pats), max(len(ix.patients) - 1, 0))
    present = (ix.patients[at] == pats) & has[at] if len(ix.patients) else np.zeros(len(pats), bool)
    need = ~present | np.isin(pats, np.fromiter(per_patient, dtype=np.int64))
    notes: list[str] = []
    for i in np.flatnonzero(need).tolist():
        p = int(pats[i])
        if not present[i]:
            notes.append(
                f"Patient {p}: no {' or '.join(instruments)} sessions in the knowledge base."
            )
        else:
            notes += [f"Patient {p}: {n}." for n in per_patient.get(p, ())]
    return notes
