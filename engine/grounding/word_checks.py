"""The word assertions of a sentence, each checked against the ledger for what it is about
(sentence_scope.py). This module runs the checks in their fixed order, one module per role:
direction words (direction_checks.py), severity words (severity_checks.py), presence or absence
of a symptom and the zero caveats (presence_checks.py), comparatives and superlatives
(comparison_checks.py), claims over a whole series or every stated change ("rose at every
visit", "each change is at or above its MCID": series_claims.py), one value said of several
patients ("5 in both patient 50 and patient 58": shared_values.py); periods ("over 14 months") are
checked here, before the numbers of the sentence, whose period spans they exempt. Each check
returns how many assertions held and writes every failure, with its reason, into the sentence's
verdict."""

from __future__ import annotations

import datetime as dt
import re

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.comparison_checks import check_comparisons
from engine.grounding.dated_claims import check_dated_claims
from engine.grounding.direction_checks import check_directions
from engine.grounding.facts_view import FactsView
from engine.grounding.mcid_claims import check_mcid_claims
from engine.grounding.presence_checks import check_presence, check_zero_caveats
from engine.grounding.sentence_scope import SentenceCtx, patients_for
from engine.grounding.sentence_verdict import SentenceVerdict
from engine.grounding.series_claims import check_series_claims
from engine.grounding.severity_checks import check_severity
from engine.grounding.shared_values import check_shared_values

PERIOD_RE = re.compile(
    r"\b(?:over|across|within|in|during|spanning|after)\s+(?:about\s+|roughly\s+|nearly\s+|almost\s+)?(?:(\d+)|a|one)\s+(months?|years?|weeks?)\b",
    re.I,
)
_DAYS_PER = {"week": 7, "month": 30.44, "year": 365.25}


def check_words(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """Direction, severity, presence, comparative and superlative words and the zero caveats;
    returns how many assertions were verified (failures go into `v`)."""
    n = 0
    n += check_directions(ctx, view, claims, only_patient, v)
    n += check_severity(ctx, view, claims, only_patient, v)
    n += check_presence(ctx, view, claims, only_patient, v)
    n += check_comparisons(ctx, view, only_patient, v)
    n += check_zero_caveats(ctx, view, only_patient, v)
    n += check_series_claims(ctx, view, claims, only_patient, v)
    n += check_mcid_claims(ctx, view, only_patient, v)
    n += check_dated_claims(ctx, view, claims, only_patient, v)
    n += check_shared_values(ctx, view, claims, v)
    return n


def check_periods(
    ctx: SentenceCtx, view: FactsView, only_patient: int | None, v: SentenceVerdict
) -> list[tuple[int, int]]:
    """Each period of the sentence ("over 14 months", "within a year") against the patient's
    first and last visit dates (within 0.75 of the unit); returns the spans of those that held
    (failures go into `v`)."""
    spans = []
    for m in literal_scan.finditer(PERIOD_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n_claim = int(m.group(1)) if m.group(1) else 1
        unit = m.group(2).lower().rstrip("s")
        ps = patients_for(ctx, m.start(), only_patient)
        if not ps:
            v.fail("date", f"'{m.group(0)}': cannot tell whose follow-up it measures")
            continue
        dates = sorted(view.dates.get(ps[0], {}).values())
        if len(dates) < 2:
            v.fail("date", f"'{m.group(0)}': patient {ps[0]} has one visit date")
            continue
        days = (dt.date.fromisoformat(dates[-1]) - dt.date.fromisoformat(dates[0])).days
        actual = days / _DAYS_PER[unit]
        if abs(actual - n_claim) <= 0.75 or (
            n_claim == 1 and m.group(1) is None and abs(actual - 1) <= 0.75
        ):
            spans.append((m.start(), m.end()))
        else:
            v.fail(
                "date",
                f"'{m.group(0)}': patient {ps[0]}'s visits span {days} days "
                f"({dates[0]} to {dates[-1]}, about {actual:.1f} {unit}s)",
            )
    return spans
