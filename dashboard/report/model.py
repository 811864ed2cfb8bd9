"""The report model: everything an exported report shows, built once from a run result.

`build_report` is the only place that reads the Result: the header (backend, LLM calls, time),
the plan, the summary with its grounding verdict and number links, the flag / table B / cohort
tables, the charts, the provenance of every number, the fact table, the agent narratives and the
verification record. The writers (markdown_writer, html_writer) render a Report and nothing else.
Pure; no Streamlit here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dashboard import charts, tables
from dashboard.clinical import ClinicalRefs
from dashboard.number_links import NumberLink, grounding_status, link_numbers, links_table
from engine.types import Result

TITLE = "MA-RAG report"


@dataclass(frozen=True)
class Table:
    """One table of a section, under its own sub-heading when `heading` is set."""

    frame: pd.DataFrame
    heading: str = ""
    #: a column whose improved / worsened / stable cells the HTML report colours ("" = none)
    change_column: str = ""


@dataclass(frozen=True)
class Section:
    """A titled group of tables (flags, table B, cohort answer, provenance, fact table)."""

    title: str
    tables: tuple[Table, ...]


@dataclass(frozen=True)
class Figure:
    """A chart of the report: its heading and the Plotly figure."""

    title: str
    figure: Any


@dataclass(frozen=True)
class Summary:
    """The summary text, its grounding verdict and the link of each number in it."""

    text: str
    verdict: str
    passed: bool
    links: tuple[NumberLink, ...]

    @property
    def unsupported(self) -> tuple[str, ...]:
        """The numbers of the summary that no fact supports, in text order."""
        return tuple(lk.text for lk in self.links if not lk.supported)


@dataclass(frozen=True)
class Report:
    """An exported report, in reading order; the charts sit between `sections` and `records`."""

    title: str
    generated: dt.datetime
    backend: str
    llm_calls: int
    plan: dict[str, Any]
    summary: Summary
    #: flags, then table B and the cohort answer when the run has them
    sections: tuple[Section, ...]
    figures: tuple[Figure, ...]
    #: provenance of every number in the summary, then the fact table
    records: tuple[Section, ...]
    narratives: tuple[tuple[str, str], ...]
    verification: dict[str, Any] | None  # the grounding record, as the engine wrote it


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


def _summary(result: Result, links: list[NumberLink]) -> Summary:
    v = result.verification or {}
    status, label = grounding_status(v)
    verdict = label + (" (facts fallback text used)" if v.get("fallback_used") else "")
    return Summary(result.summary, verdict, status == "passed", tuple(links))


def _flags(result: Result) -> Section:
    f = result.flags or {}
    return Section(
        "Flags",
        (
            Table(tables.flags_frame(f.get("incongruence") or []), "Incongruence"),
            Table(tables.flags_frame(f.get("red_flags") or []), "Red-flag items"),
        ),
    )


def _analysis_sections(result: Result) -> list[Section]:
    out: list[Section] = []
    if result.table_b:
        out.append(
            Section(
                "Table B (comparison)",
                (Table(tables.table_b_frame(result), change_column="change"),),
            )
        )
    if result.cohort:
        answer, ranking, stats = tables.cohort_frames(result.cohort)
        out.append(
            Section(
                "Cohort answer",
                (
                    Table(answer),
                    Table(ranking, "Ranking"),
                    Table(stats, "Per-domain statistics (latest visit)"),
                ),
            )
        )
    return out


def build_report(
    result: Result,
    refs: ClinicalRefs | None = None,
    *,
    highlight: int | None = None,
    include_charts: bool = False,
) -> Report:
    """The report of `result`; charts (trajectories or cohort slopes) only with include_charts."""
    links = link_numbers(result)
    figures = (
        [Figure(t, fig) for t, fig in report_figures(result, refs or ClinicalRefs(), highlight)]
        if include_charts
        else []
    )
    records = (
        Section(
            "Provenance of every number in the summary", (Table(pd.DataFrame(links_table(links))),)
        ),
        Section("Fact table", (Table(tables.facts_frame(result.facts).drop(columns=["items"])),)),
    )
    return Report(
        title=TITLE,
        generated=dt.datetime.now(dt.UTC),
        backend=result.backend,
        llm_calls=result.llm_calls,
        plan=result.plan.to_dict(),
        summary=_summary(result, links),
        sections=(_flags(result), *_analysis_sections(result)),
        figures=tuple(figures),
        records=records,
        narratives=tuple(result.narratives.items()),
        verification=result.verification,
    )
