"""Cohort statistics (the facts of the Cohort Agent): slopes, cohort max/min/mean, the statistic
mu chosen by keyword rules, ranking, and their rendering at the ledger's rounding.

Everything here is computed in code; the LLM (when configured) only explains `mu`.
- slope: least-squares slope of S_d against visit index (points per visit, the paper's), and per
  year against the visit dates, for every patient and domain with at least 2 scored visits;
- total burden: UPDRS Parts I+II+III (nonmotor + adl + motor) at the patient's latest visit with
  all three scored; PDQ-8 (qol) is ranked separately, never added to UPDRS;
- max / min / mean of S_d across patients use each patient's latest scored visit;
- mu by keyword rules: highest/worst -> maximum; lowest/best -> minimum; fastest (+ domain) ->
  steepest slope (total when no domain is named); stable -> smallest absolute slope; most improved
  -> most negative slope; average/mean -> mean. A named domain replaces the total.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from itertools import takewhile
from typing import Any, Protocol

from engine.clinical.item_cohort import is_item_answer, render_item_facts
from engine.clinical.rows import column_of
from engine.clinical.series import (
    UNEVEN_SPACING,
    Point,
    fmt,
    fmt2,
    fmt_signed,
    opposite_signs,
    slope_of,
)
from engine.clinical.unranked import not_ranked, not_ranked_line, per_year_note, statistic_kind
from engine.types import CohortAnswer, Fact
from kb_store.profiles import DOMAIN_WORDS, DOMAINS, TOTAL, UPDRS_DOMAINS

DOMAIN_KEYWORDS: tuple[tuple[str, str], ...] = (
    (r"\bnon-?\s?motor\b|\bpart\s+(i|1)\b", "nonmotor"),
    (r"\badl\b|\bdaily\s+living\b|\bpart\s+(ii|2)\b", "adl"),
    (r"\bpdq-?\s?8?\b|\bquality\s+of\s+life\b|\bqol\b", "qol"),
    (r"(?<!non-)(?<!non)(?<!non )\bmotor\b|\bpart\s+(iii|3)\b", "motor"),
)
STAT_LABELS = {
    "maximum": "highest {what} at the latest visit",
    "minimum": "lowest {what} at the latest visit",
    "mean": "average {what} at the latest visit",
    "steepest_slope": "fastest worsening of {what} (largest least-squares slope, points per visit)",
    "smallest_abs_slope": "most stable {what} (smallest absolute slope, points per visit)",
    "most_negative_slope": "most improved {what} (most negative slope, points per visit)",
    "steepest_slope_year": "fastest worsening of {what} (largest least-squares slope, points per year)",
    "smallest_abs_slope_year": "most stable {what} (smallest absolute slope, points per year)",
    "most_negative_slope_year": "most improved {what} (most negative slope, points per year)",
    "largest_change": "largest increase of {what} from the first to the latest assessment",
    "most_negative_change": "largest decrease of {what} from the first to the latest assessment",
}
SLOPE_STATS = {
    "steepest_slope",
    "smallest_abs_slope",
    "most_negative_slope",
    "steepest_slope_year",
    "smallest_abs_slope_year",
    "most_negative_slope_year",
}
CHANGE_STATS = {"largest_change", "most_negative_change"}
#: --statistic (Plan.statistic) -> the statistic family; direction words of the query pick within it
STATISTIC_FLAGS = ("latest", "change", "slope_visit", "slope_year", "mean")


def _explicit_statistic(statistic: str, improved: bool, stable: bool, lowest: bool) -> str | None:
    """The ranked statistic when the plan fixes what is ranked (the query's words pick the
    order); None for no or another statistic (the keyword rules decide)."""
    if statistic in ("slope_visit", "slope_year"):
        base = (
            "most_negative_slope"
            if improved
            else "smallest_abs_slope"
            if stable
            else "steepest_slope"
        )
        return base + ("_year" if statistic == "slope_year" else "")
    if statistic == "change":
        return "most_negative_change" if improved else "largest_change"
    if statistic == "latest":
        return "minimum" if lowest else "maximum"
    if statistic == "mean":
        return "mean"
    return None


def choose_statistic(
    query: str, instruments: Sequence[str], statistic: str = ""
) -> tuple[str, str]:
    """(statistic, domain) by the fixed keyword rules; domain is 'total' or one of the four.
    `statistic` (the plan's, from --statistic, the dashboard widget or the planner's progression
    rules) fixes what is ranked: latest value, change first -> latest, slope per visit or per year,
    or the cohort mean; the query's direction words (improved, stable, lowest) pick the order."""
    q = query.lower()
    domain = TOTAL
    for pat, dom in DOMAIN_KEYWORDS:
        if re.search(pat, q):
            domain = dom
            break
    if domain == TOTAL and tuple(instruments) == ("pdq8",):
        domain = "qol"
    improved = bool(
        re.search(
            r"\b(most\s+improved|improved\s+(the\s+)?most|greatest\s+improvement|decrease)", q
        )
    )
    stable = bool(re.search(r"\b(most\s+stable|stablest|stable|least\s+change|slowest)\b", q))
    lowest = bool(re.search(r"\b(lowest|best|least|mildest|minimum)\b", q))
    chosen = _explicit_statistic(statistic, improved, stable, lowest)
    if chosen is not None:
        return chosen, domain
    if re.search(
        r"\b(fastest|quickest|steepest|most\s+rapid|rapidly|progress\w*\s+(the\s+)?most)\b", q
    ):
        return "steepest_slope", domain
    if stable:
        return "smallest_abs_slope", domain
    if improved:
        return "most_negative_slope", domain
    if lowest:
        return "minimum", domain
    if re.search(r"\b(average|mean|typical)\b", q):
        return "mean", domain
    return "maximum", domain


