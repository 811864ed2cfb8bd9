"""Visit indices: which sessions of a patient belong to one visit, numbered v = 1..N_p.

The rule (docs/data-ingest.md "Visits"):
1. Each patient's sessions are sorted by (date, PPMI schedule order, instrument, condition, file, row).
2. Walking that order, a session joins the current visit when
   - its date is at most `window_days` after the visit's FIRST session (the anchor; a visit never
     spans more than `window_days`, there is no chaining), and
   - the visit holds no session of the same instrument and condition yet.
   Otherwise it opens a new visit anchored at its own date. With window 0 only same-day sessions of
   different instruments share a visit.
3. Two sessions of the SAME instrument (and condition) are never merged: the second opens a new visit
   even when it falls inside the window (reported as info `same_instrument_in_window`). Two on the
   SAME day whose items differ (identical ones were rejected as duplicates) are separate
   assessments in source-row order, reported as the warning `same_day_sessions`. A PPMI OFF and ON
   exam of one event are different conditions, so they share a visit.
4. Visits are numbered 1..N_p in date order (1 = baseline).
Every join across different dates is reported as an info line (same-day joins are only counted, in
the ingest stats), so the effect of the window is visible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from kb_store.model import AnySession, Session, ValidationIssue
from kb_store.validation import issue

INSTRUMENT_ORDER = {"updrs": 0, "pdq8": 1}
CONDITION_ORDER = {"OFF": 0, "": 1, "ON": 2}
INSTRUMENT_LABEL = {"updrs": "UPDRS", "pdq8": "PDQ-8"}


def sort_key(s: AnySession) -> tuple:
    return (
        s.date,
        s.extra.get("event_order", 0),
        INSTRUMENT_ORDER.get(s.instrument, 9),
        CONDITION_ORDER.get(s.condition, 3),
        s.source.file,
        s.source.row,
    )


def _label(s: AnySession) -> str:
    name = INSTRUMENT_LABEL.get(s.instrument, s.instrument)
    return f"{name} {s.condition}" if s.condition else name


def assign_visits(
    sessions: Sequence[AnySession], window_days: int = 0
) -> tuple[list[AnySession], list[ValidationIssue]]:
    """Copies of the sessions with `visit` set, sorted by patient and visit; plus info issues."""
    if window_days < 0:
        raise ValueError(f"visit window must be >= 0 days, got {window_days}")
    by_patient: dict[int, list[AnySession]] = defaultdict(list)
    for s in sessions:
        by_patient[s.proj_id].append(s)
    out: list[AnySession] = []
    issues: list[ValidationIssue] = []
    for pid in sorted(by_patient):
        visits: list[list[AnySession]] = []
        for s in sorted(by_patient[pid], key=sort_key):
            cur = visits[-1] if visits else None
            if cur is not None:
                anchor = cur[0]
                within = (s.date - anchor.date).days <= window_days
                clash = any(
                    o.instrument == s.instrument and o.condition == s.condition for o in cur
                )
                if within and not clash:
                    cur.append(s)
                    continue
                twin = next(
                    (
                        o
                        for o in cur
                        if o.instrument == s.instrument
                        and o.condition == s.condition
                        and o.date == s.date
                    ),
                    None,
                )
                if twin is not None:
                    issues.append(
                        issue(
                            s.source.file,
                            s.source.row,
                            None,
                            "same_day_sessions",
                            f"patient {pid}: a second {_label(s)} session on {s.date.isoformat()} "
                            f"whose items differ from {twin.source.file} row {twin.source.row}: "
                            f"kept as a separate assessment (visit {len(visits) + 1}), ordered "
                            "after it by source row",
                        )
                    )
                elif within and clash and s.date != anchor.date:
                    issues.append(
                        issue(
                            s.source.file,
                            s.source.row,
                            None,
                            "same_instrument_in_window",
                            f"patient {pid}: {_label(s)} of {s.date.isoformat()} is "
                            f"{(s.date - anchor.date).days} days after the visit of "
                            f"{anchor.date.isoformat()} (window {window_days}) but that visit "
                            f"already has a {_label(s)} session: a separate visit, never merged",
                        )
                    )
            visits.append([s])
        for v, members in enumerate(visits, start=1):
            anchor = members[0]
            for s in members:
                out.append(replace(s, visit=v))
                days = (s.date - anchor.date).days
                if s is not anchor and s.instrument != anchor.instrument and days > 0:
                    issues.append(
                        issue(
                            s.source.file,
                            s.source.row,
                            None,
                            "visit_joined",
                            f"patient {pid}: {_label(s)} of {s.date.isoformat()} joined "
                            f"{_label(anchor)} visit {v} of {anchor.date.isoformat()} "
                            f"({days} day{'s' if days != 1 else ''} apart, window {window_days})",
                        )
                    )
    return out, issues


def visit_table(sessions: Sequence[Session]):
    """The DESIGN.md visit table (pandas): one row per patient, visit and instrument (and condition),
    with date (ISO), profile, item columns and domain scores (`score_<domain>`, `missing_<domain>`)."""
    import pandas as pd

    rows = []
    for s in sorted(sessions, key=lambda x: (x.proj_id, x.visit or 0, x.instrument, x.condition)):
        row = {
            "proj_id": s.proj_id,
            "visit": s.visit,
            "date": s.date.isoformat(),
            "instrument": s.instrument,
            "condition": s.condition,
            "profile": s.profile,
            "source": f"{s.source.file}:{s.source.row}",
        }
        for dom, ds in s.domain_scores().items():
            row[f"score_{dom}"] = ds.score
            row[f"missing_{dom}"] = len(ds.missing)
        row.update(s.items)
        rows.append(row)
    return pd.DataFrame(rows)
