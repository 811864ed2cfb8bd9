"""Validation rules for ingested sessions and the human/JSON validation report.

Owns: the catalogue of rules (`RULES`: name -> severity and meaning), the cell-level checks every
ingest path shares (patient ids, item values, date plausibility), the cross-row checks that need all
sessions of a patient (isolated-date outliers, duplicate sessions) and what of a session they read
(`SessionKeys`: a `Session` -> its `SessionKey`). The report over an ingest
result lives in kb_store.ingest_report.

Severity is part of each rule, not chosen at call sites:
- "error": the row (or the session it would make) is rejected and is not in the KB;
- "warning": the row is kept, something about it needs a reader's attention;
- "info": what ingest did on purpose (visits joined, columns ignored with a reason).
Every data row ends in a Session or in at least one issue naming file, row, column and rule.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from collections.abc import Sequence

from kb_store.dates import AmbiguousDateError, DateOrder, DateParseError, ParsedDate, parse_date
from kb_store.model import AnySession, Session, SessionKey, SourceRef, ValidationIssue
from kb_store.profiles import Item


class IngestError(ValueError):
    """A source cannot be read at all (or its format cannot be detected); one line naming the file."""


#: Dates before this are implausible for a Parkinson's study session (e.g. birth dates typed in).
EARLIEST_DATE = dt.date(1990, 1, 1)
#: A session is an isolated-date outlier when the patient has at least OUTLIER_MIN_OTHERS other
#: sessions and the nearest of them is more than OUTLIER_GAP_DAYS away (5 years: longer than any
#: gap between follow-up visits of a cohort study; PPMI visits are at most 1 year apart).
OUTLIER_GAP_DAYS = 5 * 365 + 1
OUTLIER_MIN_OTHERS = 2
#: Cell texts read as blank (missing) item values.
BLANKS = frozenset({"", "NA", "N/A", "NAN", "NULL", "NONE", "-", "."})
#: Patient ids: ASCII digits, optionally a spreadsheet's ".0"; at most a 64-bit integer.
_PATIENT_ID_RE = re.compile(r"([0-9]+)(?:\.0+)?")
MAX_PATIENT_ID = 2**63 - 1
#: Item values: a plain decimal number in ASCII (no exponent, underscore, other digit scripts).
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
#: Cell texts that mean "not rated / unable to rate": missing, with a warning.
NOT_RATED = frozenset({"UR", "NR", "NOT RATED", "UNABLE TO RATE"})

RULES: dict[str, tuple[str, str]] = {
    # file level
    "unrecognised_file": (
        "error",
        "a CSV inside a folder matches no known format: skipped, every row of it rejected; a "
        "build refuses unless skipped files are allowed (--allow-skipped-files)",
    ),
    "missing_patient_column": ("error", "no patient-id column: every row of the file is rejected"),
    "missing_date_column": ("error", "no date column: every row of the file is rejected"),
    "unknown_column": (
        "warning",
        "a column that is neither a key, a descriptor nor an item; ignored",
    ),
    "ignored_column": ("info", "a known column not used for sessions (reason given)"),
    "missing_item_column": ("warning", "an item of the instrument has no column: always missing"),
    "ppmi_missing_part": ("warning", "a PPMI part file is absent: those domains stay missing"),
    "encoding": ("info", "the file was not UTF-8 and was decoded as UTF-16 or Windows-1252"),
    # row shape
    "short_row": ("warning", "the row has fewer cells than the header; absent cells are blank"),
    "broken_quote": (
        "error",
        "a stray quote made the CSV reader merge following lines into one cell: the row is "
        "rejected, the merged lines are read as their own rows, and a build refuses",
    ),
    "line_break_in_cell": (
        "error",
        "a quoted cell holds a line break followed by a line shaped like a data row (an id and a "
        "date, half the header's cells, or a row's cells up to that cell): the record is "
        "rejected with the lines it spans, and a build refuses",
    ),
    "extra_cells": (
        "error",
        "the row has more cells than the header (an unquoted delimiter shifted its cells): rejected",
    ),
    # keys
    "missing_patient_id": ("error", "blank patient id"),
    "id_spellings": (
        "warning",
        "one patient id written several ways (007, 7.0, ...): merged into one patient; the line "
        "names each spelling and its rows",
    ),
    "non_integer_patient_id": ("error", "patient id is not a non-negative integer"),
    "missing_date": ("error", "blank session date"),
    "unparseable_date": ("error", "session date in no recognised format"),
    "ambiguous_date": (
        "error",
        "a numeric date readable both ways in a column that holds day-first and month-first dates",
    ),
    "ambiguous_date_order": (
        "warning",
        "no date of the column shows its day/month order: read month-first (slash) or day-first "
        "(dotted) in the report, and a build refuses unless an order is given (--date-order)",
    ),
    "date_order": ("info", "the day/month order of a column, decided from its unambiguous dates"),
    "month_precision_date": ("warning", "month-only date (MM/YYYY) read as the 1st of the month"),
    "implausible_date": ("error", "session date before 1990-01-01"),
    "future_date": ("error", "session date after today"),
    "date_outlier": (
        "error",
        "session date isolated > 5 years from every other session of the patient",
    ),
    # items
    "non_numeric": ("error", "an item cell is not a number: the session is rejected"),
    "out_of_range": (
        "error",
        "an item value is outside the profile's range: the session is rejected",
    ),
    "non_integer_item": ("warning", "an item value is not a whole number (kept as read)"),
    "not_rated": ("warning", "an item marked not rated (UR / 101): missing, never imputed"),
    "missing_item": ("warning", "blank item cells: the domain score is partial (never imputed)"),
    "bad_descriptor": ("warning", "a patient descriptor (age, H&Y, duration) is not a number"),
    "unknown_condition": ("warning", "a condition cell that is neither ON nor OFF"),
    "no_items": ("error", "the row has no item value for any instrument: no session"),
    "instrument_blank": ("info", "the row has no value for one instrument: no session of it"),
    "total_mismatch": ("warning", "a total column in the file differs from the item sum"),
    "duplicate_session": (
        "error",
        "same patient, date, instrument (and condition) with identical items: later row rejected",
    ),
    "same_day_sessions": (
        "warning",
        "two sessions of one instrument on one day whose items differ: separate assessments",
    ),
    # PPMI
    "ppmi_missing_event": ("error", "blank EVENT_ID in a PPMI row"),
    "ppmi_duplicate_row": ("error", "a second row for the same PATNO, EVENT_ID and part"),
    "ppmi_screening_superseded": ("error", "SC row of a patient who has a BL row of that part"),
    "ppmi_part_dates_differ": (
        "warning",
        "the joined PPMI parts of one event carry different INFODT",
    ),
    "ppmi_condition_conflict": ("warning", "PAG_NAME and PDSTATE disagree; PDSTATE wins"),
    "ppmi_event": ("info", "how a PPMI EVENT_ID was handled"),
    # visits
    "visit_joined": ("info", "a session joined a visit of another instrument within the window"),
    "same_instrument_in_window": ("info", "two sessions of one instrument in one window: 2 visits"),
    "unaccounted_line": ("error", "internal: physical lines and rows of a file do not reconcile"),
    "unaccounted_row": ("error", "internal: a data row made no session and no issue"),
}


def issue(
    file: str, row: int | None, column: str | None, rule: str, message: str
) -> ValidationIssue:
    """A `ValidationIssue` whose severity comes from `RULES`."""
    severity = RULES[rule][0] if rule in RULES else "error"
    return ValidationIssue(file, row, column, rule, message, severity)


# ---------------------------------------------------------------- cell-level checks


class CellError(ValueError):
    """A cell failed a rule; `rule` names it, the message says why."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