def _ranked(rows: list[dict[str, Any]], key: str, descending: bool) -> list[dict[str, Any]]:
    """Competition ranking (1, 1, 3) on rows[key]; ties keep patient order."""
    rows = sorted(rows, key=lambda r: (-r[key] if descending else r[key], r["patient"]))
    prev, rank = None, 0
    for i, r in enumerate(rows, start=1):
        if r[key] != prev:
            rank, prev = i, r[key]
        r["rank"] = rank
    return rows


Points = list[Point]  # (visit, ISO date, score), in visit order


def _updrs_totals(
    by_pd: dict[tuple[int, str], list[Fact]],
    patients: list[int],
    notes: list[str],
    unread: set[tuple[int, int]],
) -> dict[int, Points]:
    """Per-visit UPDRS totals (only visits with all three UPDRS parts scored); a note for each
    visit where some part is missing. `unread` gets the (patient, visit) of the totals with a
    part that carries a caveat (engine.clinical.caveats)."""
    totals: dict[int, Points] = defaultdict(list)
    for p in patients:
        visits: dict[int, dict[str, Fact]] = defaultdict(dict)
        for d in UPDRS_DOMAINS:
            for f in by_pd.get((p, d), []):
                visits[f.visit][d] = f
        for v in sorted(visits):
            fs = visits[v]
            if len(fs) == 3:
                totals[p].append((v, fs["motor"].date, sum(fs[d].score for d in UPDRS_DOMAINS)))  # type: ignore[misc]
                if any(f.caveat for f in fs.values()):
                    unread.add((p, v))
            elif any(fs.values()):
                notes.append(
                    f"Patient {p}, visit {v}: UPDRS total not computed "
                    f"(scored parts: {', '.join(sorted(fs))})."
                )
    return totals


