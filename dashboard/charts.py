"""Plotly figure builders: pure functions of a result's fact rows (engine.types.Fact), course rows
and slopes (Result.series, Result.slopes): the item heatmap and the cohort slope chart, with the
palette and hover text the trajectory chart (dashboard.trajectory_chart) shares.

No Streamlit here, so every chart is unit-tested on its own. Charts only draw numbers the engine
computed: scores and items from the fact table, MCID crossings and slopes from engine.clinical.series
(through the Result); they never compute a change or fill in missing values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import plotly.graph_objects as go

from engine.types import Fact, Result, Slope
from kb_store.documents import fmt_num
from kb_store.profiles import DOMAIN_LABELS, DOMAINS, domain_label, load_profile

#: A calm qualitative palette (colour-blind safe, Okabe-Ito without yellow).
PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#E69F00",
    "#000000",
    "#7F7F7F",
)
WORSENED_COLOUR = "#B2182B"
IMPROVED_COLOUR = "#1B7837"
HIGHLIGHT_COLOUR = "#D55E00"
MUTED_COLOUR = "rgba(90, 110, 130, 0.55)"
FONT = dict(family="Source Sans Pro, Helvetica, Arial, sans-serif", size=13, color="#1F2A37")


def patient_colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _series_key(f: Fact) -> tuple[int, str]:
    return (f.patient, f.condition or "")


def _series_name(key: tuple[int, str]) -> str:
    pid, cond = key
    return f"Patient {pid}" + (f" ({cond})" if cond else "")


def item_label(profile: str, code: str) -> str:
    try:
        it = load_profile(profile).item(code)
        return f"{it.number} {it.label}"
    except KeyError:
        return code


def hover_text(f: Fact) -> str:
    """Hover text for one point: patient, visit, date, score (partial?) and every item score."""
    head = (
        f"<b>Patient {f.patient}</b>, visit {f.visit} ({f.date})"
        + (f", {f.condition}" if f.condition else "")
        + f"<br>{DOMAIN_LABELS.get(f.domain, f.domain)}: <b>{fmt_num(f.score)}</b>"
    )
    if f.missing:
        head += f" (partial: {f.missing} item{'s' if f.missing != 1 else ''} missing)"
    lines = [f"{item_label(f.profile, c)}: {fmt_num(v)}" for c, v in f.items.items()]
    return head + ("<br>" + "<br>".join(lines) if lines else "")


def domains_present(facts: Iterable[Fact]) -> list[str]:
    have = {f.domain for f in facts}
    ordered = [d for d in DOMAINS if d in have]
    return ordered + sorted(have - set(ordered))


def no_scores_figure() -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        annotations=[
            dict(
                text="No scores to plot", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
            )
        ],
        height=200,
        font=FONT,
        template="plotly_white",
    )
    return fig


def item_heatmap(
    facts: Sequence[Fact], patient: int, *, domains: Sequence[str] | None = None
) -> go.Figure:
    """Item-level heatmap for one patient: rows = items (grouped by domain), columns = visits,
    cells = item scores 0-4; blank cells are missing items (shown as gaps, not zeros)."""
    rows = [f for f in facts if f.patient == patient and (not domains or f.domain in domains)]
    visits = sorted({(f.visit, f.date, f.condition or "") for f in rows})
    cols = [f"v{v} {d}" + (f" {c}" if c else "") for v, d, c in visits]
    col_index = {k: i for i, k in enumerate(visits)}
    item_rows: list[tuple[str, str, str]] = []  # (domain, profile, code)
    seen: set[tuple[str, str]] = set()
    for dom in domains_present(rows):
        for f in sorted((f for f in rows if f.domain == dom), key=lambda f: f.visit):
            for code in f.items:
                if (dom, code) not in seen:
                    seen.add((dom, code))
                    item_rows.append((dom, f.profile, code))
    z: list[list[float | None]] = [[None] * len(cols) for _ in item_rows]
    idx = {(d, c): i for i, (d, _, c) in enumerate(item_rows)}
    for f in rows:
        j = col_index[(f.visit, f.date, f.condition or "")]
        for code, v in f.items.items():
            z[idx[(f.domain, code)]][j] = v
    labels = [f"{DOMAIN_LABELS.get(d, d)} · {item_label(p, c)}" for d, p, c in item_rows]
    text = [["" if v is None else fmt_num(v) for v in row] for row in z]
    fig = go.Figure(
        go.Heatmap(
            z=[[math.nan if v is None else v for v in row] for row in z],
            x=cols,
            y=labels,
            zmin=0,
            zmax=4,
            text=text,
            texttemplate="%{text}",
            colorscale=[
                [0, "#F4F7FA"],
                [0.25, "#CFE3EF"],
                [0.5, "#8DBBD6"],
                [0.75, "#E7A86B"],
                [1, "#C4553E"],
            ],
            colorbar=dict(title="item score", tickvals=[0, 1, 2, 3, 4]),
            hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>",
            hoverongaps=False,
            xgap=1,
            ygap=1,
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        template="plotly_white",
        font=FONT,
        title=f"Patient {patient}: item scores by visit",
        height=max(260, 18 * len(labels) + 120),
        margin=dict(l=10, r=10, t=50, b=40),
    )
    return fig


def result_slopes(result: Result) -> list[Slope]:
    """The slopes a result carries: the cohort agent's (with the UPDRS total) when it ran, else
    each patient's per-domain slopes of Result.slopes; both computed by engine.clinical.series."""
    rows = (result.cohort or {}).get("slopes")
    slopes = [Slope(**r) for r in rows] if rows is not None else list(result.slopes)
    return [s for s in slopes if s.slope is not None]


