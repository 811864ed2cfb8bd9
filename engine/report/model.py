"""The printable report model: what one to three printed pages show, built once from a result.

Everything here is read from the Result the engine released (no clinical judgement is made
again): the header from the plan, the facts' dates and the caller's context (KB generation,
user, review status); the digest and the detail sections as the writers rendered them; the red
flags the engine marked current (one line per patient and item) and its incongruence flags; a
provenance summary from the verification record. The verification record itself stays out of
the report: it is its own JSON download.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.types import Result
from kb_store.profiles import INSTRUMENT_LABELS, domain_label

TITLE = "MA-RAG clinical summary"


@dataclass(frozen=True)
class FlagLines:
    """The run's flags as printed: current red flags (one per patient and item), how many
    earlier ones are no longer current, and the incongruence flags."""

    current: tuple[str, ...]
    earlier: int
    incongruence: tuple[str, ...]


@dataclass(frozen=True)
class PrintReport:
    """A printable report, in reading order."""

    title: str
    header: tuple[tuple[str, str], ...]  # (label, value)
    digest: str
    details: tuple[tuple[str, tuple[str, ...]], ...]  # (heading, paragraphs)
    flags: FlagLines
    provenance: tuple[str, ...]
    chart_png: bytes | None  # the trajectory chart (engine.report.chart), None without series
    chart_title: str = "Domain-score trajectories"


def _patients(result: Result) -> str:
    ids = sorted({int(f.patient) for f in result.facts} | set(result.plan.patients))
    if result.plan.analysis == "cohort":
        return f"cohort ({len(ids)} patients)" if ids else "cohort (all patients)"
    return ", ".join(map(str, ids)) or "none"


def _period(result: Result) -> str:
    dates = sorted(f.date[:10] for f in result.facts if f.date)
    if not dates:
        return "no sessions"
    per: dict[str, set[tuple[int, int]]] = {}
    for f in result.facts:
        per.setdefault(f.instrument, set()).add((f.patient, f.visit))
    counts = ", ".join(
        f"{len(v)} {INSTRUMENT_LABELS.get(k, k)}"
        for k, v in sorted(per.items(), key=lambda kv: kv[0] != "updrs")
    )
    return f"{dates[0]} to {dates[-1]} (assessments: {counts})"


def _analysis(result: Result) -> str:
    p = result.plan
    vf = p.visit_filter if p.visit_filter not in (None, "", "all", "none") else "all visits"
    return f"{p.analysis}, {vf}"


def latest_red_flags(
    flags: Mapping[str, Sequence[Mapping[str, Any]]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The red-flag rows one per patient and item, at the item's latest flagged visit, split into
    current (the engine marked a row of the item `current`: still at or above its threshold at
    the latest assessment) and earlier (flagged before, not now); each in patient, item order."""
    latest: dict[tuple[int, str], Mapping[str, Any]] = {}
    current: set[tuple[int, str]] = set()
    for r in flags.get("red_flags") or ():
        k = (int(r["patient"]), str(r["item"]))
        if k not in latest or int(r["visit"]) >= int(latest[k]["visit"]):
            latest[k] = r
        if r.get("current"):
            current.add(k)
    rows = sorted(latest.items())
    return [r for k, r in rows if k in current], [r for k, r in rows if k not in current]


def flag_lines(flags: Mapping[str, Sequence[Mapping[str, Any]]]) -> FlagLines:
    """Current red flags, one line per patient and item at its latest flagged visit; the number
    of other flagged items; one line per incongruence flag."""
    current, earlier = latest_red_flags(flags)
    lines = tuple(
        f"Patient {r['patient']}: {r['item_label']} {r['value']:g} at visit {r['visit']} "
        f"({str(r.get('date', ''))[:10]}); flag rule: {r['label']}"
        for r in current
    )
    inc = tuple(
        f"Patient {r['patient']}, visit {r['visit']}: {domain_label(r['domain'])} "
        f"{r['values'][r['domain']]:g} while {domain_label(r['elevated_domain'])} "
        f"{r['values'][r['elevated_domain']]:g} (cut-off {r['cutoff']:g})"
        for r in flags.get("incongruence") or ()
    )
    return FlagLines(lines, len(earlier), inc)


def _provenance(result: Result, kb_generation: str | None) -> tuple[str, ...]:
    v = result.verification or {}
    n, bad = int(v.get("numbers") or 0), len(v.get("unsupported") or ())
    checked = f"{n} numbers in the summary checked against the fact table: " + (
        "all supported." if not bad else f"{bad} not supported (see the verification record)."
    )
    docs = sorted({f.doc_id for f in result.facts})
    sessions = f"Facts from {len(docs)} session documents" + (
        f" of KB generation {kb_generation}." if kb_generation else "."
    )
    out = [checked, sessions]
    if result.excluded_sessions:
        out.append(
            f"{len(result.excluded_sessions)} session(s) of these patients left out at data "
            "import (named in the details)."
        )
    out.append(
        f"Written by the {result.backend or 'facts'} backend ({result.llm_calls} model calls); "
        "the full verification record is a separate JSON download."
    )
    return tuple(out)


def build_report(
    result: Result,
    *,
    kb_generation: str | None = None,
    user: str | None = None,
    review_status: str = "not reviewed",
    now: dt.datetime | None = None,
    chart: bool = True,
) -> PrintReport:
    """The printable report of `result` (see the module docstring)."""
    from engine.report.chart import trajectory_png

    when = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    instruments = ", ".join(INSTRUMENT_LABELS.get(i, i) for i in result.plan.instruments)
    header = (
        ("Patient" if len(result.plan.patients) == 1 else "Patients", _patients(result)),
        ("Period", _period(result)),
        ("Instruments", instruments),
        ("Analysis", _analysis(result)),
        ("KB generation", kb_generation or "unknown"),
        ("User", user or "unknown"),
        ("Generated", when),
        ("Review status", review_status),
    )
    sections = tuple((h, tuple(p)) for h, p in result.sections if p)
    digest = result.digest or ("" if sections else result.summary)
    return PrintReport(
        title=TITLE,
        header=header,
        digest=digest,
        details=sections,
        flags=flag_lines(result.flags or {}),
        provenance=_provenance(result, kb_generation),
        chart_png=trajectory_png(result) if chart else None,
    )
