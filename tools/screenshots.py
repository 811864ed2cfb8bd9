"""Serve the dashboard on localhost and drive it in headless Chromium (Playwright): used by the
real-browser test and to produce the README screenshots (docs/screenshots/<page>.png). A developer
tool, not part of the installed packages.

    python -m tools.screenshots --out docs/screenshots      (from the repository root)

builds a KB from the shipped synthetic sample in a temporary folder (hashing embeddings: the
pipeline retrieves by exact metadata match, so the embedding model does not change what is shown),
starts `streamlit run dashboard/app.py` with the facts backend, and saves one PNG per page.
Playwright never downloads a browser here: it uses Debian's Chromium at /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
#: page name -> URL path and query (deep links reproduce each view; run=1 runs it on open)
PAGES: dict[str, str] = {
    "patient": "/?patient=3&run=1",
    "compare": "/compare?patients=3&patients=8&run=1",
    "cohort": "/cohort?question=Which+patient%27s+motor+score+is+worsening+fastest%3F&run=1",
    "provenance": "/provenance",
    "search": "/search",
    "data": "/data",
}
SEARCH_TEXT = "falls and freezing"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_demo_kb(kb_dir: Path, embedding: str = "hashing") -> int:
    """Build the KB from the shipped synthetic sample; returns the number of sessions."""
    from kb_store.ingest import load_sources
    from kb_store.settings import KBSettings
    from kb_store.synth import default_sample_path

    res = load_sources([default_sample_path()])
    KBSettings(kb_dir, embedding=embedding).build(res.sessions)
    return len(res.sessions)


@contextlib.contextmanager
def serve(
    kb_dir: Path,
    *,
    port: int | None = None,
    llm: str = "facts",
    embedding: str = "hashing",
    timeout: float = 60.0,
    log: Path | None = None,
) -> Iterator[str]:
    """Run `streamlit run dashboard/app.py` on localhost; yields the base URL."""
    port = port or free_port()
    env = {
        **os.environ,
        "MARAG_KB_DIR": str(kb_dir),
        "MARAG_LLM": llm,
        "MARAG_EMBEDDING": embedding,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
    }
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(REPO / "dashboard" / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with code {proc.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"streamlit did not answer on {url} within {timeout:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()  # type: ignore[union-attr]


@contextlib.contextmanager
def browser(width: int = 1440, height: int = 1000) -> Iterator[Any]:
    """A Playwright page in Debian's headless Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            ctx = b.new_context(viewport={"width": width, "height": height})
            yield ctx.new_page()
        finally:
            b.close()


def wait_idle(page: Any, timeout_ms: int = 60_000) -> None:
    """Wait until the app script has finished its run (after any action)."""
    with contextlib.suppress(Exception):
        page.wait_for_selector("[data-testid=stApp][data-test-script-state=running]", timeout=700)
    page.wait_for_selector(IDLE, timeout=timeout_ms)
    page.wait_for_timeout(300)


def screenshot(page: Any, path: Path, width: int = 1360, max_height: int = 3000) -> None:
    """Screenshot the whole app: Streamlit scrolls inside its main section, not the document,
    so the viewport is grown to the content height first."""
    h = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
        "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 900)"
    )
    page.set_viewport_size({"width": width, "height": min(int(h) + 40, max_height)})
    page.wait_for_timeout(700)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": 1000})


def capture_pages(base_url: str, out_dir: Path, pages: dict[str, str] = PAGES) -> list[Path]:
    """Open each page by its deep link (running it) and save a full-page PNG per page. The
    Provenance page is shown for the result the Patient page produced in the same session."""
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = []
    with browser() as page:
        for name, path in pages.items():
            if name == "provenance":
                page.goto(base_url + pages["patient"])
                wait_idle(page)
                page.get_by_role("link", name="Provenance").first.click()
            else:
                page.goto(base_url + path)
            wait_idle(page)
            if name == "search":  # a search with its hits
                box = page.get_by_label("Search sessions and clinician notes")
                box.fill(SEARCH_TEXT)
                box.press("Enter")
                wait_idle(page)
                page.wait_for_selector(".st-key-hit_1", timeout=30_000)
            if name == "data":  # show the validation report of the default sample
                page.get_by_role("button", name="Validate").click()
                wait_idle(page)
            if name in ("patient", "compare", "cohort"):
                page.wait_for_selector(".js-plotly-plot", timeout=30_000)
                page.wait_for_timeout(800)
            p = out_dir / f"{name}.png"
            screenshot(page, p)
            saved.append(p)
    return saved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    ap.add_argument(
        "--kb-dir", default=None, help="use this KB instead of building a temporary one"
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="marag-shots-") as tmp:
        kb_dir = Path(args.kb_dir) if args.kb_dir else Path(tmp) / "kb"
        if not args.kb_dir:
            build_demo_kb(kb_dir)
        with serve(kb_dir, log=Path(tmp) / "streamlit.log") as url:
            for p in capture_pages(url, Path(args.out)):
                print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