def _domain_stats(latest: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Max / min (with the patients at them) and mean of each domain's latest scores."""
    out: dict[str, dict[str, Any]] = {}
    for dom, rows in latest.items():
        if not rows:
            continue
        vals = [r["value"] for r in rows]
        mx, mn = max(vals), min(vals)
        out[dom] = {
            "max": mx,
            "max_patients": [r["patient"] for r in rows if r["value"] == mx],
            "min": mn,
            "min_patients": [r["patient"] for r in rows if r["value"] == mn],
            "mean": round(sum(vals) / len(vals), 2),
            "n_patients": len(vals),
        }
    return out


SLOPE_ERROR = (
    "cohort slope statistics need at least 2 scored visits per patient; "
    "the selection has fewer (check the visit filter)"
)
CHANGE_ERROR = (
    "cohort change statistics need at least 2 scored visits per patient; "
    "the selection has fewer (check the visit filter)"
)


def _slope_ranking(
    statistic: str, domain: str, slopes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    key = "slope_year" if statistic.endswith("_year") else "slope"
    rows = [
        {
            "patient": s["patient"],
            "value": s[key],
            "slope_year": s["slope_year"],
            "slope_visit": s["slope"],
            "n_visits": s["n_visits"],
        }
        for s in slopes
        if s["domain"] == domain and s[key] is not None
    ]
    if not rows:
        raise ValueError(SLOPE_ERROR)
    if statistic.startswith("smallest_abs_slope"):
        for r in rows:
            r["abs_slope"] = abs(r["value"])
        return _ranked(rows, "abs_slope", descending=False)
    return _ranked(rows, "value", descending=statistic.startswith("steepest_slope"))


def _change_ranking(statistic: str, pts_of: dict[int, Points]) -> list[dict[str, Any]]:
    """Change first -> latest scored assessment of each patient with >= 2."""
    rows = [
        {
            "patient": p,
            "value": pts[-1][2] - pts[0][2],
            "first_visit": pts[0][0],
            "last_visit": pts[-1][0],
            "n_visits": len(pts),
        }
        for p, pts in pts_of.items()
        if len(pts) >= 2
    ]
    if not rows:
        raise ValueError(CHANGE_ERROR)
    return _ranked(rows, "value", descending=statistic == "largest_change")


class CohortSource(Protocol):
    """What `rank_cohort` reads: the domains with scores, their statistics at each patient's
    latest scored visit, the slopes, the notes so far, the patient count and the rankings (the
    per-fact `FactSource` below, or the session table's engine.clinical.table_stats.TableSource)."""

    domains: list[str]
    domain_stats: dict[str, dict[str, Any]]
    slopes: Sequence[dict[str, Any]]
    notes: list[str]
    n_patients: int

    def latest_ranking(self, domain: str, descending: bool) -> Sequence[dict[str, Any]]: ...

    def change_ranking(self, statistic: str, domain: str) -> Sequence[dict[str, Any]]: ...

    def slope_ranking(self, statistic: str, domain: str) -> Sequence[dict[str, Any]]: ...

    def no_per_year(self, domain: str) -> int:
        """Patients with a slope per assessment of `domain` but no per-year rate."""
        ...

    def cohort_patients(self) -> Sequence[int]:
        """The cohort's patients (a kept session scoring any domain)."""
        ...

    def usable_counts(self, domain: str) -> dict[int, int]:
        """Patient -> number of scores of `domain` without a caveat (patients with none absent)."""
        ...


class FactSource:
    """`CohortSource` over Fact objects (every patient's points, latest rows and slopes)."""

    def __init__(self, facts: Sequence[Fact]):
        self.by_pd: dict[tuple[int, str], list[Fact]] = defaultdict(list)
        # no statistic or rank from a partial or possibly-not-examined score
        # (engine.clinical.caveats; the session table's cohort index leaves out the same):
        # slopes and changes run over the other scores, and a patient whose latest score has
        # a caveat has no latest value (no fall back to an earlier one)
        self.unread: set[tuple[int, int, str]] = set()
        for f in facts:
            if f.score is not None:
                self.by_pd[(f.patient, f.domain)].append(f)
                if f.caveat:
                    self.unread.add((f.patient, f.visit, f.domain))
        self.patients = sorted({f.patient for f in facts})
        self.notes: list[str] = []
        unread_totals: set[tuple[int, int]] = set()
        self.totals = _updrs_totals(self.by_pd, self.patients, self.notes, unread_totals)
        self.unread |= {(p, v, TOTAL) for p, v in unread_totals}
        self.domains = [d for d in DOMAINS if any(self.by_pd.get((p, d)) for p in self.patients)]
        if any(self.totals.values()):
            self.domains.append(TOTAL)
        self.slopes: list[dict[str, Any]] = []
        self.latest: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for dom in self.domains:
            for p in self.patients:
                every = self.points(p, dom, readable=False)
                if every and (p, every[-1][0], dom) not in self.unread:
                    v, d, s = every[-1]
                    self.latest[dom].append({"patient": p, "value": s, "visit": v, "date": d})
                pts = self.points(p, dom)
                if pts:
                    self.slopes.append(slope_of(p, dom, pts).to_dict())
        self.domain_stats = _domain_stats(self.latest)
        self.n_patients = len(self.patients)

    def points(self, p: int, dom: str, readable: bool = True) -> Points:
        """The patient's scored points of `dom` in visit order; `readable`: without those
        that carry a caveat."""
        if dom == TOTAL:
            pts = self.totals.get(p, [])
        else:
            pts = sorted(
                ((f.visit, f.date, float(f.score)) for f in self.by_pd.get((p, dom), [])),  # type: ignore[arg-type]
                key=lambda t: t[0],
            )
        if readable:
            pts = [t for t in pts if (p, t[0], dom) not in self.unread]
        return pts

    def latest_ranking(self, domain: str, descending: bool) -> list[dict[str, Any]]:
        return _ranked([dict(r) for r in self.latest[domain]], "value", descending)

    def change_ranking(self, statistic: str, domain: str) -> list[dict[str, Any]]:
        return _change_ranking(statistic, {p: self.points(p, domain) for p in self.patients})

    def slope_ranking(self, statistic: str, domain: str) -> list[dict[str, Any]]:
        return _slope_ranking(statistic, domain, self.slopes)

    def no_per_year(self, domain: str) -> int:
        return sum(
            1
            for s in self.slopes
            if s["domain"] == domain and s["slope"] is not None and s["slope_year"] is None
        )

    def cohort_patients(self) -> Sequence[int]:
        return self.patients

    def usable_counts(self, domain: str) -> dict[int, int]:
        return {p: n for p in self.patients if (n := len(self.points(p, domain)))}


def compute_cohort(
    facts: Sequence[Fact], query: str, instruments: Sequence[str], statistic: str = ""
) -> CohortAnswer:
    """Result.cohort = {statistic, domain, patient, value, ranking, ...} from the fact table."""
    return rank_cohort(query, instruments, statistic, FactSource(facts))


def rank_cohort(
    query: str, instruments: Sequence[str], flag: str, src: CohortSource
) -> CohortAnswer:
    """The statistic the query (or `flag`) asks for, its ranking and the answer record: one rule
    set for the per-fact path (compute_cohort) and the session table (engine.clinical.table_stats)."""
    statistic, domain = choose_statistic(query, instruments, flag)
    domain_stats, notes = src.domain_stats, src.notes
    if domain not in domain_stats:
        fallback = TOTAL if TOTAL in domain_stats else (src.domains[0] if src.domains else None)
        if fallback is None:
            raise ValueError("cohort analysis needs at least one scored domain in the fact table")
        notes.append(
            f"No {DOMAIN_WORDS.get(domain, domain)} scores in the selection; using {fallback}."
        )
        domain = fallback

    ranking: Sequence[dict[str, Any]]
    if statistic in ("maximum", "minimum", "mean"):
        ranking = src.latest_ranking(domain, descending=statistic != "minimum")
        top = (
            {"patient": None, "value": domain_stats[domain]["mean"]}
            if statistic == "mean"
            else ranking[0]
        )
    elif statistic in CHANGE_STATS:
        ranking = src.change_ranking(statistic, domain)
        top = ranking[0]
    else:
        ranking = src.slope_ranking(statistic, domain)
        top = ranking[0]
        if statistic.endswith("_year"):
            notes = [*notes, *per_year_note(src.no_per_year(domain))]
    # rank 1 is the ranking's first rows: read no further
    lead = takewhile(lambda r: r["rank"] == 1, ranking)
    ties = [r["patient"] for r in lead] if top["patient"] is not None else []

    out: CohortAnswer = {
        "statistic": statistic,
        "statistic_flag": flag or None,
        "first_visit": top.get("first_visit"),
        "last_visit": top.get("last_visit"),
        "domain": domain,
        "label": STAT_LABELS[statistic].format(what=_what(domain)),
        "patient": top["patient"],
        "value": top["value"],
        "visit": top.get("visit"),
        "ties": ties if len(ties) > 1 else [],
        "ranking": ranking,
        "n_patients": src.n_patients,
        "domain_stats": domain_stats,
        "slopes": src.slopes,
        "notes": notes,
        "not_ranked": not_ranked(
            statistic_kind(statistic),
            src.cohort_patients(),
            src.usable_counts(domain),
            column_of(ranking, "patient"),
        ),
    }
    if domain != "qol" and "qol" in domain_stats:
        out["pdq8_ranking"] = src.latest_ranking("qol", descending=statistic != "minimum")
    return out


def _what(domain: str) -> str:
    return (
        "total UPDRS burden (Parts I+II+III)"
        if domain == TOTAL
        else f"{DOMAIN_WORDS[domain]} score"
    )


def value_text(cohort: dict[str, Any]) -> str:
    return _row_value(cohort["statistic"], cohort, lead=True)


def _row_value(stat: str, r: dict[str, Any], lead: bool = False) -> str:
    """A ranked value as the ledger and the claim checker read it."""
    v = r["value"]
    if stat in ("maximum", "minimum"):
        return fmt(v)
    if stat in CHANGE_STATS:
        if r.get("first_visit") is None:
            return fmt_signed(v)
        # "change" before the value: the checker reads a change between the two visits, not a
        # ranked level ("rank 2: patient 5, 12" reads as the ranked score)
        return f"change {fmt_signed(v)} from visit {r['first_visit']} to visit {r['last_visit']}"
    if stat.endswith("_year"):
        return f"{fmt2(v)} per year"
    if stat in SLOPE_STATS and not lead:
        return f"{fmt2(v)} per visit"
    return fmt2(v)


def render_cohort_facts(cohort: dict[str, Any], top_n: int = 10) -> tuple[str, str]:
    """(statistic line, ranking block) for the prompt, at the ledger's rounding."""
    if is_item_answer(cohort):  # an item question: the listed patients and the counts
        return render_item_facts(cohort)
    c = cohort
    if c["patient"] is None:
        stat = f"{c['label']}: {value_text(c)} across {c['n_patients']} patients"
    else:
        where = f" at visit {c['visit']}" if c.get("visit") else ""
        stat = f"{c['label']}: patient {c['patient']}, {value_text(c)}{where}"
        if c["ties"]:
            stat += f" (tied: patients {', '.join(map(str, c['ties']))})"
    st = c["statistic"]
    lines = []
    for r in c["ranking"][:top_n]:
        val = _row_value(st, r)
        extra = ""
        if st in SLOPE_STATS and not st.endswith("_year") and r.get("slope_year") is not None:
            extra = f", {fmt2(r['slope_year'])} per year"
        elif st.endswith("_year") and r.get("slope_visit") is not None:
            extra = f", {fmt2(r['slope_visit'])} per visit"
        if extra and opposite_signs(r.get("slope_visit"), r.get("slope_year")):
            extra += f" ({UNEVEN_SPACING})"
        at = f" at visit {r['visit']}" if r.get("visit") else ""
        lines.append(f"rank {r['rank']}: patient {r['patient']}, {val}{extra}{at}")
    if len(c["ranking"]) > top_n:
        lines.append(f"({len(c['ranking'])} patients ranked in all)")
    left = not_ranked_line(c.get("not_ranked") or [], c["n_patients"], _what(c["domain"]))
    if left:
        lines.append(left)
    ds = c["domain_stats"].get(c["domain"])
    if ds:
        lines.append(
            f"cohort {_what(c['domain'])} at the latest visit: maximum {fmt(ds['max'])}, "
            f"minimum {fmt(ds['min'])}, mean {fmt2(ds['mean'])} over {ds['n_patients']} patients"
        )
    pr = c.get("pdq8_ranking")
    if pr:
        lines.append(
            "PDQ-8 ranked separately (never added to UPDRS): "
            + "; ".join(
                f"rank {r['rank']}: patient {r['patient']}, {fmt(r['value'])}" for r in pr[:5]
            )
        )
    return stat, "\n".join(lines)
