"""Who a cohort ranking leaves out, and why (engine.clinical.unranked), on the MA-RAG study data:
every patient of the cohort is ranked or named with a reason that holds in the facts, on the
per-fact path and the session table alike, and the released text says how many and why."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

import pytest

from engine.clinical import cohort_table, table_stats
from engine.clinical.cohort import compute_cohort
from engine.clinical.series import PER_YEAR_MIN_ASSESSMENTS, PER_YEAR_MIN_DAYS
from engine.clinical.unranked import LISTED, not_ranked, not_ranked_line, ranking_rule
from engine.config import REPO_ROOT, Config
from engine.pipeline import Engine
from engine.retrieve import fetch_facts
from engine.types import Plan
from kb_store.documents import build_documents
from kb_store.exclusions import excluded_from_ingest
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB

DATA = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"
BOTH = ("updrs", "pdq8")
CASES = [  # (query, instruments, statistic flag)
    ("Which patient's motor score is worsening fastest?", ("updrs",), "slope_visit"),
    ("Which patient's motor score is worsening fastest per year?", ("updrs",), "slope_year"),
    ("Which patient has the highest total UPDRS burden?", ("updrs",), "latest"),
    ("largest motor change", ("updrs",), "change"),
    ("Which patient's quality of life (PDQ-8) is worsening fastest?", ("pdq8",), "slope_visit"),
]


def test_reasons_follow_the_statistic():
    usable = {1: 0, 2: 1, 3: 2, 4: 5}
    everyone = [1, 2, 3, 4, 5]
    assert not_ranked("slope", everyone, usable, [4]) == [
        {"reason": "no_score", "patients": [1, 5], "usable": [0, 0]},
        {"reason": "one_assessment", "patients": [2, 3], "usable": [1, 2]},
    ]
    by_year = not_ranked("slope_year", everyone, usable, [4])
    assert [(g["reason"], g["patients"]) for g in by_year] == [
        ("no_score", [1, 5]),
        ("one_assessment", [2]),
        ("no_per_year", [3]),
    ]
    latest = not_ranked("latest", everyone, usable, [3, 4])
    assert [(g["reason"], g["patients"]) for g in latest] == [
        ("no_score", [1, 5]),
        ("latest_unread", [2]),
    ]
    assert not_ranked("change", [4], usable, [4]) == []


def test_the_line_counts_every_patient_and_names_at_most_the_listed():
    many = list(range(100, 100 + LISTED + 7))
    groups = [
        {"reason": "no_score", "patients": [2], "usable": [0]},
        {"reason": "no_per_year", "patients": many, "usable": [2] * len(many)},
    ]
    line = not_ranked_line(groups, 60, "motor score")
    assert line.startswith(
        f"{1 + len(many)} of 60 patients are not ranked. 1 patient with no usable"
    )
    assert ": patient 2. " in line
    assert f"{len(many)} patients with too few assessments" in line
    assert ", including patients 100, 101" in line and str(many[LISTED]) not in line
    assert not_ranked_line([], 60, "motor score") == ""


def test_ranking_rules_name_their_thresholds():
    assert f"{PER_YEAR_MIN_ASSESSMENTS} usable assessments" in ranking_rule("steepest_slope_year")
    assert f"{PER_YEAR_MIN_DAYS} days" in ranking_rule("steepest_slope_year")
    assert "at least 2 usable assessments" in ranking_rule("steepest_slope")
    assert "at least 2 usable assessments" in ranking_rule("largest_change")
    assert "latest" in ranking_rule("maximum")


@pytest.fixture(scope="module")
def kb():
    if not DATA.is_dir():
        pytest.skip(f"MA-RAG study data not found at {DATA}")
    res = load_sources([DATA])
    return InMemoryKB(build_documents(res.sessions), excluded_from_ingest(res, [DATA]))


def _usable_points(facts, domain):
    """Patient -> [(visit, date)] of the domain's scores without a caveat, from the facts."""
    pts: dict[int, list] = defaultdict(list)
    for f in facts:
        if f.domain == domain and f.score is not None and not f.caveat:
            pts[f.patient].append((f.visit, f.date))
    return pts


def _span_days(points) -> int:
    dates = sorted(dt.date.fromisoformat(d) for _, d in points)
    return (dates[-1] - dates[0]).days


@pytest.mark.parametrize(("query", "instruments", "statistic"), CASES)
def test_every_cohort_patient_is_ranked_or_named_with_a_true_reason(
    kb, query, instruments, statistic
):
    plan = Plan(tuple(sorted(kb.patient_ids())), "trajectory", instruments)
    facts = fetch_facts(plan, kb)["facts"]
    answer = compute_cohort(facts, query, instruments, statistic=statistic)
    ranked = {r["patient"] for r in answer["ranking"]}
    groups = {g["reason"]: g["patients"] for g in answer["not_ranked"]}
    left = [p for ps in groups.values() for p in ps]
    assert len(left) == len(set(left)) and not set(left) & ranked
    assert ranked | set(left) == {f.patient for f in facts}
    assert len(ranked) + len(left) == answer["n_patients"]
    domain = answer["domain"]
    if domain != "total":  # the total's points are sums of the parts (checked on the page)
        usable = _usable_points(facts, domain)
        for p in groups.get("no_score", []):
            assert not usable.get(p)
        for p in groups.get("one_assessment", []):
            assert len(usable[p]) == 1
        for p in groups.get("no_per_year", []):
            pts = usable[p]
            assert len(pts) >= 2
            assert len(pts) < PER_YEAR_MIN_ASSESSMENTS or _span_days(pts) < PER_YEAR_MIN_DAYS
    table = cohort_table.table_of(kb)
    if table is not None:  # the session table's path leaves out the same patients, same reasons
        sel, _ = cohort_table.cohort_frame(table, plan.patients, instruments, "none")
        by_table = table_stats.compute_cohort_table(sel, query, instruments, statistic)
        assert by_table["not_ranked"] == answer["not_ranked"]


def test_the_released_answer_says_who_was_not_ranked_and_passes_its_check(kb):
    cfg = Config.load(env={})
    plan = Plan((), "cohort", ("updrs",), query=CASES[1][0], statistic="slope_year")
    res = Engine(cfg, kb, None).run(plan)
    groups = res.cohort["not_ranked"]
    n = sum(len(g["patients"]) for g in groups)
    assert n > 0 and {g["reason"] for g in groups} >= {"no_per_year"}
    line = next(ln for ln in res.summary.splitlines() if "patients are not ranked." in ln)
    assert line.startswith(f"{n} of {res.cohort['n_patients']} patients are not ranked. ")
    assert "rate per year" in line
    assert res.verification["summary_passed"], res.verification["unsupported"]
    assert res.verification["unsupported"] == []
