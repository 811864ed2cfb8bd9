"""Checks on what a user types before it reaches the planner: the query text and a patient list.

Owns the rules that keep a malformed input from silently widening a plan to every patient (an
empty plan means "all patients"): a `--patients` list must name at least one id and every id must be
plain ASCII digits that fit a 64-bit integer; a query may not hold control or invisible format
characters, digits of other scripts, numbers too long to be an id, or more than MAX_QUERY_CHARS
characters (the planner's regexes are linear, and the limit also bounds the work per request).
Every failure is a `QueryInputError` (a `ValueError`: the CLI prints one line and exits 2; the
dashboard shows the message).
"""

from __future__ import annotations

import re
import unicodedata

#: Longest query accepted by the CLI and the dashboard's "Ask in words" box.
MAX_QUERY_CHARS = 2000
#: Longest search text (`marag search`, the Search page): a clinician's search is a few words; the
#: index scores every session against every query word, so the cap bounds the work of one search
MAX_SEARCH_CHARS = 500
#: Longest text `marag check` and the dashboard's "Check a text" box accept: about 7,000 words, ten
#: times the longest summary the engine writes (a 44-patient comparison, ~4,500 characters)
MAX_CHECK_CHARS = 50_000
#: Most patients a trajectory, comparison or single-session plan summarises patient by patient
#: (a cohort question reads the session table and has no cap)
MAX_PLAN_PATIENTS = 100
#: Longest run of digits that can be a patient id (2**63 - 1 has 19 digits).
MAX_ID_DIGITS = 19
MAX_ID = 2**63 - 1
_ASCII_DIGITS = re.compile(r"[0-9]+")
_ALLOWED_CONTROLS = {"\t", "\n", "\r"}


class QueryInputError(ValueError):
    """Input the user can fix; the message is one line."""


def _show(text: str, limit: int = 20) -> str:
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[:limit])
    return repr(shown) + (f"... ({len(text)} characters)" if len(text) > limit else "")


def parse_patient_list(text: str, *, flag: str = "--patients") -> tuple[int, ...]:
    """'3, 8' -> (3, 8). Every comma-separated token must be an id written with digits 0-9."""
    tokens = [t.strip() for t in str(text).split(",")]
    if not any(tokens):
        raise QueryInputError(f"{flag} names no patient id (expected e.g. 3,8)")
    out: list[int] = []
    for tok in tokens:
        if not tok:
            raise QueryInputError(f"{flag} has an empty id in {_show(text)} (expected e.g. 3,8)")
        if not _ASCII_DIGITS.fullmatch(tok):
            raise QueryInputError(
                f"{flag}: {_show(tok)} is not a patient id (write ids with the digits 0-9)"
            )
        digits = tok.lstrip("0") or "0"
        if len(digits) > MAX_ID_DIGITS or int(digits) > MAX_ID:
            raise QueryInputError(f"{flag}: {_show(tok)} is too long to be a patient id")
        if int(digits) not in out:
            out.append(int(digits))
    return tuple(out)


def check_search_text(text: str) -> str:
    """The search text unchanged, or QueryInputError when it is longer than MAX_SEARCH_CHARS."""
    if len(text) > MAX_SEARCH_CHARS:
        raise QueryInputError(
            f"the search text has {len(text)} characters; at most {MAX_SEARCH_CHARS} are accepted"
        )
    return text


def check_checked_text(text: str, where: str = "the text") -> str:
    """A text to check, unchanged, or QueryInputError when it is longer than MAX_CHECK_CHARS."""
    if len(text) > MAX_CHECK_CHARS:
        raise QueryInputError(
            f"{where} has {len(text)} characters; at most {MAX_CHECK_CHARS} are checked "
            "(split it into parts)"
        )
    return text


def check_plan_size(analysis: str, patients: tuple[int, ...]) -> None:
    """QueryInputError when a per-patient plan names more than MAX_PLAN_PATIENTS patients."""
    if analysis != "cohort" and len(patients) > MAX_PLAN_PATIENTS:
        raise QueryInputError(
            f"a {analysis.replace('_', ' ')} plan covers {len(patients)} patients; at most "
            f"{MAX_PLAN_PATIENTS} are summarised patient by patient (name fewer, or ask a cohort "
            "question)"
        )


def check_query(query: str) -> str:
    """The query unchanged, or QueryInputError saying what is wrong with it."""
    q = str(query)
    if len(q) > MAX_QUERY_CHARS:
        raise QueryInputError(
            f"the query has {len(q)} characters; at most {MAX_QUERY_CHARS} are accepted"
        )
    for i, c in enumerate(q):
        cat = unicodedata.category(c)
        if (cat == "Cc" and c not in _ALLOWED_CONTROLS) or cat == "Cf":
            raise QueryInputError(
                f"the query holds a control or invisible character (U+{ord(c):04X} at position "
                f"{i + 1}); retype it"
            )
        if cat == "Nd" and not c.isascii():
            raise QueryInputError(
                f"the query writes a number with non-ASCII digits ({c!r} at position {i + 1}); "
                "use the digits 0-9"
            )
    for m in _ASCII_DIGITS.finditer(q):
        if len(m.group().lstrip("0")) > MAX_ID_DIGITS:
            raise QueryInputError(
                f"the query holds a {len(m.group())}-digit number at position {m.start() + 1}; "
                "it cannot be a patient id"
            )
    return q
