"""A rendered number's role (engine.agents.rendered_record): a visit number after "visit(s)", a
patient id after "patient(s)" or "proj id". The role is read by trying the anchored patterns at
the last occurrence of their words only; on random texts built from the words, list characters
and others, that must equal searching the patterns anywhere."""

from __future__ import annotations

import random

from engine.agents.rendered_record import PATIENT_BEFORE, VISIT_BEFORE, _ends_with

PARTS = (
    "visit ", "visits ", "Visit ", "VISITS  ", "revisit ", "patient ", "patients ", "Patient #",
    "proj id ", "outpatient ", "1", "2", "10", ", ", " and ", "3,", "to ", "x", " ", "é",
)  # fmt: skip


def test_the_last_occurrence_reads_as_a_search_anywhere() -> None:
    rng = random.Random(7)
    for _ in range(20000):
        text = "".join(rng.choice(PARTS) for _ in range(rng.randint(0, 9)))
        assert _ends_with(VISIT_BEFORE, text, ("visit",)) == bool(VISIT_BEFORE.search(text))
        assert _ends_with(PATIENT_BEFORE, text, ("patient", "proj id")) == bool(
            PATIENT_BEFORE.search(text)
        ), text
