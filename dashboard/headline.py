"""The headline figures an analysis page opens with, read from the result the engine released
(its statements, courses and flags; nothing is recomputed): the latest UPDRS total and its change
since the first assessment, the parts whose change passed their MCID, the PDQ-8 Summary Index and
the current red-flag items. Pure: a Result in, a list of Headline out (render.headline_row draws
them with st.metric).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.report.model import latest_red_flags
from engine.types import Result
from kb_store.documents import fmt_num
from kb_store.profiles import UPDRS_DOMAINS, domain_label


@dataclass(frozen=True)
class Headline:
    label: str
    value: str
    delta: str | None = None  # signed, e.g. "+28 since visit 1"
    worse_up: bool = True  # a rise is a worsening (the delta is drawn red when it goes up)
    help: str = ""


def _signed(x: float) -> str:
    return ("+" if x > 0 else "") + fmt_num(round(x, 2))


def _total(result: Result, patient: int) -> Headline | None:
    st = next(
        (
            s
            for s in result.statements
            if s.kind == "change" and s.subject == "total" and s.patient == patient
        ),
        None,
    )
    if st is None:
        return None
    scores = [v for v in st.values if v.kind == "score"]
    cum = next((v for v in st.values if v.kind == "cumulative"), None)
    if not scores:
        return None
    last = scores[-1]
    delta = f"{_signed(cum.value)} since visit {scores[0].visit}" if cum is not None else None
    return Headline(
        f"UPDRS total (visit {last.visit})",
        fmt_num(last.value),
        delta,
        help=f"Parts I+II+III at {last.date or 'the latest assessment'}; {len(scores)} assessments",
    )


def _course(result: Result, patient: int, instrument: str) -> dict[str, Any] | None:
    return next(
        (c for c in result.courses if c["patient"] == patient and c["instrument"] == instrument),
        None,
    )


def _mcid_parts(result: Result, patient: int) -> Headline | None:
    course = _course(result, patient, "updrs")
    if not course or course.get("assessments", 0) < 2:
        return None
    parts = [(d, (course["domains"].get(d) or {}).get("change")) for d in UPDRS_DOMAINS]
    parts = [(d, ch) for d, ch in parts if ch]
    beyond = [
        (d, ch)
        for d, ch in parts
        if ch.get("mcid") is not None and ch.get("label") in ("worsened", "improved")
    ]
    why = "; ".join(
        f"{domain_label(d).split(' (')[0]} {_signed(ch['value'])} ({ch['label']}, "
        f"{ch['significance']})"
        for d, ch in parts
    )
    return Headline(
        "Parts beyond the MCID",
        f"{len(beyond)} of {len(parts)}",
        help=f"First to latest assessment: {why}",
    )


def _pdq8(result: Result, patient: int) -> Headline | None:
    course = _course(result, patient, "pdq8")
    si = (course or {}).get("pdq8_si") or {}
    if not si:
        return None
    visits = sorted(si, key=int)
    first, last = si[visits[0]], si[visits[-1]]
    delta = f"{_signed(last - first)} since visit {visits[0]}" if len(visits) > 1 else None
    return Headline(
        f"PDQ-8 SI (visit {visits[-1]})",
        fmt_num(round(last, 2)),
        delta,
        help="PDQ-8 Summary Index, 0-100, higher is worse; no verified MCID: changes by direction only",
    )


def _flags(result: Result, patient: int) -> Headline:
    flags = {
        "red_flags": [
            r for r in (result.flags or {}).get("red_flags") or [] if r["patient"] == patient
        ]
    }
    current, earlier = latest_red_flags(flags)
    names = ", ".join(str(r.get("item_label") or r["item"]) for r in current) or "none"
    return Headline(
        "Current red flags",
        str(len(current)),
        help=f"Items at or above their flag threshold at the latest assessment: {names}"
        + (f"; {len(earlier)} earlier item(s) no longer flagged" if earlier else ""),
    )


def headline_figures(result: Result, patient: int) -> list[Headline]:
    """The figures of one patient, in reading order (absent ones left out)."""
    figures = [
        _total(result, patient),
        _mcid_parts(result, patient),
        _pdq8(result, patient),
        _flags(result, patient),
    ]
    return [f for f in figures if f is not None]
