"""Small hand-built cohorts for the engine's unit tests (Sessions -> documents -> InMemoryKB).

Scores are chosen so that every expected number can be computed by hand in the tests.
"""

from __future__ import annotations

import datetime as dt

from fakes import FakeLLM, echo_cited

from engine.config import REPO_ROOT, Config
from engine.contexts import load_contexts
from engine.pipeline import Engine
from kb_store.documents import build_documents
from kb_store.model import Session, SourceRef
from kb_store.profiles import load_profile
from kb_store.reader import InMemoryKB

UPDRS = load_profile("mds-updrs")
PDQ = load_profile("pdq8")
DATES = ["2021-01-10", "2021-03-15", "2021-05-20", "2021-07-01"]


def _spread(
    codes: list[str], total: int, first: dict[str, float] | None = None
) -> dict[str, float]:
    """Item values summing to `total` (each 0-4), filled in code order; `first` pins items."""
    items = {c: 0.0 for c in codes}
    items.update(first or {})
    left = total - sum(items.values())
    free = [c for c in codes if c not in (first or {}) and c not in RESERVED]
    while left > 0:  # round-robin +1 so items stay low (no accidental red flags)
        progressed = False
        for c in free:
            if left > 0 and items[c] < 2:
                items[c] += 1
                left -= 1
                progressed = True
        if not progressed:
            raise ValueError("total too large for the items")
    return items


#: red-flag items never filled by _spread (only pinned explicitly)
RESERVED = {
    "NP1COG",
    "NP1HALL",
    "NP1DPRS",
    "NP1LTHD",
    "NP2SWAL",
    "NP2WALK",
    "NP2FREZ",
    "NP3GAIT",
    "NP3FRZGT",
    "NP3PSTBL",
}


def updrs_session(
    pid: int,
    visit: int,
    motor: int,
    adl: int,
    nonmotor: int,
    pins: dict[str, float] | None = None,
    condition: str = "",
) -> Session:
    items: dict[str, float | None] = {}
    pins = pins or {}
    for dom, tot in (("motor", motor), ("adl", adl), ("nonmotor", nonmotor)):
        codes = [i.code for i in UPDRS.items_of(dom)]
        items.update(_spread(codes, tot, {k: v for k, v in pins.items() if k in codes}))
    return Session(
        pid,
        dt.date.fromisoformat(DATES[visit - 1]),
        "updrs",
        "mds-updrs",
        items,
        SourceRef("fixture.csv", pid * 10 + visit),
        visit=visit,
        condition=condition,
    )


def pdq_session(pid: int, visit: int, qol: int, pins: dict[str, float] | None = None) -> Session:
    codes = [i.code for i in PDQ.items]
    return Session(
        pid,
        dt.date.fromisoformat(DATES[visit - 1]),
        "pdq8",
        "pdq8",
        _spread(codes, qol, pins),
        SourceRef("fixture.csv", pid * 10 + visit),
        visit=visit,
    )


#: patient -> list of (motor, adl, nonmotor, qol) per visit
SCORES = {
    1: [(20, 10, 6, 8), (22, 11, 6, 9), (26, 14, 9, 12), (30, 16, 10, 14)],  # worsening
    2: [(40, 20, 12, 15), (36, 18, 11, 13), (35, 16, 10, 12), (34, 15, 9, 10)],  # improving
    3: [(35, 14, 0, 5), (35, 14, 2, 5), (36, 15, 2, 6)],  # incongruence at visit 1, 3 visits
    4: [(10, 5, 4, 3), (10, 5, 4, 3), (11, 5, 4, 3), (10, 5, 4, 3)],  # stable
}


def sessions() -> list[Session]:
    out = []
    for pid, rows in SCORES.items():
        for v, (m, a, n, q) in enumerate(rows, start=1):
            pins = {"NP1HALL": 2.0} if (pid == 1 and v == 4) else None
            out.append(updrs_session(pid, v, m, a, n, pins))
            out.append(pdq_session(pid, v, q))
    return out


def kb(extra: list[Session] | None = None) -> InMemoryKB:
    return InMemoryKB(build_documents(sessions() + (extra or [])))


def cfg(**kw) -> Config:
    return Config.load(kw, env={})


CONTEXTS = load_contexts(REPO_ROOT / "contexts")


def engine(llm: FakeLLM | None = None, extra: list[Session] | None = None, **kw) -> Engine:
    return Engine(cfg(**kw), kb(extra), llm, CONTEXTS)


def echo_facts(req) -> str:
    """A scripted writer whose text passes the statement check: it restates the prompt's fact rows
    (lines naming a patient and a visit, the flag lines) word for word, starting a new paragraph
    where the visits would go backwards (the visit-order rule is per paragraph). The final
    digest request and a domain agent's cited request (citable lines, no fact rows) are
    answered by `echo_cited`."""
    import re

    if req.citable and "Facts for the" not in req.user:  # its lines, each after its id
        return echo_cited(req)
    out: list[str] = []
    last: dict[str, int] = {}
    seen: set[str] = set()
    for ln in req.user.splitlines():
        ln = ln.strip().lstrip("- ")
        ln = re.sub(r"^(?:red flag|incongruence|statistic):\s*", "", ln, flags=re.I)
        if not ln.lower().startswith(("patient ", "rank ", "highest ", "lowest ")) or ln in seen:
            continue
        seen.add(ln)
        m = re.match(r"patient (\d+), visit (\d+)", ln, re.I)
        if m:
            p, v = m.group(1), int(m.group(2))
            if v <= last.get(p, 0):
                out.append("")
                last = {}
            last[p] = v
        out.append(ln)
    return "\n".join(out) or f"The {req.agent} agent has no facts."
