"""The synthetic cohort generator: reproducible, paper-shaped, with its deliberate cases."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd
import pytest

from kb_store import synth
from kb_store.profiles import load_profile

UPDRS = load_profile("mds-updrs")
PDQ = [i.code for i in load_profile("pdq8").items]


def domain_sum(df: pd.DataFrame, dom: str) -> pd.Series:
    codes = PDQ if dom == "qol" else [i.code for i in UPDRS.items_of(dom)]
    return df[codes].sum(axis=1, min_count=1)


@pytest.fixture(scope="module")
def cohort() -> pd.DataFrame:
    return synth.generate()


def _bytes(tmp_path, name, **kw) -> bytes:
    return synth.write_csv(synth.generate(**kw), tmp_path / name).read_bytes()


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    a = _bytes(tmp_path, "a.csv", seed=7)
    b = _bytes(tmp_path, "b.csv", seed=7)
    c = _bytes(tmp_path, "c.csv", seed=8)
    assert a == b
    assert a != c


def test_shipped_sample_is_seed_7_default(tmp_path):
    shipped = synth.default_sample_path()
    assert shipped.name == "synthetic_default.csv" and shipped.exists()
    fresh = _bytes(tmp_path, "d.csv")
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == hashlib.sha256(fresh).hexdigest()


def test_columns_are_the_generic_contract(cohort):
    assert list(cohort.columns[:6]) == [
        "proj_id",
        "date",
        "sex",
        "age",
        "hoehn_yahr",
        "disease_duration_years",
    ]
    expected = [i.code for d in ("nonmotor", "adl", "motor") for i in UPDRS.items_of(d)] + PDQ
    assert list(cohort.columns[6:]) == expected
    assert not any(c.startswith("NP4") for c in cohort.columns)


def test_cohort_shape_matches_paper(cohort):
    pat = cohort.groupby("proj_id").first()
    assert list(pat.index) == list(range(1, 45))
    assert (pat["sex"] == "F").sum() == 9 and (pat["sex"] == "M").sum() == 35
    assert abs(pat["age"].mean() - 67) < 1.5
    assert abs(pat["disease_duration_years"].mean() - 4.3) < 0.3
    assert set(pat["hoehn_yahr"]) <= {1, 2, 3} and len(set(pat["hoehn_yahr"])) == 3
    per = cohort.groupby("proj_id").size()
    assert set(per[per != 4].index) == {synth.MISSED_VISIT}
    assert per[synth.MISSED_VISIT] == 3
    # descriptors constant per patient
    assert (cohort.groupby("proj_id")[["sex", "age", "hoehn_yahr"]].nunique() == 1).all().all()


def test_items_in_range_and_domain_means_near_reference(cohort):
    items = cohort.iloc[:, 6:]
    vals = items.to_numpy(dtype=float, na_value=np.nan)
    assert np.nanmin(vals) >= 0 and np.nanmax(vals) <= 4
    assert np.all(np.isnan(vals) | (vals == np.round(vals)))
    base = cohort.groupby("proj_id").head(1)
    assert 8 <= domain_sum(base, "nonmotor").mean() <= 14  # Part I ~11
    assert 12 <= domain_sum(base, "adl").mean() <= 20  # Part II ~16
    assert 28 <= domain_sum(base, "motor").mean() <= 40  # Part III ~30-37
    # cross-domain correlation from the latent severity
    assert np.corrcoef(domain_sum(base, "motor"), domain_sum(base, "adl"))[0, 1] > 0.3


def test_visit_schedule_weeks_0_8_16_24(cohort):
    iso = cohort[cohort["proj_id"] < 30]
    for pid, g in iso.groupby("proj_id"):
        days = (pd.to_datetime(g["date"]) - pd.to_datetime(g["date"]).iloc[0]).dt.days.tolist()
        expected = [0, 56, 112, 168] if pid != synth.MISSED_VISIT else [0, 56, 168]
        assert all(abs(d - e) <= 5 for d, e in zip(days, expected, strict=True)), (pid, days)


def rows(df, pid):
    return df[df["proj_id"] == pid].reset_index(drop=True)


def test_deliberate_incongruence(cohort):
    g = rows(cohort, synth.INCONGRUENT)
    assert domain_sum(g, "nonmotor")[1] == 0 and domain_sum(g, "motor")[1] >= 40
    # the only visit in the cohort with a domain at 0
    zero = pd.concat(
        [domain_sum(cohort, d) == 0 for d in ("nonmotor", "adl", "motor", "qol")], axis=1
    ).any(axis=1)
    assert set(cohort.loc[zero, "proj_id"]) == {synth.INCONGRUENT}


def test_deliberate_red_flags(cohort):
    assert rows(cohort, synth.HALLUCINATIONS)["NP1HALL"].tolist() == [0, 0, 2, 3]
    assert set(cohort.loc[cohort["NP1HALL"] >= 2, "proj_id"]) == {synth.HALLUCINATIONS}
    assert rows(cohort, synth.POSTURAL)["NP3PSTBL"].iloc[-1] == 3
    assert set(cohort.loc[cohort["NP3PSTBL"] >= 3, "proj_id"]) == {synth.POSTURAL}
    assert rows(cohort, synth.PDQ_RED)["PDQ8_3"][1] == 4


def test_deliberate_trajectories(cohort):
    imp = domain_sum(rows(cohort, synth.IMPROVING), "motor").tolist()
    assert imp[2] - imp[1] <= -10 and imp[3] < imp[1]  # treatment start between visits 2 and 3
    wor = rows(cohort, synth.WORSENING)
    for dom, step in (("motor", 7), ("adl", 3), ("qol", 2)):
        assert np.diff(domain_sum(wor, dom).to_numpy()).tolist() == [step] * 3


def test_missing_pdq8_visit(cohort):
    g = rows(cohort, synth.MISSING_PDQ8)
    assert g.loc[1, PDQ].isna().all() and g.loc[1, "NP1COG":"NP3RTCON"].notna().all()
    assert cohort[PDQ].isna().all(axis=1).sum() == 1


def test_mixed_date_formats(cohort):
    assert (
        rows(cohort, 31)["date"][0].count("/") == 2 and rows(cohort, 32)["date"][0].count(".") == 2
    )
    assert rows(cohort, 34)["date"][0].endswith("Z")
    assert rows(cohort, 35)["date"][0][:3].isalpha()
    assert len(rows(cohort, 37)["date"][0]) == 7  # MM/YYYY
    assert rows(cohort, 1)["date"][0][4] == "-"


def test_allocate_hits_targets_under_caps():
    rng = np.random.default_rng(0)
    total = rng.integers(0, 53, 500)
    w = rng.gamma(1.0, 1.0, (500, 13))
    out = synth.allocate(total, w)
    assert (out.sum(axis=1) == total).all() and out.min() >= 0 and out.max() <= 4
    cap = np.array([1] + [4] * 12)
    out = synth.allocate(np.minimum(total, 49), w, cap)
    assert (out.sum(axis=1) == np.minimum(total, 49)).all() and out[:, 0].max() <= 1


def test_scales_to_10000_patients_quickly():
    t = time.perf_counter()
    big = synth.generate(patients=10_000, seed=1)
    assert time.perf_counter() - t < 20
    assert big["proj_id"].nunique() == 10_000 and len(big) == 4 * 10_000 - 1


def test_small_cohorts_and_bad_sizes():
    small = synth.generate(patients=2, visits=2)
    assert len(small) == 4
    with pytest.raises(ValueError):
        synth.generate(patients=0)
