"""What an ingest run produced and its validation report: `IngestResult` (sessions, issues, stats)
and the human (`format_report`) and JSON (`report_dict`) forms of the report.

Kept apart from kb_store.ingest (which makes results) and kb_store.validation (which owns the rules)
so that the ingest modules import in one direction: ingest -> format readers -> validation, and
anything that prints a report needs neither the readers nor the rules' checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from kb_store.model import AnySession, ValidationIssue
from kb_store.validation import RULES


@dataclass
class IngestResult:
    #: validated, visits assigned, sorted by patient then visit; `SessionKey`s (no items) when
    #: kb_store.ingest.load_sources ran with keys_only (`marag kb report`), else `Session`s
    sessions: list[AnySession]
    issues: list[ValidationIssue]
    stats: dict = field(default_factory=dict)
    #: blocking rules the user allowed (`unrecognised_file` under --allow-skipped-files)
    allowed: frozenset[str] = frozenset()

    @property
    def errors(self) -> list[ValidationIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[ValidationIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def blocking(self) -> list[ValidationIssue]:
        """Issues that make a KB build refuse: rows a file could not be split into reliably, lines
        and rows that do not reconcile, a skipped file (a build would lose them), or a date column
        whose day/month order nothing decides (a build could store swapped dates)."""
        return [i for i in self.issues if i.rule in BLOCKING_RULES - self.allowed]


#: rules after which a build refuses (the rows of the file cannot be trusted to be complete)
BLOCKING_RULES = frozenset(
    {
        "broken_quote",
        "line_break_in_cell",
        "unaccounted_row",
        "unaccounted_line",
        "unrecognised_file",
        "ambiguous_date_order",
    }
)


def _sorted_issues(issues: Iterable[ValidationIssue]) -> list[ValidationIssue]:
    return sorted(issues, key=lambda i: (i.file, i.row if i.row is not None else -1, i.rule))


def report_dict(result: IngestResult) -> dict:
    """JSON-ready report: stats, per-rule counts with severity and meaning, every issue."""
    counts = Counter(i.rule for i in result.issues)
    return {
        "stats": result.stats,
        "rules": {
            r: {
                "severity": RULES.get(r, ("error", ""))[0],
                "count": n,
                "meaning": RULES.get(r, ("", ""))[1],
            }
            for r, n in sorted(counts.items())
        },
        "issues": [asdict(i) for i in _sorted_issues(result.issues)],
    }


def format_report(result: IngestResult, *, max_info: int | None = None) -> str:
    """Human-readable validation report (errors, then warnings, then info lines)."""
    st = result.stats
    lines = ["Validation report", "================="]
    for f in st.get("files", []):
        lines.append(
            f"file {f['file']} [{f['format']}]: {f['rows_read']} data rows, "
            f"{f['sessions']} sessions, {f['rows_rejected']} rows rejected"
        )
    lines.append(
        f"rows read: {st.get('rows_read', 0)} (blank rows skipped: {st.get('blank_rows', 0)}); "
        f"sessions made: {st.get('sessions', 0)}; rows rejected: {st.get('rows_rejected', 0)}"
    )
    for inst, n in sorted(st.get("sessions_by_instrument", {}).items()):
        pats = st.get("patients_by_instrument", {}).get(inst, 0)
        lines.append(f"  {inst}: {n} sessions from {pats} patients")
    lines.append(
        f"patients: {st.get('patients', 0)}; visits: {st.get('visits', 0)} "
        f"(window {st.get('visit_window_days', 0)} days; {st.get('visits_multi_instrument', 0)} "
        f"visits hold more than one instrument; {st.get('sessions_joined', 0)} sessions joined "
        "a visit of another instrument)"
    )
    sev = Counter(i.severity for i in result.issues)
    lines.append(
        f"issues: {sev.get('error', 0)} errors (rejected), {sev.get('warning', 0)} warnings (kept), "
        f"{sev.get('info', 0)} info"
    )
    counts = Counter((i.severity, i.rule) for i in result.issues)
    if counts:
        lines.append("by rule:")
        order = {"error": 0, "warning": 1, "info": 2}
        for (s, r), n in sorted(counts.items(), key=lambda kv: (order.get(kv[0][0], 3), kv[0][1])):
            lines.append(f"  {s:<7} {r:<28} {n:>5}  {RULES.get(r, ('', ''))[1]}")
    for severity, title in (("error", "ERRORS"), ("warning", "WARNINGS"), ("info", "INFO")):
        group = [i for i in _sorted_issues(result.issues) if i.severity == severity]
        if not group:
            continue
        lines.append("")
        lines.append(f"{title} ({len(group)})")
        shown = group if (severity != "info" or max_info is None) else group[:max_info]
        lines += ["  " + i.line() for i in shown]
        if len(shown) < len(group):
            lines.append(f"  ... {len(group) - len(shown)} more info lines")
    return "\n".join(lines)
