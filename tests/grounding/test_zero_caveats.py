"""The facts text's zero caveats are assertions the statement checker verifies against
the ledger, not safe forms: "zero on every item at every assessment while other parts were not"
(every score of the part is 0 and another MDS-UPDRS part is not) and "zero at the latest
assessment" (the latest score is 0)."""

from __future__ import annotations

import pytest

from engine.grounding.statements import check_statements
from engine.types import FactValue

# patient -> domain -> visit -> score
SCORES = {
    2: {"motor": {1: 0, 2: 0, 3: 0}, "nonmotor": {1: 7, 2: 9, 3: 8}, "adl": {1: 5, 2: 6, 3: 6}},
    3: {"motor": {1: 0, 2: 0, 3: 0}, "nonmotor": {1: 0, 2: 0, 3: 0}, "adl": {1: 0, 2: 0, 3: 0}},
    4: {"motor": {1: 0, 2: 4, 3: 0}, "nonmotor": {1: 3, 2: 3, 3: 5}, "adl": {1: 2, 2: 2, 3: 2}},
}
CAVEAT = (
    "Motor examination (Part III): zero on every item at every assessment while other parts "
    "were not: possibly not examined or missing data, so no severity band is given."
)
LATEST = (
    "Motor examination (Part III): zero at the latest assessment after non-zero scores: "
    "possibly missing data, not improvement, so no severity band is given."
)


def ledger() -> list[FactValue]:
    out = []
    for p, doms in SCORES.items():
        for dom, series in doms.items():
            for v, s in series.items():
                out.append(FactValue("score", s, p, v, dom, label=f"{dom} score, visit {v}"))
    return out


def verdict(text: str, patient: int):
    (s,) = check_statements(text, ledger(), (patient,)).sentences
    return s


def test_all_zero_caveat_is_checked_and_holds():
    s = verdict(CAVEAT, 2)
    assert s.status == "supported", s.reasons
    kinds = [f["assertion"] for f in s.facts if "assertion" in f]
    assert kinds == ["zero", "zero_others"]
    assert [x["value"] for x in s.facts[0]["values"]] == [0, 0, 0]


def test_all_zero_caveat_fails_when_a_score_is_not_zero():
    s = verdict(CAVEAT, 4)  # motor 4 at visit 2
    assert s.status == "unsupported"
    assert any("4 at visit 2" in r for r in s.reasons), s.reasons


def test_all_zero_caveat_fails_when_the_other_parts_are_zero_too():
    s = verdict(CAVEAT, 3)
    assert s.status == "unsupported"
    assert any("no other MDS-UPDRS part" in r for r in s.reasons), s.reasons


@pytest.mark.parametrize("patient", [2, 4])
def test_zero_at_latest_holds(patient):
    s = verdict(LATEST, patient)
    assert s.status == "supported", s.reasons


def test_zero_at_latest_fails_on_a_non_zero_latest_score():
    s = verdict(LATEST.replace("Motor examination (Part III)", "Non-motor experiences (Part I)"), 4)
    assert s.status == "unsupported"
    assert any("5 at visit 3" in r for r in s.reasons), s.reasons
