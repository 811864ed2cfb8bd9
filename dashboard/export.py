"""Export of the current result, the entry point the pages call: a Markdown or a self-contained
HTML report and CSV files. Pure functions of a Result; no Streamlit here.

Each report is one model (dashboard.report.model.Report, built once from the Result: summary with
its grounding record, flags, table B, cohort answer, charts, provenance of every number, the fact
table) rendered by its writer (dashboard.report.markdown_writer / html_writer). HTML charts are
interactive Plotly HTML with plotly.js inlined once, so the report opens offline; the Markdown
report lists the same numbers as tables (no images are needed).
"""

from __future__ import annotations

import pandas as pd

from dashboard import tables
from dashboard.clinical import ClinicalRefs
from dashboard.number_links import link_numbers, links_table
from dashboard.report.html_writer import CSS, write_html
from dashboard.report.markdown_writer import write_markdown
from dashboard.report.model import Report, build_report, report_figures
from engine.types import Result

__all__ = [
    "CSS",
    "Report",
    "build_report",
    "facts_csv",
    "provenance_csv",
    "report_figures",
    "table_b_csv",
    "to_html",
    "to_markdown",
]


def facts_csv(result: Result) -> str:
    return tables.facts_frame(result.facts).to_csv(index=False)


def table_b_csv(result: Result) -> str:
    return tables.table_b_frame(result).to_csv(index=False)


def provenance_csv(result: Result) -> str:
    return pd.DataFrame(links_table(link_numbers(result))).to_csv(index=False)


def to_markdown(result: Result) -> str:
    """The current result as a Markdown report."""
    return write_markdown(build_report(result))


def to_html(
    result: Result,
    refs: ClinicalRefs | None = None,
    *,
    highlight: int | None = None,
    include_charts: bool = True,
) -> str:
    """A self-contained HTML report (charts interactive, plotly.js inlined once)."""
    return write_html(
        build_report(result, refs, highlight=highlight, include_charts=include_charts)
    )
