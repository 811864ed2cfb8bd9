"""Typed records that cross module boundaries: the plan, fact rows, ledger values and the result.

The JSON shape of `Result.to_json()` is the `marag ask --json` contract of DESIGN.md.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Analysis = Literal["trajectory", "comparison", "cohort", "single_session"]
ANALYSES: tuple[str, ...] = ("trajectory", "comparison", "cohort", "single_session")
INSTRUMENTS: tuple[str, ...] = ("updrs", "pdq8")
VISIT_FILTER_RE = re.compile(
    r"^(none|baseline|latest_visit|baseline_vs_latest|visit_[1-9]\d*|first_[1-9]\d*_visits|last_[1-9]\d*_visits)$"
)


@dataclass(frozen=True)
class Plan:
    patients: tuple[int, ...]  # empty = every patient in the KB
    analysis: str = "trajectory"
    instruments: tuple[str, ...] = ("updrs", "pdq8")
    visit_filter: str = "none"
    query: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "patients", tuple(int(p) for p in self.patients))
        object.__setattr__(self, "instruments", tuple(self.instruments))
        if self.analysis not in ANALYSES:
            raise ValueError(
                f"analysis must be one of {', '.join(ANALYSES)}, got {self.analysis!r}"
            )
        bad = [i for i in self.instruments if i not in INSTRUMENTS]
        if bad or not self.instruments:
            raise ValueError(
                f"instruments must be a non-empty subset of updrs, pdq8, got {list(self.instruments)}"
            )
        if not VISIT_FILTER_RE.match(self.visit_filter):
            raise ValueError(
                "visit_filter must be none, baseline, latest_visit, baseline_vs_latest, visit_N, "
                f"first_N_visits or last_N_visits; got {self.visit_filter!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "patients": list(self.patients),
            "analysis": self.analysis,
            "instruments": list(self.instruments),
            "visit_filter": self.visit_filter,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], query: str = "") -> Plan:
        return cls(
            patients=tuple(d.get("patients") or ()),
            analysis=d.get("analysis", "trajectory"),
            instruments=tuple(d.get("instruments") or ("updrs", "pdq8")),
            visit_filter=d.get("visit_filter", "none"),
            query=query,
        )


@dataclass(frozen=True)
class Fact:
    """One row of the fact table F: a domain score of one patient at one visit."""

    patient: int
    visit: int
    date: str  # ISO date
    instrument: str
    domain: str
    score: float | None
    items: dict[str, float | None]
    doc_id: str
    missing: int = 0  # items missing from the domain sum (partial when > 0)
    profile: str = ""
    condition: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Kinds of value a number in a summary may claim (issue 6's claim kinds).
ValueKind = Literal[
    "score",
    "item",
    "delta",
    "cumulative",
    "slope",
    "slope_year",
    "max",
    "min",
    "mean",
    "count",
    "threshold",
    "visit",
    "date",
    "pdq8_si",
    "rank",
]


@dataclass(frozen=True)
class FactValue:
    """One number the facts support, with its context. The ledger of a run is the list of these:
    computed in code from F and contexts, it is what generation may say and grounding checks."""

    kind: str  # one of ValueKind
    value: float
    patient: int | None = None
    visit: int | None = None
    domain: str | None = None
    item: str | None = None  # item code (kind == "item") or threshold name
    date: str | None = None
    label: str = ""  # human description, e.g. "motor change from baseline to visit 3"
    tolerance: float = 0.0  # accepted absolute difference (rounded slopes and means)
    source: str = ""  # doc id, "computed", or "contexts/<file>"


@dataclass
class TraceEntry:
    node: str
    ms: float
    llm_calls: int = 0
    note: str = ""


@dataclass
class Result:
    plan: Plan
    facts: list[Fact] = field(default_factory=list)
    table_b: list[dict[str, Any]] = field(default_factory=list)
    cohort: dict[str, Any] | None = None
    flags: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"incongruence": [], "red_flags": []}
    )
    narratives: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    verification: dict[str, Any] = field(default_factory=dict)
    screening: list[dict[str, Any]] = field(default_factory=list)
    ledger: list[FactValue] = field(default_factory=list)
    llm_calls: int = 0
    trace: list[TraceEntry] = field(default_factory=list)
    backend: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "facts": [f.to_dict() for f in self.facts],
            "table_b": self.table_b,
            "cohort": self.cohort,
            "flags": self.flags,
            "narratives": self.narratives,
            "prompts": self.prompts,
            "summary": self.summary,
            "verification": self.verification,
            "screening": self.screening,
            "llm_calls": self.llm_calls,
            "trace": [asdict(t) for t in self.trace],
            "backend": self.backend,
        }
