"""Export of the current result: a Markdown or a self-contained HTML report (summary with its
grounding record, flags, table B, cohort answer, charts, provenance of every number, the fact
table) and CSV files. Pure functions of a Result; no Streamlit here.

HTML charts are embedded as interactive Plotly HTML with plotly.js inlined once, so the report
opens offline; the Markdown report lists the same numbers as tables (no images are needed).
"""

from __future__ import annotations

import datetime as dt
import html
import json
from typing import Any

import pandas as pd

from dashboard import charts, tables
from dashboard.clinical import ClinicalRefs
from dashboard.number_links import grounding_status, highlighted_html, link_numbers, links_table
from engine.types import Result


def facts_csv(result: Result) -> str:
    return tables.facts_frame(result.facts).to_csv(index=False)


def table_b_csv(result: Result) -> str:
    return tables.table_b_frame(result).to_csv(index=False)


def provenance_csv(result: Result) -> str:
    return pd.DataFrame(links_table(link_numbers(result))).to_csv(index=False)


def _md_table(df: pd.DataFrame, max_rows: int = 400) -> str:
    if df is None or df.empty:
        return "_(none)_\n"
    df = df.head(max_rows)
    cols = [str(c) for c in df.columns]

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and pd.isna(v)):
            return ""
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _verdict(result: Result) -> str:
    v = result.verification or {}
    return grounding_status(v)[1] + (
        " (facts fallback text used)" if v.get("fallback_used") else ""
    )


def _flag_frames(result: Result) -> tuple[pd.DataFrame, pd.DataFrame]:
    f = result.flags or {}
    return tables.flags_frame(f.get("incongruence") or []), tables.flags_frame(
        f.get("red_flags") or []
    )


def to_markdown(result: Result) -> str:
    """The current result as a Markdown report."""
    inc, red = _flag_frames(result)
    links = link_numbers(result)
    unsupported = [lk.text for lk in links if not lk.supported]
    parts = [
        "# MA-RAG report",
        f"Generated {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} \u00b7 backend "
        f"`{result.backend}` \u00b7 {result.llm_calls} LLM calls",
        "## Plan",
        "```json\n" + json.dumps(result.plan.to_dict(), indent=1) + "\n```",
        "## Summary",
        f"**Grounding:** {_verdict(result)}",
        "",
        result.summary or "_(empty)_",
    ]
    if unsupported:
        parts.append("\n**Unsupported numbers:** " + ", ".join(f"`{t}`" for t in unsupported))
    parts += ["## Flags", "### Incongruence", _md_table(inc), "### Red-flag items", _md_table(red)]
    if result.table_b:
        parts += ["## Table B (comparison)", _md_table(tables.table_b_frame(result))]
    if result.cohort:
        answer, ranking, stats = tables.cohort_frames(result.cohort)
        parts += [
            "## Cohort answer",
            _md_table(answer),
            "### Ranking",
            _md_table(ranking),
            "### Per-domain statistics (latest visit)",
            _md_table(stats),
        ]
    parts += [
        "## Provenance of every number in the summary",
        _md_table(pd.DataFrame(links_table(links))),
        "## Fact table",
        _md_table(tables.facts_frame(result.facts).drop(columns=["items"])),
        "## Agent narratives",
        *[f"### {k}\n\n{v}\n" for k, v in result.narratives.items()],
        "## Verification record",
        "```json\n" + json.dumps(result.verification, indent=1, default=str) + "\n```",
    ]
    return "\n\n".join(parts) + "\n"


CSS = """
body{font-family:"Source Sans Pro",Helvetica,Arial,sans-serif;color:#1F2A37;max-width:1100px;margin:2em auto;padding:0 1em}
h1,h2,h3{color:#1D4E6B} table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #D8DEE4;padding:3px 7px;text-align:left} th{background:#EEF3F7}
.summary{background:#F7F9FB;border:1px solid #D8DEE4;border-radius:6px;padding:1em;line-height:1.5}
mark.unsupported{background:#F6C9C3;font-weight:bold} .pass{color:#14532D} .fail{color:#7F1D1D}
td.improved{background:#DCEFE3} td.worsened{background:#F6DEDA} td.stable{background:#EEF1F4}
pre{background:#F4F6F8;padding:.6em;overflow:auto;font-size:12px}
"""


