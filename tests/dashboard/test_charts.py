"""Unit tests of the pure chart builders (no Streamlit)."""

from __future__ import annotations

import sys

import pytest

from dashboard import charts
from dashboard.clinical import ClinicalRefs, load_refs
from engine.types import Slope

h = sys.modules["dash_helpers"]  # loaded by conftest.py


def _traces(fig, **meta):
    return [t for t in fig.data if t.meta and all(t.meta.get(k) == v for k, v in meta.items())]


def test_trajectory_has_one_panel_per_domain_and_scores_from_facts():
    fs = h.facts((3,))
    fig = charts.trajectory_figure(fs, h.REFS)
    titles = [
        a.text
        for a in fig.layout.annotations
        if a.text in {"Motor", "ADL", "Non-motor", "QoL (PDQ-8)"}
    ]
    assert titles == ["Motor", "ADL", "Non-motor", "QoL (PDQ-8)"]
    (motor,) = _traces(fig, domain="motor", patient=3)
    assert list(motor.y) == [20, 26, 21, 22]
    assert list(motor.x) == ["2021-01-10", "2021-04-12", "2021-07-15", "2021-10-20"]
    # hover shows the item scores
    assert "3.4 Finger tapping" in motor.hovertext[0] or "Finger" in motor.hovertext[0]
    assert "motor" not in motor.hovertext[0].split("<br>")[0]


def test_mcid_markers_only_where_change_reaches_mcid():
    r = h.run((3,))
    fs = r.facts
    marks = charts.mcid_marks(r.series)
    motor = [(m.visit, m.mcid_crossing, m.delta.value) for m in marks if m.domain == "motor"]
    assert motor == [(2, "worsened", 6.0), (3, "improved", -5.0)]  # +1 at visit 4 is stable
    fig = charts.trajectory_figure(fs, h.REFS, series=r.series)
    (wor,) = _traces(fig, domain="motor", mcid="worsened")
    assert list(wor.y) == [26] and list(wor.x) == ["2021-04-12"]
    (imp,) = _traces(fig, domain="motor", mcid="improved")
    assert list(imp.y) == [21]
    # no MCID known for qol -> no markers there
    assert not _traces(fig, domain="qol", mcid="worsened")


def test_no_refs_means_no_bands_and_no_markers():
    fig = charts.trajectory_figure(h.facts((3,)), ClinicalRefs())
    assert not fig.layout.shapes
    assert not [t for t in fig.data if t.meta and "mcid" in t.meta]


def test_severity_bands_drawn_on_their_own_panel_axes():
    fig = charts.trajectory_figure(h.facts((8,)), h.REFS, domains=["adl", "motor"])
    # adl is panel 1 (axis y), motor is panel 2 (axis y2): bands attach to the trace's own axis
    yrefs = {s.yref for s in fig.layout.shapes}
    assert yrefs == {"y", "y2"}
    motor_bands = sorted((s.y0, s.y1) for s in fig.layout.shapes if s.yref == "y2")
    assert motor_bands[0] == (0, 32) and motor_bands[1][0] == 33


def test_compare_draws_one_line_per_patient():
    fig = charts.trajectory_figure(h.facts((3, 8)), h.REFS, domains=["motor"])
    lines = _traces(fig, domain="motor")
    assert sorted(t.meta["patient"] for t in lines if "patient" in t.meta) == [3, 8]


def test_missing_scores_are_gaps_not_zeros():
    fs = h.facts((12,))
    import dataclasses

    fs = [
        dataclasses.replace(f, score=None) if (f.domain == "motor" and f.visit == 2) else f
        for f in fs
    ]
    fig = charts.trajectory_figure(fs, h.REFS, domains=["motor"])
    (motor,) = _traces(fig, domain="motor", patient=12)
    assert list(motor.y) == [10, None]


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
