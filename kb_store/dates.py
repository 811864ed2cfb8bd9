"""Raw date strings -> `datetime.date`, with the precision the raw text carried.

Owns the one rule for reading session dates from any source (generic CSV, MA-RAG, PPMI) so that every
ingest path accepts the same formats and rejects the same junk with the same reason.

Accepted (time and time-zone parts are kept aside, never used for the date; a time must be a real
clock time, `_clock`: 24:00, 25:61:99 or an offset such as +25:00 rejects the value):
- ISO and ISO-like: 2021-03-15, 2021/03/15, 2021.03.15, 20210315, 2021-03-15 13:54:00,
  2021-03-15T13:54:00Z, 2021-03-15T13:54:00.123+02:00
- numeric day/month with a 4-digit year (03/15/2021, 15/03/2021, 15.03.2021): the order is decided
  per file column, never per cell (`decide_order`): a value whose first number is > 12 shows the
  column is day-first, one whose second number is > 12 that it is month-first, and that order is
  applied to every value of the column. Slash/dash dates and dotted dates are decided separately;
  without evidence slash/dash dates are read month-first (US, PPMI) and the caller warns, dotted
  dates day-first (the European convention). A column holding both orders rejects its ambiguous
  values (`AmbiguousDateError`). Only ASCII digits are read (no Arabic-Indic or full-width digits).
- month names: Mar 15 2021, March 15, 2021, 15 Mar 2021, 15-Mar-2021, 2021-Mar-15
- month only: 03/2021, 3/2021, 2021-03, Mar 2021, March 2021 -> the first of the month with
  `precision == "month"` (PPMI INFODT is MM/YYYY); callers warn about the precision.

Rejected with a reason (`DateParseError`): blanks, two-digit years (03/15/21 is ambiguous about the
century), impossible calendar dates (2021-02-30), anything else.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ]
    )
    for m in names
}


class DateParseError(ValueError):
    """The text is not a date this module accepts; the message says why."""


class AmbiguousDateError(DateParseError):
    """A numeric date like 03/04/2021 in a column that holds both day-first and month-first dates."""


@dataclass
class DateOrder:
    """The day/month order of the numeric dates of one column, decided from unambiguous values.

    `order[group]` is "dmy" or "mdy" for group "slash" (/ and -) and "dot" (.); `evidence[(group,
    order)]` the first raw value that shows it; `conflict` the groups that show both orders;
    `ambiguous[group]` the values of the group that only the decided order can read."""

    order: dict[str, str] = field(default_factory=lambda: {"slash": "mdy", "dot": "dmy"})
    evidence: dict[tuple[str, str], str] = field(default_factory=dict)
    conflict: set[str] = field(default_factory=set)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)

    def decided(self, group: str) -> bool:
        return any(g == group for g, _ in self.evidence)


@dataclass(frozen=True)
class ParsedDate:
    date: dt.date
    precision: str  # "day" | "month"
    time: str = ""  # "13:54:00" when the raw value carried a time of day
    raw: str = ""


_TIME = (
    r"(?:[ T](?P<time>\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(?P<ampm>[AaPp][Mm])?"
    r"(?P<off>Z|[+-]\d{2}:?\d{2})?)?"
)
#: The largest time-zone offset in use (UTC+14:00, Line Islands; UTC-12:00 is the smallest).
MAX_OFFSET_MINUTES = 14 * 60
_ISO = re.compile(r"^(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})" + _TIME + r"$", re.ASCII)
_COMPACT = re.compile(r"^(?P<y>(?:19|20)\d{2})(?P<m>\d{2})(?P<d>\d{2})$")
_NUMERIC = re.compile(
    r"^(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})" + _TIME + r"$"
)
_SHORT_YEAR = re.compile(r"^\d{1,2}[-/.]\d{1,2}[-/.]\d{2}(?:\s.*)?$")
_MONTH_ONLY = re.compile(r"^(?P<m>\d{1,2})[-/.](?P<y>\d{4})$")
_YEAR_MONTH = re.compile(r"^(?P<y>\d{4})[-/.](?P<m>\d{1,2})$")
_NAMED_MDY = re.compile(
    r"^(?P<mon>[A-Za-z]+)\.?[\s-]+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?[\s-]+(?P<y>\d{4})" + _TIME + r"$"
)
_NAMED_DMY = re.compile(
    r"^(?P<d>\d{1,2})[\s-]+(?P<mon>[A-Za-z]+)\.?,?[\s-]+(?P<y>\d{4})" + _TIME + r"$"
)
_NAMED_YMD = re.compile(r"^(?P<y>\d{4})[\s-]+(?P<mon>[A-Za-z]+)[\s-]+(?P<d>\d{1,2})" + _TIME + r"$")
_NAMED_MY = re.compile(r"^(?P<mon>[A-Za-z]+)\.?[\s-]+(?P<y>\d{4})$")


def _make(y: int, m: int, d: int, raw: str) -> dt.date:
    try:
        return dt.date(y, m, d)
    except ValueError as exc:
        raise DateParseError(f"{raw!r} is not a calendar date ({exc})") from None


def _month(name: str, raw: str) -> int:
    m = MONTHS.get(name.lower())
    if m is None:
        raise DateParseError(f"{raw!r}: unknown month name {name!r}")
    return m


def _clock(m: re.Match[str], raw: str) -> str:
    """The time of day of a match ('' when none), after checking it is a real clock time: hour
    0-23 (1-12 with AM/PM; 24:00 is rejected too), minutes and seconds 0-59, an offset within
    +-14:00 with minutes 0-59. Raises `DateParseError` naming the bad part."""
    time = m["time"] or ""
    if not time:
        return ""
    parts = [float(x) if "." in x else int(x) for x in time.split(":")]
    hour, minute, second = (parts + [0])[:3]
    low, high = (1, 12) if m["ampm"] else (0, 23)
    bad = []
    if not low <= hour <= high:
        bad.append(f"hour {hour} is outside {low}-{high}")
    if minute > 59:
        bad.append(f"minute {minute} is over 59")
    if second >= 60:
        bad.append(f"second {time.split(':')[2]} is over 59")
    off = m["off"] or ""
    if off not in ("", "Z"):
        digits = off[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:])
        if om > 59 or oh * 60 + om > MAX_OFFSET_MINUTES:
            bad.append(f"offset {off} is beyond +-14:00")
    if bad:
        raise DateParseError(f"{raw!r} has an invalid clock time ({'; '.join(bad)})")
    return time


def numeric_parts(raw: object) -> tuple[int, int, str] | None:
    """(first number, second number, group) of a numeric day/month date, else None."""
    text = "" if raw is None else str(raw).strip()
    m = _NUMERIC.match(text) if text.isascii() else None
    if m is None:
        return None
    return int(m["a"]), int(m["b"]), "dot" if m["sep"] == "." else "slash"


def decide_order(values: Iterable[object]) -> DateOrder:
    """Decide the day/month order of a column from its unambiguous numeric dates."""
    out = DateOrder()
    seen: dict[str, set[str]] = {}
    for raw in values:
        parts = numeric_parts(raw)
        if parts is None:
            continue
        a, b, group = parts
        text = str(raw).strip()
        if a > 12 and b <= 12:
            shown = "dmy"
        elif b > 12 and a <= 12:
            shown = "mdy"
        else:
            if a != b and a <= 12:
                out.ambiguous.setdefault(group, []).append(text)
            continue
        seen.setdefault(group, set()).add(shown)
        out.evidence.setdefault((group, shown), text)
    for group, orders in seen.items():
        if len(orders) > 1:
            out.conflict.add(group)
        else:
            out.order[group] = next(iter(orders))
    return out


def parse_date(raw: object, order: DateOrder | None = None) -> ParsedDate:
    """Parse one raw cell; raise `DateParseError` with the reason when it is not a usable date.

    `order` is the column's decided day/month order (`decide_order`); without it a numeric date is
    read day-first when dotted or when its first number is > 12, else month-first."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        raise DateParseError("blank date")
    if not text.isascii():
        raise DateParseError(
            f"{text!r} holds characters other than ASCII (digits must be written 0-9)"
        )
    if m := _ISO.match(text):
        d = _make(int(m["y"]), int(m["m"]), int(m["d"]), text)
        return ParsedDate(d, "day", _clock(m, text), text)
    if m := _COMPACT.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), int(m["d"]), text), "day", "", text)
    if m := _NUMERIC.match(text):
        return _numeric_date(m, text, order)
    if m := _MONTH_ONLY.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), 1, text), "month", "", text)
    if m := _YEAR_MONTH.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), 1, text), "month", "", text)
    if (named := _named_date(text)) is not None:
        return named
    if _SHORT_YEAR.match(text):
        raise DateParseError(
            f"{text!r} has a two-digit year (century ambiguous); write the full year"
        )
    raise DateParseError(f"{text!r} is not a recognised date format")


