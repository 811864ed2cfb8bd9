"""The printable report (engine.report), as `marag report` writes it and the dashboard downloads
it: a one-to-three page A4 PDF whose text holds the patient header (id, period, instruments, KB
generation, user, time, review status), the digest, the details, the current flags and the
provenance summary, with the trajectory chart drawn on page 1; HTML and Markdown with the same
sections; the verification record never inside the report. The PDF is read back with pdfium."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from engine import cli
from engine.config import Config
from engine.report import build_report, render
from engine.types import Plan
from tools import golden_records

pdfium = pytest.importorskip("pypdfium2")


def pdf_pages(data: bytes) -> list[str]:
    doc = pdfium.PdfDocument(data)
    return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]


def page1_image(data: bytes) -> Any:
    doc = pdfium.PdfDocument(data)
    return doc[0].render(scale=1).to_pil().convert("L")


def squash(text: str) -> str:
    return " ".join(text.replace("\r", " ").replace("\n", " ").split())


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Chroma KB of the bundled sample (hashing embeddings)."""
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    path = tmp_path_factory.mktemp("report") / "kb"
    cfg = Config.load({"kb_dir": str(path), "embedding": "hashing"}, env={})
    cfg.kb.build(load_sources([default_sample_path()]).sessions)
    return path


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, kb_dir: Path, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MARAG_KB_DIR", str(kb_dir))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "audit.sqlite3"))
    monkeypatch.setenv("MARAG_USER", "dr.print")
    return monkeypatch


