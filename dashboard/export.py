"""Export of the current result, the entry point the pages call: the printable report (PDF,
HTML, Markdown), the verification record (JSON) and CSV files. No Streamlit here.

The report is the engine's (engine.report): the dashboard's downloads and `marag report` write
the same document from the same result. The verification record is its own download, never
inside the report.
"""

from __future__ import annotations

import json
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


def facts_csv(result: Result) -> str:
    return tables.facts_frame(result.facts).to_csv(index=False)


def table_b_csv(result: Result) -> str:
    return tables.table_b_frame(result).to_csv(index=False)


def provenance_csv(result: Result) -> str:
    return pd.DataFrame(links_table(link_numbers(result))).to_csv(index=False)


def report(result: Result, fmt: str, **context: Any) -> bytes:
    """The printable report in `fmt` (pdf, html, md); `context`: kb_generation, user,
    review_status (engine.report.build_report)."""
    return render(result, fmt, **context)


def verification_json(result: Result) -> str:
    """The full released result with its verification record, as the audit trail stores it."""
    return json.dumps(result.to_json(), default=str, indent=1)
