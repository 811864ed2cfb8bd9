"""Notes around a summary's facts: which visit is each instrument's baseline, and the to-monitor
items of the planned patients (engine.clinical.monitor), for the writers and the final agent."""

from __future__ import annotations

from typing import Any

from engine.clinical.course import iter_courses
from engine.clinical.monitor import MonitorItem, to_monitor
from engine.writing.citing import cite
from kb_store.profiles import INSTRUMENT_WORDS


def baseline_note(state: Any) -> str:
    """For baseline plans: which visit is each instrument's first assessment
    (visit numbers are shared across instruments, baseline is per instrument)."""
    if state.plan.visit_filter not in ("baseline", "baseline_vs_latest"):
        return ""
    words = INSTRUMENT_WORDS
    out = []
    for (p, inst), ic in sorted(state.courses.items()):
        if ic.visits and ic.visits[0] != 1:
            out.append(
                cite(
                    f"For patient {p}, the {words.get(inst, inst)} baseline is visit "
                    f"{ic.visits[0]}, the first {words.get(inst, inst)} assessment (visits are "
                    "numbered across instruments).",
                    state.statements.about(p),
                )
            )
    return " ".join(out)


def patients_to_monitor(state: Any) -> list[MonitorItem]:
    """The to-monitor items of every planned patient with a course (engine.clinical.monitor)."""
    out: list[MonitorItem] = []
    for p in state.plan.patients:
        if p in state.findings:
            out += to_monitor(list(iter_courses(dict(state.courses), p)), state.findings[p])
    return out
