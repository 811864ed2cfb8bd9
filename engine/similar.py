"""Similar patients ("patients like this one", after DoctorRAG): descriptive, not a prognosis.

Owns the patient feature vector, its standardisation and the distance, all computed once here
from the fact table (session documents' metadata, engine.retrieve.facts_from_doc); the dashboard
and the CLI only render the result. Features per patient (docs/search.md):

- `base:<instrument>:<domain>`: the domain score at the patient's first session of that
  instrument (baseline, DESIGN.md);
- `slope:<instrument>:<domain>`: least-squares slope of the domain score against years since that
  baseline (points per year; dates, because real visits are irregular); needs two sessions on
  different dates, so a one-session patient has none;
- `item:<code>`: the baseline value of the red-flag items of the profile (KEY_ITEMS, from the
  red-flag table of the clinical reference: cognition, hallucinations, light-headedness on
  standing, swallowing, freezing, postural stability, and the MA-RAG study's Falling).

Each feature is standardised over the patients that have it (z = (x - mean) / sd, population sd;
a feature with sd 0 is left out; z is clipped to [-3, 3] so that one extreme value, e.g. a slope
over two sessions a few weeks apart, cannot decide alone). The distance between two patients is
the root mean square, over the target's features, of the z differences; a target feature the
candidate lacks (e.g. a slope, for a one-session candidate) counts as a difference of 1 (one sd):
a penalty, not an imputed value. A candidate must share at least half of the target's features. Order: distance, then patient id (deterministic). The patient itself is never
returned. PPMI ON-exam sessions are left out (the OFF/untreated exam is the comparable one).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.clinical.series import least_squares_slope
from engine.retrieve import facts_from_doc
from engine.types import Fact
from kb_store.profiles import DOMAIN_LABELS, load_profile

#: Red-flag items per profile (clinical-scales.md, "Items clinicians treat as red flags").
KEY_ITEMS: dict[str, tuple[str, ...]] = {
    "mds-updrs": ("NP1COG", "NP1HALL", "NP1LTHD", "NP2SWAL", "NP2FREZ", "NP3PSTBL"),
    "marag-updrs44": (
        "COGNITION",
        "HALLUCINATION",
        "LIGHT_HEADED",
        "CHEW_SWALLOW_PROB",
        "FREEZE_GAIT_PROB",
        "POS_STABILITY_PROB",
        "FALL_PROB",
    ),
}
DAYS_PER_MONTH = 365.25 / 12
MIN_SHARED = 0.5  # a candidate shares at least half of the target's features
Z_CLIP = 3.0
MISSING_PENALTY = 1.0  # z difference counted for a target feature the candidate lacks


@dataclass(frozen=True)
class Feature:
    name: str
    label: str
    target: float
    value: float
    z_diff: float  # |z(target) - z(value)|

    def to_json(self) -> dict:
        return {
            "feature": self.name,
            "label": self.label,
            "target": _r(self.target),
            "value": _r(self.value),
            "z_diff": round(self.z_diff, 3),
        }


@dataclass(frozen=True)
class Neighbour:
    patient: int
    distance: float
    features: tuple[Feature, ...]  # shared features, closest first
    sessions: int

    def reasons(self, n: int = 3) -> str:
        """The n closest shared features, items both scored 0 last (they say little)."""
        ranked = sorted(
            self.features,
            key=lambda f: (f.name.startswith("item:") and f.value == 0 and f.target == 0,),
        )
        return ", ".join(f"{f.label} {_fmt(f.value)} vs {_fmt(f.target)}" for f in ranked[:n])

    def to_json(self) -> dict:
        return {
            "patient": self.patient,
            "distance": round(self.distance, 4),
            "features": [f.to_json() for f in self.features],
            "n_features": len(self.features),
            "sessions": self.sessions,
            "why": self.reasons(),
        }


@dataclass(frozen=True)
class SimilarResult:
    patient: int
    instrument: str | None
    features: dict[str, float]  # the target's raw features
    neighbours: tuple[Neighbour, ...]
    excluded: tuple[tuple[int, str], ...] = ()  # (patient, reason) of candidates left out
    note: str = (
        "Descriptive: these patients had a similar baseline and course in this knowledge base. "
        "It is not a prognosis for this patient."
    )

    def to_json(self) -> dict:
        return {
            "patient": self.patient,
            "instrument": self.instrument,
            "features": {k: _r(v) for k, v in sorted(self.features.items())},
            "patients": [n.to_json() for n in self.neighbours],
            "excluded": [{"patient": p, "reason": r} for p, r in self.excluded],
            "note": self.note,
        }


@dataclass
class CohortFeatures:
    """Raw features per patient and the standardisation of each feature over the cohort."""

    raw: dict[int, dict[str, float]]
    sessions: dict[int, int]
    mean: dict[str, float] = field(default_factory=dict)
    sd: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values: dict[str, list[float]] = defaultdict(list)
        for feats in self.raw.values():
            for k, v in feats.items():
                values[k].append(v)
        for k, vs in values.items():
            m = sum(vs) / len(vs)
            sd = math.sqrt(sum((v - m) ** 2 for v in vs) / len(vs))
            if sd > 1e-12:
                self.mean[k], self.sd[k] = m, sd

    def z(self, patient: int) -> dict[str, float]:
        return {
            k: max(-Z_CLIP, min(Z_CLIP, (v - self.mean[k]) / self.sd[k]))
            for k, v in self.raw.get(patient, {}).items()
            if k in self.sd
        }


def usable(facts: Iterable[Fact], instrument: str | None = None) -> list[Fact]:
    return [
        f
        for f in facts
        if f.condition in ("", "OFF") and (instrument is None or f.instrument == instrument)
    ]


def _years(d0: str, d: str) -> float:
    return (dt.date.fromisoformat(d) - dt.date.fromisoformat(d0)).days / 365.25


def patient_features(facts: Sequence[Fact]) -> dict[str, float]:
    """The raw feature vector of one patient's facts (missing values stay missing)."""
    out: dict[str, float] = {}
    by_inst: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        by_inst[f.instrument].append(f)
    for inst, fs in sorted(by_inst.items()):
        first = min((f.date, f.visit) for f in fs)
        base = [f for f in fs if (f.date, f.visit) == first]
        by_dom: dict[str, list[Fact]] = defaultdict(list)
        for f in fs:
            if f.score is not None:
                by_dom[f.domain].append(f)
        for f in base:
            if f.score is not None:
                out[f"base:{inst}:{f.domain}"] = float(f.score)
            for code in KEY_ITEMS.get(f.profile, ()):
                v = f.items.get(code)
                if v is not None:
                    out[f"item:{code}"] = float(v)
        for dom, dfs in sorted(by_dom.items()):
            slope = least_squares_slope(
                [_years(first[0], f.date) for f in dfs],
                [float(f.score) for f in dfs],  # type: ignore[arg-type]
            )
            if slope is not None:
                out[f"slope:{inst}:{dom}"] = slope
    return out


