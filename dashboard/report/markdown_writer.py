"""The Markdown writer of the report model: headings, fenced JSON and pipe tables, no images
(the numbers the charts draw are in the tables). Renders a Report only."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from dashboard.report.model import Report, Section

MAX_ROWS = 400


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    return str(v).replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame | None, max_rows: int = MAX_ROWS) -> str:
    """A pipe table of the first `max_rows` rows, or "_(none)_" for no rows."""
    if df is None or df.empty:
        return "_(none)_\n"
    df = df.head(max_rows)
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _section(section: Section) -> list[str]:
    parts = [f"## {section.title}"]
    for table in section.tables:
        if table.heading:
            parts.append(f"### {table.heading}")
        parts.append(md_table(table.frame))
    return parts


def write_markdown(report: Report) -> str:
    """The report as Markdown."""
    summary = report.summary
    parts = [
        f"# {report.title}",
        f"Generated {report.generated.strftime('%Y-%m-%d %H:%M UTC')} \u00b7 backend "
        f"`{report.backend}` \u00b7 {report.llm_calls} LLM calls",
        "## Plan",
        "```json\n" + json.dumps(report.plan, indent=1) + "\n```",
        "## Summary",
        f"**Grounding:** {summary.verdict}",
        "",
        summary.text or "_(empty)_",
    ]
    if summary.unsupported:
        parts.append(
            "\n**Unsupported numbers:** " + ", ".join(f"`{t}`" for t in summary.unsupported)
        )
    for section in (*report.sections, *report.records):
        parts += _section(section)
    parts += [
        "## Agent narratives",
        *[f"### {k}\n\n{v}\n" for k, v in report.narratives],
        "## Verification record",
        "```json\n" + json.dumps(report.verification, indent=1, default=str) + "\n```",
    ]
    return "\n\n".join(parts) + "\n"
