"""An analysis page opens with the result: after Run the plan form is collapsed into an
expander, a row of headline figures (st.metric) comes first, red flags are counted as distinct
items with current and earlier ones apart, and tables show labels and help (column_config).
The headline figures are read from the result (checked against its statements on the study
data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dashboard.headline import headline_figures
from dashboard.table_columns import column_config, display_frame
from engine.report.model import latest_red_flags
from engine.types import Plan
from tools import golden_records

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def test_patient_page_opens_with_headline_figures_and_a_collapsed_plan(handle):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=30).run()
    at.switch_page("views/patient.py").run()
    assert not at.expander or all("Plan:" not in e.label for e in at.expander)
    at.selectbox(key="patient").set_value(3).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    assert any(e.label.startswith("Plan:") for e in at.expander)  # collapsed once shown
    labels = [m.label for m in at.metric]
    assert labels[0].startswith("UPDRS total (visit ") and "Current red flags" in labels
    assert at.metric[0].delta and "since visit" in at.metric[0].delta
    red = (handle.engine.run(Plan((3,), "trajectory")).flags or {}).get("red_flags") or []
    current, _earlier = latest_red_flags({"red_flags": red})
    flags = next(m for m in at.metric if m.label == "Current red flags")
    assert flags.value == str(len(current))


def test_flag_counts_are_distinct_items_current_apart():
    rows = [
        {"patient": 1, "item": "A", "visit": 1, "current": False},
        {"patient": 1, "item": "A", "visit": 2, "current": True},
        {"patient": 1, "item": "B", "visit": 1, "current": False},
        {"patient": 2, "item": "A", "visit": 3, "current": True},
    ]
    current, earlier = latest_red_flags({"red_flags": rows})
    assert [(r["patient"], r["item"], r["visit"]) for r in current] == [(1, "A", 2), (2, "A", 3)]
    assert [(r["patient"], r["item"]) for r in earlier] == [(1, "B")]


def test_column_config_labels_ids_as_whole_numbers_and_blanks_none():
    import pandas as pd

    df = pd.DataFrame({"patient": [23, 7], "slope_per_year": [1.234, None], "rule": [None, "x"]})
    cfg = column_config(df)
    assert cfg["patient"]["label"] == "Patient" and cfg["patient"]["type_config"]["format"] == "%d"
    assert cfg["slope_per_year"]["label"] == "Slope per year"
    assert cfg["rule"]["label"] == "Rule" and cfg["rule"]["help"]
    assert display_frame(df)["rule"].tolist() == ["", "x"]


@pytest.fixture(scope="module")
def study() -> Any:
    if not golden_records.STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    return golden_records._engines()["marag"]


def test_headline_figures_agree_with_the_statements_on_the_study_data(study):
    """For every study trajectory: the total and its change are the total statement's last
    score and cumulative value; the current red-flag count is the number of red_flag
    statements labelled current (with the new onsets that are red-flag rules)."""
    checked = 0
    for p in sorted(study.kb.patient_ids()):
        r = study.run(Plan([p], "trajectory", ["updrs", "pdq8"]))
        figs = {h.label.split(" (")[0]: h for h in headline_figures(r, p)}
        total = next((s for s in r.statements if s.kind == "change" and s.subject == "total"), None)
        if total is not None:
            scores = [v.value for v in total.values if v.kind == "score"]
            cum = next(v.value for v in total.values if v.kind == "cumulative")
            assert figs["UPDRS total"].value == f"{scores[-1]:g}"
            assert figs["UPDRS total"].delta.startswith(("+" if cum > 0 else "") + f"{cum:g}")
            checked += 1
        current = {
            s.subject
            for s in r.statements
            if s.label == "current"
            and (
                s.kind == "red_flag"
                or (  # a new onset that is itself a red-flag rule (hallucinations)
                    s.kind == "new_onset"
                    and any(str(v.item or "").startswith("red_flag_") for v in s.values)
                )
            )
        }
        assert figs["Current red flags"].value == str(len(current)), p
    assert checked >= 40
