"""Seeded synthetic cohort generator: item-level MDS-UPDRS Parts I-III and PDQ-8 in the generic CSV.

This module owns the synthetic data the product ships and tests against. It writes the generic
session CSV of the ingest contract (one row per patient visit: ``proj_id``, ``date``, patient
descriptors ``sex``, ``age``, ``hoehn_yahr``, ``disease_duration_years``, then the item codes of the
``mds-updrs`` profile, Parts I-III, and of ``pdq8``). Same seed, same bytes.

Default shape follows the MA-RAG paper's cohort: 44 patients (9 female, 35 male), mean age about 67,
disease duration about 4.3 years, Hoehn & Yahr 1-3, 4 sessions over 24 weeks (weeks 0, 8, 16, 24,
later visits jittered by up to +/-5 days).

Latent-severity model (all numbers from /work/shared/reference/clinical-scales.md):
- each patient has a latent severity z ~ N(0, 1); baselines are mean + sd * (rho * z + noise) with
  rho = 0.7 (cross-domain correlation), around the mixed-stage values of Goetz 2008
  (Part I 11.5 (7.0), Part II 16.0 (10.0), Part III 36.8 (18.4); sds narrowed for a mild-moderate
  cohort) and PDQ-8 raw ~9 (an assumption: no reference value on the sheet);
- progression per year from Holden 2018 (Part I +0.92, Part II +0.99, Part III +2.4; PDQ-8 +0.6 raw
  is an assumption), varied per patient;
- test-retest noise per visit (Part I sd 2, Part II sd 2.5, Part III sd 4 i.e. ICC ~0.9, PDQ-8 sd 1.5);
- item scores 0-4 are drawn so that each domain's item sum equals the integer target: patient-level
  item weights (rarer items such as hallucinations or freezing weigh less; one body side is more
  affected), jittered per visit, allocated with capacity 4 per item and largest-remainder rounding.

Deliberate cases (ids fixed; a case is skipped when the cohort has fewer patients):
- 3  incongruence: at visit 2 every Part I item is 0 while Part III is >= 40 (moderate or worse).
- 5  red flag: hallucinations (NP1HALL) new at visit 3 (= 2) and visit 4 (= 3); 0 before.
- 6  red flag: postural stability (NP3PSTBL) = 3 at the last visit (H&Y 3).
- 7  red flag: PDQ-8 item 3 (felt depressed) = 4 at visit 2.
- 12 improving: treatment start between visits 2 and 3, Part III drops from ~38 to ~24 (> MCID).
- 17 fast-worsening: Part III +7, Part II +3, Part I +2, PDQ-8 +2 per visit.
- 21 missed visit: the third scheduled session is absent (3 sessions: weeks 0, 8, 24).
- 26 missing PDQ-8: visit 2 has MDS-UPDRS items but every PDQ-8 item is blank.
- 30-35 mixed raw timestamp formats, one per patient: 2021/03/15, 03/15/2021, 15.03.2021,
  2021-03-15 13:54:00, 2021-03-15T13:54:00Z, Mar 15 2021.
- 37 month-only dates (03/2021), as PPMI's INFODT: ingest keeps them with a warning.
Every other date is ISO (2021-03-15).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from kb_store.profiles import UPDRS_DOMAINS, load_profile

DESCRIPTOR_COLUMNS = ("sex", "age", "hoehn_yahr", "disease_duration_years")

#: proj_id -> what is deliberate about that patient (documented in docs/knowledge-base.md).
DELIBERATE_CASES: dict[int, str] = {
    3: "incongruence: visit 2 has Part I = 0 while Part III >= 40",
    5: "red flag: hallucinations NP1HALL = 2 at visit 3 and 3 at visit 4 (new onset)",
    6: "red flag: postural stability NP3PSTBL = 3 at the last visit",
    7: "red flag: PDQ-8 item 3 (felt depressed) = 4 at visit 2",
    12: "improving: treatment start between visits 2 and 3, Part III drops sharply",
    17: "fast-worsening: Part III +7, Part II +3, Part I +2, PDQ-8 +2 per visit",
    21: "missed visit: third scheduled session absent (3 sessions)",
    26: "missing PDQ-8 at visit 2 (MDS-UPDRS present)",
    30: "date format 2021/03/15",
    31: "date format 03/15/2021",
    32: "date format 15.03.2021",
    33: "date format 2021-03-15 13:54:00",
    34: "date format 2021-03-15T13:54:00Z",
    35: "date format Mar 15 2021",
    37: "month-only dates 03/2021 (ingest warns)",
}
INCONGRUENT, HALLUCINATIONS, POSTURAL, PDQ_RED = 3, 5, 6, 7
IMPROVING, WORSENING, MISSED_VISIT, MISSING_PDQ8 = 12, 17, 21, 26
DATE_FORMATS: dict[int, str] = {
    30: "%Y/%m/%d",
    31: "%m/%d/%Y",
    32: "%d.%m.%Y",
    33: "%Y-%m-%d 13:54:00",
    34: "%Y-%m-%dT13:54:00Z",
    35: "%b %d %Y",
    37: "%m/%Y",
}

# Baseline mean / sd, progression per year, test-retest noise sd (see module docstring).
BASELINE = {"nonmotor": (11.8, 5.0), "adl": (17.0, 7.0), "motor": (33.0, 11.0), "qol": (9.0, 4.5)}
RATE_PER_YEAR = {"nonmotor": 0.92, "adl": 0.99, "motor": 2.4, "qol": 0.6}
NOISE_SD = {"nonmotor": 2.0, "adl": 2.5, "motor": 4.0, "qol": 1.5}
CROSS_DOMAIN_RHO = 0.7
VISIT_SPACING_DAYS = 56  # 8 weeks: weeks 0, 8, 16, 24 for 4 visits
#: Items that are rarely affected carry less weight in the item allocation.
RARE_ITEMS = {
    "NP1HALL": 0.25,
    "NP1DDS": 0.15,
    "NP1COG": 0.6,
    "NP2SWAL": 0.4,
    "NP2FREZ": 0.35,
    "NP3FRZGT": 0.25,
    "NP3PSTBL": 0.45,
    "NP3RTALJ": 0.2,
    "NP3RTARL": 0.4,
    "NP3RTALL": 0.4,
    "NP3RIGN": 0.8,
    "PDQ8_4": 0.6,
    "PDQ8_8": 0.7,
}
#: Red-flag items are capped below their red-flag threshold outside the deliberate cases, so the
#: only red flags on these items are the documented ones.
ITEM_CAPS = {"NP1HALL": 1, "NP1DDS": 1, "NP3PSTBL": 2}
RIGHT_ITEMS = frozenset(
    {
        "NP3RIGRU",
        "NP3RIGRL",
        "NP3FTAPR",
        "NP3HMOVR",
        "NP3PRSPR",
        "NP3TTAPR",
        "NP3LGAGR",
        "NP3PTRMR",
        "NP3KTRMR",
        "NP3RTARU",
        "NP3RTARL",
    }
)
LEFT_ITEMS = frozenset(
    {
        "NP3RIGLU",
        "NP3RIGLL",
        "NP3FTAPL",
        "NP3HMOVL",
        "NP3PRSPL",
        "NP3TTAPL",
        "NP3LGAGL",
        "NP3PTRML",
        "NP3KTRML",
        "NP3RTALU",
        "NP3RTALL",
    }
)


def default_sample_path() -> Path:
    """The shipped default sample (seed 7, 44 patients, 4 visits)."""
    return Path(str(resources.files("kb_store") / "data" / "synthetic_default.csv"))


def item_codes(domain: str) -> list[str]:
    if domain == "qol":
        return [i.code for i in load_profile("pdq8").items]
    return [i.code for i in load_profile("mds-updrs").items_of(domain)]


def columns() -> list[str]:
    cols = ["proj_id", "date", *DESCRIPTOR_COLUMNS]
    for dom in (*UPDRS_DOMAINS, "qol"):
        cols += item_codes(dom)
    return cols


def generate(patients: int = 44, visits: int = 4, seed: int = 7) -> pd.DataFrame:
    """The cohort as a DataFrame in the generic CSV layout (items as nullable integers)."""
    if patients < 1 or visits < 1:
        raise ValueError(f"patients and visits must be >= 1 (got {patients}, {visits})")
    rng = np.random.default_rng(seed)
    P, V = patients, visits
    # the steps draw from `rng` in this order; reordering them changes every cohort
    desc = _descriptors(rng, P)
    day, years = _visit_days(rng, P, V)
    targets = _domain_targets(rng, desc.z, years, P, V)
    _deliberate_targets(targets, desc.hy, P, V)
    items = _item_scores(rng, targets, P, V)
    _deliberate_items(items, P, V)
    return _assemble(desc, day, items, P, V)


@dataclass
class _Descriptors:
    """Per-patient draws: latent severity and the descriptor columns."""

    z: np.ndarray  # latent severity
    sex: np.ndarray
    age: np.ndarray
    duration: np.ndarray
    hy: np.ndarray


def _descriptors(rng: np.random.Generator, P: int) -> _Descriptors:
    z = rng.standard_normal(P)  # latent severity
    n_female = int(round(P * 9 / 44))
    sex = np.array(["M"] * P, dtype=object)
    sex[rng.permutation(P)[:n_female]] = "F"
    age = rng.normal(67.0, 8.5, P)
    age = np.clip(np.round(age - age.mean() + 67.0), 40, 90).astype(int)
    duration = rng.gamma(2.5, 1.0, P) * np.exp(0.35 * z)
    duration = np.clip(np.round(duration / duration.mean() * 4.3, 1), 0.3, 25.0)
    hy = np.where(z < -0.6, 1, np.where(z < 0.9, 2, 3)).astype(int)
    return _Descriptors(z, sex, age, duration, hy)


def _visit_days(rng: np.random.Generator, P: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    """(day offset of each visit from the start date, years since the patient's first visit)."""
    base_day = rng.integers(0, 540, P)
    jitter = rng.integers(-5, 6, (P, V))
    jitter[:, 0] = 0
    day = base_day[:, None] + VISIT_SPACING_DAYS * np.arange(V)[None, :] + jitter  # (P, V)
    years = (day - day[:, :1]) / 365.25
    return day, years


def _domain_targets(
    rng: np.random.Generator, z: np.ndarray, years: np.ndarray, P: int, V: int
) -> dict[str, np.ndarray]:
    """Latent domain totals (P, V): baseline, per-patient rate and visit noise."""
    targets: dict[str, np.ndarray] = {}
    for dom in (*UPDRS_DOMAINS, "qol"):
        mean, sd = BASELINE[dom]
        rho = CROSS_DOMAIN_RHO if dom != "qol" else 0.6
        base = mean + sd * (rho * z + np.sqrt(1 - rho**2) * rng.standard_normal(P))
        rate = RATE_PER_YEAR[dom] * (1 + 0.5 * rng.standard_normal(P) + 0.3 * z)
        noise = NOISE_SD[dom] * rng.standard_normal((P, V))
        targets[dom] = base[:, None] + rate[:, None] * years + noise
    return targets


def _deliberate_targets(targets: dict[str, np.ndarray], hy: np.ndarray, P: int, V: int) -> None:
    """The documented trajectory cases (incongruent, improving, worsening, postural), in place."""
    k = np.arange(V)
    if P >= INCONGRUENT:
        i = INCONGRUENT - 1
        targets["motor"][i] = np.maximum(targets["motor"][i], 44.0 + 1.5 * k)
        hy[i] = max(hy[i], 2)
    if P >= IMPROVING:
        i = IMPROVING - 1
        targets["motor"][i] = np.where(k < 2, 38.0 + k, 24.0 - (k - 2))
        targets["adl"][i] = np.where(k < 2, 17.0, 14.0)
    if P >= WORSENING:
        i = WORSENING - 1
        targets["motor"][i] = 30.0 + 7.0 * k
        targets["adl"][i] = 14.0 + 3.0 * k
        targets["nonmotor"][i] = 10.0 + 2.0 * k
        targets["qol"][i] = 8.0 + 2.0 * k
    if P >= POSTURAL:
        hy[POSTURAL - 1] = 3


def _item_scores(
    rng: np.random.Generator, targets: dict[str, np.ndarray], P: int, V: int
) -> dict[str, np.ndarray]:
    """Item scores (P, V, items) per domain whose sums are the rounded domain targets."""
    items: dict[str, np.ndarray] = {}
    side = rng.integers(0, 2, P)  # 0: right more affected, 1: left
    for dom in (*UPDRS_DOMAINS, "qol"):
        codes = item_codes(dom)
        n = len(codes)
        w = np.array([RARE_ITEMS.get(c, 1.0) for c in codes])
        lat = np.ones((P, n))
        for j, c in enumerate(codes):
            if c in RIGHT_ITEMS or c in LEFT_ITEMS:
                lat[:, j] = np.where((side == 0) == (c in RIGHT_ITEMS), 1.4, 0.7)
        pw = w[None, :] * lat * rng.gamma(2.0, 0.5, (P, n))  # patient-level item profile
        vw = np.repeat(pw, V, axis=0) * rng.lognormal(0.0, 0.3, (P * V, n))
        # floor 1: outside the deliberate case no domain sums to 0 (so incongruence is only case 3)
        total = np.clip(np.round(targets[dom]).reshape(-1), 1, 4 * n).astype(int)
        cap = np.array([ITEM_CAPS.get(c, 4) for c in codes])
        total = np.minimum(total, int(cap.sum()))
        items[dom] = allocate(total, vw, cap).reshape(P, V, n)
    return items


def _deliberate_items(items: dict[str, np.ndarray], P: int, V: int) -> None:
    """The documented item-level cases (blank non-motor visit, hallucinations, postural
    instability, PDQ-8 red flag), in place."""
    nm_codes, mo_codes, q_codes = item_codes("nonmotor"), item_codes("motor"), item_codes("qol")
    if P >= INCONGRUENT and V >= 2:
        items["nonmotor"][INCONGRUENT - 1, 1, :] = 0
    if P >= HALLUCINATIONS:
        j = nm_codes.index("NP1HALL")
        items["nonmotor"][HALLUCINATIONS - 1, :, j] = 0
        for v, val in ((2, 2), (3, 3)):
            if v < V:
                items["nonmotor"][HALLUCINATIONS - 1, v, j] = val
    if P >= POSTURAL:
        items["motor"][POSTURAL - 1, V - 1, mo_codes.index("NP3PSTBL")] = 3
    if P >= PDQ_RED and V >= 2:
        items["qol"][PDQ_RED - 1, 1, q_codes.index("PDQ8_3")] = 4


def _assemble(
    desc: _Descriptors, day: np.ndarray, items: dict[str, np.ndarray], P: int, V: int
) -> pd.DataFrame:
    """The rows in the generic CSV layout, with the missed visit and the blank PDQ-8 session."""
    start = dt.date(2021, 1, 4)
    ids = np.arange(1, P + 1)
    data: dict[str, np.ndarray] = {
        "proj_id": np.repeat(ids, V),
        "date": np.array(
            [
                _fmt_date(start, d, f)
                for d, f in zip(
                    day.reshape(-1),
                    np.repeat([DATE_FORMATS.get(int(p), "%Y-%m-%d") for p in ids], V),
                    strict=True,
                )
            ],
            dtype=object,
        ),
        "sex": np.repeat(desc.sex, V),
        "age": np.repeat(desc.age, V),
        "hoehn_yahr": np.repeat(desc.hy, V),
        "disease_duration_years": np.repeat(desc.duration, V),
    }
    for dom in (*UPDRS_DOMAINS, "qol"):
        flat = items[dom].reshape(P * V, -1)
        for j, c in enumerate(item_codes(dom)):
            data[c] = flat[:, j]
    df = pd.DataFrame(data)
    for c in df.columns[len(DESCRIPTOR_COLUMNS) + 2 :]:
        df[c] = df[c].astype("Int64")
    keep = np.ones(P * V, dtype=bool)
    if P >= MISSED_VISIT and V >= 3:
        keep[(MISSED_VISIT - 1) * V + 2] = False
    if P >= MISSING_PDQ8 and V >= 2:
        df.loc[(MISSING_PDQ8 - 1) * V + 1, item_codes("qol")] = pd.NA
    return df[keep].reset_index(drop=True)[columns()]


def allocate(total: np.ndarray, weights: np.ndarray, cap: np.ndarray | int = 4) -> np.ndarray:
    """Integer item scores in [0, cap] per row whose sum equals `total` (rows x items), spread in
    proportion to `weights` (water-filling under the per-item cap, then largest-remainder
    rounding). Requires total <= sum(cap)."""
    total = total.astype(float)
    cap = np.broadcast_to(np.asarray(cap, dtype=float), weights.shape[1:])[None, :]
    alloc = np.zeros_like(weights, dtype=float)
    for _ in range(weights.shape[1] + 1):
        remaining = total - alloc.sum(axis=1)
        if np.all(remaining < 1e-9):
            break
        free = np.where(alloc < cap - 1e-12, weights, 0.0)
        fsum = free.sum(axis=1, keepdims=True)
        add = np.divide(remaining[:, None] * free, fsum, out=np.zeros_like(free), where=fsum > 0)
        alloc = np.minimum(alloc + add, cap)
    base = np.floor(alloc + 1e-9)
    frac = np.where(base < cap, alloc - base, -1.0)
    short = np.round(total - base.sum(axis=1)).astype(int)
    order = np.argsort(-frac, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(weights.shape[1])[None, :].repeat(len(total), 0), 1)
    return (base + (ranks < short[:, None])).astype(int)


def _fmt_date(start: dt.date, day: int, fmt: str) -> str:
    return (start + dt.timedelta(days=int(day))).strftime(fmt)


def write_csv(df: pd.DataFrame, out: str | Path) -> Path:
    """Write the cohort CSV byte-reproducibly (LF line endings, blanks for missing items)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, lineterminator="\n")
    return out
