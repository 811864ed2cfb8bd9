"""Deterministic agent computations against hand-computed values (tests/engine fixture cohort)."""

from __future__ import annotations

import marag_engine_fixtures as fx
import pytest

from engine.agents.comparison import build_table_b, render_table_b
from engine.agents.final import dispatch_mode, incongruence_flags, red_flags, score_table
from engine.clinical.cohort import choose_statistic, compute_cohort
from engine.clinical.series import classify, series
from engine.retrieve import fetch_facts
from engine.route import route_after_retrieve
from engine.types import Plan

CTX = fx.CONTEXTS


def facts(patients=(1, 2, 3, 4), instruments=("updrs", "pdq8"), vf="none"):
    return fetch_facts(Plan(patients, "trajectory", instruments, vf), fx.kb())["facts"]


def test_router_is_a_pure_closed_map():
    assert route_after_retrieve("comparison") == "comparison_agent"
    assert route_after_retrieve("trajectory") == "domain_agents"
    assert route_after_retrieve("single_session") == "domain_agents"
    assert route_after_retrieve("cohort") == "cohort_agent"
    with pytest.raises(ValueError, match="unknown intent"):
        route_after_retrieve("summary")


def test_mcid_labels_asymmetric_and_pdq8_without_mcid():
    motor = CTX.mcid_for("mds-updrs", "motor")
    assert classify(4.62, motor).label == "stable" and classify(4.63, motor).label == "worsened"
    assert classify(-3.25, motor).label == "improved" and classify(-3.24, motor).label == "stable"
    assert classify(-3.24, motor).significance == "below MCID 3.25"
    assert classify(5, motor).significance == "at or above MCID 4.63"
    nm = CTX.mcid_for("mds-updrs", "nonmotor")
    assert classify(2.45, nm).label == "worsened" and classify(-2.63, nm).label == "stable"
    assert CTX.mcid_for("pdq8", "qol") is None
    c = classify(1, None)
    assert (c.label, c.significance) == ("worsened", "direction only")
    assert classify(0, None).label == "unchanged"


def test_series_deltas_cumulative_and_severity():
    ser = series(facts((1, 2)), CTX)
    m1 = ser[(1, "motor")]
    assert [r.score for r in m1] == [20, 22, 26, 30]
    assert [r.delta.value if r.delta else None for r in m1] == [None, 2, 4, 4]
    assert [r.delta.label if r.delta else None for r in m1] == [None, "stable", "stable", "stable"]
    assert [r.cumulative.value if r.cumulative else None for r in m1] == [None, 2, 6, 10]
    assert [r.cumulative.label if r.cumulative else None for r in m1] == [
        None,
        "stable",
        "worsened",
        "worsened",
    ]
    assert [r.severity for r in m1] == ["mild"] * 4
    assert [r.severity for r in ser[(1, "adl")]] == ["mild", "mild", "moderate", "moderate"]
    m2 = ser[(2, "motor")]
    assert [r.delta.label if r.delta else None for r in m2] == [
        None,
        "improved",
        "stable",
        "stable",
    ]
    assert m2[-1].cumulative.value == -6 and m2[-1].cumulative.label == "improved"
    q1 = ser[(1, "qol")]
    assert q1[1].delta.label == "worsened" and q1[1].delta.significance == "direction only"
    assert q1[0].severity is None  # no PDQ-8 cut-offs


def test_cumulative_reference_is_first_selected_visit():
    ser = series(facts((1,), ("updrs",), "last_2_visits"), CTX)
    r = ser[(1, "motor")][-1]
    assert (r.ref_visit, r.ref_word, r.cumulative.value) == (3, "visit 3", 4)


def test_marag_profile_has_no_severity_label():
    assert CTX.severity_of("marag-updrs44", "motor", 40) is None
    assert CTX.severity_of("mds-updrs", "motor", 40) == "moderate"
    assert CTX.mcid_for("marag-updrs44", "motor").basis == "reference"


def test_table_b_rows():
    ser = series(facts((1, 2), ("updrs",)), CTX)
    b = build_table_b([r for rs in ser.values() for r in rs])
    assert len(b) == 2 * 4 * 3
    row = {(x["patient"], x["visit"], x["domain"]): x for x in b}
    assert row[(1, 1, "motor")]["change"] == "baseline" and row[(1, 1, "motor")]["delta"] is None
    assert (row[(2, 2, "motor")]["delta"], row[(2, 2, "motor")]["change"]) == (-4, "improved")
    assert (row[(1, 3, "nonmotor")]["delta"], row[(1, 3, "nonmotor")]["change"]) == (3, "worsened")
    assert (
        "Patient 2, visit 2 (2021-03-15), motor = 36, improved (-4 from visit 1"
        in render_table_b(b)
    )


