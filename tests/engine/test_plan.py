"""Plan parser: the paper's examples and their variants, unknown ids, the LLM planner's fallback."""

from __future__ import annotations

import pytest
from fakes import FakeLLM

from engine.plan import (
    UnknownPatientError,
    check_patients,
    format_ids,
    parse_planner_output,
    parse_query,
    plan_with_llm,
)
from engine.types import Plan

U, Q, B = ("updrs",), ("pdq8",), ("updrs", "pdq8")

CASES = [
    # query, patients, analysis, instruments, visit filter
    (
        "What is the baseline status of proj id 5 using UPDRS?",
        (5,),
        "single_session",
        U,
        "baseline",
    ),
    ("Show me the UPDRS trajectory of proj id 5.", (5,), "trajectory", U, "none"),
    (
        "Compare the disease progression on UPDRS between proj id 3 and proj id 8.",
        (3, 8),
        "comparison",
        U,
        "none",
    ),
    ("Which patient has the highest UPDRS score?", (), "cohort", U, "none"),
    ("compare the latest visit of patients 1 and 4", (1, 4), "comparison", B, "latest_visit"),
    ("Summarise patient 5", (5,), "trajectory", B, "none"),
    ("How is proj_id 12 doing on quality of life?", (12,), "trajectory", Q, "none"),
    ("Compare patients 1, 4 and 7 on the PDQ-8", (1, 4, 7), "comparison", Q, "none"),
    ("patients 2 vs 9 over the first 2 visits", (2, 9), "comparison", B, "first_2_visits"),
    ("Motor scores of patient 3 over the last 3 visits", (3,), "trajectory", U, "last_3_visits"),
    ("What was patient 6's motor score at visit 2?", (6,), "single_session", U, "visit_2"),
    ("patient 6 second visit", (6,), "single_session", B, "visit_2"),
    ("latest visit of patient 10", (10,), "single_session", B, "latest_visit"),
    ("Patient 10 baseline vs latest UPDRS", (10,), "trajectory", U, "baseline_vs_latest"),
    ("Which patient has the worst motor score?", (), "cohort", U, "none"),
    ("Who has the lowest PDQ-8?", (), "cohort", Q, "none"),
    ("Which patient is progressing fastest in ADL?", (), "cohort", U, "none"),
    ("Which patient is the most stable on non-motor symptoms?", (), "cohort", U, "none"),
    ("What is the average UPDRS score of all patients?", (), "cohort", U, "none"),
    ("Show the best quality of life across the cohort", (), "cohort", Q, "none"),
    ("rank all patients by total burden", (), "cohort", B, "none"),
    ("Which of patients 1, 4 and 7 has the highest motor score?", (1, 4, 7), "cohort", U, "none"),
    ("first two visits of proj id 8", (8,), "trajectory", B, "first_2_visits"),
    ("patient #4 visit 3 non-motor", (4,), "single_session", U, "visit_3"),
    ("Compare baseline and latest for patient 2", (2,), "trajectory", B, "baseline_vs_latest"),
    # the first and the last visit: a trajectory over those two assessments of each instrument
    (
        "What changed for proj id 23 between the first and last visit?",
        (23,),
        "trajectory",
        B,
        "baseline_vs_latest",
    ),
    (
        "What changed for patient 23 from the first to the last visit?",
        (23,),
        "trajectory",
        B,
        "baseline_vs_latest",
    ),
    ("Patient 23 first vs last visit", (23,), "trajectory", B, "baseline_vs_latest"),
    ("patient 23: first vs. last assessments", (23,), "trajectory", B, "baseline_vs_latest"),
    (
        "Compare the first and latest assessment of patient 23",
        (23,),
        "trajectory",
        B,
        "baseline_vs_latest",
    ),
    (
        "Motor of patient 4 from the first to the latest session",
        (4,),
        "trajectory",
        U,
        "baseline_vs_latest",
    ),
    (
        "Compare patients 3 and 5 between the first and last visit",
        (3, 5),
        "comparison",
        B,
        "baseline_vs_latest",
    ),
    # a count after "first" is a window, not the first visit
    ("first 2 visits and the last visit of patient 3", (3,), "trajectory", B, "first_2_visits"),
    ("first visit of patient 4", (4,), "single_session", B, "baseline"),
    ("last visit of patient 4", (4,), "single_session", B, "latest_visit"),
]


