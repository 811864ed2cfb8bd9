"""A Result rebuilt from the JSON an audit entry stored for a release (the `Result.to_json()` shape
of `marag ask --json`), so that the Review page draws the release's charts from the stored copy,
never from the current KB. Pure: dict in, Result (or None) out.

What the charts read is rebuilt as typed records (plan, facts, statements with their values,
course rows, slopes); the rest is kept as stored. None when the stored JSON is not such a result
(a `marag check` release, an older shape): the page says so in plain words.
"""

from __future__ import annotations

from typing import Any

from engine.clinical.statements import Statement
from engine.types import (
    Change,
    Fact,
    FactValue,
    Plan,
    Result,
    SeriesRow,
    Slope,
    TraceEntry,
    empty_flags,
)
from kb_store.profiles import load_profile

_REBUILD_ERRORS = (KeyError, TypeError, ValueError, AttributeError)


def _fact(d: dict[str, Any]) -> Fact:
    """A fact row with its items in the profile's order (the stored JSON has sorted keys)."""
    fact = Fact(**d)
    if not fact.profile or not fact.items:
        return fact
    try:
        order = [i.code for i in load_profile(fact.profile).items]
    except (KeyError, OSError, ValueError):  # a profile this install does not have
        return fact
    items = {c: fact.items[c] for c in order if c in fact.items}
    items.update({c: v for c, v in fact.items.items() if c not in items})
    return Fact(**{**d, "items": items})


def _statement(d: dict[str, Any]) -> Statement:
    return Statement(
        id=str(d["id"]),
        kind=d["kind"],
        patient=d.get("patient"),
        subject=d.get("subject"),
        visits=tuple(int(v) for v in d.get("visits") or ()),
        label=d.get("label") or "",
        values=tuple(FactValue(**v) for v in d.get("values") or ()),
        key=bool(d.get("key")),
        rules=tuple(d.get("rules") or ()),
    )


def _change(d: dict[str, Any] | None) -> Change | None:
    return None if d is None else Change(**d)


def _series_row(d: dict[str, Any]) -> SeriesRow:
    fields = {k: v for k, v in d.items() if k != "mcid_crossing"}  # a property, not a field
    fields["delta"] = _change(d.get("delta"))
    fields["cumulative"] = _change(d.get("cumulative"))
    return SeriesRow(**fields)


def _typed(data: dict[str, Any]) -> dict[str, Any]:
    """The typed parts of a stored result (the ones the charts read)."""
    plan_d = data["plan"]
    return {
        "plan": Plan.from_dict(plan_d, str(plan_d.get("query") or "")),
        "facts": [_fact(f) for f in data.get("facts") or []],
        "statements": [_statement(s) for s in data.get("statements") or []],
        "series": [_series_row(r) for r in data.get("series") or []],
        "slopes": [Slope(**s) for s in data.get("slopes") or []],
        "sections": [(s["heading"], list(s["paragraphs"])) for s in data.get("sections") or []],
        "trace": [TraceEntry(**t) for t in data.get("trace") or []],
    }


def result_from_json(data: Any) -> Result | None:
    """The stored result `data` as a Result, or None when it cannot be rebuilt as one."""
    if not isinstance(data, dict) or not isinstance(data.get("plan"), dict):
        return None
    try:
        typed = _typed(data)
    except _REBUILD_ERRORS:
        return None
    kept = (
        "table_b",
        "cohort",
        "narratives",
        "prompts",
        "summary",
        "verification",
        "screening",
        "llm_calls",
        "backend",
        "claims",
        "excluded_sessions",
        "courses",
        "summary_dense",
        "digest",
    )
    rest = {k: data[k] for k in kept if data.get(k) is not None}
    return Result(flags=data.get("flags") or empty_flags(), **typed, **rest)
