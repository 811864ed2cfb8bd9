"""The course of each domain score: per-visit series with deltas, cumulative change, MCID-aware
classification and severity, least-squares slopes, and number formatting at the ledger's rounding.
The one facts module that the ledger, the agents, the facts text and (through Result.series) the
dashboard all read; nothing else computes a change or an MCID crossing.

Definitions (DESIGN.md): delta = S(v) - S(previous visit with a score); cumulative = S(v) - S(first
visit in the selection), which is the baseline when visit 1 is selected; a decrease is an
improvement; with an MCID, |change| below it is "stable", else improved/worsened (asymmetric
thresholds); without a verified MCID (PDQ-8) the label is the direction only ("direction only").
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from engine.clinical.bands import band_of, course_rules
from engine.clinical.caveats import caveat_phrase
from engine.contexts import Contexts, Mcid
from engine.types import Change, Fact, SeriesRow, Slope
from kb_store.documents import fmt_num
from kb_store.profiles import DOMAIN_WORDS, DOMAINS

#: significance text when the scale has no verified MCID (PDQ-8): the change is reported by direction
NO_MCID = "direction only"


def fmt(x: float | None) -> str:
    """Scores and changes as written everywhere: 14, 2.5, missing."""
    return fmt_num(None if x is None else round(float(x), 2))


def fmt_signed(x: float | None) -> str:
    if x is None:
        return "n/a"
    x = round(float(x), 2)
    return ("+" if x > 0 else "") + fmt_num(x) if x != 0 else "0"


def fmt2(x: float | None) -> str:
    """Slopes and means: 2 decimals (the ledger tolerance is 0.005)."""
    return "n/a" if x is None else f"{x:.2f}"


def classify(change: float, mcid: Mcid | None) -> Change:
    change = round(change, 2)
    if mcid is None:
        lab = "worsened" if change > 0 else "improved" if change < 0 else "unchanged"
        return Change(change, lab, NO_MCID, None)
    if change >= mcid.worsening:
        return Change(change, "worsened", f"at or above MCID {fmt(mcid.worsening)}", mcid.worsening)
    if change <= mcid.improvement:
        return Change(
            change, "improved", f"at or above MCID {fmt(abs(mcid.improvement))}", mcid.improvement
        )
    thr = mcid.worsening if change >= 0 else mcid.improvement
    return Change(change, "stable", f"below MCID {fmt(abs(thr))}", thr)


Series = dict[tuple[int, str], list[SeriesRow]]


def series(facts: Iterable[Fact], ctx: Contexts) -> Series:
    """(patient, domain) -> rows in visit order with delta, cumulative change and severity."""
    groups: dict[tuple[int, str], list[Fact]] = defaultdict(list)
    for f in facts:
        groups[(f.patient, f.domain)].append(f)
    out: dict[tuple[int, str], list[SeriesRow]] = {}
    for key in sorted(groups, key=lambda k: (k[0], DOMAINS.index(k[1]) if k[1] in DOMAINS else 99)):
        fs = sorted(groups[key], key=lambda f: f.visit)
        scored = [f for f in fs if f.score is not None]
        ref = scored[0] if scored else None
        rows = []
        prev: Fact | None = None
        for f in fs:
            mcid = ctx.mcid_for(f.profile, f.domain)
            delta = cum = None
            if f.score is not None and prev is not None:
                delta = classify(f.score - prev.score, mcid)  # type: ignore[operator]
            if f.score is not None and ref is not None and f.visit != ref.visit:
                cum = classify(f.score - ref.score, mcid)  # type: ignore[operator]
            rows.append(
                SeriesRow(
                    f.patient,
                    f.visit,
                    f.date,
                    f.domain,
                    f.profile,
                    f.score,
                    f.missing,
                    None if f.caveat else _band(ctx, f.profile, f.domain, f.score),
                    prev.visit if prev and delta else None,
                    delta,
                    ref.visit if ref else f.visit,
                    cum,
                    f.doc_id,
                    f.instrument,
                    f.caveat,
                )
            )
            if f.score is not None:
                prev = f
        out[key] = rows
    return out


def _band(ctx: Contexts, profile: str, domain: str, score: float | None) -> str | None:
    """The band word of one session's score from the published cut-offs, with the course's zero
    level (engine.clinical.bands: a 0 is "normal" here as in the course sentence, never "mild")."""
    if score is None:
        return None
    rules = course_rules(ctx)
    return band_of(ctx, rules, profile, domain, score, reference=False)[0]


def score_phrase(r: SeriesRow) -> str:
    """'motor 14 (mild)' or 'motor 14 (partial: 2 items missing)'."""
    s = f"{DOMAIN_WORDS.get(r.domain, r.domain)} {fmt(r.score)}"
    extra = []
    if r.severity:
        extra.append(r.severity)
    if r.caveat:
        extra.append(caveat_phrase(r.caveat, r.missing))
    elif r.missing:
        extra.append(f"partial: {r.missing} item(s) missing")
    return s + (f" ({', '.join(extra)})" if extra else "")


def change_phrase(r: SeriesRow, ref: SeriesRow | None = None) -> str:
    """'+2 from visit 2 (stable; below MCID 4.63), +5 from baseline (worsened; at or above MCID 4.63)'.
    A change to or from a score with a caveat (engine.clinical.caveats; `ref` = the reference
    visit's row) gets no MCID label: the caveat says why."""
    why = unread_phrase(r, ref)
    if why:
        c = r.cumulative
        return f"{fmt_signed(c.value)} from {r.ref_word} ({why})" if c is not None else ""
    parts = []
    if r.delta is not None and r.prev_visit is not None and r.prev_visit != r.ref_visit:
        parts.append(f"{fmt_signed(r.delta.value)} from visit {r.prev_visit} ({r.delta.text()})")
    if r.cumulative is not None:
        parts.append(f"{fmt_signed(r.cumulative.value)} from {r.ref_word} ({r.cumulative.text()})")
    return ", ".join(parts)


def unread_phrase(r: SeriesRow, ref: SeriesRow | None = None) -> str:
    """Why no change is read between `ref` and `r` ("" when both are read)."""
    for row in (r, ref):
        if row is not None and row.caveat == "partial":
            return (
                f"partial at visit {row.visit}: {row.missing} item(s) missing, no MCID label "
                "from it"
            )
    for row in (r, ref):
        if row is not None and row.caveat:
            return (
                f"every item 0 at visit {row.visit}: possibly not examined or missing data, "
                "not improvement; no MCID label"
            )
    return ""


def least_squares_slope(xs: list[float], ys: list[float]) -> float | None:
    """Ordinary least-squares slope of ys on xs; None with fewer than 2 distinct xs."""
    n = len(xs)
    if n < 2 or len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


#: (visit, ISO date, score) of one patient's domain, in visit order
Point = tuple[int, str, float]

#: a per-year rate only over a span long enough to mean one (docs/engine.md, "Slope"): at least
#: PER_YEAR_MIN_ASSESSMENTS assessments of the instrument and PER_YEAR_MIN_DAYS days from the
#: first to the last. Over a shorter span the rate multiplies one session's variability (state,
#: rater; several points, the size of an MCID) by 365 / days; with two assessments it is one
#: difference, not a trend.
PER_YEAR_MIN_ASSESSMENTS = 3
PER_YEAR_MIN_DAYS = 180
PER_YEAR_RULE = (
    f"no per-year rate under {PER_YEAR_MIN_ASSESSMENTS} assessments spanning "
    f"{PER_YEAR_MIN_DAYS} days"
)
#: what a text says where the per-visit and per-year trends have opposite signs
UNEVEN_SPACING = "uneven spacing: the per-year rate weighs the long gaps between assessments"


def per_year_allowed(n: Any, span_days: Any) -> Any:
    """Whether a series of `n` assessments over `span_days` days (first to last) has a per-year
    rate; scalars or numpy arrays (the session table's path reads the same rule)."""
    return (n >= PER_YEAR_MIN_ASSESSMENTS) & (span_days >= PER_YEAR_MIN_DAYS)


def opposite_signs(per_visit: float | None, per_year: float | None) -> bool:
    """The per-visit and per-year trends (as rounded) point different ways."""
    if per_visit is None or per_year is None:
        return False
    return (per_visit > 0 > per_year) or (per_visit < 0 < per_year)


def slope_of(patient: int, domain: str, pts: list[Point]) -> Slope:
    """The one slope of the engine, rounded to 2 decimals: least squares per assessment of the
    instrument (x = 0, 1, 2, ... over `pts` in order, not the shared visit number, which counts
    the other instrument's visits too) and per year (x = years from the first point's date; None
    unless `per_year_allowed`)."""
    ys = [p[2] for p in pts]
    sl = least_squares_slope([float(i) for i in range(len(pts))], ys)
    d0 = dt.date.fromisoformat(pts[0][1])
    days = [(dt.date.fromisoformat(p[1]) - d0).days for p in pts]
    sy = None
    if per_year_allowed(len(pts), days[-1]):
        sy = least_squares_slope([d / 365.25 for d in days], ys)
    return Slope(
        patient,
        domain,
        None if sl is None else round(sl, 2),
        None if sy is None else round(sy, 2),
        len(pts),
        pts[0][0],
        pts[-1][0],
    )


def slopes(ser: Series) -> list[Slope]:
    """The slope of every (patient, domain) series with at least two scored assessments."""
    out = []
    for (p, d), rows in ser.items():
        pts = [(r.visit, r.date, float(r.score)) for r in rows if r.score is not None]
        if len({v for v, _, _ in pts}) >= 2:
            out.append(slope_of(p, d, pts))
    return out


def render_series_table(rows: Iterable[SeriesRow]) -> str:
    """The facts block of a prompt: one line per patient visit, numbers as the ledger has them."""
    lines = []
    for r in rows:
        line = f"Patient {r.patient}, visit {r.visit} ({r.date}): {score_phrase(r)}"
        ch = change_phrase(r)
        lines.append(line + (f", {ch}" if ch else (", baseline" if r.visit == 1 else "")) + ".")
    return "\n".join(lines)
