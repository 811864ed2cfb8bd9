"""The PDF writer of the printable report: A4, one to three pages, drawn with fpdf2.

fpdf2 is pure Python (no browser, no system library), so the report prints on an air-gapped
hospital machine. Text is set in DejaVu Sans, which matplotlib ships (a Unicode font: en dashes,
arrows, accented names). The page budget is the issue's one to three pages: the body is set at
10 pt and, when it would run past three pages, at 9 and then 8 pt; the report never drops text
to fit. Pure: a PrintReport in, PDF bytes out.
"""

from __future__ import annotations

import io
from pathlib import Path

from fpdf import FPDF

from engine.report.model import PrintReport

MAX_PAGES = 3
BODY_SIZES = (10.0, 9.0, 8.0)
FONT = "DejaVu"


def _font_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


class _Page(FPDF):
    def __init__(self, title: str, size: float) -> None:
        super().__init__(format="A4", unit="mm")
        self.report_title = title
        self.body = size
        fonts = _font_dir()
        self.add_font(FONT, "", str(fonts / "DejaVuSans.ttf"))
        self.add_font(FONT, "B", str(fonts / "DejaVuSans-Bold.ttf"))
        self.set_margins(16, 14, 16)
        self.set_auto_page_break(True, margin=14)

    def footer(self) -> None:
        self.set_y(-10)
        self.set_font(FONT, "", 7)
        self.set_text_color(90)
        self.cell(0, 4, f"{self.report_title} - page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0)


def _heading(pdf: _Page, text: str) -> None:
    pdf.ln(1.5)
    pdf.set_font(FONT, "B", pdf.body + 1)
    pdf.multi_cell(0, pdf.body * 0.55, text, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(0.5)


def _para(pdf: _Page, text: str, *, size: float | None = None) -> None:
    pdf.set_font(FONT, "", size or pdf.body)
    pdf.multi_cell(0, (size or pdf.body) * 0.5, text, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(1)


def _header(pdf: _Page, report: PrintReport) -> None:
    pdf.set_font(FONT, "B", 14)
    pdf.cell(0, 8, report.title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(FONT, "", 8.5)
    with pdf.table(col_widths=(28, 150), first_row_as_headings=False, line_height=4.6) as table:
        for label, value in report.header:
            row = table.row()
            row.cell(label)
            row.cell(value)
    pdf.ln(2)


def _layout(report: PrintReport, size: float) -> _Page:
    pdf = _Page(report.title, size)
    pdf.alias_nb_pages()
    pdf.add_page()
    _header(pdf, report)
    _heading(pdf, "Summary")
    _para(pdf, report.digest or "No findings to summarise.")
    if report.chart_png:
        _heading(pdf, report.chart_title)
        pdf.image(io.BytesIO(report.chart_png), w=pdf.epw)
        pdf.ln(1)
    _heading(pdf, "Current flags")
    for line in report.flags.current or ("No current red flags.",):
        _para(pdf, "- " + line)
    if report.flags.earlier:
        _para(pdf, f"{report.flags.earlier} earlier flagged item(s) no longer current.")
    for line in report.flags.incongruence:
        _para(pdf, "- Incongruence: " + line)
    for heading, paragraphs in report.details:
        _heading(pdf, heading)
        for p in paragraphs:
            _para(pdf, p)
    _heading(pdf, "Provenance")
    for line in report.provenance:
        _para(pdf, line, size=pdf.body - 1)
    return pdf


def write_pdf(report: PrintReport) -> bytes:
    """The report as PDF bytes, at the largest body size that fits three pages (8 pt at least)."""
    pdf = _layout(report, BODY_SIZES[0])
    for size in BODY_SIZES[1:]:
        if pdf.page_no() <= MAX_PAGES:
            break
        pdf = _layout(report, size)
    return bytes(pdf.output())
