"""Numeric tokens in generated text: where each number is, what it reads as, and how the paper's
lenient metrics tokenise it.

Owns one thing: turning text into `NumberToken`s (integers, decimals, signed deltas, percentages,
dates, ordinals) with character spans, so that the claim reader (reader.py), the guard and the
metrics all see the same numbers. Instrument names that contain digits ("PDQ-8", "PDQ8",
"all-MiniLM-L6-v2", item codes such as NP3GAIT) are not numbers; a date is one token, not three.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from engine.grounding import literal_scan
from engine.grounding.paragraphs import paragraphs
from engine.grounding.run_memo import memoised
from engine.vocabulary import MONTH_PATTERN as _MON
from engine.vocabulary import MONTHS

#: Date spellings, most specific first. Groups: y, m, d (d optional) or mon (month name).
DATE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"(?<![\w.])(?P<y>(?:19|20)\d\d)[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?:[ T]\d\d:\d\d(?::\d\d)?Z?)?(?![\w])"
    ),
    re.compile(r"(?<![\w.])(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>(?:19|20)\d\d)(?![\w])"),
    re.compile(r"(?<![\w.])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>(?:19|20)\d\d)(?![\w])"),
    re.compile(
        rf"(?<![\w])(?P<mon>{_MON})\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>(?:19|20)\d\d)(?![\w])",
        re.I,
    ),
    re.compile(
        rf"(?<![\w.])(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<mon>{_MON})\s+(?P<y>(?:19|20)\d\d)(?![\w])",
        re.I,
    ),
    re.compile(rf"(?<![\w])(?P<mon>{_MON})\s+(?P<y>(?:19|20)\d\d)(?![\w])", re.I),
    re.compile(r"(?<![\w.])(?P<y>(?:19|20)\d\d)[-/](?P<m>\d{1,2})(?![\w/-])"),
    re.compile(r"(?<![\w.])(?P<m>\d{1,2})/(?P<y>(?:19|20)\d\d)(?![\w])"),
)

#: What a text must contain for each DATE_PATTERNS entry to match it, in its order (a cheap
#: pre-test that skips a scan which cannot match: the slash forms need "/", the month-name forms
#: a month name).
_MONTH_WORD = re.compile(rf"(?<![\w]){_MON}", re.I)
_DATE_NEEDS: tuple[re.Pattern[str] | str | None, ...] = (
    None,
    "/",
    ".",
    _MONTH_WORD,
    _MONTH_WORD,
    _MONTH_WORD,
    None,
    "/",
)

#: Names that contain digits but are not numbers.
NOT_NUMBERS = re.compile(
    r"\bPDQ[-\s]?(?:8|39)\b|\bMDS-UPDRS\b|\ball-MiniLM-L6-v2\b|\bSmolLM2[-\w.]*|\bMiniLM\b"
    r"|\b(?![Vv]\d+\b)[A-Za-z]++\d+[A-Za-z0-9_]*\b|\bQ4_1\b|\bPart\s+\d\b",
    re.I,
)

NUMBER_RE = re.compile(
    r"(?<![\w.])(?P<sign>[-+\u2212]?)(?P<num>\d+(?:\.\d+)?)(?P<ord>st|nd|rd|th)?(?P<pct>\s?%)?(?![\w])"
)


_NOT_NUMBERS_LOW = literal_scan.lowered(NOT_NUMBERS)  # the same spans in the lower-cased text
_YEAR = re.compile(r"(?:19|20)\d\d")
_DIGIT = re.compile(r"\d")


class NumberToken(NamedTuple):
    """One number as written. `kind` is number | percent | date | ordinal; `signed` when it was
    written with an explicit + or - sign; `date` is the ISO form (YYYY-MM-DD, YYYY-MM or YYYY).
    A named tuple: immutable, and cheap to build (every number of every text of a run is one)."""

    text: str
    value: float
    start: int
    end: int
    kind: str = "number"
    signed: bool = False
    decimals: int = 0
    date: str | None = None


def normalise(text: str) -> str:
    """Unicode minus and dashes to ASCII so that offsets stay the same (one char for one char)."""
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-")


def extract_numbers(text: str) -> list[NumberToken]:
    """Every numeric token in `text`, in order. Years written alone (1900-2099, not signed,
    not a decimal) read as dates of precision 'year'. Once per text within an engine run."""
    return list(_extract_numbers(text))


@memoised
def _extract_numbers(text: str) -> tuple[NumberToken, ...]:
    """The tokens of each paragraph (paragraphs.py: a reading is local to a paragraph), shifted
    to its offset."""
    out: list[NumberToken] = []
    for p0, para in paragraphs(normalise(text)):
        toks = _paragraph_numbers(para)
        out.extend(toks if p0 == 0 else (_shifted(t, p0) for t in toks))
    return tuple(out)


def _shifted(t: NumberToken, d: int) -> NumberToken:
    return NumberToken(
        t.text, t.value, t.start + d, t.end + d, t.kind, t.signed, t.decimals, t.date
    )


@memoised
def _paragraph_numbers(text: str) -> tuple[NumberToken, ...]:
    if _DIGIT.search(text) is None:
        return ()  # every number, date and digit-bearing name has a digit
    taken = bytearray(len(text))  # 1 = claimed by a name or a date
    low = text.lower() if text.isascii() else None
    for m in NOT_NUMBERS.finditer(text) if low is None else _NOT_NUMBERS_LOW.finditer(low):
        taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    out = _date_tokens(text, low, taken)
    out += _number_tokens(text, taken)
    out.sort(key=lambda t: t.start)
    return tuple(out)


def _date_tokens(text: str, low: str | None, taken: bytearray) -> list[NumberToken]:
    """The dates of `text` not inside a taken span (names), marking each one taken."""
    out: list[NumberToken] = []
    # every date spelling has a year 19xx or 20xx
    years = "19" in text or "20" in text
    month = years and literal_scan.search(_MONTH_WORD, text, low) is not None
    for pat, needs in zip(DATE_PATTERNS, _DATE_NEEDS, strict=True):
        if not years:
            break
        if (isinstance(needs, str) and needs not in text) or (needs is _MONTH_WORD and not month):
            continue
        for m in literal_scan.finditer(pat, text, low):
            if taken.find(1, m.start(), m.end()) >= 0:
                continue
            iso = _iso(m)
            if iso is None:
                continue
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            out.append(
                NumberToken(
                    m.group(),
                    float(iso.replace("-", "")[:8] or 0),
                    m.start(),
                    m.end(),
                    kind="date",
                    date=iso,
                )
            )
    if month:
        out += _listed_days(text, low, taken, out)
    return out


#: a day and month without a year ("1 February"), and what may join it to the next date of a list
_DAY_MONTH = re.compile(
    rf"(?<![\w.])(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<mon>{_MON})(?![\w])", re.I
)
_LIST_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s+to\s+|\s*[-–]\s*)")


def _listed_days(
    text: str, low: str | None, taken: bytearray, dates: list[NumberToken]
) -> list[NumberToken]:
    """A list of days whose year is written once, at its end ("1 February and 4 April 2020",
    "3, ... 12 March, 9 April and 4 June 2021"): each day takes the year of the list's last date,
    so its day number is no score. Marks each one taken."""
    year_at = {t.start: t.date[:4] for t in dates if t.date and len(t.date) == 10}
    out: list[NumberToken] = []
    found = [m for m in literal_scan.finditer(_DAY_MONTH, text, low) if taken[m.start()] == 0]
    for m in reversed(found):
        j = _LIST_JOIN.match(text, m.end())
        year = year_at.get(j.end()) if j else None
        mo = MONTHS.get(m.group("mon").lower().rstrip("."))
        if year is None or mo is None or not 1 <= int(m.group("d")) <= 31:
            continue
        iso = f"{year}-{mo:02d}-{int(m.group('d')):02d}"
        taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
        year_at[m.start()] = year
        out.append(
            NumberToken(
                m.group(), float(iso.replace("-", "")), m.start(), m.end(), "date", date=iso
            )
        )
    return out


def _number_tokens(text: str, taken: bytearray) -> list[NumberToken]:
    """The numbers of `text` outside the taken spans (names, dates): percents, ordinals, bare
    years (as dates) and plain numbers."""
    out: list[NumberToken] = []
    for m in NUMBER_RE.finditer(text):
        if taken.find(1, m.start(), m.end()) >= 0:
            continue
        num = m.group("num")
        sign = m.group("sign")
        value = float(num) * (-1 if sign in ("-", "\u2212") else 1)
        decimals = len(num.split(".")[1]) if "." in num else 0
        if m.group("pct"):
            kind = "percent"
        elif m.group("ord"):
            kind = "ordinal"
        elif not sign and decimals == 0 and _YEAR.fullmatch(num):
            out.append(NumberToken(m.group(), value, m.start(), m.end(), "date", date=num))
            continue
        else:
            kind = "number"
        out.append(
            NumberToken(
                m.group(),
                value,
                m.start(),
                m.end(),
                kind=kind,
                signed=bool(sign),
                decimals=decimals,
            )
        )
    return out


def _iso(m: re.Match[str]) -> str | None:
    g = m.groupdict()
    y = int(g["y"])
    if g.get("mon"):
        mo = MONTHS.get(g["mon"].lower().rstrip("."))
        if mo is None:
            return None
    else:
        mo = int(g["m"])
    if not 1 <= mo <= 12:
        return None
    d = g.get("d")
    if d is None:
        return f"{y:04d}-{mo:02d}"
    if not 1 <= int(d) <= 31:
        return None
    return f"{y:04d}-{mo:02d}-{int(d):02d}"


def canonical(x: float) -> str:
    """A number as a paper-style token: no sign, no trailing zeros (14.0 -> '14', -2.50 -> '2.5')."""
    x = abs(float(x))
    if x.is_integer():
        return str(int(x))
    return f"{x:.6f}".rstrip("0").rstrip(".")


def paper_tokens(text: str) -> list[str]:
    """The paper's numeric tokens N_model of a summary: every number as a canonical token (sign
    and % dropped; a date contributes its year, month and day as separate tokens, as a plain
    digit regex over the text would)."""
    toks: list[str] = []
    # each paragraph's tokens (only values and kinds are read: no shift to the text's offsets)
    paras = [_paragraph_numbers(para) for _p0, para in paragraphs(normalise(text))]
    for t in (t for part in paras for t in part):
        if t.kind == "date" and t.date:
            toks.extend(canonical(float(p)) for p in t.date.split("-"))
        else:
            toks.append(canonical(t.value))
    return toks
