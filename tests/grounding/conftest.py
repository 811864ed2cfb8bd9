"""Small hand-written ledgers for the grounding tests (two patients, four visits, two domains),
and `engine`: a facts-backend engine over the MA-RAG study data (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import REPO_ROOT, Config
from engine.pipeline import Engine
from engine.types import FactValue
from kb_store.documents import build_documents
from kb_store.exclusions import excluded_from_ingest
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB

DATA = Path(REPO_ROOT).parent / "shared" / "data" / "ma-rag"


@pytest.fixture(scope="module")
def engine() -> Engine:
    """The checker's engine over the study data, as `marag check` builds it (facts backend)."""
    if not DATA.is_dir():
        pytest.skip(f"MA-RAG study data not found at {DATA}")
    res = load_sources([DATA])
    kb = InMemoryKB(build_documents(res.sessions), excluded_from_ingest(res, [DATA]))
    return Engine(Config.load(env={}), kb, None)


MOTOR = {5: {1: 9, 2: 12, 3: 14, 4: 13}, 8: {1: 20, 2: 18, 3: 17, 4: 15}}
ADL = {5: {1: 6, 2: 7, 3: 8, 4: 9}, 8: {1: 10, 2: 10, 3: 11, 4: 11}}
DATES = {1: "2021-01-10", 2: "2021-03-15", 3: "2021-05-20", 4: "2021-07-30"}
GAIT = {5: {1: 1, 2: 2, 3: 3, 4: 3}, 8: {1: 2, 2: 2, 3: 2, 4: 2}}


def build_ledger() -> list[FactValue]:
    out: list[FactValue] = []
    for p in (5, 8):
        for v, d in DATES.items():
            out.append(FactValue("visit", v, p, v, date=d))
            out += [FactValue("date", float(x), p, v, date=d) for x in d.split("-")]
            for dom, table in (("motor", MOTOR), ("adl", ADL)):
                s = table[p][v]
                out.append(
                    FactValue("score", s, p, v, dom, date=d, label=f"{dom} score, visit {v}")
                )
                if v > 1:
                    out.append(
                        FactValue(
                            "delta",
                            s - table[p][v - 1],
                            p,
                            v,
                            dom,
                            label=f"{dom} change from visit {v - 1}",
                        )
                    )
                    out.append(
                        FactValue(
                            "cumulative",
                            s - table[p][1],
                            p,
                            v,
                            dom,
                            label=f"{dom} change from baseline",
                        )
                    )
            out.append(
                FactValue("item", GAIT[p][v], p, v, "motor", "NP3GAIT", d, label="item NP3GAIT")
            )
    out.append(FactValue("slope", 1.4, 5, domain="motor", tolerance=0.005, label="slope"))
    out.append(
        FactValue("slope_year", 2.65, 5, domain="motor", tolerance=0.005, label="slope per year")
    )
    out.append(FactValue("threshold", 4.63, domain="motor", item="mcid_worsening"))
    out.append(FactValue("threshold", -3.25, domain="motor", item="mcid_improvement"))
    out.append(FactValue("count", 2, label="number of patients"))
    return out


@pytest.fixture
def ledger() -> list[FactValue]:
    return build_ledger()