def test_cohort_statistics_by_hand():
    f = facts()
    c = compute_cohort(f, "Which patient has the highest UPDRS score?", ("updrs", "pdq8"))
    assert (c["statistic"], c["domain"], c["patient"], c["value"], c["visit"]) == (
        "maximum",
        "total",
        2,
        58,
        4,
    )
    assert [(r["patient"], r["value"], r["rank"]) for r in c["ranking"]] == [
        (2, 58, 1),
        (1, 56, 2),
        (3, 53, 3),
        (4, 19, 4),
    ]
    assert c["domain_stats"]["total"] | {} == {
        "max": 58,
        "max_patients": [2],
        "min": 19,
        "min_patients": [4],
        "mean": 46.5,
        "n_patients": 4,
    }
    # PDQ-8 is ranked separately, never added to UPDRS
    assert [(r["patient"], r["value"]) for r in c["pdq8_ranking"]] == [
        (1, 14),
        (2, 10),
        (3, 6),
        (4, 3),
    ]
    slopes = {(s["patient"], s["domain"]): s for s in c["slopes"]}
    assert slopes[(1, "total")]["slope"] == 7.0 and slopes[(2, "total")]["slope"] == -4.6
    assert slopes[(3, "total")]["slope"] == 2.0 and slopes[(4, "total")]["slope"] == 0.1
    assert slopes[(1, "motor")]["slope"] == 3.4 and slopes[(2, "motor")]["slope"] == -1.9
    # 4 assessments over 172 days: under the 180 days a per-year rate needs
    assert slopes[(1, "motor")]["slope_year"] is None

    low = compute_cohort(f, "Which patient has the lowest UPDRS score?", ("updrs",))
    assert (low["statistic"], low["patient"], low["value"]) == ("minimum", 4, 19)
    fast = compute_cohort(f, "Which patient is getting worse fastest?", ("updrs",))
    assert (fast["statistic"], fast["domain"], fast["patient"], fast["value"]) == (
        "steepest_slope",
        "total",
        1,
        7.0,
    )
    fm = compute_cohort(f, "Whose motor score progresses fastest?", ("updrs",))
    assert (fm["domain"], fm["patient"], fm["value"]) == ("motor", 1, 3.4)
    st = compute_cohort(f, "Which patient is the most stable?", ("updrs",))
    assert (st["statistic"], st["patient"], st["value"]) == ("smallest_abs_slope", 4, 0.1)
    avg = compute_cohort(f, "What is the average UPDRS score?", ("updrs",))
    assert (avg["statistic"], avg["patient"], avg["value"]) == ("mean", None, 46.5)
    q = compute_cohort(f, "Who has the worst quality of life?", ("pdq8",))
    assert (q["domain"], q["patient"], q["value"]) == ("qol", 1, 14) and "pdq8_ranking" not in q


@pytest.mark.parametrize(
    ("query", "stat", "domain"),
    [
        ("highest UPDRS", "maximum", "total"),
        ("worst motor", "maximum", "motor"),
        ("best ADL", "minimum", "adl"),
        ("fastest", "steepest_slope", "total"),
        ("fastest non-motor decline", "steepest_slope", "nonmotor"),
        ("most stable", "smallest_abs_slope", "total"),
        ("average PDQ-8", "mean", "qol"),
        ("most improved motor", "most_negative_slope", "motor"),
    ],
)
def test_statistic_keyword_rules(query, stat, domain):
    assert choose_statistic(query, ("updrs", "pdq8")) == (stat, domain)


def test_flags_incongruence_and_red_flags():
    f = facts()
    inc = incongruence_flags(f, CTX)
    assert [
        (r["patient"], r["visit"], r["domain"], r["elevated_domain"], r["cutoff"]) for r in inc
    ] == [(3, 1, "nonmotor", "motor", 33), (3, 1, "nonmotor", "adl", 13)]
    assert (
        inc[0]["values"] == {"nonmotor": 0, "motor": 35} and "Martinez-Martin" in inc[0]["source"]
    )
    red = red_flags(f, CTX)
    assert [(r["patient"], r["visit"], r["item"], r["value"], r["threshold"]) for r in red] == [
        (1, 4, "NP1HALL", 2, 2)
    ]
    assert "clinical-scales.md" in red[0]["source"] and red[0]["rule"] == "hallucinations"


def test_red_flag_rules_map_both_profiles():
    rules = {r.id: r for r in CTX.red_flags}
    assert rules["hallucinations"].items == {
        "mds-updrs": ("NP1HALL",),
        "marag-updrs44": ("HALLUCINATION",),
    }
    from kb_store.profiles import load_profile

    for r in CTX.red_flags:
        for prof, codes in r.items.items():
            p = load_profile(prof)
            for code in codes:
                if code != "*":  # "*": every item of the profile (any item at 4)
                    p.item(code)  # raises KeyError if a rule names an item the profile lacks


def test_score_table_and_dispatch():
    t = score_table(facts((3,)))
    assert t[0] == {
        "patient": 3,
        "visit": 1,
        "date": "2021-01-10",
        "motor": 35,
        "adl": 14,
        "nonmotor": 0,
        "qol": 5,
    }
    assert (
        dispatch_mode("cohort", cohort=True, comparison=False, domain_narratives=False) == "cohort"
    )
    assert (
        dispatch_mode("comparison", cohort=False, comparison=True, domain_narratives=False)
        == "comparison"
    )
    assert (
        dispatch_mode("single_session", cohort=False, comparison=False, domain_narratives=True)
        == "single_session"
    )
    assert (
        dispatch_mode("trajectory", cohort=False, comparison=False, domain_narratives=True)
        == "trajectory"
    )
