"""Real-browser test: `streamlit run dashboard/app.py` on localhost, driven by Playwright in
Debian's headless Chromium. It picks a patient in the UI, runs a trajectory and checks that the
summary (with its grounding badge), the trajectory chart and the flags are on the page; then it
runs a comparison through a deep link; hovering a summary sentence shows its statements and a
link that opens their provenance; a link with an unknown patient shows an error and runs
nothing; a result submitted for review is queued once and opens on the Review page with its
chart. Screenshots go to test-output/screenshots/.

Uses a KB built in tmp from the shipped synthetic sample with hashing embeddings and the facts
backend (MARAG_LLM=facts): the UI path is the same for every backend, and retrieval is exact
metadata match, so the embedding model does not change what is shown.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tools import screenshots as shots

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]
REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-output" / "screenshots"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(dashboard URL, its KB folder)."""
    if not Path(shots.CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {shots.CHROMIUM} (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api")
    tmp = tmp_path_factory.mktemp("browser")
    n = shots.build_demo_kb(tmp / "kb")
    assert n > 0
    with shots.serve(tmp / "kb", log=tmp / "streamlit.log") as url:
        yield url, tmp / "kb"
    if (tmp / "streamlit.log").exists():
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp / "streamlit.log", OUT / "streamlit.log")


@pytest.fixture(scope="module")
def server(demo):
    return demo[0]


def test_pick_patient_run_trajectory_in_chromium(server):
    OUT.mkdir(parents=True, exist_ok=True)
    with shots.browser() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server)
        shots.wait_idle(page)
        assert page.get_by_role("heading", name="Patient").first.is_visible()
        page.screenshot(path=str(OUT / "01-patient-empty.png"))

        # pick patient 7 in the selectbox
        box = page.locator("[data-testid=stSelectbox]").filter(has_text="Patient").first
        box.click()
        page.get_by_role("option", name="7", exact=True).click()
        shots.wait_idle(page)
        assert "patient=7" in page.url  # the widget is bound to the URL

        page.get_by_role("button", name="Run").click()
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)

        summary = page.locator(".st-key-summary_box").inner_text()
        assert "patient 7" in summary.lower()
        assert page.get_by_text("Grounding check passed").first.is_visible()
        flags = page.locator(".st-key-flags_box").inner_text()
        assert (
            "incongruence" in flags.lower()
            or "red-flag" in flags.lower()
            or "No incongruence flags" in flags
        )
        chart = page.locator("[data-testid=stPlotlyChart]").first
        assert chart.is_visible()
        assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 4  # one per domain
        shots.screenshot(page, OUT / "02-patient-trajectory.png")

        # the same view from its URL, in a fresh page load, runs again and shows the same summary
        page.goto(page.url if "run=1" in page.url else page.url + "&run=1")
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)
        assert page.locator(".st-key-summary_box").inner_text() == summary

        page.goto(server + "/compare?patients=3&patients=8&run=1")
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)
        assert page.get_by_role("heading", name="Table B").first.is_visible()
        shots.screenshot(page, OUT / "03-compare.png")
        assert not errors, errors


def test_hover_a_summary_sentence_shows_its_statements_and_links_to_provenance(server):
    """Hovering a cited sentence of the summary shows its statement lines (hidden before), with a
    link to the Provenance page naming the release; the link opens in a new tab (a new session),
    which reopens that release and lists the sentence's statements."""
    OUT.mkdir(parents=True, exist_ok=True)
    with shots.browser() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server + "/?patient=7&run=1")
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)
        box = page.locator(".st-key-summary_box")
        sentence = box.locator(".cite").filter(has_text="UPDRS total").first
        popup = sentence.locator(".cite-pop")
        assert not popup.is_visible()  # screen text only until hovered
        sentence.hover()
        popup.wait_for(state="visible", timeout=5_000)
        lines = popup.locator(".cite-line").all_inner_texts()
        assert lines and any(ln.startswith("change \u00b7 patient 7") for ln in lines), lines
        link = popup.get_by_role("link", name="Provenance of these statements")
        href = link.get_attribute("href") or ""
        assert re.fullmatch(r"provenance\?release=\d+&sentence=\d+", href), href
        assert not re.search(r"\bS\d+\b", box.inner_text())  # no statement id in the text
        shots.screenshot(page, OUT / "06-summary-hover.png")
        with page.context.expect_page(timeout=30_000) as opened:
            link.click()
        prov = opened.value
        shots.wait_idle(prov)
        panel = prov.locator(".st-key-sentence_provenance")
        panel.wait_for(timeout=30_000)
        assert "The linked sentence" in panel.inner_text()
        assert "UPDRS total" in panel.inner_text()
        assert "/provenance?release=" in prov.url
        assert not errors, errors


def test_unknown_patient_link_runs_nothing_in_chromium(server):
    """`/?patient=999&run=1`: an error naming 999, no summary or chart (nothing ran), `run=1` and
    the bad id gone from the URL, and the widgets there to correct."""
    OUT.mkdir(parents=True, exist_ok=True)
    with shots.browser() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server + "/?patient=999&run=1")
        shots.wait_idle(page)
        alert = page.locator("[data-testid=stAlertContainer]").filter(
            has_text="This link was not run"
        )
        assert alert.count() == 1
        text = alert.first.inner_text()
        assert "999" in text and "not in the knowledge base" in text
        page.wait_for_timeout(1500)  # a run, had one started, would have drawn by now
        assert page.locator(".st-key-summary_box").count() == 0
        assert page.locator(".js-plotly-plot").count() == 0
        assert "run=1" not in page.url and "999" not in page.url
        assert page.locator("[data-testid=stSelectbox]").filter(has_text="Patient").count() >= 1
        shots.screenshot(page, OUT / "04-bad-link.png")
        assert not errors, errors


