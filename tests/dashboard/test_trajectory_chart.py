"""The trajectory chart says what the text says: its bands, MCID verdicts, caveat points and
PDQ-8 scale come from the statements the text was rendered from (dashboard.chart_marks). Unit
tests on the in-memory KB, and every study patient's chart compared with its text."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest

from dashboard.chart_marks import marks_from
from dashboard.trajectory_chart import SI_TITLE, shared_y_ranges, trajectory_figure
from engine.types import Plan
from tools import golden_records

h = sys.modules["dash_helpers"]  # loaded by conftest.py


def _traces(fig, **meta):
    return [t for t in fig.data if t.meta and all(t.meta.get(k) == v for k, v in meta.items())]


def _panel_of(fig, dom_title: str) -> str:
    """The y axis name ('y', 'y2', ...) of the panel titled `dom_title`."""
    titles = [a.text for a in fig.layout.annotations if a.xref == "paper" and a.yref == "paper"]
    i = titles.index(dom_title) + 1
    return "y" if i == 1 else f"y{i}"


def test_one_panel_per_domain_and_scores_from_the_facts():
    r = h.run((3,))
    fig = trajectory_figure(r)
    (motor,) = _traces(fig, domain="motor", patient=3)
    assert list(motor.y) == [20, 26, 21, 22]
    assert list(motor.x) == ["2021-01-10", "2021-04-12", "2021-07-15", "2021-10-20"]
    assert "Finger" in motor.hovertext[0]


def test_verdicts_are_the_first_to_latest_changes_beyond_the_mcid():
    r = h.run((3,))
    fig = trajectory_figure(r)
    verdicts = marks_from(r).verdicts
    for v in verdicts:
        (t,) = _traces(fig, domain=v.domain, mcid=v.label)
        assert v.score in list(t.y)
    # a change below the MCID or by direction only is not marked
    marked = {(v.domain, v.label) for v in verdicts}
    for t in fig.data:
        if t.meta and "mcid" in t.meta:
            assert (t.meta["domain"], t.meta["mcid"]) in marked
    assert not _traces(fig, domain="qol", mcid="worsened")


def test_months_since_baseline_and_shared_scales():
    r = h.run((3, 8), analysis="comparison")
    fig = trajectory_figure(r, months=True)
    for p in (3, 8):
        (motor,) = _traces(fig, domain="motor", patient=p)
        assert motor.x[0] == 0
    ranges = shared_y_ranges(r)
    a = trajectory_figure(r, patients=[3], y_ranges=ranges, colours={3: "#111111", 8: "#222222"})
    b = trajectory_figure(r, patients=[8], y_ranges=ranges, colours={3: "#111111", 8: "#222222"})
    assert a.layout.yaxis.range == b.layout.yaxis.range
    assert _traces(a, domain="motor", patient=3)[0].line.color == "#111111"
    assert _traces(b, domain="motor", patient=8)[0].line.color == "#222222"


@pytest.fixture(scope="module")
def study() -> Any:
    if not golden_records.STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    return golden_records._engines()["marag"]


ZERO = "normal"  # contexts/thresholds.json course.zero_level (asserted below)
DOMAIN_WORD = {"motor": "motor", "adl": "ADL", "nonmotor": "non-motor"}


def test_every_study_chart_agrees_with_its_text(study):
    """For each of the 46 study patients: a part the digest calls beyond the reference MCID has
    its verdict on the chart at the latest visit and no other part has one; the band the text
    names for a part's latest score is the chart's band under that score; no caveat point is
    joined into a line; the PDQ-8 panel is the Summary Index on 0-100 with the course's values."""
    from dashboard.clinical import load_refs
    from engine.config import Config

    assert load_refs(Config.load(env={}).contexts_dir).zero_level == ZERO
    checked = {"verdicts": 0, "bands": 0, "caveats": 0, "si": 0}
    for p in sorted(study.kb.patient_ids()):
        r = study.run(Plan([p], "trajectory", ["updrs", "pdq8"]))
        fig = trajectory_figure(r, zero_level=ZERO)
        marks = marks_from(r, ZERO)
        beyond = {
            d
            for d, word in DOMAIN_WORD.items()
            if re.search(
                rf"(?<![-\w]){re.escape(word)} [\d.]+ to [\d.]+, beyond the reference MCID",
                r.digest,
            )
        }
        on_chart = {t.meta["domain"] for t in fig.data if t.meta and "mcid" in t.meta}
        assert on_chart == beyond, (p, on_chart, beyond, r.digest)
        checked["verdicts"] += len(beyond)
        for s in r.statements:
            if s.kind != "band" or not s.subject:
                continue
            score = next(v.value for v in s.values if v.kind == "score")
            title = {"motor": "Motor", "adl": "ADL", "nonmotor": "Non-motor"}[s.subject]
            axis = _panel_of(fig, title)
            under = [sh for sh in fig.layout.shapes if sh.yref == axis and sh.y0 <= score < sh.y1]
            names = {
                a.text
                for a in fig.layout.annotations
                if a.yref == f"{axis} domain" or a.yref == axis
            }
            assert under, (p, s.subject, score)
            assert s.label in names, (p, s.subject, s.label, names)
            checked["bands"] += 1
        points = {(s.patient, s.domain, s.visit): (s.date, s.score) for s in r.series}
        for (pp, dom, visit), _why in marks.caveats.items():
            date, score = points[(pp, dom, visit)]
            (line,) = [t for t in _traces(fig, domain=dom, patient=pp) if not t.meta.get("caveat")]
            (odd,) = _traces(fig, domain=dom, patient=pp, caveat=True)
            assert (date, score) not in set(zip(line.x, line.y, strict=True)), (p, dom, visit)
            assert (date, score) in set(zip(odd.x, odd.y, strict=True)), (p, dom, visit)
            assert (
                not [  # and no verdict sits on it
                    t
                    for t in fig.data
                    if t.meta
                    and t.meta.get("domain") == dom
                    and "mcid" in t.meta
                    and (date, score) in set(zip(t.x, t.y, strict=True))
                ]
            )
            checked["caveats"] += 1
        if p in marks.summary_index:
            si_axis = _panel_of(fig, SI_TITLE)
            layout_axis = "yaxis" if si_axis == "y" else f"yaxis{si_axis[1:]}"
            assert tuple(fig.layout[layout_axis].range) == (0, 100)
            (line,) = [t for t in _traces(fig, domain="qol", patient=p) if not t.meta.get("caveat")]
            si = {round(x, 2) for _v, _d, x in marks.summary_index[p]}
            assert {round(y, 2) for y in line.y if y is not None} <= si
            checked["si"] += 1
    assert checked["verdicts"] > 20 and checked["bands"] > 60 and checked["si"] >= 40, checked
    assert checked["caveats"] >= 10, checked