def is_blank(raw: object) -> bool:
    return raw is None or str(raw).strip().upper() in BLANKS


def _show(text: str, limit: int = 40) -> str:
    """A cell for a message: repr, cut to `limit` characters (a 5000-digit id stays one line)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def parse_patient_id(raw: object) -> int:
    """Exact integer patient id written with ASCII digits; '12.0' (a spreadsheet-formatted integer)
    is read as 12. Never through float(): '1e1', '1_0', '-0', '+3', Arabic-Indic or full-width
    digits and ids beyond MAX_PATIENT_ID (Chroma stores ids as 64-bit integers) are rejected."""
    text = "" if raw is None else str(raw).strip()
    if is_blank(text):
        raise CellError("missing_patient_id", "blank patient id")
    m = _PATIENT_ID_RE.fullmatch(text)
    if m is None:
        raise CellError(
            "non_integer_patient_id",
            f"patient id {_show(text)} is not a non-negative integer written with digits 0-9",
        )
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > 19 or int(digits) > MAX_PATIENT_ID:
        raise CellError(
            "non_integer_patient_id",
            f"patient id {_show(text)} is larger than {MAX_PATIENT_ID} (64-bit limit)",
        )
    return int(digits)


def plain_float(raw: object) -> float:
    """float() of a plain ASCII decimal number; ValueError for anything else ('1e1', '1_0', 'inf',
    Arabic-Indic or full-width digits, which float() would accept)."""
    text = "" if raw is None else str(raw).strip()
    if not _NUMBER_RE.fullmatch(text):
        raise ValueError(text)
    return float(text)


def parse_item_value(
    raw: object, item: Item, *, not_rated_codes: Sequence[float] = ()
) -> float | None:
    """Item value as a float, None when blank / not rated. Raises `CellError` for junk and range."""
    text = "" if raw is None else str(raw).strip()
    if is_blank(text):
        return None
    if text.upper() in NOT_RATED:
        raise CellError("not_rated", f"{item.code} = {text!r}: not rated, kept missing")
    if not _NUMBER_RE.fullmatch(text):
        why = "digits must be written 0-9" if not text.isascii() else "not a plain decimal number"
        raise CellError("non_numeric", f"{item.code} = {_show(text)} is not a number ({why})")
    try:
        value = float(text)
    except ValueError:
        raise CellError("non_numeric", f"{item.code} = {_show(text)} is not a number") from None
    if not math.isfinite(value):
        raise CellError("non_numeric", f"{item.code} = {text!r} is not a finite number")
    if value in not_rated_codes:
        raise CellError("not_rated", f"{item.code} = {text} means not rated; kept missing")
    if value < item.min or value > item.max:
        raise CellError(
            "out_of_range",
            f"{item.code} = {text} is outside {item.min:g}-{item.max:g} ({item.label})",
        )
    return value


def parse_session_date(raw: object, today: dt.date, order: DateOrder | None = None) -> ParsedDate:
    """Parsed date that passed the plausibility rules; raises `CellError` naming the rule.
    `order` is the column's day/month order (kb_store.dates.decide_order)."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        raise CellError("missing_date", "blank session date")
    try:
        pd_ = parse_date(text, order)
    except AmbiguousDateError as exc:
        raise CellError("ambiguous_date", str(exc)) from None
    except DateParseError as exc:
        raise CellError("unparseable_date", str(exc)) from None
    if pd_.date < EARLIEST_DATE:
        raise CellError(
            "implausible_date",
            f"{text!r} -> {pd_.date.isoformat()} is before {EARLIEST_DATE.isoformat()}",
        )
    if pd_.date > today:
        raise CellError(
            "future_date", f"{text!r} -> {pd_.date.isoformat()} is after today ({today})"
        )
    return pd_


