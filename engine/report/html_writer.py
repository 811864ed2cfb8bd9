"""The HTML writer of the printable report: one self-contained page that prints on A4.

Every text is escaped (nothing from a source file or a model reaches the page as markup), the
chart is an inline base64 PNG, and the style sheet is inline with print rules (A4 margins, no
break inside a section heading and its first paragraph); the page fetches nothing. Pure: a
PrintReport in, an HTML string out.
"""

from __future__ import annotations

import base64
from html import escape

from engine.report.model import PrintReport

CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 10.5pt; color: #111;
       max-width: 46em; margin: 1.5em auto; line-height: 1.4; }
h1 { font-size: 16pt; margin: 0 0 .4em; }
h2 { font-size: 11.5pt; margin: 1.1em 0 .3em; break-after: avoid; }
table.header { border-collapse: collapse; font-size: 9pt; margin-bottom: .8em; }
table.header th { text-align: left; padding: .1em 1em .1em 0; font-weight: 600; }
table.header td { padding: .1em 0; }
img.chart { width: 100%; max-width: 46em; }
p.provenance { font-size: 9pt; color: #333; }
@page { size: A4; margin: 14mm 16mm; }
@media print { body { margin: 0; max-width: none; } }
"""


def _section(heading: str, paragraphs: list[str], cls: str = "") -> list[str]:
    c = f' class="{cls}"' if cls else ""
    return [f"<h2>{escape(heading)}</h2>", *(f"<p{c}>{escape(p)}</p>" for p in paragraphs)]


def write_html(report: PrintReport) -> str:
    """The report as one HTML document."""
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in report.header)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(report.title)}</h1>",
        f'<table class="header">{rows}</table>',
        *_section("Summary", [report.digest or "No findings to summarise."]),
    ]
    if report.chart_png:
        data = base64.b64encode(report.chart_png).decode("ascii")
        out += [
            f"<h2>{escape(report.chart_title)}</h2>",
            f'<img class="chart" alt="{escape(report.chart_title)}" '
            f'src="data:image/png;base64,{data}">',
        ]
    flags = list(report.flags.current) or ["No current red flags."]
    if report.flags.earlier:
        flags.append(f"{report.flags.earlier} earlier flagged item(s) no longer current.")
    flags += [f"Incongruence: {line}" for line in report.flags.incongruence]
    out += _section("Current flags", flags)
    for heading, paragraphs in report.details:
        out += _section(heading, list(paragraphs))
    out += _section("Provenance", list(report.provenance), "provenance")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
