"""The comparison summary writes red flags as the trajectory text does: one paragraph per patient
and item, visits collapsed, current / resolved / not resolved, each paragraph naming its patient
(a reading is local to its paragraph). The per-visit list ("Red-flag items: patient 4, visit 1:
...") stays in the dense text for QA. Checked on every patient of the MA-RAG study data (and the
synthetic cohort), each paired as the sweep of test_facts_text_every_patient pairs them."""

from __future__ import annotations

import re

import pytest

from engine.config import Config
from engine.eval.harness import default_marag_dir, open_dataset
from engine.pipeline import Engine
from engine.types import Plan
from engine.writing.words import item_label as _label

_VISITS = re.compile(r"\bat visits? (\d+(?:(?:, | and )\d+)*)")


def _visits(text: str) -> set[int]:
    return {int(v) for m in _VISITS.finditer(text) for v in re.findall(r"\d+", m.group(1))}


def _flag_paragraphs(summary: str, patient: int) -> list[str]:
    head = f"Patient {patient}, red flag ("
    return [p for p in summary.split("\n\n") if p.startswith(head)]


@pytest.mark.parametrize("dataset", ["marag", "synthetic"])
def test_comparison_red_flags_per_item_with_status_and_patient(dataset):
    if dataset == "marag" and not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    ds = open_dataset(dataset)
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    ids = ds.kb.patient_ids()
    rows_seen = shorter = 0
    for i, p in enumerate(ids):
        plan = Plan((p, ids[(i + 7) % len(ids)]), "comparison")
        r = eng.run(plan)
        assert set(r.verification["released"].values()) == {"as_written"}
        assert "Red-flag items:" not in r.summary
        red = r.flags["red_flags"]
        if red:
            assert "Red-flag items:" in r.summary_dense  # the per-visit list, for QA
        # no red-flag paragraph about a patient outside the plan, none without its patient
        assert not re.search(r"(?m)^Red flag \(", r.summary)
        named = {int(m) for m in re.findall(r"(?m)^Patient (\d+), red flag \(", r.summary)}
        assert named <= set(plan.patients)
        for row in red:
            rows_seen += 1
            onset = row["rule"].endswith("new_onset")
            label = row["label"] if onset else _label(row["item_label"])
            paras = [x for x in _flag_paragraphs(r.summary, row["patient"]) if label in x]
            assert paras, (plan.patients, row)
            # the row's visit is among the visits its item's paragraph lists (after the status,
            # the label cut out: "(cognition)" in a label is not the rule's reason)
            assert any(
                row["visit"] in _visits(x.split("): ", 1)[1].replace(label, "", 1).split(" (")[0])
                for x in paras
            ), (plan.patients, row, paras)
            if row["current"]:
                assert any("red flag (current)" in x for x in paras), (row, paras)
        if len(red) >= 10:
            shorter += len(r.summary) < len(r.summary_dense)
    assert rows_seen > 50  # the sweep saw red flags of many patients
    assert shorter > 0  # a long per-visit list collapses per item
