"""Small wording helpers every writer shares: capitals, item labels in running text, visit lists,
part names and month-year periods."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from engine.clinical.findings import running_label as item_label
from engine.writing.citing import text_start
from kb_store.profiles import DOMAIN_WORDS

__all__ = ["cap", "item_label", "month_year", "part", "period", "series_list", "where"]


def cap(s: str) -> str:
    """`s` with its first letter upper-cased (past the citation and clause marks before it)."""
    i = text_start(s)
    return s[:i] + s[i : i + 1].upper() + s[i + 1 :]


def part(d: str) -> str:
    """A part's name in running text ("motor", "UPDRS total")."""
    return "UPDRS total" if d == "total" else DOMAIN_WORDS[d]


def where(vs: Sequence[int]) -> str:
    """ "visit 3" or "visits 2, 3 and 5"."""
    vs = sorted(set(vs))
    if len(vs) == 1:
        return f"visit {vs[0]}"
    return "visits " + ", ".join(map(str, vs[:-1])) + f" and {vs[-1]}"


def month_year(date: str) -> str:
    """ "2020-01-17" -> "Jan 2020" (the date as written when it is not ISO)."""
    try:
        return dt.date.fromisoformat(date[:10]).strftime("%b %Y")
    except ValueError:
        return date


def period(dates: Sequence[str]) -> str:
    """ "Jan 2020 to Oct 2022", or one month when the assessments fall in one."""
    a, b = month_year(dates[0]), month_year(dates[-1])
    return a if a == b else f"{a} to {b}"


def series_list(words: Sequence[str]) -> str:
    """ "a", "a or b", "a, b or c"."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + f" or {words[-1]}"
