"""Who a cohort ranking leaves out, and why: one judgement for both cohort paths (the per-fact
`FactSource` and the session table's `TableSource`).

A patient of the cohort (a kept session scoring any domain) is not ranked when the ranked
statistic cannot be read for them:
- `no_score`: no usable score of the ranked domain (none in the selection, or each one partial or
  possibly missing: engine.clinical.caveats; no statistic is read from those);
- `latest_unread`: a latest-score ranking, and the patient's latest score of the domain carries a
  caveat (no fall back to an earlier score);
- `one_assessment`: a change or slope ranking, and the patient has one usable score (a change or a
  slope needs a second assessment);
- `no_per_year`: a per-year ranking, and the patient has a slope per assessment but too few
  assessments or too short a span for a rate per year (engine.clinical.series.PER_YEAR_RULE).

`not_ranked` returns the groups (reason and every patient, in id order); `not_ranked_line` renders
them for the cohort details, naming at most `LISTED` patients per group ("including patients
..." when there are more; the Cohort page lists every one).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from engine.clinical.series import PER_YEAR_MIN_ASSESSMENTS, PER_YEAR_MIN_DAYS, PER_YEAR_RULE

REASONS = ("no_score", "latest_unread", "one_assessment", "no_per_year")
#: the rule each reason applies, for the Cohort page and the docs
RULES = {
    "no_score": "no usable score of the ranked domain (none in the selection, or only partial "
    "or possibly-missing scores, from which no statistic is read)",
    "latest_unread": "the latest score of the ranked domain is partial or possibly missing "
    "(a latest-score ranking does not fall back to an earlier score)",
    "one_assessment": "one usable score of the ranked domain: a change or a slope needs a second "
    "assessment",
    "no_per_year": f"a slope per assessment but no rate per year ({PER_YEAR_RULE})",
}
LISTED = 10  # patients named per reason in the text; the answer keeps every one


def statistic_kind(statistic: str) -> str:
    """The family of a cohort statistic (engine.clinical.cohort.STAT_LABELS) that `not_ranked`
    reads: "change", "slope_year", "slope" or "latest" (maximum, minimum, mean)."""
    if "change" in statistic:
        return "change"
    if "slope" in statistic:
        return "slope_year" if statistic.endswith("_year") else "slope"
    return "latest"


def per_year_note(n: int) -> list[str]:
    """The cohort note of a per-year ranking (the prompt's notes): how many patients it leaves
    out, and why."""
    if not n:
        return []
    who = "1 patient" if n == 1 else f"{n} patients"
    return [
        f"{who} with a slope per assessment left out of the per-year ranking "
        f"({PER_YEAR_RULE}: too short a span for a rate per year)."
    ]


def not_ranked(
    statistic_kind: str,
    cohort_patients: Iterable[int],
    usable: Mapping[int, int],
    ranked: Collection[int],
) -> list[dict[str, Any]]:
    """[{"reason", "patients", "usable"}] for the cohort's patients missing from the ranking
    (`usable`: each one's number of usable scores of the ranked domain).

    `statistic_kind`: "latest", "change", "slope" or "slope_year"; `usable`: patient -> number
    of usable scores of the ranked domain; `ranked`: the ranking's patients."""
    groups: dict[str, list[int]] = {r: [] for r in REASONS}
    ranked_set = set(ranked)
    for p in sorted(int(q) for q in cohort_patients):
        if p not in ranked_set:
            groups[_reason(statistic_kind, usable.get(p, 0))].append(p)
    return [
        {"reason": r, "patients": ps, "usable": [usable.get(p, 0) for p in ps]}
        for r, ps in groups.items()
        if ps
    ]


def _reason(kind: str, n_usable: int) -> str:
    if n_usable == 0:
        return "no_score"
    if kind == "latest":
        return "latest_unread"
    if kind == "slope_year" and n_usable >= 2:  # a slope per assessment, no rate per year
        return "no_per_year"
    return "one_assessment"


def _phrase(reason: str, what: str) -> str:
    return {
        "no_score": f"with no usable {what} (none in the selection, or only partial or "
        "possibly-missing scores)",
        "latest_unread": f"whose latest {what} is partial or possibly missing",
        "one_assessment": f"with one usable {what} (a second assessment is needed)",
        "no_per_year": "with too few assessments or too short a span for a rate per year",
    }[reason]


def _patients(ps: Sequence[int]) -> str:
    shown = [str(p) for p in ps[:LISTED]]
    if len(shown) == 1:
        return f": patient {shown[0]}"
    lead = ", including" if len(ps) > len(shown) else ":"  # the count before says how many
    return f"{lead} patients {', '.join(shown[:-1])} and {shown[-1]}"


def _n_patients(n: int) -> str:
    """'1 patient', '6 patients': a count the reader (and the prose checker) takes as patients."""
    return "1 patient" if n == 1 else f"{n} patients"


def not_ranked_line(groups: Sequence[Mapping[str, Any]], n_patients: int, what: str) -> str:
    """ "7 of 46 patients are not ranked. 3 patients with one usable motor score (...): patients 4, 9
    and 31.
    ..." ('' when every patient is ranked)."""
    n = sum(len(g["patients"]) for g in groups)
    if not n:
        return ""
    parts = [
        f"{_n_patients(len(g['patients']))} {_phrase(g['reason'], what)}{_patients(g['patients'])}"
        for g in groups
    ]
    # the count before "ranked", and a sentence per reason: a number shortly after "ranked" (or
    # in a sentence that says it and names a patient) reads as a rank
    return f"{n} of {n_patients} patients are not ranked. " + ". ".join(parts)


def listed(groups: Sequence[Mapping[str, Any]]) -> list[int]:
    """The patients the text names (the answer's scope)."""
    return [p for g in groups for p in g["patients"][:LISTED]]


def counts(groups: Sequence[Mapping[str, Any]]) -> list[tuple[float, str, int | None]]:
    """(value, label, patient) of the numbers `not_ranked_line` states: the counts, and per
    listed patient the number of usable scores that left them out (what the text says of them)."""
    out: list[tuple[float, str, int | None]] = []
    n = sum(len(g["patients"]) for g in groups)
    if n:
        out.append((float(n), "patients not ranked", None))
    for g in groups:
        k = len(g["patients"])
        out.append((float(k), f"patients not ranked: {g['reason']}", None))
        out += [
            (float(u), f"usable scores (not ranked: {g['reason']})", p)
            for p, u in zip(g["patients"][:LISTED], g["usable"][:LISTED], strict=True)
        ]
    return out


def ranking_rule(statistic: str) -> str:
    """What a ranking by `statistic` reads and what a patient needs to be ranked (the Cohort
    page's caption)."""
    usable = "partial or possibly-missing scores are not used"
    if statistic.endswith("_year"):
        return (
            "Least-squares slope in points per year against the visit dates; a patient needs "
            f"at least {PER_YEAR_MIN_ASSESSMENTS} usable assessments spanning at least "
            f"{PER_YEAR_MIN_DAYS} days; {usable}."
        )
    if "slope" in statistic:
        return (
            "Least-squares slope in points per assessment of the instrument; a patient needs at "
            f"least 2 usable assessments; {usable}."
        )
    if "change" in statistic:
        return (
            "Change from the first to the latest usable assessment; a patient needs at least 2 "
            f"usable assessments; {usable}."
        )
    return (
        "Each patient's latest assessment of the domain; a patient whose latest score is partial "
        "or possibly missing is not ranked (no fall back to an earlier score)."
    )
