"""The report's static trajectory chart: a PNG drawn with matplotlib from the result's series.

A printed page needs an image, and the dashboard's Plotly figures need a browser (kaleido) to
become one; matplotlib draws the same numbers without one, so the report prints on an air-gapped
machine. Two panels: the MDS-UPDRS part scores, and the PDQ-8 Summary Index (0-100, the scale the
text uses, from the ledger's `pdq8_si` values). The x axis is months since each patient's first
assessment in the result. A point whose fact carries a caveat (partial, or a zero read as possible
missing data: engine.clinical.caveats) is drawn hollow and never joined as a change. Pure:
Result in, PNG bytes out.
"""

from __future__ import annotations

import datetime as dt
import io
from collections import defaultdict

from engine.types import Result
from kb_store.profiles import UPDRS_DOMAINS, domain_label

DAYS_PER_MONTH = 30.4375
COLOURS = ("#1D4E6B", "#B45309", "#15803D", "#7C3AED", "#BE123C", "#0E7490")


def _months(date: str, first: str) -> float:
    a, b = dt.date.fromisoformat(first[:10]), dt.date.fromisoformat(date[:10])
    return (b - a).days / DAYS_PER_MONTH


def _points(result: Result) -> dict[tuple[int, str], list[tuple[str, float, bool]]]:
    """(patient, domain) -> [(date, value, caveat)] in visit order; domain "pdq8_si" holds the
    Summary Index."""
    out: dict[tuple[int, str], list[tuple[str, float, bool]]] = defaultdict(list)
    for s in sorted(result.series, key=lambda s: (s.patient, s.domain, s.visit)):
        if s.domain in UPDRS_DOMAINS and s.score is not None and s.date:
            out[(s.patient, s.domain)].append((s.date, float(s.score), bool(s.caveat)))
    seen = set()
    for v in result.ledger:
        key = (v.patient, v.visit)
        if v.kind == "pdq8_si" and v.patient is not None and v.date and v.visit is not None:
            if key in seen:
                continue
            seen.add(key)
            out[(v.patient, "pdq8_si")].append((v.date, float(v.value), False))
    for pts in out.values():
        pts.sort()
    return out


def trajectory_png(result: Result, *, width_in: float = 7.2, dpi: int = 150) -> bytes | None:
    """The chart as PNG bytes, or None when the result has no patient series (a cohort)."""
    if result.plan.analysis == "cohort":
        return None
    points = _points(result)
    if not points:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    has_si = any(d == "pdq8_si" for _p, d in points)
    fig = Figure(figsize=(width_in, 2.6), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2 if has_si else 1, squeeze=False, sharex=True)[0]
    first = {
        p: min(d for (q, _), pts in points.items() if q == p for d, _v, _c in pts)
        for p, _ in points
    }
    patients = sorted(first)
    styles = {"motor": "-", "adl": "--", "nonmotor": ":"}
    for (p, d), pts in sorted(points.items()):
        ax = axes[1] if d == "pdq8_si" else axes[0]
        colour = COLOURS[patients.index(p) % len(COLOURS)]
        xs = [_months(date, first[p]) for date, _v, _c in pts]
        ys = [v for _d, v, _c in pts]
        who = f"patient {p}: " if len(patients) > 1 else ""
        label = who + ("Summary Index" if d == "pdq8_si" else domain_label(d).split(" (")[0])
        ax.plot(xs, ys, styles.get(d, "-"), color=colour, linewidth=1.4, label=label)
        for x, (_date, y, caveat) in zip(xs, pts, strict=True):
            ax.plot(
                [x],
                [y],
                "o",
                color=colour,
                markersize=4,
                markerfacecolor="white" if caveat else colour,
            )
    axes[0].set_title("MDS-UPDRS part scores", fontsize=9)
    axes[0].set_ylabel("score", fontsize=8)
    if has_si:
        axes[1].set_title("PDQ-8 Summary Index (0-100)", fontsize=9)
        axes[1].set_ylim(0, 100)
    for ax in axes:
        ax.set_xlabel("months since first assessment", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
