"""The Markdown writer of the printable report: the same sections as the PDF and the HTML.

Text is escaped for Markdown (no emphasis, link, image or HTML from a source file or a model
survives as markup); the chart is an inline data-URI PNG so the file stands alone. Pure: a
PrintReport in, a Markdown string out.
"""

from __future__ import annotations

import base64
import re

from engine.report.model import PrintReport

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def md_escape(text: str) -> str:
    """`text` with every Markdown control character escaped, on one line."""
    return _SPECIAL.sub(r"\\\1", " ".join(text.split()))


def write_markdown(report: PrintReport) -> str:
    """The report as one Markdown document."""
    out = [f"# {md_escape(report.title)}", "", "| | |", "|---|---|"]
    out += [f"| **{md_escape(k)}** | {md_escape(v)} |" for k, v in report.header]
    out += ["", "## Summary", "", md_escape(report.digest or "No findings to summarise."), ""]
    if report.chart_png:
        data = base64.b64encode(report.chart_png).decode("ascii")
        out += [
            f"## {md_escape(report.chart_title)}",
            "",
            f"![chart](data:image/png;base64,{data})",
            "",
        ]
    out += ["## Current flags", ""]
    out += [f"- {md_escape(line)}" for line in report.flags.current or ("No current red flags.",)]
    if report.flags.earlier:
        out.append(f"- {report.flags.earlier} earlier flagged item(s) no longer current.")
    out += [f"- Incongruence: {md_escape(line)}" for line in report.flags.incongruence]
    out.append("")
    for heading, paragraphs in report.details:
        out += [f"## {md_escape(heading)}", ""]
        for p in paragraphs:
            out += [md_escape(p), ""]
    out += ["## Provenance", ""]
    out += [f"- {md_escape(line)}" for line in report.provenance]
    return "\n".join(out) + "\n"