def cohort_features(facts: Iterable[Fact], instrument: str | None = None) -> CohortFeatures:
    by_patient: dict[int, list[Fact]] = defaultdict(list)
    for f in usable(facts, instrument):
        by_patient[f.patient].append(f)
    return CohortFeatures(
        raw={p: patient_features(fs) for p, fs in sorted(by_patient.items())},
        sessions={p: len({(f.visit, f.instrument) for f in fs}) for p, fs in by_patient.items()},
    )


def feature_label(name: str) -> str:
    kind, *rest = name.split(":")
    if kind == "base":
        inst, dom = rest
        return f"{DOMAIN_LABELS.get(dom, dom)} at baseline ({inst})"
    if kind == "slope":
        inst, dom = rest
        return f"{DOMAIN_LABELS.get(dom, dom)} slope per year ({inst})"
    code = rest[0]
    for prof in KEY_ITEMS:
        if code in KEY_ITEMS[prof]:
            return f"{load_profile(prof).item(code).label} at baseline"
    return code


def similar_patients(
    facts: Iterable[Fact], patient: int, k: int = 5, instrument: str | None = None
) -> SimilarResult:
    """The k patients closest to `patient` (never itself); ValueError for an unknown id."""
    if k < 1:
        raise ValueError(f"--k must be at least 1, got {k}")
    facts = list(facts)
    known = sorted({f.patient for f in facts})
    if patient not in known:
        raise ValueError(
            f"unknown patient id {patient}; the KB has {len(known)} patients "
            f"({', '.join(map(str, known[:20]))}{', ...' if len(known) > 20 else ''})"
        )
    cf = cohort_features(facts, instrument)
    target_raw = cf.raw.get(patient, {})
    if not target_raw:
        raise ValueError(
            f"patient {patient} has no {instrument or ''} sessions to compare".replace("  ", " ")
        )
    zt = cf.z(patient)
    out: list[Neighbour] = []
    excluded: list[tuple[int, str]] = []
    for other in sorted(cf.raw):
        if other == patient:
            continue
        zo = cf.z(other)
        shared = sorted(set(zt) & set(zo))
        if not zt or len(shared) < MIN_SHARED * len(zt):
            excluded.append(
                (other, f"shares {len(shared)} of the patient's {len(zt)} features (too few)")
            )
            continue
        diffs = {f: abs(zt[f] - zo[f]) for f in shared}
        lacking = len(zt) - len(shared)
        dist = math.sqrt(
            (sum(d * d for d in diffs.values()) + lacking * MISSING_PENALTY**2) / len(zt)
        )
        feats = tuple(
            Feature(f, feature_label(f), target_raw[f], cf.raw[other][f], diffs[f])
            for f in sorted(shared, key=lambda f: (diffs[f], f))
        )
        out.append(Neighbour(other, dist, feats, cf.sessions.get(other, 0)))
    out.sort(key=lambda n: (round(n.distance, 12), n.patient))
    return SimilarResult(patient, instrument, dict(target_raw), tuple(out[:k]), tuple(excluded))


