"""Export of the current result, the entry point the pages call: the printable report (PDF,
HTML, Markdown), the verification record (JSON) and CSV files. No Streamlit here.

CSV files neutralise spreadsheet formulas: a text cell starting with =, +, -, @, a tab or a
carriage return (and not a number) is written with a leading apostrophe.

The report is the engine's (engine.report): the dashboard's downloads and `marag report` write
the same document from the same result. The verification record is its own download, never
inside the report.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from dashboard import tables
from dashboard.number_links import link_numbers, links_table
from engine.report import render
from engine.types import Result

REPORT_MIME = {"pdf": "application/pdf", "html": "text/html", "md": "text/markdown"}

__all__ = [
    "REPORT_MIME",
    "facts_csv",
    "provenance_csv",
    "report",
    "table_b_csv",
    "verification_json",
]


#: a text cell a spreadsheet would run as a formula starts with one of these (OWASP CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutral(value: Any) -> Any:
    """A text cell that a spreadsheet would read as a formula, prefixed with an apostrophe (shown
    as text, never run); numbers and signed numbers written as text ("+6", "-5") stay as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def safe_csv(df: pd.DataFrame) -> str:
    """`df` as CSV with every text cell neutralised (headers included)."""
    out = df.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]):  # object or string columns
            out[col] = out[col].map(neutral)
    out.columns = [neutral(str(c)) for c in out.columns]
    return out.to_csv(index=False)


def facts_csv(result: Result) -> str:
    return safe_csv(tables.facts_frame(result.facts))


def table_b_csv(result: Result) -> str:
    return safe_csv(tables.table_b_frame(result))


def provenance_csv(result: Result) -> str:
    return safe_csv(pd.DataFrame(links_table(link_numbers(result))))


def report(result: Result, fmt: str, **context: Any) -> bytes:
    """The printable report in `fmt` (pdf, html, md); `context`: kb_generation, user,
    review_status (engine.report.build_report)."""
    return render(result, fmt, **context)


def verification_json(result: Result) -> str:
    """The full released result with its verification record, as the audit trail stores it."""
    return json.dumps(result.to_json(), default=str, indent=1)
