"""Which sessions a visit filter keeps: one rule for every analysis and both fact paths.

"baseline", "latest" and first/last N count each instrument's own assessments (baseline = the
patient's first session of that instrument, whatever its shared visit number); visit_N keeps the
shared visit index. `select_visits` applies the grammar to one list of visits and says what the
patient lacks; `select_per_instrument` applies it per instrument to one patient's facts. The
session-table path of cohort questions (engine.clinical.cohort_table) uses the same functions for
its notes, so both paths keep the same sessions and say the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.types import Fact


def select_visits(visits: Sequence[int], visit_filter: str) -> tuple[list[int], str | None]:
    """Visits kept by the filter, and a note when the patient lacks what was asked."""
    vs = sorted(set(visits))
    if not vs:
        return [], "no visits"
    if visit_filter == "none":
        return vs, None
    if visit_filter == "baseline":
        return ([1], None) if 1 in vs else ([], "no baseline (visit 1) record")
    if visit_filter == "latest_visit":
        return [vs[-1]], None
    if visit_filter == "baseline_vs_latest":
        if 1 not in vs:
            return [vs[-1]], "no baseline (visit 1) record; latest visit only"
        if len(vs) == 1:
            return [1], "only one visit, so baseline and latest are the same visit"
        return [1, vs[-1]], None
    m = re.fullmatch(r"visit_(\d+)", visit_filter)
    if m:
        n = int(m.group(1))
        return (
            ([n], None)
            if n in vs
            else ([], f"no visit {n} (visits on record: {', '.join(map(str, vs))})")
        )
    m = re.fullmatch(r"(first|last)_(\d+)_visits", visit_filter)
    if m:
        n = int(m.group(2))
        kept = vs[:n] if m.group(1) == "first" else vs[-n:]
        note = (
            None if len(vs) >= n else f"only {len(vs)} visit(s) on record, fewer than the {n} asked"
        )
        return kept, note
    raise ValueError(f"unknown visit filter {visit_filter!r}")


def select_per_instrument(
    rows: Sequence[Fact], visit_filter: str
) -> tuple[set[tuple[str, int]], list[str]]:
    """(instrument, visit) pairs kept, and notes: "baseline", "latest" and first/last N
    count each instrument's own assessments (baseline = the patient's first session of that
    instrument, whatever its shared visit number); visit_N keeps the shared visit index."""
    kept_all: set[tuple[str, int]] = set()
    notes: list[str] = []
    insts = sorted({f.instrument for f in rows})
    for inst in insts:
        own = sorted({f.visit for f in rows if f.instrument == inst})
        if visit_filter.startswith("visit_"):
            kept, _ = select_visits(own, visit_filter)
        else:
            idx, note = select_visits(list(range(1, len(own) + 1)), visit_filter)
            kept = [own[k - 1] for k in idx]
            if note:
                notes.append(f"{inst}: {note}")
        kept_all |= {(inst, v) for v in kept}
    if visit_filter.startswith("visit_") and not kept_all:
        _, note = select_visits(sorted({f.visit for f in rows}), visit_filter)
        if note:
            notes.append(note)
    return kept_all, notes
