"""The rationale of a red flag (why it matters, the rule's source) is in the flag's detail and
in provenance, not in the summary text."""

from __future__ import annotations

from dashboard import render, tables

ROW = {
    "patient": 23,
    "visit": 3,
    "date": "2020-06-01",
    "domain": "nonmotor",
    "item": "COGNITION",
    "item_label": "Cognition",
    "value": 2.0,
    "threshold": 2.0,
    "rule": "cognition",
    "label": "cognitive impairment",
    "why": "possible PD-MCI or dementia; predicts mortality",
    "source": "reference/clinical-scales.md 'red flags' (convention)",
}


def test_flag_line_shows_why_and_source():
    line = render.flag_line(ROW)
    assert "predicts mortality" in line
    assert "reference/clinical-scales.md 'red flags' (convention)" in line
    assert "**2**" in line and "Patient 23, visit 3" in line


def test_flag_rule_rows_carry_why_and_source_for_provenance():
    (row,) = tables.flag_rule_rows([ROW])
    assert row["why"] == ROW["why"] and row["source"] == ROW["source"]
    assert (row["patient"], row["visit"], row["item"], row["value"]) == (23, 3, "COGNITION", 2.0)
