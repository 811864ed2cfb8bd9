"""The domain-score trajectory chart of a result: one panel per domain, one line per patient,
drawn from the result's facts with the marks of the statements the text states
(dashboard.chart_marks): its severity bands, its beyond-the-MCID verdicts at the latest visit,
its caveat points apart (partial or possibly missing: never joined as a change), and the PDQ-8
as the Summary Index (0-100). Pure: Result in, Plotly figure out.

The x axis is the visit date, or months since each patient's first assessment in the result
(the Compare page: patients line up at their own baseline). `colours` and `y_ranges` let several
figures of one page share one colour per patient and one scale per domain.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.chart_marks import Marks, Verdict, marks_from
from dashboard.charts import FONT, hover_text, no_scores_figure, patient_colour
from dashboard.clinical import BAND_COLOURS
from engine.types import Fact, Result
from kb_store.documents import fmt_num
from kb_store.profiles import DOMAIN_LABELS, DOMAINS, load_profile

DAYS_PER_MONTH = 30.4375
CAVEAT_COLOUR = "#7F7F7F"
VERDICT_STYLE = {"worsened": ("triangle-up", "#B2182B"), "improved": ("triangle-down", "#1B7837")}
SI_TITLE = "PDQ-8 Summary Index (0-100)"


def _domain_max(f: Fact) -> float | None:
    try:
        return load_profile(f.profile).domains[f.domain].max if f.profile else None
    except KeyError:
        return None


def patient_colours(patients: Sequence[int]) -> dict[int, str]:
    """One colour per patient, in the order given (shared by every figure of a page)."""
    return {p: patient_colour(i) for i, p in enumerate(patients)}


def baselines(result: Result) -> dict[int, str]:
    """Each patient's first assessment date in the result."""
    out: dict[int, str] = {}
    for f in result.facts:
        if f.date and (f.patient not in out or f.date < out[f.patient]):
            out[f.patient] = f.date
    return out


def _x(date: str, patient: int, base: Mapping[int, str] | None) -> str | float:
    if base is None:
        return date
    a, b = dt.date.fromisoformat(base[patient][:10]), dt.date.fromisoformat(date[:10])
    return round((b - a).days / DAYS_PER_MONTH, 2)


def shared_y_ranges(result: Result) -> dict[str, tuple[float, float]]:
    """One y range per domain over every patient of `result` (side-by-side charts)."""
    marks = marks_from(result)
    out: dict[str, tuple[float, float]] = {}
    for d in {f.domain for f in result.facts}:
        if d == "qol" and marks.summary_index:
            out[d] = (0.0, 100.0)
            continue
        top = max(
            (f.score for f in result.facts if f.domain == d and f.score is not None), default=1
        )
        out[d] = (0.0, max(float(top) * 1.15, 1.0))
    return out


def _points(
    result: Result, marks: Marks, dom: str, patient: int
) -> list[tuple[int, str, float | None, Fact | None]]:
    """(visit, date, y, fact) of one patient's line in a panel; the PDQ-8 as Summary Index."""
    if dom == "qol" and patient in marks.summary_index:
        return [(v, d, si, None) for v, d, si in marks.summary_index[patient]]
    rows = sorted(
        (f for f in result.facts if f.patient == patient and f.domain == dom), key=lambda f: f.visit
    )
    return [(f.visit, f.date, f.score, f) for f in rows]


def _line(
    fig: go.Figure,
    r: int,
    dom: str,
    patient: int,
    pts,
    marks: Marks,
    colour: str,
    base,
    first: bool,
) -> None:  # noqa: ANN001
    """The patient's line: plain points joined; caveat points left out of it and drawn hollow
    and grey in their own trace (never a change)."""
    plain = [(v, d, y, f) for v, d, y, f in pts if (patient, dom, v) not in marks.caveats]
    odd = [(v, d, y, f) for v, d, y, f in pts if (patient, dom, v) in marks.caveats]
    name = f"Patient {patient}"
    unit = (
        "Summary Index"
        if dom == "qol" and patient in marks.summary_index
        else DOMAIN_LABELS.get(dom, dom)
    )
    fig.add_trace(
        go.Scatter(
            x=[_x(d, patient, base) for _v, d, _y, _f in plain],
            y=[y for _v, _d, y, _f in plain],
            mode="lines+markers",
            name=name,
            legendgroup=name,
            showlegend=first,
            line=dict(color=colour, width=2),
            marker=dict(size=8, color=colour),
            hovertext=[
                hover_text(f)
                if f
                else f"<b>{name}</b>, visit {v} ({d})<br>{unit}: <b>{fmt_num(y)}</b>"
                for v, d, y, f in plain
            ],
            hovertemplate="%{hovertext}<extra></extra>",
            connectgaps=False,
            meta={"domain": dom, "patient": patient},
        ),
        row=r,
        col=1,
    )
    if odd:
        fig.add_trace(
            go.Scatter(
                x=[_x(d, patient, base) for _v, d, _y, _f in odd],
                y=[y for _v, _d, y, _f in odd],
                mode="markers",
                name="Partial or possibly missing",  # the hover says it is not read as change
                legendgroup="caveat",
                showlegend=True,
                marker=dict(size=10, symbol="circle-open", color=CAVEAT_COLOUR, line=dict(width=2)),
                hovertext=[
                    f"Patient {patient}, visit {v} ({d}): {fmt_num(y)}, "
                    f"{marks.caveats[(patient, dom, v)]} (not read as a change)"
                    for v, d, y, _f in odd
                ],
                hovertemplate="%{hovertext}<extra></extra>",
                meta={"domain": dom, "patient": patient, "caveat": True},
            ),
            row=r,
            col=1,
        )


