"""The HTML writer of the report model: one self-contained page (inline CSS; charts as
interactive Plotly HTML with plotly.js inlined once, so the page opens offline), with the
summary's unsupported numbers marked and table B's change column coloured. Renders a Report only.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pandas as pd

from dashboard.number_links import highlighted_html
from dashboard.report.model import Figure, Report, Section

CSS = """
body{font-family:"Source Sans Pro",Helvetica,Arial,sans-serif;color:#1F2A37;max-width:1100px;margin:2em auto;padding:0 1em}
h1,h2,h3{color:#1D4E6B} table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #D8DEE4;padding:3px 7px;text-align:left} th{background:#EEF3F7}
.summary{background:#F7F9FB;border:1px solid #D8DEE4;border-radius:6px;padding:1em;line-height:1.5}
mark.unsupported{background:#F6C9C3;font-weight:bold} .pass{color:#14532D} .fail{color:#7F1D1D}
td.improved{background:#DCEFE3} td.worsened{background:#F6DEDA} td.stable{background:#EEF1F4}
pre{background:#F4F6F8;padding:.6em;overflow:auto;font-size:12px}
"""

CHANGE_CLASSES = ("improved", "worsened", "stable")


def _cell(value: Any, coloured: bool) -> str:
    txt = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    cls = ""
    if coloured:
        cls = next((f' class="{k}"' for k in CHANGE_CLASSES if txt.lower().startswith(k)), "")
    return f"<td{cls}>{html.escape(txt)}</td>"


def html_table(df: pd.DataFrame | None, change_column: str = "") -> str:
    """An HTML table; cells of `change_column` get the class of their change (improved ...)."""
    if df is None or df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    coloured = [bool(change_column) and c == change_column for c in df.columns]
    rows = [
        "<tr>" + "".join(_cell(v, k) for v, k in zip(rec, coloured, strict=True)) + "</tr>"
        for rec in df.itertuples(index=False)
    ]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _section(section: Section) -> list[str]:
    parts = [f"<h2>{section.title}</h2>"]
    for table in section.tables:
        if table.heading:
            parts.append(f"<h3>{table.heading}</h3>")
        parts.append(html_table(table.frame, table.change_column))
    return parts


def _figures(figures: tuple[Figure, ...]) -> list[str]:
    return [
        part
        for i, fig in enumerate(figures)
        for part in (
            f"<h2>{html.escape(fig.title)}</h2>",
            fig.figure.to_html(full_html=False, include_plotlyjs=i == 0),
        )
    ]


def write_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    summary = report.summary
    body = [
        f"<h1>{report.title}</h1>",
        f"<p>Generated {report.generated.strftime('%Y-%m-%d %H:%M UTC')} &middot; backend "
        f"<code>{html.escape(report.backend)}</code> &middot; {report.llm_calls} LLM calls</p>",
        "<h2>Plan</h2>",
        f"<pre>{html.escape(json.dumps(report.plan, indent=1))}</pre>",
        "<h2>Summary</h2>",
        f'<p class="{"pass" if summary.passed else "fail"}"><strong>Grounding:</strong> '
        f"{html.escape(summary.verdict)}</p>",
        f'<div class="summary">{highlighted_html(summary.text, summary.links)}</div>',
    ]
    for section in report.sections:
        body += _section(section)
    body += _figures(report.figures)
    for section in report.records:
        body += _section(section)
    body += [
        "<h2>Agent narratives</h2>",
        *[f"<h3>{html.escape(k)}</h3><p>{html.escape(v)}</p>" for k, v in report.narratives],
        "<h2>Verification record</h2>",
        f"<pre>{html.escape(json.dumps(report.verification, indent=1, default=str))}</pre>",
    ]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{report.title}</title>'
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )
