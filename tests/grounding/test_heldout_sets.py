"""The checker on texts written for the purpose by someone other than its author
(tests/grounding/data/heldout_v*.json: true clinical English and texts with one planted error
each, about MA-RAG study patients): planted errors caught and true texts passed, as rates with a
floor per set. docs/grounding.md gives each set's first (blind) measurement, the constructions
read since, and which sets were fitted on (v2-v5) and which is still held out (v6). A change
that lowers either rate of any set fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.check_command import check_text_against_plan

SETS = Path(__file__).with_name("data")
#: set -> (planted errors caught, true texts passed), floors at what was last measured.
#: Blind (before any tuning on the set): v2 15/17 and 14/17; v3 14/20 and 10/20; v4 14/20 and
#: 12/20; v5 15/20 and 12/20; v6 19/20 and 16/20 (then 20/20 caught after the v5 work); v7 18/20
#: and 7/20; v8 19/20 and 13/20. v2-v5 were fitted on and reach every text; v6 is held out; v7
#: and v8 were fitted on for the constructions they showed.
FLOORS = {
    "heldout_v2": (17 / 17, 17 / 17),
    "heldout_v3": (20 / 20, 20 / 20),
    "heldout_v4": (20 / 20, 20 / 20),
    "heldout_v5": (20 / 20, 20 / 20),
    "heldout_v6": (20 / 20, 16 / 20),
    "heldout_v7": (20 / 20, 19 / 20),
    "heldout_v8": (20 / 20, 17 / 20),
}


def outcomes(engine, name: str) -> list[tuple[dict, bool]]:
    cases = json.loads((SETS / f"{name}.json").read_text(encoding="utf-8"))
    return [
        (c, check_text_against_plan(engine, c["query"], c["text"], coverage_min=0.0)["passed"])
        for c in cases
    ]


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_planted_errors_are_caught_and_true_texts_pass(engine, name):
    got = outcomes(engine, name)
    true = [ok for c, ok in got if c["true"]]
    caught = [not ok for c, ok in got if not c["true"]]
    true_passed, caught_rate = sum(true) / len(true), sum(caught) / len(caught)
    missed = [c["id"] for c, ok in got if not c["true"] and ok]
    rejected = [c["id"] for c, ok in got if c["true"] and not ok]
    print(f"\n{name}: true texts passed {true_passed:.2f}, planted errors caught {caught_rate:.2f}")
    min_caught, min_true = FLOORS[name]
    assert caught_rate >= min_caught - 1e-9, missed
    assert true_passed >= min_true - 1e-9, rejected


def test_every_set_on_disk_has_a_floor():
    assert {p.stem for p in SETS.glob("heldout_v*.json")} == set(FLOORS)