def _bands(fig: go.Figure, r: int, dom: str, marks: Marks, top: float) -> None:
    for b in marks.bands.get(dom, ()):
        if b.low > top:
            continue
        fig.add_hrect(
            y0=b.low,
            y1=min(b.high if b.high is not None else top, top),
            row=r,
            col=1,
            layer="below",
            line_width=0,
            fillcolor=BAND_COLOURS.get(b.level.lower(), "rgba(150,150,150,0.08)"),
            annotation_text=b.level,
            annotation_position="top left",
            annotation_font=dict(size=10, color="#5B6770"),
        )


def _verdicts(
    fig: go.Figure, r: int, dom: str, verdicts: Sequence[Verdict], base, shown: set[str]
) -> None:  # noqa: ANN001
    for label, (symbol, colour) in VERDICT_STYLE.items():
        vs = [v for v in verdicts if v.domain == dom and v.label == label]
        if not vs:
            continue
        name = f"{label.capitalize()} beyond the MCID"  # first to latest: said in the hover
        fig.add_trace(
            go.Scatter(
                x=[_x(v.date, v.patient, base) for v in vs],
                y=[v.score for v in vs],
                mode="markers",
                name=name,
                legendgroup=name,
                showlegend=name not in shown,
                marker=dict(
                    symbol=symbol,
                    size=15,
                    color="rgba(0,0,0,0)",
                    line=dict(color=colour, width=2.5),
                ),
                hovertext=[
                    f"Patient {v.patient}: first to latest, visit {v.first_visit} to visit {v.visit} "
                    f"{'+' if v.change > 0 else ''}{fmt_num(v.change)}, at or above the MCID "
                    f"{fmt_num(v.mcid)} ({label})"
                    for v in vs
                ],
                hovertemplate="%{hovertext}<extra></extra>",
                meta={"domain": dom, "mcid": label, "patients": [v.patient for v in vs]},
            ),
            row=r,
            col=1,
        )
        shown.add(name)


def _y_axis(
    fig: go.Figure,
    r: int,
    dom: str,
    facts: Sequence[Fact],
    si: bool,
    y_ranges: Mapping[str, tuple[float, float]] | None,
) -> float:
    """Panel r's y range (shared when `y_ranges` is given) and title; returns its top."""
    ys = [f.score for f in facts if f.domain == dom and f.score is not None]
    default = (0.0, 100.0 if si else max(max(ys, default=1.0) * 1.15, 1.0))
    lo, hi = (y_ranges or {}).get(dom, default)
    dmax = None
    if not si:
        dmax = next((m for m in (_domain_max(f) for f in facts if f.domain == dom) if m), None)
    title = "Summary Index" if si else "score" + (f" (0-{fmt_num(dmax)})" if dmax else "")
    fig.update_yaxes(range=[lo, hi], title_text=title, row=r, col=1)
    return hi


def trajectory_figure(
    result: Result,
    *,
    patients: Sequence[int] | None = None,
    show_bands: bool = True,
    show_mcid: bool = True,
    months: bool = False,
    colours: Mapping[int, str] | None = None,
    y_ranges: Mapping[str, tuple[float, float]] | None = None,
    height_per_domain: int = 230,
    zero_level: str | None = None,
) -> go.Figure:
    """The trajectory chart of `result` (see the module docstring); `zero_level`: the band word
    of a score of 0 (ClinicalRefs.zero_level)."""
    marks = marks_from(result, zero_level)
    pats = list(patients) if patients is not None else sorted({f.patient for f in result.facts})
    facts = [f for f in result.facts if f.patient in pats]
    have = {f.domain for f in facts}
    doms = [d for d in DOMAINS if d in have] + sorted(have - set(DOMAINS))
    if not doms:
        return no_scores_figure()
    titles = [
        SI_TITLE
        if d == "qol" and any(p in marks.summary_index for p in pats)
        else DOMAIN_LABELS.get(d, d)
        for d in doms
    ]
    fig = make_subplots(
        rows=len(doms),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.09 if len(doms) > 1 else 0.0,
        subplot_titles=titles,
    )
    colour = dict(colours or patient_colours(pats))
    base = baselines(result) if months else None
    shown: set[str] = set()
    for r, dom in enumerate(doms, start=1):
        for i, p in enumerate(pats):
            pts = _points(result, marks, dom, p)
            if pts:
                _line(fig, r, dom, p, pts, marks, colour.get(p, patient_colour(i)), base, r == 1)
        si = titles[r - 1] == SI_TITLE
        hi = _y_axis(fig, r, dom, facts, si, y_ranges)
        if show_bands and not si:
            _bands(fig, r, dom, marks, hi)
        if show_mcid:
            _verdicts(fig, r, dom, [v for v in marks.verdicts if v.patient in pats], base, shown)
    # de-duplicate the caveat legend entry
    seen_caveat = False
    for t in fig.data:
        if t.legendgroup == "caveat":
            t.showlegend = not seen_caveat
            seen_caveat = True
    fig.update_xaxes(showgrid=True, gridcolor="#EEF1F4", **({} if months else {"type": "date"}))
    fig.update_xaxes(
        title_text="months since first assessment" if months else "visit date",
        row=len(doms),
        col=1,
    )
    fig.update_layout(
        template="plotly_white",
        font=FONT,
        height=max(280, height_per_domain * len(doms) + 110),
        margin=dict(l=60, r=20, t=40, b=110),
        hovermode="closest",
        legend=dict(orientation="h", yanchor="top", y=-0.08, xanchor="left", x=0),
    )
    return fig