def _html_table(df: pd.DataFrame, change_col: str | None = None) -> str:
    if df is None or df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, rec, strict=True):
            txt = "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)
            cls = ""
            if change_col and c == change_col:
                cls = next(
                    (
                        f' class="{k}"'
                        for k in ("improved", "worsened", "stable")
                        if txt.lower().startswith(k)
                    ),
                    "",
                )
            cells.append(f"<td{cls}>{html.escape(txt)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def report_figures(
    result: Result, refs: ClinicalRefs, highlight: int | None = None
) -> list[tuple[str, Any]]:
    """(title, figure) pairs for the report: trajectories (and heatmaps) or the cohort slopes."""
    figs: list[tuple[str, Any]] = []
    if result.plan.analysis == "cohort":
        slopes = charts.result_slopes(result)
        figs.append(("Slope per domain", charts.cohort_slope_figure(slopes, highlight)))
    elif result.facts:
        figs.append(
            (
                "Domain-score trajectories",
                charts.trajectory_figure(result.facts, refs, series=result.series),
            )
        )
        patients = sorted({f.patient for f in result.facts})
        if len(patients) == 1:
            figs.append(("Item scores", charts.item_heatmap(result.facts, patients[0])))
    return figs


def to_html(
    result: Result,
    refs: ClinicalRefs | None = None,
    *,
    highlight: int | None = None,
    include_charts: bool = True,
) -> str:
    """A self-contained HTML report (charts interactive, plotly.js inlined once)."""
    refs = refs or ClinicalRefs()
    inc, red = _flag_frames(result)
    links = link_numbers(result)
    passed = grounding_status(result.verification or {})[0] == "passed"
    body = [
        "<h1>MA-RAG report</h1>",
        f"<p>Generated {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} &middot; backend "
        f"<code>{html.escape(result.backend)}</code> &middot; {result.llm_calls} LLM calls</p>",
        "<h2>Plan</h2>",
        f"<pre>{html.escape(json.dumps(result.plan.to_dict(), indent=1))}</pre>",
        "<h2>Summary</h2>",
        f'<p class="{"pass" if passed else "fail"}"><strong>Grounding:</strong> {html.escape(_verdict(result))}</p>',
        f'<div class="summary">{highlighted_html(result.summary, links)}</div>',
        "<h2>Flags</h2><h3>Incongruence</h3>",
        _html_table(inc),
        "<h3>Red-flag items</h3>",
        _html_table(red),
    ]
    if result.table_b:
        body += [
            "<h2>Table B (comparison)</h2>",
            _html_table(tables.table_b_frame(result), "change"),
        ]
    if result.cohort:
        answer, ranking, stats = tables.cohort_frames(result.cohort)
        body += [
            "<h2>Cohort answer</h2>",
            _html_table(answer),
            "<h3>Ranking</h3>",
            _html_table(ranking),
            "<h3>Per-domain statistics (latest visit)</h3>",
            _html_table(stats),
        ]
    if include_charts:
        first = True
        for title, fig in report_figures(result, refs, highlight):
            body += [
                f"<h2>{html.escape(title)}</h2>",
                fig.to_html(full_html=False, include_plotlyjs=first),
            ]
            first = False
    body += [
        "<h2>Provenance of every number in the summary</h2>",
        _html_table(pd.DataFrame(links_table(links))),
        "<h2>Fact table</h2>",
        _html_table(tables.facts_frame(result.facts).drop(columns=["items"])),
        "<h2>Agent narratives</h2>",
        *[
            f"<h3>{html.escape(k)}</h3><p>{html.escape(v)}</p>"
            for k, v in result.narratives.items()
        ],
        "<h2>Verification record</h2>",
        f"<pre>{html.escape(json.dumps(result.verification, indent=1, default=str))}</pre>",
    ]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>MA-RAG report</title>'
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    )