@pytest.mark.parametrize(("query", "patients", "analysis", "instruments", "vf"), CASES)
def test_rules_parser(query, patients, analysis, instruments, vf):
    p = parse_query(query)
    assert (p.patients, p.analysis, p.instruments, p.visit_filter) == (
        patients,
        analysis,
        instruments,
        vf,
    )
    assert p.query == query


def test_unknown_patient_names_valid_ids():
    with pytest.raises(UnknownPatientError, match=r"unknown patient id\(s\) 99; valid ids: 1-4, 7"):
        check_patients(Plan((3, 99)), [1, 2, 3, 4, 7])
    assert check_patients(Plan((3,)), [3]).patients == (3,)
    assert format_ids([1, 2, 3, 5, 8, 9]) == "1-3, 5, 8-9"


def test_planner_output_validated():
    ok = parse_planner_output(
        'Sure: {"patients": [1, 4], "analysis": "single-session", '
        '"instruments": ["UPDRS", "pdq-8"], "visit_filter": "first-2-visits"}'
    )
    assert ok == {
        "patients": [1, 4],
        "analysis": "single_session",
        "instruments": ("updrs", "pdq8"),
        "visit_filter": "first_2_visits",
    }
    for bad in [
        "no json here",
        '{"patients": [1]}',
        '{"patients": [1], "analysis": "story", "instruments": ["updrs"], "visit_filter": "none"}',
        '{"patients": [1], "analysis": "cohort", "instruments": ["x"], "visit_filter": "none"}',
        "{not json}",
    ]:
        assert parse_planner_output(bad) is None


def test_llm_planner_safe_default_keeps_rule_patients():
    llm = FakeLLM(["I think this is about motor things."])
    plan, raw, default = plan_with_llm("compare the latest visit of patients 1 and 4", llm)
    assert default and raw.startswith("I think")
    assert plan == Plan(
        (1, 4),
        "trajectory",
        ("updrs", "pdq8"),
        "none",
        "compare the latest visit of patients 1 and 4",
    )
    assert llm.calls[0].agent == "planner" and "patients 1 and 4" in llm.calls[0].user


def test_llm_planner_cannot_widen_patients():
    llm = FakeLLM(
        [
            '{"patients": [1, 4, 9], "analysis": "comparison", "instruments": ["updrs"], '
            '"visit_filter": "latest_visit"}'
        ]
    )
    plan, _, default = plan_with_llm("compare the latest visit of patients 1 and 4", llm)
    assert not default
    assert (
        plan.patients == (1, 4)
        and plan.analysis == "comparison"
        and plan.visit_filter == "latest_visit"
    )


def test_command_line_flags_override_the_parsed_plan():
    import argparse

    from engine.query_cli import plan_from_args

    parsed = parse_query(
        "Compare the disease progression on UPDRS between proj id 3 and proj id 8."
    )
    args = argparse.Namespace(
        query=parsed.query,
        patients="3, 9",
        analysis=None,
        instruments="pdq8",
        visits="last_2_visits",
    )
    p = plan_from_args(args, parsed)
    assert (p.patients, p.analysis, p.instruments, p.visit_filter) == (
        (3, 9),
        "comparison",
        ("pdq8",),
        "last_2_visits",
    )
    assert (
        plan_from_args(
            argparse.Namespace(
                query="", patients=None, analysis=None, instruments=None, visits=None
            ),
            parsed,
        )
        is parsed
    )
    with pytest.raises(ValueError, match="'x' is not a patient id"):
        plan_from_args(
            argparse.Namespace(
                query="", patients="3,x", analysis=None, instruments=None, visits=None
            ),
            parsed,
        )
    with pytest.raises(ValueError, match="visit_filter must be"):
        plan_from_args(
            argparse.Namespace(
                query="", patients=None, analysis=None, instruments=None, visits="yesterday"
            ),
            parsed,
        )
