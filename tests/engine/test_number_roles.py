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


def test_a_patient_id_that_reads_as_a_year_is_a_patient_id() -> None:
    """At 10,000 patients, ids 1900-2099 read as bare years: after "patient" they are ids."""
    from engine.agents.rendered_record import rendered_record
    from engine.clinical.statements import Statement, Statements
    from engine.types import FactValue
    from engine.writing.citing import cite, finish

    sts = Statements()
    rank = FactValue.make("rank", 1.0, patient=1916, domain="motor", source="computed")
    slope = FactValue.make("slope", 7.0, patient=1916, domain="motor", source="computed")
    st = sts.add(Statement.make("S1", "cohort", 1916, "motor", (), "", (rank, slope)))
    rec = rendered_record(
        finish(cite("rank 1: patient 1916, 7.00 per visit.", [st])), sts, agent="cohort"
    )
    assert not rec["unsupported"]
    assert [c["role"] for c in rec["claims"]] == ["value", "patient", "value"]
    # the same digits as a year of no cited session stay a date, and unsupported
    rec = rendered_record(
        finish(cite("rank 1 in 1916, 7.00 per visit.", [st])), sts, agent="cohort"
    )
    assert [u["text"] for u in rec["unsupported"]] == ["1916"]
