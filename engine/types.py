"""Typed records that cross module boundaries: the plan, fact rows, ledger values and the result.

The JSON shape of `Result.to_json()` is the `marag ask --json` contract of DESIGN.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

Analysis = Literal["trajectory", "comparison", "cohort", "single_session"]
ANALYSES: tuple[str, ...] = ("trajectory", "comparison", "cohort", "single_session")
INSTRUMENTS: tuple[str, ...] = ("updrs", "pdq8")
#: cohort statistic a plan may fix ("" = chosen from the query's words)
STATISTICS: tuple[str, ...] = ("latest", "change", "slope_visit", "slope_year", "mean")
#: an item question's statistic: "item:<red-flag rule id>" (engine.clinical.item_cohort)
ITEM_STATISTIC_RE = re.compile(r"^item:[a-z0-9_]+$")
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
    # cohort: latest | change | slope_visit | slope_year | mean | item:<concept>; "" = auto
    statistic: str = ""

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
        if (
            self.statistic
            and self.statistic not in STATISTICS
            and not ITEM_STATISTIC_RE.match(self.statistic)
        ):
            raise ValueError(
                f"statistic must be one of {', '.join(STATISTICS)} or item:<concept>, "
                f"got {self.statistic!r}"
            )
        if not VISIT_FILTER_RE.match(self.visit_filter):
            raise ValueError(
                "visit_filter must be none, baseline, latest_visit, baseline_vs_latest, visit_N, "
                f"first_N_visits or last_N_visits; got {self.visit_filter!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "patients": list(self.patients),
            "analysis": self.analysis,
            "instruments": list(self.instruments),
            "visit_filter": self.visit_filter,
        }
        if self.statistic:
            d["statistic"] = self.statistic
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], query: str = "") -> Plan:
        return cls(
            patients=tuple(d.get("patients") or ()),
            analysis=d.get("analysis", "trajectory"),
            instruments=tuple(d.get("instruments") or ("updrs", "pdq8")),
            visit_filter=d.get("visit_filter", "none"),
            query=query,
            statistic=d.get("statistic", "") or "",
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
    #: engine.clinical.caveats: "" (read), partial, zero_session, zero_always or zero_part
    caveat: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not self.caveat:
            del d["caveat"]  # rows without a caveat read as before
        return d


#: Kinds of value a number in a summary may claim (the claim kinds of claim accuracy).
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

    @classmethod
    def make(
        cls,
        kind: str,
        value: float,
        patient: int | None = None,
        visit: int | None = None,
        domain: str | None = None,
        item: str | None = None,
        date: str | None = None,
        label: str = "",
        tolerance: float = 0.0,
        source: str = "",
    ) -> FactValue:
        """The same value as `FactValue(...)`, built without the frozen dataclass's per-field
        `object.__setattr__` (a cohort answer's ledger builds thousands)."""
        obj = object.__new__(cls)
        obj.__dict__.update(
            kind=kind,
            value=value,
            patient=patient,
            visit=visit,
            domain=domain,
            item=item,
            date=date,
            label=label,
            tolerance=tolerance,
            source=source,
        )
        return obj


@dataclass(frozen=True)
class Change:
    value: float
    label: str  # improved | worsened | stable | unchanged
    significance: str  # "at or above MCID 4.63" | "below MCID 4.63" | "direction only" (no MCID)
    mcid: float | None  # the threshold compared against (signed), when there is one

    def text(self) -> str:
        return f"{self.label}; {self.significance}"


@dataclass(frozen=True)
class SeriesRow:
    patient: int
    visit: int
    date: str
    domain: str
    profile: str
    score: float | None
    missing: int
    severity: str | None
    prev_visit: int | None
    delta: Change | None
    ref_visit: int  # the visit cumulative change is measured from (1 = baseline)
    cumulative: Change | None
    doc_id: str
    instrument: str = ""
    caveat: str = ""  # the fact's caveat (engine.clinical.caveats): no label or band from it

    @property
    def mcid_crossing(self) -> str | None:
        """'worsened' / 'improved' when the change from the previous visit reaches the MCID."""
        d = self.delta
        if d is None or d.mcid is None or d.label not in ("worsened", "improved"):
            return None
        return d.label

    @property
    def ref_word(self) -> str:
        return "baseline" if self.ref_visit == 1 else f"visit {self.ref_visit}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["delta"] = None if self.delta is None else asdict(self.delta)
        d["cumulative"] = None if self.cumulative is None else asdict(self.cumulative)
        if not self.caveat:
            del d["caveat"]  # rows without a caveat read as before
        d["mcid_crossing"] = self.mcid_crossing
        return d


@dataclass(frozen=True)
class Slope:
    """Least-squares slope of one patient's domain score: points per visit (against the visit
    index, as in the paper) and per year (against the visit dates); None with < 2 points."""

    patient: int
    domain: str
    slope: float | None
    slope_year: float | None
    n_visits: int
    first_visit: int
    last_visit: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TableBRow(TypedDict):
    """One row of table B (comparison): a domain score with its change from the previous visit."""

    patient: int
    visit: int
    date: str
    domain: str
    score: float | None
    delta: float | None
    from_visit: int | None
    change: str
    significance: str
    missing_items: int


class RedFlagRow(TypedDict, total=False):
    """One item at or above a red-flag rule's threshold at one visit (engine.clinical.findings
    .flag_row builds every row: threshold rules and new onset alike)."""

    patient: int
    visit: int
    date: str
    domain: str
    item: str
    item_label: str
    value: float
    threshold: float
    rule: str
    label: str
    why: str
    source: str
    current: bool  # at the instrument's latest assessment (engine.clinical.findings)


class Flags(TypedDict):
    """Incongruence and red-flag rows of the final agent (agents.final)."""

    incongruence: list[dict[str, Any]]
    red_flags: list[RedFlagRow]


class ScreeningFinding(TypedDict):
    """One output-screening finding (grounding.screening)."""

    rule: str
    message: str
    span: list[int]
    text: str


class UnsupportedNumber(TypedDict):
    """A number of a text the guard could not support, with why and what the facts say."""

    span: list[int] | None
    text: str
    reason: str
    context: str
    expected: list[str]


class GuardRecord(TypedDict, total=False):
    """The grounding guard's verification record of one agent's released text
    (grounding.guard): numbers, unsupported numbers, metrics, rounds and every checked claim
    (`claims`: Claim.to_dict rows, each with the ledger values it matched)."""

    numbers: int
    numeric_tokens: int
    claims_with_context: int
    numbers_without_context: int
    claim_accuracy: float
    unsupported: list[UnsupportedNumber]
    fact_precision: float
    hallucination_rate: float
    temporal_fidelity: float
    temporal_fidelity_strict: float
    visit_mentions: list[int]
    claims: list[dict[str, Any]]
    rounds: int
    fallback_used: bool
    passed: bool
    guarded: bool
    history: list[dict[str, Any]]
    rejected: dict[str, Any]
    note: str
    # statement-level grounding (engine.grounding.verify / guard)
    statements: dict[str, Any]  # verify_text's record: sentence verdicts, coverage detail
    coverage: float  # share of the agent's key facts the released text states
    unsupported_sentences: int
    sentences_total: int
    statements_passed: bool
    released: str  # as_written | repaired | regenerated | replaced
    repairs: list[dict[str, Any]]  # each repair: removed sentences with reasons, replacements


class CohortAnswer(TypedDict, total=False):
    """The Cohort Agent's answer (engine.clinical.cohort.compute_cohort): the statistic mu, its
    domain, the top patient and value, the ranking, per-domain statistics, slopes and notes."""

    statistic: str
    statistic_flag: str | None  # the plan's statistic, None = chosen from the words
    first_visit: int | None  # change statistics: the ranked change's visits
    last_visit: int | None
    domain: str
    label: str
    patient: int | None
    value: float | None
    visit: int | None
    ties: list[int]
    # lists, or over the session table row tables equal to them (engine.clinical.rows)
    ranking: Sequence[dict[str, Any]]
    n_patients: int
    domain_stats: dict[str, dict[str, Any]]
    slopes: Sequence[dict[str, Any]]
    notes: list[str]
    not_ranked: list[dict[str, Any]]  # engine.clinical.unranked: reason and patients
    pdq8_ranking: Sequence[dict[str, Any]]
    # an item question (statistic "item"): concept, threshold, counts, earlier-only rows
    item: dict[str, Any]


def cohort_json(cohort: CohortAnswer | None) -> dict[str, Any] | None:
    """Result.cohort as JSON data: its row tables (the session table's ranking and slopes,
    engine.clinical.rows, dicts built when read) as lists of dicts."""
    if cohort is None:
        return None
    return {k: v.to_list() if hasattr(v, "to_list") else v for k, v in cohort.items()}


def statements_json(statements: Any) -> list[dict[str, Any]]:
    """The run's statements as JSON (engine.clinical.statements.Statement, duck-typed here: the
    clinical core imports this module). Each value is written by its identifying fields only."""
    if statements is None:
        return []
    return [
        {
            "id": st.id,
            "kind": st.kind,
            "patient": st.patient,
            "subject": st.subject,
            "visits": list(st.visits),
            "label": st.label,
            "key": st.key,
            "rules": list(st.rules),
            "values": [
                {
                    k: v
                    for k, v in (
                        ("kind", fv.kind),
                        ("value", fv.value),
                        ("visit", fv.visit),
                        ("domain", fv.domain),
                        ("item", fv.item),
                        ("date", fv.date),
                    )
                    if v is not None
                }
                for fv in st.values
            ],
        }
        for st in statements
    ]


def empty_flags() -> Flags:
    return {"incongruence": [], "red_flags": []}


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
    table_b: list[TableBRow] = field(default_factory=list)
    cohort: CohortAnswer | None = None
    flags: Flags = field(default_factory=empty_flags)
    narratives: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    verification: dict[str, Any] = field(default_factory=dict)
    screening: list[ScreeningFinding] = field(default_factory=list)
    ledger: list[FactValue] = field(default_factory=list)
    llm_calls: int = 0
    trace: list[TraceEntry] = field(default_factory=list)
    backend: str = ""
    #: agent -> the checked claims of its released text (the guard's records; "final" = summary)
    claims: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: per-domain course rows (engine.clinical.series.SeriesRow.to_dict) and slopes the charts draw
    series: list[SeriesRow] = field(default_factory=list)
    slopes: list[Slope] = field(default_factory=list)
    # sessions left out at ingest for the plan's patients, the whole course per patient
    # and instrument (engine.clinical.course), and the dense facts text kept for the Provenance page
    excluded_sessions: list[dict[str, Any]] = field(default_factory=list)
    courses: list[dict[str, Any]] = field(default_factory=list)
    summary_dense: str = ""
    #: the summary's opening text, at most about 100 words (engine.writing.digest)
    digest: str = ""
    #: the details that follow it, under short headings: (heading, paragraphs)
    sections: list[Any] = field(default_factory=list)
    #: the run's statements (engine.clinical.statements.Statements): what the text, the charts,
    #: the headline figures and the report render, each finding stated once
    statements: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "facts": [f.to_dict() for f in self.facts],
            "table_b": self.table_b,
            "cohort": cohort_json(self.cohort),
            "flags": self.flags,
            "narratives": self.narratives,
            "prompts": self.prompts,
            "digest": self.digest,
            "sections": [{"heading": h, "paragraphs": list(p)} for h, p in self.sections],
            "summary": self.summary,
            "verification": self.verification,
            "screening": self.screening,
            "llm_calls": self.llm_calls,
            "trace": [asdict(t) for t in self.trace],
            "backend": self.backend,
            "claims": self.claims,
            "series": [r.to_dict() for r in self.series],
            "slopes": [s.to_dict() for s in self.slopes],
            "excluded_sessions": self.excluded_sessions,
            "courses": self.courses,
            "summary_dense": self.summary_dense,
            "statements": statements_json(self.statements),
        }
