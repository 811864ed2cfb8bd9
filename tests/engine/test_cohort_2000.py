"""Every cohort statistic of a generated 2,000-patient KB against a direct pandas computation on
the source CSV: latest scores, UPDRS totals, slopes per visit and per year of every
patient and domain, cohort max / min / mean, the answer and the ranking of each Cohort-page
question. The engine reads the KB's session table (ingest -> documents -> table); the reference
reads only the CSV, with its own date parsing and sums."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.config import Config
from engine.pipeline import Engine
from engine.types import Plan
from kb_store import synth
from kb_store.documents import build_documents
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB

pytestmark = pytest.mark.slow

N = 2000
QUESTIONS = {  # Cohort page questions -> (statistic, domain)
    "Which patient has the highest total UPDRS burden?": ("maximum", "total"),
    "Which patient has the lowest total UPDRS burden?": ("minimum", "total"),
    "Which patient's motor score is worsening fastest?": ("steepest_slope", "motor"),
    "Which patient's ADL score is worsening fastest?": ("steepest_slope", "adl"),
    "Which patient's non-motor score is worsening fastest?": ("steepest_slope", "nonmotor"),
    "Which patient's quality of life (PDQ-8) is worsening fastest?": ("steepest_slope", "qol"),
    "Which patient is the most stable?": ("smallest_abs_slope", "total"),
    "What is the average motor score?": ("mean", "motor"),
    "What is the average PDQ-8 score?": ("mean", "qol"),
}
DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%b %d %Y",
    "%m/%Y",  # month only: the first of the month
)


def _dates(s: pd.Series) -> pd.Series:
    out = pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns]")
    for f in DATE_FORMATS:
        todo = out.isna()
        out[todo] = pd.to_datetime(s[todo], format=f, errors="coerce")
    assert out.notna().all(), s[out.isna()].head()
    return out


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    csv = tmp_path_factory.mktemp("c2000") / "cohort.csv"
    synth.generate(patients=N, seed=5).to_csv(csv, index=False)
    res = load_sources([csv])
    assert not [i for i in res.issues if i.severity == "error"]
    kb = InMemoryKB(build_documents(res.sessions))
    return csv, kb, Engine(Config.load(env={}), kb, None)


def _caveats(raw: pd.DataFrame, cols: dict[str, list[str]]) -> dict[str, pd.Series]:
    """Per domain and CSV row: the score carries a caveat (docs/engine.md "Partial sessions
    and implausible zeros"), computed here with pandas: more than 20% of the items blank; every
    item 0 after a latest earlier non-zero score (of the part, or of the session's total) of 3
    or more; a UPDRS part 0 at every (>= 2) assessment while another part was not."""
    updrs = ["nonmotor", "adl", "motor"]
    pid = raw["proj_id"]

    def after_big(score: pd.Series) -> pd.Series:
        prev = score.where(score > 0).groupby(pid).transform(lambda x: x.ffill().shift())
        return (score == 0) & (prev >= 3)

    scored = raw[updrs].notna()
    session_tot = raw[updrs].fillna(0).sum(axis=1).where(scored.any(axis=1))
    all_zero = (raw[updrs].fillna(0) == 0).all(axis=1) & scored.any(axis=1)
    prev_tot = (
        session_tot.where(session_tot > 0).groupby(pid).transform(lambda x: x.ffill().shift())
    )
    session_zero = all_zero & (prev_tot >= 3)
    nonzero = {d: (raw[d] > 0).groupby(pid).transform("any") for d in updrs}
    out = {}
    for d, codes in cols.items():
        s = raw[d]
        partial = raw[codes].isna().sum(axis=1) / len(codes) > 0.2
        flag = after_big(s) | partial
        if d in updrs:
            n = s.notna().groupby(pid).transform("sum")
            zero_all = (s.fillna(0) == 0).groupby(pid).transform("all") & (n >= 2)
            others = pd.concat([nonzero[o] for o in updrs if o != d], axis=1).any(axis=1)
            flag |= (zero_all & others & (s == 0)) | (session_zero & s.notna())
        out[d] = flag & s.notna()
    return out


@pytest.fixture(scope="module")
def reference(cohort):
    """Per (patient, domain) points straight from the CSV: visit = date order within patient."""
    csv = cohort[0]
    raw = pd.read_csv(csv, dtype={"date": str})
    raw["day"] = _dates(raw["date"]).dt.normalize()
    raw = raw.sort_values(["proj_id", "day"], kind="stable")
    raw["visit"] = raw.groupby("proj_id").cumcount() + 1
    cols = {d: synth.item_codes(d) for d in ("nonmotor", "adl", "motor", "qol")}
    for d, codes in cols.items():
        raw[d] = raw[codes].sum(axis=1, min_count=1)
    unread = _caveats(raw, cols)
    raw["total"] = raw["nonmotor"] + raw["adl"] + raw["motor"]  # NaN unless all three
    unread["total"] = unread["nonmotor"] | unread["adl"] | unread["motor"]
    every = raw.melt(
        id_vars=["proj_id", "visit", "day"],
        value_vars=[*cols, "total"],
        var_name="domain",
        value_name="score",
    )
    every["unread"] = pd.concat([unread[d] for d in [*cols, "total"]], ignore_index=True)
    every = every.dropna(subset=["score"]).sort_values(["domain", "proj_id", "visit"])
    last = every.groupby(["domain", "proj_id"]).tail(1)
    # no latest value where the latest score carries a caveat (engine.clinical.caveats)
    latest = last[~last["unread"]].set_index(["domain", "proj_id"])["score"]
    long = every[~every["unread"]]
    long = long.sort_values(["domain", "proj_id", "visit"])
    g = long.groupby(["domain", "proj_id"])
    # per assessment of the instrument: x = 0, 1, 2, ... over each patient's points
    x = g.cumcount().astype(float)
    days = (long["day"] - g["day"].transform("first")).dt.days
    yrs = days / 365.25
    # a per-year rate only over >= 3 assessments spanning >= 180 days (docs/engine.md)
    span = days.groupby([long["domain"], long["proj_id"]]).max()
    per_year_ok = (g["score"].size() >= 3) & (span >= 180)
    y = long["score"]

    def slope(xs: pd.Series) -> pd.Series:
        dx = xs - xs.groupby([long["domain"], long["proj_id"]]).transform("mean")
        dy = y - g["score"].transform("mean")
        sxx = (dx * dx).groupby([long["domain"], long["proj_id"]]).sum()
        sxy = (dx * dy).groupby([long["domain"], long["proj_id"]]).sum()
        return sxy / sxx.where(sxx > 0)

    ref = pd.DataFrame(
        {
            "latest": latest.reindex(g["score"].last().index),
            "latest_visit": g["visit"].last(),
            "n": g["score"].size(),
            "slope": slope(x),
            "slope_year": slope(yrs).where(per_year_ok),
        }
    )
    return ref


def test_every_cohort_statistic_matches_pandas_on_the_csv(cohort, reference):
    _, kb, eng = cohort
    assert len(kb.patient_ids()) == N
    ref = reference
    checked = 0
    for q, (stat, dom) in QUESTIONS.items():
        c = eng.run(Plan((), "cohort", query=q)).cohort
        assert (c["statistic"], c["domain"], c["n_patients"]) == (stat, dom, N), q
        # every domain's max / min / mean at each patient's latest scored visit
        for d, st in c["domain_stats"].items():
            lat = ref.loc[d, "latest"].dropna()
            assert (st["max"], st["min"], st["n_patients"]) == (lat.max(), lat.min(), len(lat))
            assert st["mean"] == pytest.approx(round(lat.mean(), 2), abs=1e-9), (q, d)
            assert sorted(st["max_patients"]) == sorted(lat.index[lat == lat.max()].tolist())
            assert sorted(st["min_patients"]) == sorted(lat.index[lat == lat.min()].tolist())
        # every patient's slope per visit and per year, visits counted, first and last visit
        for s in c["slopes"]:
            r = ref.loc[(s["domain"], s["patient"])]
            assert s["n_visits"] == r["n"] and s["last_visit"] == r["latest_visit"]
            for k in ("slope", "slope_year"):
                if np.isnan(r[k]):
                    assert s[k] is None
                else:
                    assert s[k] == pytest.approx(r[k], abs=0.005 + 1e-9), (s, k, r[k])
            checked += 1
        assert len(c["slopes"]) == len(ref)
        # the answer and the whole ranking
        if stat in ("maximum", "minimum", "mean"):
            lat = ref.loc[dom, "latest"].dropna()
            want = lat.sort_values(ascending=stat == "minimum", kind="stable")
            got = pd.Series({r["patient"]: r["value"] for r in c["ranking"]})
            assert (got.sort_index() == lat.sort_index()).all()
            assert [r["value"] for r in c["ranking"]] == want.tolist()
            if stat == "mean":
                assert c["value"] == pytest.approx(round(lat.mean(), 2), abs=1e-9)
            else:
                assert c["value"] == want.iloc[0] and lat[c["patient"]] == want.iloc[0]
        else:
            sl = ref.loc[dom, "slope"].dropna()
            key = sl.abs() if stat == "smallest_abs_slope" else sl
            best = key.min() if stat == "smallest_abs_slope" else key.max()
            got = {r["patient"]: r["value"] for r in c["ranking"]}
            assert sorted(got) == sorted(sl.index)
            assert all(abs(got[p] - sl[p]) <= 0.005 + 1e-9 for p in sl.index)
            top = sl[c["patient"]]
            assert abs((abs(top) if stat == "smallest_abs_slope" else top) - best) <= 0.01
        ranks = [r["rank"] for r in c["ranking"]]
        assert ranks[0] == 1 and ranks == sorted(ranks)
    assert checked >= len(QUESTIONS) * N * 4
