"""Unit tests of the pure chart builders (no Streamlit)."""

from __future__ import annotations

import sys

import pytest

from dashboard import charts
from dashboard.clinical import load_refs
from engine.types import Slope

h = sys.modules["dash_helpers"]  # loaded by conftest.py


def _traces(fig, **meta):
    return [t for t in fig.data if t.meta and all(t.meta.get(k) == v for k, v in meta.items())]


def test_item_heatmap_rows_are_items_columns_visits():
    fs = h.facts((3,))
    fig = charts.item_heatmap(fs, 3, domains=["qol"])
    hm = fig.data[0]
    assert len(hm.y) == 8 and len(hm.x) == 4
    col_sums = [sum(row[j] for row in hm.z) for j in range(4)]
    assert col_sums == [5, 6, 6, 7]


def test_patient_slopes_least_squares_per_assessment():
    slopes = {(s.patient, s.domain): s for s in charts.result_slopes(h.run())}
    assert slopes[(8, "motor")].slope == pytest.approx(2.5)  # 35, 36, 40 over assessments 0..2
    assert slopes[(12, "motor")].slope == 0
    # 3 assessments over 182 days (at least 180: a per-year rate)
    assert slopes[(8, "motor")].slope_year == pytest.approx(2.5 / (91 / 365.25), rel=0.01)


def test_cohort_slope_chart_unit_matches_the_statistic():
    slopes = charts.result_slopes(h.run())
    fig = charts.cohort_slope_figure(slopes, highlight=8)
    assert "points per assessment" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "points per assessment"
    assert "per visit" not in fig.layout.title.text
    per_year = [Slope(**{**s.to_dict(), "slope_year": 3.0}) for s in slopes]
    fig = charts.cohort_slope_figure(per_year, highlight=8, per_year=True)
    assert "points per year" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "points per year"
    (hl,) = [t for t in fig.data if t.meta and t.meta.get("highlight") == 8]
    assert all(x == 3.0 for x in hl.x) and "points/year" in hl.hovertext[0]
    # a series without a per-year rate is left out of the per-year chart
    short = [Slope(**{**s.to_dict(), "slope_year": None}) for s in slopes]
    fig = charts.cohort_slope_figure(short, highlight=8, per_year=True)
    assert not fig.data


def test_cohort_slope_chart_highlights_selected_patient():
    slopes = charts.result_slopes(h.run())
    fig = charts.cohort_slope_figure(slopes, highlight=8)
    (hl,) = [t for t in fig.data if t.meta and t.meta.get("highlight") == 8]
    motor_idx = list(hl.y).index("Motor")
    assert hl.x[motor_idx] == pytest.approx(2.5)
    boxes = [t for t in fig.data if t.type == "box"]
    assert all(8 not in t.meta["patients"] for t in boxes)
    assert sorted(boxes[0].meta["patients"]) == [3, 12]


def test_refs_from_the_shipped_contexts():
    from engine.config import Config

    refs = load_refs(Config.load(env={}).contexts_dir)
    assert not refs.note
    assert refs.mcid_for("mds-updrs", "motor") == (-3.25, 4.63)
    assert refs.mcid_for("pdq8", "qol") == (None, None)  # none verified: no markers
    assert [b.level for b in refs.bands_for("mds-updrs", "motor")] == ["mild", "moderate", "severe"]
    assert (
        refs.bands_for("marag-updrs44", "motor") == ()
    )  # no published bands for the study profile
    assert "Horvath" in refs.sources[("mds-updrs", "motor")]
