"""Raw date strings -> `datetime.date`, with the precision the raw text carried.

Owns the one rule for reading session dates from any source (generic CSV, MA-RAG, PPMI) so that every
ingest path accepts the same formats and rejects the same junk with the same reason.

Accepted (time and time-zone parts are kept aside, never used for the date):
- ISO and ISO-like: 2021-03-15, 2021/03/15, 2021.03.15, 20210315, 2021-03-15 13:54:00,
  2021-03-15T13:54:00Z, 2021-03-15T13:54:00.123+02:00
- numeric day/month with a 4-digit year: 03/15/2021 and 03-15-2021 are read month-first (US, as PPMI
  and most EHR exports write them); when the first number is > 12 the text is read day-first
  (15/03/2021). Dots are read day-first (15.03.2021, the European convention).
- month names: Mar 15 2021, March 15, 2021, 15 Mar 2021, 15-Mar-2021, 2021-Mar-15
- month only: 03/2021, 3/2021, 2021-03, Mar 2021, March 2021 -> the first of the month with
  `precision == "month"` (PPMI INFODT is MM/YYYY); callers warn about the precision.

Rejected with a reason (`DateParseError`): blanks, two-digit years (03/15/21 is ambiguous about the
century), impossible calendar dates (2021-02-30), anything else.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ParsedDate:
    date: dt.date
    precision: str  # "day" | "month"
    time: str = ""  # "13:54:00" when the raw value carried a time of day
    raw: str = ""


_TIME = r"(?:[ T](?P<time>\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(?:[AaPp][Mm])?(?:Z|[+-]\d{2}:?\d{2})?)?"
_ISO = re.compile(r"^(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})" + _TIME + r"$")
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


def parse_date(raw: object) -> ParsedDate:
    """Parse one raw cell; raise `DateParseError` with the reason when it is not a usable date."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        raise DateParseError("blank date")
    if m := _ISO.match(text):
        d = _make(int(m["y"]), int(m["m"]), int(m["d"]), text)
        return ParsedDate(d, "day", m["time"] or "", text)
    if m := _COMPACT.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), int(m["d"]), text), "day", "", text)
    if m := _NUMERIC.match(text):
        a, b, y = int(m["a"]), int(m["b"]), int(m["y"])
        if m["sep"] == "." or a > 12:
            day, month = a, b  # day-first: dotted European dates, or a first number > 12
        else:
            month, day = a, b  # month-first (US / PPMI)
        return ParsedDate(_make(y, month, day, text), "day", m["time"] or "", text)
    if m := _MONTH_ONLY.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), 1, text), "month", "", text)
    if m := _YEAR_MONTH.match(text):
        return ParsedDate(_make(int(m["y"]), int(m["m"]), 1, text), "month", "", text)
    if m := _NAMED_MDY.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", m["time"] or "", text)
    if m := _NAMED_DMY.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", m["time"] or "", text)
    if m := _NAMED_YMD.match(text):
        d = _make(int(m["y"]), _month(m["mon"], text), int(m["d"]), text)
        return ParsedDate(d, "day", m["time"] or "", text)
    if m := _NAMED_MY.match(text):
        return ParsedDate(_make(int(m["y"]), _month(m["mon"], text), 1, text), "month", "", text)
    if _SHORT_YEAR.match(text):
        raise DateParseError(
            f"{text!r} has a two-digit year (century ambiguous); write the full year"
        )
    raise DateParseError(f"{text!r} is not a recognised date format")