# ---------------------------------------------------------------- cross-row checks


def source_refs(s: AnySession) -> list[tuple[str, int]]:
    """All (file, row) pairs a session was built from (primary row first)."""
    out = [(s.source.file, s.source.row)]
    for ref in s.extra.get("sources", []):
        file, _, row = str(ref).rpartition(":")
        pair = (file, int(row)) if row.isdigit() else None
        if pair and pair not in out:
            out.append(pair)
    return out


def reject_session(
    s: AnySession, rule: str, column: str | None, message: str
) -> list[ValidationIssue]:
    """Issues rejecting a session: the primary row gets the message, joined rows point to it."""
    refs = source_refs(s)
    out = [issue(refs[0][0], refs[0][1], column, rule, message)]
    for file, row in refs[1:]:
        out.append(
            issue(
                file,
                row,
                None,
                rule,
                f"joined to the session of {refs[0][0]} row {refs[0][1]}, "
                f"which was rejected: {message}",
            )
        )
    return out


def reject_date_outliers(
    sessions: list[AnySession],
) -> tuple[list[AnySession], list[ValidationIssue]]:
    """Reject sessions whose date is isolated from all the patient's other sessions (see RULES)."""
    by_patient: dict[int, list[AnySession]] = defaultdict(list)
    for s in sessions:
        by_patient[s.proj_id].append(s)
    bad: set[int] = set()
    issues: list[ValidationIssue] = []
    for pid, group in by_patient.items():
        if len(group) < OUTLIER_MIN_OTHERS + 1:
            continue
        for s in group:
            others = [o for o in group if o is not s]
            gap = min(abs((o.date - s.date).days) for o in others)
            if gap > OUTLIER_GAP_DAYS:
                nearest = min(others, key=lambda o: abs((o.date - s.date).days))
                bad.add(id(s))
                issues += reject_session(
                    s,
                    "date_outlier",
                    s.extra.get("date_column"),
                    f"patient {pid}: {s.instrument} date {s.date.isoformat()} is {gap} days "
                    f"(> {OUTLIER_GAP_DAYS}, 5 years) from the nearest of the patient's "
                    f"{len(others)} other sessions ({nearest.date.isoformat()}); likely a typing "
                    "error, not corrected",
                )
    return [s for s in sessions if id(s) not in bad], issues