def _slope_value(s: Slope, per_year: bool) -> float | None:
    return s.slope_year if per_year else s.slope


def cohort_slope_figure(
    slopes: Sequence[Slope],
    highlight: int | None = None,
    *,
    domains: Sequence[str] | None = None,
    per_year: bool = False,
) -> go.Figure:
    """Every patient's slope per domain as a strip (one dot per patient), the selected patient
    drawn large and labelled; a zero line marks 'no change'. Points per assessment of the
    instrument, or (`per_year`, a per-year statistic) points per year, leaving out the series
    without a per-year rate (engine.clinical.series.PER_YEAR_RULE)."""
    wanted = domains or (*DOMAINS, "total")
    unit = "year" if per_year else "assessment"
    by_dom: dict[str, list[Slope]] = {d: [] for d in wanted}
    for s in slopes:
        if s.domain in by_dom and _slope_value(s, per_year) is not None:
            by_dom[s.domain].append(s)
    doms = [d for d in wanted if by_dom[d]]
    fig = go.Figure()
    for dom in doms:
        others = [s for s in by_dom[dom] if s.patient != highlight]
        pids = np.fromiter((s.patient for s in others), np.int64, len(others))
        # typed arrays and one hover template: a 10,000-patient cohort serialises in
        # milliseconds, where per-point Python lists and strings took seconds
        fig.add_trace(
            go.Box(
                x=np.fromiter((_slope_value(s, per_year) for s in others), float, len(others)),
                name=domain_label(dom),
                boxpoints="all",
                jitter=0.5,
                pointpos=0,
                fillcolor="rgba(0,0,0,0)",
                line=dict(color="rgba(0,0,0,0)"),
                marker=dict(color=MUTED_COLOUR, size=7 if len(others) <= 500 else 3),
                customdata=np.column_stack(
                    [pids, np.fromiter((s.n_visits for s in others), np.int64, len(others))]
                ),
                hovertemplate=f"Patient %{{customdata[0]}}: %{{x:+.2f}} points/{unit} "
                "(%{customdata[1]} assessments)<extra></extra>",
                showlegend=False,
                orientation="h",
                meta={"domain": dom, "patients": pids},
            )
        )
    if highlight is not None:
        hs = [s for s in slopes if s.patient == highlight and s.domain in doms]
        hs = [s for s in hs if _slope_value(s, per_year) is not None]
        if hs:
            fig.add_trace(
                go.Scatter(
                    x=[_slope_value(s, per_year) for s in hs],
                    y=[domain_label(s.domain) for s in hs],
                    mode="markers+text",
                    name=f"Patient {highlight}",
                    marker=dict(color=HIGHLIGHT_COLOUR, size=15, line=dict(color="white", width=2)),
                    text=[f"P{highlight}" for _ in hs],
                    textposition="top center",
                    hovertext=[
                        f"Patient {s.patient}: {_slope_value(s, per_year):+.2f} points/{unit}"
                        for s in hs
                    ],
                    hoverinfo="text",
                    meta={"highlight": highlight},
                )
            )
    fig.add_vline(x=0, line=dict(color="#9AA5B1", dash="dot"))
    fig.update_layout(
        template="plotly_white",
        font=FONT,
        title=f"Slope per domain (points per {unit}; higher = worsening)",
        height=max(260, 90 * len(doms) + 120),
        margin=dict(l=10, r=10, t=60, b=40),
        xaxis_title=f"points per {unit}",
        showlegend=highlight is not None,
    )
    return fig