def _numeric_date(m: re.Match[str], text: str, order: DateOrder | None) -> ParsedDate:
    """A numeric date (DD.MM.YYYY, MM/DD/YYYY, ...): day and month by the rules of `parse_date`."""
    a, b, y = int(m["a"]), int(m["b"]), int(m["y"])
    group = "dot" if m["sep"] == "." else "slash"
    if a > 12:
        first = "dmy"
    elif b > 12 or a == b:
        first = "mdy"
    elif order is not None and group in order.conflict:
        dmy = order.evidence.get((group, "dmy"), "")
        mdy = order.evidence.get((group, "mdy"), "")
        raise AmbiguousDateError(
            f"{text!r} could be day-first or month-first: this column holds both "
            f"day-first ({dmy!r}) and month-first ({mdy!r}) dates; write ISO dates (YYYY-MM-DD)"
        )
    elif order is not None:
        first = order.order[group]
    else:
        first = "dmy" if group == "dot" else "mdy"
    day, month = (a, b) if first == "dmy" else (b, a)
    return ParsedDate(_make(y, month, day, text), "day", _clock(m, text), text)


def _named_date(text: str) -> ParsedDate | None:
    """A date with a month name ("Mar 5, 2021", "5 March 2021", "2021 Mar 5", "March 2021")."""
    if m := _NAMED_MDY.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", _clock(m, text), text)
    if m := _NAMED_DMY.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", _clock(m, text), text)
    if m := _NAMED_YMD.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", _clock(m, text), text)
    if m := _NAMED_MY.match(text):
        return ParsedDate(_make(int(m["y"]), _month(m["mon"], text), 1, text), "month", "", text)
    return None
