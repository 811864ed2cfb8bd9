"""The constructions read by chains.py and series_claims.py, on the MA-RAG study facts (as
test_heldout_sets.py): value chains, values followed by their patient, "over the same visits",
claims over every step of a series ("rose at every visit", "never fell") and over the MCID of
every stated change. Each true sentence passes and its false version is contradicted. The
sentences are new (other patients and measures than the held-out set's)."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan

# patient 23: motor 4 5 9 9 11, ADL 2 6 8 14 17, non-motor 5 8 11 11 11, total 11 19 28 34 39
# patient 3: motor 2 6 6, ADL 5 3 2, non-motor 11 8 6, PDQ-8 12 6 1 (visits 1-3)
# patient 8: motor 4 0 2, ADL 3 3 5, non-motor 17 5 4, UPDRS total 24 8 11 (visits 1-3)
# patient 5: motor 8 2 3 9, non-motor 10 5 3 8 (visits 4-7); PDQ-8 9 5 6 2 (visits 1-4)
P23, P3, P8, P5, P38 = (
    "patient 23 trajectory",
    "patient 3 trajectory",
    "patient 8 trajectory",
    "patient 5 trajectory",
    "compare patients 3 and 8",
)

CASES = [
    # value chains: the values between the named ends are at the visits between them
    (P23, "The UPDRS total went from 11 at visit 1 to 19, 28, 34 and 39 at visit 5.", True),
    (P23, "The UPDRS total went from 11 at visit 1 to 19, 28, 36 and 39 at visit 5.", False),
    (P23, "The motor score went from 4 at visit 1 to 5, 9, 9 and 11 at visit 5.", True),
    (P23, "The motor score went from 4 at visit 1 to 5, 9, 10 and 11 at visit 5.", False),
    (P5, "The non-motor score fell from 10 at visit 4 to 5 and 3 at visit 6.", True),
    (P5, "The non-motor score fell from 10 at visit 4 to 5 and 4 at visit 6.", False),
    (P5, "The PDQ-8 total went from 9 at visit 1 to 5, 6 and 2 at visit 4.", True),
    (P5, "The PDQ-8 total went from 9 at visit 1 to 6, 5 and 2 at visit 4.", False),
    # values followed by their patient, at the sentence's stated visits
    (
        P38,
        "The non-motor score fell in both patients from visit 1 to visit 3, from 11 to 6 in "
        "patient 3 and from 17 to 4 in patient 8.",
        True,
    ),
    (
        P38,
        "The non-motor score fell in both patients from visit 1 to visit 3, from 11 to 6 in "
        "patient 3 and from 17 to 5 in patient 8.",
        False,
    ),
    (
        P38,
        "The non-motor score fell in both patients from visit 1 to visit 3, from 17 to 4 in "
        "patient 3 and from 11 to 6 in patient 8.",
        False,
    ),
    (
        P38,
        "The UPDRS total fell in both patients between visit 1 and visit 3, from 18 to 14 for "
        "patient 3 and from 24 to 11 for patient 8.",
        True,
    ),
    (
        P38,
        "The ADL score rose in both patients from visit 1 to visit 3, from 5 to 2 in patient 3 "
        "and from 3 to 5 in patient 8.",
        False,
    ),
    (
        P38,
        "Both patients improved in the non-motor score between visit 1 and visit 3: patient 3 "
        "from 11 to 6 and patient 8 from 17 to 5.",
        False,
    ),
    # "over the same visits": the previous change's visits
    (
        P3,
        "The motor score rose from 2 at visit 1 to 6 at visit 3, and the non-motor score fell "
        "from 11 to 6 over the same visits.",
        True,
    ),
    (
        P3,
        "The motor score rose from 2 at visit 1 to 6 at visit 3, and the non-motor score fell "
        "from 11 to 8 over the same visits.",
        False,
    ),
    (
        P3,
        "The non-motor score fell from 11 at visit 1 to 8 at visit 2, and the PDQ-8 total fell "
        "from 12 to 6 over the same period.",
        True,
    ),
    (
        P3,
        "The non-motor score fell from 11 at visit 1 to 8 at visit 2, and the PDQ-8 total fell "
        "from 12 to 1 over the same period.",
        False,
    ),
    # every step of a series
    (P23, "The non-motor score rose at each visit between visit 1 and visit 3.", True),
    (P23, "The non-motor score rose at every visit.", False),
    (P23, "The non-motor score never fell, from 5 at visit 1 to 11 at visit 5.", True),
    (P23, "The ADL score never rose.", False),
    (
        P3,
        "The ADL score fell at each assessment, from 5 at visit 1 to 3 at visit 2 and 2 at visit 3.",
        True,
    ),
    (P3, "The motor score rose at every visit.", False),
    (P3, "The motor score never fell.", True),
    (P5, "The non-motor score fell at every visit from visit 4 to visit 6.", True),
    (P5, "The motor score fell at every visit.", False),
    # the MCID of every stated change
    (
        P23,
        "Between visit 1 and visit 5 the motor score rose from 4 to 11 and the ADL score from 2 "
        "to 17. Each change is at or above its MCID.",
        True,
    ),
    (
        P23,
        "Between visit 3 and visit 5 the motor score rose from 9 to 11 and the ADL score from 8 "
        "to 17. Each change is at or above its MCID.",
        False,
    ),
    (P23, "All three parts worsened beyond their MCID between visit 1 and visit 5.", True),
    (P23, "All three parts worsened beyond their MCID between visit 3 and visit 5.", False),
    (
        P8,
        "Between visit 1 and visit 2 the non-motor score fell from 17 to 5 and the motor score "
        "from 4 to 0; every change passed its MCID.",
        True,
    ),
    (
        P8,
        "Between visit 1 and visit 3 the non-motor score fell from 17 to 4 and the motor score "
        "from 4 to 2; every change passed its MCID.",
        False,
    ),
    (
        P8,
        "Between visit 1 and visit 3 the motor score went from 4 to 2 and the ADL score from 3 "
        "to 5; both changes stayed below their MCID.",
        True,
    ),
    (
        P8,
        "Between visit 1 and visit 3 the non-motor score went from 17 to 4 and the ADL score "
        "from 3 to 5; both changes stayed below their MCID.",
        False,
    ),
]


@pytest.mark.parametrize(("query", "text", "ok"), CASES)
def test_true_passes_and_false_is_contradicted(engine, query, text, ok):
    rec = check_text_against_plan(engine, query, text, coverage_min=0.0)
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert rec["passed"] is ok, reasons
    if not ok:  # contradicted by the facts, not left unread
        assert reasons and not any("cannot tell" in r for r in reasons), reasons


def test_every_step_reason_names_the_broken_pair(engine):
    rec = check_text_against_plan(
        engine, P23, "The motor score rose at every visit, from 4 at visit 1 to 11 at visit 5."
    )
    reasons = [r for s in rec["sentences"] for r in s["reasons"]]
    assert any("9 at visit 3 to 9 at visit 4" in r for r in reasons), reasons
