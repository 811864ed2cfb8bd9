"""Hand-built sessions, KB documents, facts and results for the dashboard's fast tests."""

from __future__ import annotations

import datetime as dt

from dashboard.clinical import ClinicalRefs
from engine.contexts import Band
from engine.types import Fact, Plan, Result
from kb_store.documents import build_documents, session_doc_id
from kb_store.model import Session, SourceRef
from kb_store.profiles import load_profile
from kb_store.reader import InMemoryKB

#: patient -> list of (date, motor, adl, nonmotor, qol); chosen so MCID-sized changes are known:
#: patient 3 motor 20 -> 26 (+6 >= 4.63, worsened) -> 21 (-5 <= -3.25, improved) -> 22 (+1, stable);
#: patient 8 visit 3: non-motor 0 while motor 40 (moderate) -> one incongruence flag
SCORES: dict[int, list[tuple[str, int, int, int, int]]] = {
    3: [
        ("2021-01-10", 20, 8, 6, 5),
        ("2021-04-12", 26, 9, 6, 6),
        ("2021-07-15", 21, 9, 7, 6),
        ("2021-10-20", 22, 10, 0, 7),
    ],
    8: [
        ("2021-02-01", 35, 14, 12, 10),
        ("2021-05-03", 36, 15, 12, 12),
        ("2021-08-02", 40, 18, 0, 14),
    ],
    12: [("2021-03-05", 10, 4, 3, 2), ("2021-06-07", 10, 4, 3, 2)],
}
REFS = ClinicalRefs(
    bands={
        ("mds-updrs", "motor"): (
            Band("mild", 0, 32),
            Band("moderate", 33, 58),
            Band("severe", 59, None),
        ),
        ("mds-updrs", "adl"): (
            Band("mild", 0, 12),
            Band("moderate", 13, 29),
            Band("severe", 30, None),
        ),
    },
    mcid={
        ("mds-updrs", "motor"): (-3.25, 4.63),
        ("mds-updrs", "adl"): (-3.05, 2.51),
        ("mds-updrs", "nonmotor"): (-2.64, 2.45),
    },
)


def _spread(codes: list[str], total: int) -> dict[str, float | None]:
    out: dict[str, float | None] = {c: 0.0 for c in codes}
    i = 0
    while total > 0:
        add = min(4 - out[codes[i % len(codes)]], total)  # type: ignore[operator]
        out[codes[i % len(codes)]] += add  # type: ignore[operator]
        total -= add
        i += 1
    return out


def sessions(scores: dict | None = None) -> list[Session]:
    up, pq = load_profile("mds-updrs"), load_profile("pdq8")
    out = []
    for pid, rows in (scores or SCORES).items():
        for v, (date, motor, adl, nonmotor, qol) in enumerate(rows, start=1):
            items: dict[str, float | None] = {}
            for dom, val in (("motor", motor), ("adl", adl), ("nonmotor", nonmotor)):
                items |= _spread([i.code for i in up.items_of(dom)], val)
            d = dt.date.fromisoformat(date)
            out.append(
                Session(
                    pid, d, "updrs", "mds-updrs", items, SourceRef("sample.csv", v + 1), visit=v
                )
            )
            out.append(
                Session(
                    pid,
                    d,
                    "pdq8",
                    "pdq8",
                    _spread([i.code for i in pq.items], qol),
                    SourceRef("sample.csv", v + 1),
                    visit=v,
                )
            )
    return out


def kb() -> InMemoryKB:
    return InMemoryKB(build_documents(sessions()))


def facts(patients: tuple[int, ...] = ()) -> list[Fact]:
    out = []
    for s in sessions():
        if patients and s.proj_id not in patients:
            continue
        for dom, ds in s.domain_scores().items():
            prof = load_profile(s.profile)
            codes = [i.code for i in prof.items_of(dom)]
            out.append(
                Fact(
                    s.proj_id,
                    s.visit or 0,
                    s.date.isoformat(),
                    s.instrument,
                    dom,
                    ds.score,
                    {c: s.items.get(c) for c in codes},
                    session_doc_id(s),
                    len(ds.missing),
                    s.profile,
                    s.condition,
                )
            )
    return out


def run(patients: tuple[int, ...] = (), analysis: str = "trajectory") -> Result:
    """A real engine result (facts backend) over the sample KB; () = every patient."""
    from engine.config import Config
    from engine.pipeline import Engine

    return Engine(Config.load(env={}), kb(), None).run(Plan(patients, analysis))


def result(
    patients: tuple[int, ...] = (3,), analysis: str = "trajectory", summary: str | None = None
) -> Result:
    """A real engine result (facts backend) whose summary is replaced by `summary`, with a
    verification record marking "99" as unsupported when present (as the guard would)."""
    from engine.config import Config
    from engine.grounding.guard import check_numbers
    from engine.pipeline import Engine

    r = Engine(Config.load(env={}), kb(), None).run(Plan(patients, analysis))
    summary = (
        summary
        if summary is not None
        else ("Patient 3, visit 2 (2021-04-12): motor 26, +6 from visit 1 (worsened). Tremor 99.")
    )
    r.summary = summary
    # the guard's claim records of the new summary, as the engine would have kept them
    r.claims = {"final": check_numbers(summary, r.ledger, r.plan.patients)["claims"]}
    bad = (
        [
            {
                "span": [summary.find("99"), summary.find("99") + 2],
                "text": "99",
                "reason": "no fact has this value",
            }
        ]
        if "99" in summary
        else []
    )
    r.verification = {"numbers": 8, "unsupported": bad, "passed": not bad}
    return r


def restate_facts(req) -> str:
    """The prompt's fact rows and flag lines word for word (a text the statement check passes),
    a new paragraph wherever the visits would go backwards; the final digest request (citable
    lines, no fact rows) is answered by citing each line (fakes.echo_cited)."""
    import re

    from fakes import echo_cited

    if req.agent == "final" and req.citable:
        return echo_cited(req)

    out: list[str] = []
    last: dict[str, int] = {}
    seen: set[str] = set()
    for ln in req.user.splitlines():
        ln = re.sub(
            r"^(?:red flag|incongruence|statistic):\s*", "", ln.strip().lstrip("- "), flags=re.I
        )
        if not ln.lower().startswith(("patient ", "rank ")) or ln in seen:
            continue
        seen.add(ln)
        m = re.match(r"patient (\d+), visit (\d+)", ln, re.I)
        if m:
            if int(m.group(2)) <= last.get(m.group(1), 0):
                out.append("")
                last = {}
            last[m.group(1)] = int(m.group(2))
        out.append(ln)
    return "\n".join(out)


def html_texts(at) -> list[str]:
    """The text each st.html element of an AppTest page shows on screen: without its style and
    the hover popups of cited sentences (dashboard.cited_sentences), tags removed, unescaped."""
    import html
    import re

    out = []
    for el in at.get("html"):
        body = re.sub(r"<style>.*?</style>", "", el.proto.body, flags=re.S)
        body = re.sub(r'<span class="cite-pop".*?</a></span>', "", body, flags=re.S)
        out.append(html.unescape(re.sub(r"<[^>]+>", "", body)))
    return out
