"""Facts from the KB's columnar session table (kb_store.fact_table): per-patient fact rows and the
selection of a cohort over any number of patients, vectorised (its index:
engine.clinical.cohort_index; its statistics: engine.clinical.table_stats).

Why: fetching every session document from Chroma and rebuilding facts from it costs ~110 ms per
patient at 100,000 documents; a cohort question over 10,000 patients would take minutes. The
session table holds the same metadata (same build, same generation, checked stamps), so:

- `patient_facts` gives exactly the `Fact` rows `engine.retrieve.facts_from_doc` builds from the
  documents (same order, same values) for the plan's patients, from an index on ``proj_id``, each
  with the caveat `engine.clinical.caveats.mark_facts` would give it, read from the table's codes
  (`caveat_table`, judged once per table generation: the same judgement over the same rows);
- `cohort_frame` + `table_stats.compute_cohort_table` give exactly what `engine.clinical.cohort.compute_cohort`
  gives from Fact objects (the tests compare both on the 44-patient and the MA-RAG KB, and every
  statistic with pandas on the source CSV at 2,000 patients), with numpy over the per-domain
  points of the table's cohort index (built once per table generation; a plan is a mask over
  it): sums are taken in the same left-to-right order as the Python loops, so rounded values
  agree;
- `table_stats.answer_scope` names the patients a cohort answer talks about (the top of the ranking, ties,
  the top of the PDQ-8 ranking): only their facts, series and ledger values are materialised, so
  the final text and the claim check scale with the answer, not with the cohort.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.clinical.caveats import NAMES as CAVEAT_NAMES
from engine.clinical.caveats import CaveatRule, caveat_codes, rule_of
from engine.clinical.cohort_index import CohortIndex, Selection, select
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


def row_facts(r: dict[str, Any], caveat: Mapping[str, int] | None = None) -> list[Fact]:
    """The Fact rows of one table row, as `facts_from_doc` builds them from the document; with
    `caveat` (the row's code per domain, `caveat_table`), each scored fact carries its caveat
    as `engine.clinical.caveats.mark_facts` sets it."""
    prof = load_profile(r["profile"])
    items_all = json.loads(r["items_json"] or "{}")
    out = []
    for dom in DOMAINS:
        miss = r.get(f"missing_{dom}")
        if dom not in prof.domains or miss is None or pd.isna(miss):
            continue
        score = r.get(f"score_{dom}")
        score = None if score is None or pd.isna(score) else float(score)
        code = caveat.get(dom, 0) if caveat is not None and score is not None else 0
        out.append(
            Fact(
                patient=int(r["proj_id"]),
                visit=int(r["visit"]),
                date=str(r["date"]),
                instrument=str(r["instrument"]),
                domain=dom,
                score=score,
                items={c: items_all.get(c) for c in _codes(r["profile"], dom)},
                doc_id=str(r["doc_id"]),
                missing=int(miss),
                profile=str(r["profile"]),
                condition=str(r["condition"] or ""),
                caveat=CAVEAT_NAMES[int(code)],
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


def patient_rows(
    table: FactTable, proj_id: int, instruments: Sequence[str] | None
) -> list[tuple[int, dict]]:
    """One patient's session rows (instrument filter) with their table positions, sorted like
    `KBReader.session_docs`."""
    pos = _index(table).get(int(proj_id))
    if pos is None:
        return []
    cols = _columns(table)
    rows = [(i, {c: a[i] for c, a in cols.items()}) for i in pos.tolist()]
    wanted = set(instruments or ())
    rows = [(i, r) for i, r in rows if not wanted or r["instrument"] in wanted]
    return sorted(rows, key=lambda ir: (ir[1]["visit"], ir[1]["instrument"], ir[1]["doc_id"]))


def patient_facts(
    table: FactTable, proj_id: int, instruments: Sequence[str] | None, rule: CaveatRule
) -> list[tuple[str, list[Fact]]]:
    """[(condition, facts of one session document)] for one patient, in document order, each
    fact with its caveat under `rule` (`caveat_table`: the table's codes, judged once per table
    over each patient's whole OFF record, as `caveats.mark_facts` judges the facts)."""
    codes = caveat_table(table, rule)
    return [
        (str(r["condition"] or ""), row_facts(r, {d: c[i] for d, c in codes.items()}))
        for i, r in patient_rows(table, proj_id, instruments)
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
            "profile": df["profile"].to_numpy(dtype=object),
        }
        for dom in DOMAINS:
            if f"missing_{dom}" in df.columns:
                arr[f"has_{dom}"] = df[f"missing_{dom}"].notna().to_numpy()
                arr[f"score_{dom}"] = df[f"score_{dom}"].to_numpy(dtype=float)
                arr[f"missing_{dom}"] = df[f"missing_{dom}"].fillna(0).to_numpy(dtype=float)
        table.__dict__["_arrays"] = arr
    return arr


def _caveat_codes(a: dict[str, np.ndarray], rule: CaveatRule) -> dict[str, np.ndarray]:
    """Per domain and table row, the caveat code of engine.clinical.caveats (the rule the
    per-patient facts get in engine.retrieve.fetch_facts), judged over each patient's OFF
    sessions of each instrument in visit order; 0 on ON rows."""
    off = np.flatnonzero(~a["on"])
    _, inst = np.unique(a["instrument"][off].astype(str), return_inverse=True)
    order = np.lexsort((a["visit"][off], inst, a["proj_id"][off]))
    rows = off[order]
    key = a["proj_id"][rows] * KEY_INST + inst[order]
    gid = np.cumsum(np.r_[True, key[1:] != key[:-1]]) - 1 if len(rows) else np.array([], np.int64)
    doms = [d for d in DOMAINS if f"has_{d}" in a]
    n_of = {
        (prof, d): len(_codes(prof, d)) if d in load_profile(prof).domains else 0
        for prof in set(a["profile"].tolist())
        for d in doms
    }
    scores = {d: np.where(a[f"has_{d}"][rows], a[f"score_{d}"][rows], np.nan) for d in doms}
    missing = {d: a[f"missing_{d}"][rows] for d in doms}
    profs = a["profile"][rows]
    n_items = {d: np.array([n_of[(p, d)] for p in profs.tolist()], dtype=float) for d in doms}
    codes = caveat_codes(gid, scores, missing, n_items, rule)
    out = {}
    for d in doms:
        full = np.zeros(len(a["proj_id"]), dtype=np.int8)
        full[rows] = codes[d]
        out[d] = full
    return out


KEY_INST = 16  # (patient, instrument) key = patient * KEY_INST + instrument code


def cohort_index(table: FactTable, rule: CaveatRule | None = None) -> CohortIndex:
    """The table's cohort index (engine.clinical.cohort_index), built once per table object and
    caveat rule: a new KB generation is a new table, so it never outlives its rows. Part scores
    with a caveat (partial, possibly not examined) are left out of its points."""
    rule = rule or rule_of(None)
    cache = table.__dict__.setdefault("_cohort_index", {})
    ix = cache.get(rule)
    if ix is None:
        ix = cache[rule] = CohortIndex(_arrays(table), caveat_table(table, rule))
    return ix


def caveat_table(table: FactTable, rule: CaveatRule) -> dict[str, np.ndarray]:
    """Per domain and table row, its caveat code under `rule` (`_caveat_codes`), computed once
    per table object and rule (a new KB generation is a new table)."""
    cache = table.__dict__.setdefault("_caveats", {})
    got = cache.get(rule)
    if got is None:
        got = cache[rule] = _caveat_codes(_arrays(table), rule)
    return got


def cohort_frame(
    table: FactTable,
    patients: Sequence[int],
    instruments: Sequence[str],
    visit_filter: str,
    all_patients: bool = False,
    rule: CaveatRule | None = None,
) -> tuple[Selection, list[str]]:
    """(the selection of the facts the retrieve node would keep, its notes): OFF/untreated
    sessions of `patients` and `instruments` that the visit filter keeps (engine.retrieve:
    baseline, latest and first/last N count each instrument's own assessments; visit_N is the
    shared index), over the table's cohort index. Notes are the retrieve node's, in its order."""
    return select(cohort_index(table, rule), patients, instruments, visit_filter, all_patients)