def trajectories(
    facts: Iterable[Fact], patients: Sequence[int], instrument: str = "updrs"
) -> list[dict[str, Any]]:
    """Rows (patient, months since the patient's baseline, date, visit, domain, score) for the
    overlay chart: each patient aligned at its own first session of `instrument`."""
    rows: list[dict[str, Any]] = []
    by_patient: dict[int, list[Fact]] = defaultdict(list)
    for f in usable(facts, instrument):
        if f.patient in patients and f.score is not None:
            by_patient[f.patient].append(f)
    for p in patients:
        fs = by_patient.get(p, [])
        if not fs:
            continue
        d0 = dt.date.fromisoformat(min(f.date for f in fs))
        for f in sorted(fs, key=lambda f: (f.date, f.visit, f.domain)):
            months = (dt.date.fromisoformat(f.date) - d0).days / DAYS_PER_MONTH
            rows.append(
                {
                    "patient": p,
                    "months": round(months, 2),
                    "date": f.date,
                    "visit": f.visit,
                    "domain": f.domain,
                    "score": f.score,
                }
            )
    return rows


def kb_facts(kb: Any) -> list[Fact]:
    """The fact table of every session document in the KB."""
    if hasattr(kb, "all_docs"):
        docs = [d for d, _ in kb.all_docs(("session",))]
    else:
        docs = [d for p in kb.patient_ids() for d in kb.session_docs(p)]
    return [f for d in docs for f in facts_from_doc(d)]


def _r(x: float) -> float:
    return round(float(x), 3)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"
