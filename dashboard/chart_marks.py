"""What the trajectory chart marks, taken from the statements the text was rendered from, so the
chart and the text cannot disagree (pure; no Streamlit, no Plotly):

- bands: the severity bands of a panel are the ranges of the thresholds the run's `band`
  statements name (the ones the text's "mild at the latest assessment (reference band)" is read
  from); a domain with no band statement, or whose patients were banded with different
  thresholds, gets none;
- verdicts: a first-to-latest change the text calls beyond the MCID (a `change` statement over
  the first and latest visit labelled worsened or improved against an MCID threshold) is marked
  at its latest visit; a change by direction only (PDQ-8) or below the MCID is not;
- caveats: a score the engine marked partial or possibly missing (Result.series caveat) is drawn
  apart and never as a change;
- the PDQ-8 panel is the Summary Index (0-100, the scale the text uses), from the course.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from engine.clinical.caveats import caveat_phrase
from engine.types import Result

SEVERITY_ORDER = ("normal", "slight", "mild", "moderate", "severe")


@dataclass(frozen=True)
class Band:
    level: str
    low: float
    high: float | None  # the next band's lower bound (exclusive); None: open


@dataclass(frozen=True)
class Verdict:
    patient: int
    domain: str
    label: str  # worsened | improved
    first_visit: int
    visit: int
    date: str
    score: float
    change: float
    mcid: float


@dataclass(frozen=True)
class Marks:
    bands: dict[str, tuple[Band, ...]] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    caveats: dict[tuple[int, str, int], str] = field(default_factory=dict)
    summary_index: dict[int, tuple[tuple[int, str, float], ...]] = field(default_factory=dict)


def _band_ranges(values) -> tuple[Band, ...]:  # noqa: ANN001 - FactValues of one statement
    lows: dict[str, float] = {}
    for v in values:
        if v.kind == "threshold" and str(v.item or "").startswith("severity_"):
            level = str(v.item)[len("severity_") :]
            lows[level] = min(lows.get(level, v.value), v.value)
    levels = sorted(lows, key=lambda lv: lows[lv])
    return tuple(
        Band(lv, lows[lv], lows[levels[i + 1]] if i + 1 < len(levels) else None)
        for i, lv in enumerate(levels)
    )


def _with_zero_level(bands: tuple[Band, ...], zero_level: str | None) -> tuple[Band, ...]:
    """A score of 0 has its own word (the contexts' zero level, "normal"), not the bottom band's:
    the band starting at 0 starts above 0 (scores are sums of whole item ratings)."""
    if not zero_level or not bands or bands[0].low != 0:
        return bands
    first = Band(bands[0].level, 0.5, bands[0].high)
    return (Band(zero_level, 0.0, 0.5), first, *bands[1:])


def _bands(result: Result, zero_level: str | None) -> dict[str, tuple[Band, ...]]:
    per_domain: dict[str, set[tuple[Band, ...]]] = defaultdict(set)
    for s in result.statements:
        if s.kind == "band" and s.subject:
            per_domain[s.subject].add(_band_ranges(s.values))
    return {
        d: _with_zero_level(next(iter(r)), zero_level)
        for d, r in per_domain.items()
        if len(r) == 1 and next(iter(r))
    }


def _verdicts(result: Result) -> tuple[Verdict, ...]:
    out = []
    for s in result.statements:
        if s.kind != "change" or s.label not in ("worsened", "improved") or len(s.visits) != 2:
            continue
        mcid = [v for v in s.values if v.kind == "threshold" and "mcid" in str(v.item or "")]
        scores = [v for v in s.values if v.kind == "score" and v.visit == s.visits[1]]
        cum = [v for v in s.values if v.kind == "cumulative" and v.visit == s.visits[1]]
        if not mcid or not scores or not cum or s.patient is None:
            continue
        wanted = "mcid_worsening" if s.label == "worsened" else "mcid_improvement"
        bound = next((v.value for v in mcid if v.item == wanted), mcid[0].value)
        last = scores[0]
        out.append(
            Verdict(
                s.patient,
                str(s.subject),
                s.label,
                s.visits[0],
                s.visits[1],
                str(last.date),
                last.value,
                cum[0].value,
                abs(bound),
            )  # fmt: skip
        )
    return tuple(out)


def marks_from(result: Result, zero_level: str | None = None) -> Marks:
    """The chart's marks of `result` (see the module docstring); `zero_level`: the band word of
    a score of 0 (ClinicalRefs.zero_level)."""
    caveats = {
        (r.patient, r.domain, r.visit): caveat_phrase(r.caveat, r.missing)
        for r in result.series
        if r.caveat
    }
    si: dict[int, tuple[tuple[int, str, float], ...]] = {}
    for c in result.courses:
        if c.get("instrument") == "pdq8" and c.get("pdq8_si"):
            dates = dict(zip(c["visits"], c["dates"], strict=False))
            si[int(c["patient"])] = tuple(
                (int(v), str(dates.get(int(v), "")), float(x))
                for v, x in sorted(c["pdq8_si"].items(), key=lambda kv: int(kv[0]))
            )
    return Marks(_bands(result, zero_level), _verdicts(result), caveats, si)
