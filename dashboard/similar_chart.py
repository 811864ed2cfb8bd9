"""Pure Plotly builder: a patient's domain trajectory overlaid with similar patients', aligned at
months since each patient's own baseline. Rows come from engine.similar.trajectories; nothing is
computed here but the drawing."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dashboard.charts import FONT, MUTED_COLOUR, PALETTE
from kb_store.profiles import DOMAIN_LABELS


def similar_trajectories_figure(
    rows: Sequence[dict], patient: int, domain: str, neighbours: Sequence[int] = ()
) -> go.Figure:
    """One line per patient for `domain`: the patient bold, the neighbours thin, in rank order."""
    fig = go.Figure()
    order = [patient, *[n for n in neighbours if n != patient]]
    for rank, p in enumerate(order):
        pts = sorted(
            (r for r in rows if r["patient"] == p and r["domain"] == domain),
            key=lambda r: r["months"],
        )
        if not pts:
            continue
        me = p == patient
        fig.add_trace(
            go.Scatter(
                x=[r["months"] for r in pts],
                y=[r["score"] for r in pts],
                mode="lines+markers",
                name=f"Patient {p}" + (" (this patient)" if me else f" (#{rank})"),
                line=dict(
                    width=4 if me else 1.5,
                    color=PALETTE[0] if me else PALETTE[1 + (rank - 1) % (len(PALETTE) - 1)],
                    dash="solid" if me else "dot",
                ),
                marker=dict(size=9 if me else 6),
                opacity=1.0 if me else 0.8,
                customdata=[[r["date"], r["visit"]] for r in pts],
                hovertemplate=(
                    f"Patient {p}<br>%{{x:.1f}} months since baseline (%{{customdata[0]}}, "
                    "visit %{customdata[1]})<br>score %{y}<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        title=dict(
            text=f"{DOMAIN_LABELS.get(domain, domain)}: this patient and similar patients",
            font=dict(size=15),
        ),
        xaxis_title="Months since the patient's baseline",
        yaxis_title=f"{DOMAIN_LABELS.get(domain, domain)} score",
        font=FONT,
        plot_bgcolor="white",
        paper_bgcolor="white",
        legend=dict(orientation="h", y=-0.25),
        margin=dict(l=60, r=20, t=50, b=40),
        height=380,
    )
    fig.update_xaxes(gridcolor="#E5E8EC", zeroline=True, zerolinecolor=MUTED_COLOUR)
    fig.update_yaxes(gridcolor="#E5E8EC", rangemode="tozero")
    return fig