def test_submit_for_review_and_the_review_page_draws_the_chart(server):
    """A run is queued only by "Submit for review", which names the queue number and stays
    disabled; a fresh run of the same link is that item; the Review page shows the summary with
    its trajectory chart."""
    OUT.mkdir(parents=True, exist_ok=True)
    link = server + "/?patient=5&run=1"
    with shots.browser() as page:
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(link)
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)
        summary = page.locator(".st-key-summary_box").inner_text()
        button = page.get_by_role("button", name="Submit for review")
        assert button.is_enabled()
        button.click()
        note = page.get_by_text(re.compile(r"Submitted for review as #\d+")).first
        note.wait_for(timeout=30_000)
        number = re.search(r"#(\d+)", note.inner_text()).group(1)
        assert page.get_by_role("button", name="Submit for review").is_disabled()

        page.goto(link)  # a fresh page load runs again: the same plan, KB and result
        shots.wait_idle(page)
        page.get_by_text(f"Already in the review queue as #{number}").first.wait_for(timeout=30_000)
        assert page.get_by_role("button", name="Submit for review").is_disabled()

        page.goto(server + "/review")
        shots.wait_idle(page)
        page.wait_for_selector(".st-key-review_trajectory_chart .js-plotly-plot", timeout=30_000)
        stored = page.locator(".st-key-review_summary").inner_text()
        assert stored.split()[:12] == summary.split()[:12]
        assert page.get_by_text(f"#{number}").first.is_visible()
        shots.screenshot(page, OUT / "05-review-chart.png")
        assert not errors, errors


def _report_body(pdf: bytes) -> str:
    """The PDF's text from its Summary heading on, without the page footers (the header table
    names the user, the time and the audit entry, which differ between two releases)."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(pdf)
    text = "\n".join(doc[i].get_textpage().get_text_range() for i in range(len(doc)))
    lines = [ln for ln in text.splitlines() if "MA-RAG clinical summary - page" not in ln]
    body = " ".join(" ".join(lines).split())
    return body[body.index("Summary ") :]


def test_pdf_report_download_matches_the_cli_report(demo, tmp_path, monkeypatch):
    """The dashboard's "Report (PDF)" download is the report `marag report` writes for the same
    plan: same pages from the Summary on; its header names patient 7 and the release's audit
    entry; no verification JSON inside."""
    from engine import cli

    url, kb_dir = demo
    with shots.browser() as page:
        page.goto(url + "/?patient=7&run=1")
        shots.wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=30_000)
        with page.expect_download(timeout=60_000) as dl:
            page.get_by_role("button", name="Report (PDF)").click()
        path = tmp_path / "dashboard.pdf"
        dl.value.save_as(path)
        # every other download, each clicked twice without waiting: the file is built (and its
        # export recorded) on request, with no rerun that could drop it ("Deferred file ... not
        # found")
        for name in ("Report (HTML)", "Verification record (JSON)", "Fact table (CSV)"):
            for _ in range(2):
                with page.expect_download(timeout=60_000) as more:
                    page.get_by_role("button", name=name).click()
                assert more.value.failure() is None, name
        assert not page.get_by_text("not found").count()
    from engine.audit.store import AuditStore, database_url

    exports = AuditStore(database_url(kb_dir.parent / "audit.sqlite3")).entries(actions=("export",))
    formats = [e.detail["format"] for e in exports if e.patients == [7]]
    assert formats[-7:] == ["pdf", "html", "html", "json", "json", "facts_csv", "facts_csv"]
    assert all(e.detail["of_entry"] is not None for e in exports[-7:])
    pdf = path.read_bytes()
    assert pdf.startswith(b"%PDF-")
    monkeypatch.setenv("MARAG_KB_DIR", str(kb_dir))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_LLM", "facts")
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "cli-audit.sqlite3"))
    out = tmp_path / "cli.pdf"
    assert (
        cli.main(["report", "--patients", "7", "--analysis", "trajectory", "--out", str(out)]) == 0
    )
    assert _report_body(pdf) == _report_body(out.read_bytes())
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(pdf)
    assert 1 <= len(doc) <= 3
    head = doc[0].get_textpage().get_text_range()
    assert "Patient" in head and "7" in head and "audit entry #" in head
    assert '"verification"' not in head


def test_no_request_leaves_the_machine(server):
    """Every page, run, asks only the dashboard's own server: no font, icon or script from an
    outside host (a hospital network may block them, and each one tells that host who is looking)."""
    from urllib.parse import urlparse

    outside: list[str] = []
    pages = [
        "/?patient=3&run=1",
        "/compare?patients=3&patients=8&run=1",
        "/cohort?run=1",
        "/search",
        "/provenance",
        "/review",
        "/data",
    ]
    with shots.browser() as page:

        def note(request) -> None:
            host = urlparse(request.url).hostname
            if request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
                return
            outside.append(request.url)

        page.on("request", note)
        for path in pages:
            page.goto(server + path)
            shots.wait_idle(page)
            page.wait_for_timeout(500)
    assert outside == []
