"""Similar patients from the fact table: standardised features, never the patient itself,
deterministic, one-session patients handled, the CLI contract."""

from __future__ import annotations

import json
import math

import pytest

from engine.cli import main
from engine.similar import cohort_features, kb_facts, similar_patients, trajectories


@pytest.fixture(scope="module")
def facts(marag_kb):
    return kb_facts(marag_kb)


def test_features_come_from_the_fact_table(facts):
    cf = cohort_features(facts)
    f20 = cf.raw[20]
    base = sorted(
        (f for f in facts if f.patient == 20 and f.instrument == "updrs"), key=lambda f: f.date
    )
    motor0 = next(f for f in base if f.domain == "motor")
    assert f20["base:updrs:motor"] == motor0.score
    adl0 = next(f for f in base if f.domain == "adl")
    assert f20["item:FALL_PROB"] == adl0.items["FALL_PROB"]
    assert "slope:updrs:motor" in f20
    # standardised: mean 0, sd 1 over the patients that have the feature (before clipping)
    zs = [cf.z(p)["base:updrs:motor"] for p in cf.raw if "base:updrs:motor" in cf.z(p)]
    assert abs(sum(zs) / len(zs)) < 0.2


def test_never_itself_sorted_deterministic(facts):
    for p in (20, 23):
        r = similar_patients(facts, p, k=5)
        ids = [n.patient for n in r.neighbours]
        assert p not in ids and len(ids) == 5
        d = [n.distance for n in r.neighbours]
        assert d == sorted(d) and all(math.isfinite(x) for x in d)
        assert similar_patients(facts, p, k=5).to_json() == r.to_json()
        assert "not a prognosis" in r.note


def test_one_session_patients(facts):
    singles = sorted(
        p
        for p in {f.patient for f in facts}
        if len({(f.visit, f.instrument) for f in facts if f.patient == p}) == 1
    )
    assert singles
    r = similar_patients(facts, singles[0], k=3)
    assert r.neighbours and not any(k.startswith("slope:") for k in r.features)
    # as candidates they lack slopes: the penalty keeps their distance honest, and they are listed
    multi = similar_patients(facts, 20, k=50)
    listed = {n.patient for n in multi.neighbours} | {p for p, _ in multi.excluded}
    assert set(singles) - {20} <= listed


def test_instrument_filter_and_errors(facts):
    r = similar_patients(facts, 20, k=3, instrument="pdq8")
    assert all(f.name.endswith(":qol") for n in r.neighbours for f in n.features)
    with pytest.raises(ValueError, match="unknown patient id 999"):
        similar_patients(facts, 999)
    with pytest.raises(ValueError, match="--k"):
        similar_patients(facts, 20, k=0)


def test_trajectories_align_at_months_since_baseline(facts):
    rows = trajectories(facts, [20, 23], "updrs")
    for p in (20, 23):
        mine = [r for r in rows if r["patient"] == p]
        assert min(r["months"] for r in mine) == 0.0
        assert {r["domain"] for r in mine} == {"nonmotor", "adl", "motor"}


def test_cli_similar_json_and_errors(marag_kb_dir, capsys):
    assert main(["similar", "23", "--k", "2", "--json", "--kb-dir", str(marag_kb_dir)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [set(p) >= {"patient", "distance", "features"} for p in out["patients"]] == [True, True]
    assert main(["similar", "abc", "--kb-dir", str(marag_kb_dir)]) == 2
    assert "integer" in capsys.readouterr().err
    kb = ["--kb-dir", str(marag_kb_dir), "--embedding", "hashing"]  # as built: no warning line
    assert main(["similar", "999", *kb]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
