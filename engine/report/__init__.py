"""The printable report of a result: one model, three writers (PDF, HTML, Markdown).

`build_report(result, ...)` (engine.report.model) collects what a clinician prints: a header
(patients, period, instruments, KB generation, user, time, review status), the digest, the
details, the trajectory chart as a static image (engine.report.chart), the current flags and a
short provenance summary. The writers render that model and nothing else; the verification
record is not part of the report (it is its own JSON download: `Result.to_json()`).
`marag report` and the dashboard's report downloads both call `render`.
"""

from __future__ import annotations

from engine.report.model import PrintReport, build_report
from engine.report.render import FORMATS, render

__all__ = ["FORMATS", "PrintReport", "build_report", "render"]