@pytest.mark.parametrize("fmt", ["pdf", "html", "md"])
def test_cli_writes_the_report_and_records_the_release(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    out = tmp_path / f"r.{fmt}"
    rc = cli.main(["report", "--patients", "3", "--analysis", "trajectory", "--format", fmt,
                   "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "[audit entry #1]" in err and f"wrote {out}" in err
    data = out.read_bytes()
    if fmt == "pdf":
        assert data.startswith(b"%PDF-")
        text = squash(" ".join(pdf_pages(data)))
    else:
        text = squash(data.decode("utf-8").replace("\\", ""))
    for field in ("Patient", "Period", "Instruments", "KB generation", "User", "Generated",
                  "Review status", "dr.print", "not reviewed (audit entry #1)", "Summary",
                  "Current flags", "Provenance"):  # fmt: skip
        assert field in text, (field, text[:400])
    assert "gen-" in text  # the KB generation the release was recorded against
    assert '"verification"' not in text and '"per_agent"' not in text


def test_cli_report_errors_are_one_line(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = cli.main(["report", "--patients", "3", "--out", str(tmp_path / "no" / "r.pdf")])
    err = capsys.readouterr().err
    assert (
        rc == 2 and err.startswith("marag: error: report --out: folder") and "Traceback" not in err
    )
    rc = cli.main(["report", "--out", str(tmp_path / "r.pdf")])
    err = capsys.readouterr().err
    assert rc == 2 and "report needs a QUERY or plan flags" in err


@pytest.fixture(scope="module")
def study() -> Any:
    if not golden_records.STUDY.exists():
        pytest.skip("MA-RAG study data not in ../shared")
    return golden_records._engines()["marag"]


CONTEXT = {"kb_generation": "gen-000007", "user": "dr.a", "review_status": "signed off by dr.b"}


def test_pdf_of_a_study_trajectory(study: Any) -> None:
    """Patient 23 (UPDRS and PDQ-8, 5 assessments): header, digest, details and flags in the
    text; the chart drawn on page 1 (a rendered page with many dark pixels in its upper half)."""
    r = study.run(Plan([23], "trajectory", ["updrs", "pdq8"]))
    data = render(r, "pdf", **CONTEXT)
    pages = pdf_pages(data)
    assert 1 <= len(pages) <= 3
    text = squash(" ".join(pages))
    assert "Patient 23" in text or "Patient 23".lower() in text.lower()
    for value in ("2019-12", "2020-11", "MDS-UPDRS", "PDQ-8", "gen-000007", "dr.a",
                  "signed off by dr.b", "UTC"):  # fmt: skip
        assert value in text, value
    assert squash(r.digest)[:80] in text  # the digest, as released
    for heading, paragraphs in r.sections:
        if paragraphs:
            assert squash(heading) in text
    img = page1_image(data)
    w, h = img.size
    hist = img.crop((0, 0, w, h // 2)).histogram()
    dark = sum(hist[:128]) / (w * (h // 2))
    assert dark > 0.01, dark  # text and the chart's lines, not a blank page
    assert b"/Subtype /Image" in data or b"/Image" in data  # the chart is embedded


@pytest.mark.slow
def test_every_study_trajectory_prints_on_one_to_three_pages(study: Any) -> None:
    sizes = []
    for p in sorted(study.kb.patient_ids()):
        data = render(study.run(Plan([p], "trajectory", ["updrs", "pdq8"])), "pdf", chart=False)
        sizes.append(len(pdf_pages(data)))
    assert sizes and max(sizes) <= 3 and min(sizes) >= 1, sizes


def test_html_and_markdown_hold_the_same_sections(study: Any) -> None:
    r = study.run(Plan([3, 8], "comparison", ["updrs", "pdq8"]))
    rep = build_report(r, **CONTEXT)
    html = render(r, "html", **CONTEXT).decode()
    md = render(r, "md", **CONTEXT).decode()
    headings = ["Summary", "Current flags", *(h for h, _p in rep.details), "Provenance"]
    html_h = re.findall(r"<h2>(.*?)</h2>", html)
    md_h = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    assert [h for h in html_h if h != rep.chart_title] == headings
    assert [h.replace("\\", "") for h in md_h if h != rep.chart_title] == headings
    assert 'src="data:image/png;base64,' in html and "](data:image/png;base64," in md
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert len(html) < 400_000 and len(md) < 400_000  # a report, not a data dump


def test_report_text_is_escaped() -> None:
    """Text that looks like markup stays text in every format."""
    from engine.report.html_writer import write_html
    from engine.report.markdown_writer import write_markdown
    from engine.report.model import FlagLines, PrintReport

    rep = PrintReport(
        title="t",
        header=(("Patient", "<b>7</b>"),),
        digest="![x](http://evil/x.png) <img src=x> *bold*",
        details=(("Details", ("[link](http://evil)",)),),
        flags=FlagLines((), 0, ()),
        provenance=(),
        chart_png=None,
    )
    html = write_html(rep)
    assert "<img src=x>" not in html and "&lt;img src=x&gt;" in html and "<b>7</b>" not in html
    md = write_markdown(rep)
    assert "![x](http" not in md and "[link](http" not in md and "\\*bold\\*" in md


def test_flag_lines_count_distinct_current_items() -> None:
    from engine.report.model import flag_lines

    row = {"item_label": "Falling", "label": "moderate", "threshold": 3, "date": "2020-01-01"}
    flags = {
        "red_flags": [
            {**row, "patient": 1, "item": "2.12", "visit": 1, "value": 3, "current": False},
            {**row, "patient": 1, "item": "2.12", "visit": 2, "value": 4, "current": True},
            {**row, "patient": 1, "item": "1.2", "visit": 1, "value": 3, "current": False},
        ]
    }
    lines = flag_lines(flags)
    assert len(lines.current) == 1 and "visit 2" in lines.current[0] and lines.earlier == 1


def test_report_bytes_are_a_pdf_even_without_series(study: Any) -> None:
    r = study.run(Plan([], "cohort", ["updrs"]))
    data = render(r, "pdf", **CONTEXT)
    assert 1 <= len(pdf_pages(data)) <= 3
    assert build_report(r, **CONTEXT).chart_png is None
    assert io.BytesIO(data).read(5) == b"%PDF-"
