import datetime as dt

import pytest

from kb_store.dates import DateParseError, parse_date

D = dt.date(2021, 3, 15)


@pytest.mark.parametrize(
    "raw",
    [
        "2021-03-15",
        "2021/03/15",
        "2021.03.15",
        "20210315",
        "03/15/2021",
        "3/15/2021",
        "15/03/2021",
        "15.03.2021",
        "2021-03-15 13:54:00",
        "2021-03-15T13:54:00Z",
        "2021-03-15T13:54:00.250+02:00",
        "Mar 15 2021",
        "March 15, 2021",
        "15 Mar 2021",
        "15-Mar-2021",
        "2021-Mar-15",
        " 2021-03-15 ",
    ],
)
def test_day_formats(raw):
    p = parse_date(raw)
    assert p.date == D and p.precision == "day"


def test_time_kept_aside():
    assert parse_date("2021-03-15 13:54:00").time == "13:54:00"


@pytest.mark.parametrize("raw", ["03/2021", "3/2021", "2021-03", "Mar 2021", "March 2021"])
def test_month_only(raw):
    p = parse_date(raw)
    assert p.date == dt.date(2021, 3, 1) and p.precision == "month"


def test_us_month_first_when_ambiguous():
    assert parse_date("04/05/2021").date == dt.date(2021, 4, 5)


@pytest.mark.parametrize(
    "raw,reason",
    [
        ("", "blank"),
        ("2021-02-30", "not a calendar date"),
        ("03/15/21", "two-digit year"),
        ("yesterday", "not a recognised"),
        ("13/2021", "not a calendar date"),
        ("Foo 15 2021", "unknown month"),
    ],
)
def test_rejected_with_reason(raw, reason):
    with pytest.raises(DateParseError, match=reason):
        parse_date(raw)
