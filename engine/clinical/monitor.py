"""What a clinician should watch in one patient: the one "to monitor" judgement.

A part (or the UPDRS total) is to be monitored when its latest score is in a moderate or severe
band, when it rose over the course (worsened beyond its MCID, or rose overall where no MCID
applies or for the UPDRS total), when it fluctuates (engine.clinical.course: the definition in
docs/engine.md), or when its latest zeros are possibly missing data. Red flags that are current
at the latest assessment, and red flags whose resolution is not confirmed (every later score possibly missing data, or
the item not scored at the latest assessment) are to be monitored too; a flag below its
threshold now is stated in the flag's own paragraph with its latest rating.

Both writers (engine.writing.readable's "To monitor" line and engine.writing.dense's "Domains to
monitor most closely") render these items; neither decides on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.clinical.course import DomainCourse, InstrumentCourse
from engine.clinical.findings import Findings


@dataclass(frozen=True)
class MonitorItem:
    """One thing to monitor: a part of one instrument with its reasons, or a red-flag group."""

    patient: int
    kind: str  # "domain" | "current_flags" | "open_flags"
    domain: str | None = None  # nonmotor | adl | motor | qol | total (kind "domain")
    reasons: tuple[str, ...] = ()  # e.g. ("moderate band", "worsened beyond its MCID")
    items: tuple[str, ...] = ()  # red-flag item labels, lower case (flag kinds)


def domain_reasons(dc: DomainCourse) -> tuple[str, ...]:
    """Why one part's course is to be monitored (empty: it is not)."""
    why = []
    if dc.band in ("moderate", "severe"):
        why.append(f"{dc.band} band")
    if dc.change is not None and dc.change.value > 0 and not dc.zero_suspect and not dc.unread_ends:
        if dc.change.label == "worsened":
            why.append("worsened beyond its MCID" if dc.change.mcid else "rose overall")
        elif dc.domain == "total":
            why.append("rose overall")
    if dc.fluctuating:
        why.append("fluctuating")
    if dc.zero_suspect:
        why.append("possible missing data")
    if dc.last.visit in dc.partial:
        why.append("partial")
    return tuple(why)


def to_monitor(courses: Sequence[InstrumentCourse], fd: Findings) -> list[MonitorItem]:
    """The items to monitor for one patient, in instrument and part order, then the flags."""
    out: list[MonitorItem] = []
    for ic in courses:
        for d, dc in ic.domains.items():
            why = domain_reasons(dc)
            if why:
                out.append(MonitorItem(ic.patient, "domain", d, why))
    patient = courses[0].patient if courses else None
    cur = [g for g in fd.flags if g.current]
    if cur:
        patient = cur[0].patient
        labels = tuple(dict.fromkeys(g.item_label.lower() for g in cur))
        out.append(MonitorItem(patient, "current_flags", items=labels))
    open_ = [g for g in fd.flags if g.status in ("unconfirmed", "unscored")]
    if open_:
        labels = tuple(dict.fromkeys(g.item_label.lower() for g in open_))
        out.append(MonitorItem(open_[0].patient, "open_flags", items=labels))
    return out