def duplicate_key(s: AnySession) -> tuple:
    return (s.proj_id, s.date, s.instrument, s.condition, s.extra.get("event_id", ""))


def reject_duplicates(
    sessions: list[AnySession],
) -> tuple[list[AnySession], list[ValidationIssue]]:
    """Reject a session identical (same items) to an earlier one of the same patient, date,
    instrument and condition. Same-day sessions whose items differ are separate assessments:
    kept here, ordered by source row and warned about by kb_store.visits."""
    first: dict[tuple, AnySession] = {}
    kept: list[AnySession] = []
    issues: list[ValidationIssue] = []
    for s in sessions:
        key = (*duplicate_key(s), s.items_digest)
        if key not in first:
            first[key] = s
            kept.append(s)
            continue
        k = first[key]
        cond = f" {s.condition}" if s.condition else ""
        issues += reject_session(
            s,
            "duplicate_session",
            None,
            f"patient {s.proj_id}: a second {s.instrument}{cond} session on {s.date.isoformat()}; "
            f"identical items; the first ({k.source.file} row {k.source.row}) is kept",
        )
    return kept, issues


#: one string object per condition for every kept key (a row's condition is a string of its own)
_CONDITIONS = {"ON": "ON", "OFF": "OFF", "": ""}


class SessionKeys:
    """Session -> `SessionKey`: what the cross-row rules need of it (kb_store.ingest with
    `keys_only`). The kept `extra` holds the keys those rules read; equal ones are one shared
    dict (never changed after), as is the `SourceRef` of the sessions of one row."""

    #: the Session.extra keys the cross-row rules read (date outliers, duplicates, visits)
    EXTRA_KEYS = ("date_column", "event_id", "event_order")

    def __init__(self) -> None:
        self._extras: dict[tuple, dict] = {}
        self._source: SourceRef | None = None

    def __call__(self, s: Session) -> SessionKey:
        kept = tuple((k, s.extra[k]) for k in self.EXTRA_KEYS if k in s.extra)
        if len(source_refs(s)) > 1:  # rows joined into the session (PPMI parts)
            extra = {**dict(kept), "sources": s.extra["sources"]}
        else:
            extra = self._extras.setdefault(kept, dict(kept))
        if self._source != s.source:
            self._source = s.source
        assert self._source is not None
        return SessionKey(
            s.proj_id,
            s.date,
            s.instrument,
            s.profile,
            s.items_digest,
            self._source,
            s.visit,
            _CONDITIONS.get(s.condition, s.condition),
            extra,
        )


def fmt(x: float | None) -> str:
    if x is None:
        return "blank"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
