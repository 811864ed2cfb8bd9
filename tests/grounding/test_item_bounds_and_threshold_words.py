"""Constructions read since held-out v8 (docs/grounding.md), on study patients other than v8's,
true and false, with the facts taken from the engine's own ledger of each patient: "no item was
ever rated above N" bounds every MDS-UPDRS item rating of the patient (the PDQ-8's when the
sentence names it); "at every assessment after baseline" leaves the first assessment out; a
direction word that names a threshold ("the MCID for worsening") does not bind to the change
after it; "fell only 2 points" and "Part II by 4" state changes."""

from __future__ import annotations

import pytest

from engine.check_command import check_text_against_plan
from engine.types import Plan

PATIENTS = (3, 8, 20)


def passed(engine, query: str, text: str) -> bool:
    return check_text_against_plan(engine, query, text, coverage_min=0.0)["passed"]


def _ledger(engine, p: int):
    return engine.run(Plan((p,), "trajectory")).ledger


def _items(engine, p: int, pdq: bool) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for v in _ledger(engine, p):
        if v.kind == "item" and (v.domain == "qol") == pdq:
            out.setdefault(v.item, {})[v.visit] = float(v.value)
    return out


@pytest.mark.parametrize("p", PATIENTS)
@pytest.mark.parametrize("pdq", [False, True])
def test_no_item_above_the_highest_rating(engine, p, pdq):
    top = max(x for s in _items(engine, p, pdq).values() for x in s.values())
    which = "PDQ-8 item" if pdq else "item"
    q = f"patient {p} trajectory"
    assert passed(engine, q, f"No {which} was ever rated above {top:g} for patient {p}.")
    if top > 0:
        assert not passed(
            engine, q, f"No {which} was ever rated above {top - 1:g} for patient {p}."
        )


def test_every_assessment_after_baseline(engine):
    """An item constant after a different first rating: true after baseline, false over all."""
    for p in PATIENTS:
        for code, s in _items(engine, p, False).items():
            later = [s[v] for v in sorted(s)[1:]]
            if len(later) >= 2 and len(set(later)) == 1 and s[min(s)] != later[0]:
                q, n = f"patient {p} trajectory", f"{later[0]:g}"  # the item named by its code
                text = f"{code} was rated {n} at every assessment after baseline for patient {p}."
                assert passed(engine, q, text), text
                text = f"{code} was rated {n} at every assessment for patient {p}."
                assert not passed(engine, q, text), text
                return
    pytest.skip("no item constant after a different baseline rating in these patients")


def _changes(engine, p: int) -> dict[str, tuple[float, float]]:
    """(first, latest) score per MDS-UPDRS part of the patient."""
    first: dict[str, tuple[int, float]] = {}
    last: dict[str, tuple[int, float]] = {}
    for v in _ledger(engine, p):
        if v.kind == "score" and v.domain in ("nonmotor", "adl", "motor"):
            if v.domain not in first or v.visit < first[v.domain][0]:
                first[v.domain] = (v.visit, float(v.value))
            if v.domain not in last or v.visit > last[v.domain][0]:
                last[v.domain] = (v.visit, float(v.value))
    return {d: (first[d][1], last[d][1]) for d in first}


def test_a_threshold_word_does_not_bind_to_the_next_change(engine):
    """'... beyond the 2.51-point MCID for worsening, whereas Part I fell only N points (A to
    B)': 'worsening' names the MCID; 'fell' binds to N. True for a part that fell, and the same
    sentence with 'rose' fails."""
    names = {"nonmotor": "Part I", "adl": "Part II", "motor": "Part III"}
    for p in PATIENTS:
        for d, (a, b) in _changes(engine, p).items():
            if a > b:
                q = f"patient {p} trajectory"
                tail = f"{names[d]} fell only {a - b:g} points ({a:g} to {b:g})."
                text = f"Against the 2.51-point MCID for worsening, {tail}"
                assert passed(engine, q, text), text
                assert not passed(engine, q, text.replace("fell", "rose")), text
                return
    pytest.skip("no part fell in these patients")
