"""Which writer prints a format: the one entry point `marag report` and the dashboard call."""

from __future__ import annotations

from typing import Any

from engine.report.html_writer import write_html
from engine.report.markdown_writer import write_markdown
from engine.report.model import build_report
from engine.report.pdf_writer import write_pdf
from engine.types import Result

FORMATS = ("pdf", "html", "md")


def render(result: Result, fmt: str, **context: Any) -> bytes:
    """The report of `result` in `fmt` (pdf, html or md) as bytes; `context` as build_report."""
    if fmt not in FORMATS:
        raise ValueError(f"report format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    report = build_report(result, **context)
    if fmt == "pdf":
        return write_pdf(report)
    if fmt == "html":
        return write_html(report).encode("utf-8")
    return write_markdown(report).encode("utf-8")
