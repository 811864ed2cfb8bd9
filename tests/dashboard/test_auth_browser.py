"""Sign-in, roles and review in a real browser: `streamlit run dashboard/app.py` on 127.0.0.1
with an [auth] section pointing at a local OpenID Connect provider started by the test
(PyPI `oidc-provider-mock`, loopback only), driven by Playwright in Debian's headless Chromium.

- a clinician signs in, runs a patient and submits the result for review; a reviewer signs in
  through the provider's form, sees Review but not Data, opens the clinician's release on the
  Review page with its chart, rejects it with a comment, and the rejection banner follows the
  summary back to the Patient page; the reviewer's own submitted release then says it cannot be
  reviewed by them, and a sign-off of it is refused and recorded (four eyes);
- a user with no role gets the "no access" page, and the attempt is in the audit trail;
- a data manager (by group claim) sees only the Data page;
- without [auth], a server on 0.0.0.0 refuses to show anything.
Screenshots of the Review and "no access" pages go to test-output/screenshots/.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import screenshots as shots

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]
REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-output" / "screenshots"
ROLES = """
[users]
"rita.reviewer@hospital.example" = ["reviewer", "clinician"]
"carl.clinician@hospital.example" = ["clinician"]
[groups]
"data-stewards" = ["data_manager"]
[settings]
require_verified_email = false  # the mock provider's form users carry no email_verified claim
"""


@contextlib.contextmanager
def streamlit(
    tmp: Path, kb: Path, extra_args: list[str], env: dict[str, str], port: int | None = None
) -> Iterator[str]:
    port = port or shots.free_port()
    log = tmp / f"streamlit-{port}.log"
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(REPO / "dashboard" / "app.py"),
        "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false", *extra_args,
    ]  # fmt: skip
    full_env = {
        **os.environ,
        "MARAG_KB_DIR": str(kb),
        "MARAG_LLM": "facts",
        "MARAG_EMBEDDING": "hashing",
        "MARAG_AUDIT_DB": str(tmp / "audit.sqlite3"),
        "MARAG_ROLES_FILE": str(tmp / "roles.toml"),
        "HF_HUB_OFFLINE": "1",
        **env,
    }
    full_env.pop("MARAG_TRUSTED_NETWORK", None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/_stcore/health", timeout=2
                    ):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(log.read_text()) from None
                    time.sleep(0.3)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            OUT.mkdir(parents=True, exist_ok=True)
            shutil.copy(log, OUT / log.name)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not Path(shots.CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {shots.CHROMIUM} (make browser-deps installs it)")
    pytest.importorskip("playwright.sync_api")
    oidc = pytest.importorskip("oidc_provider_mock")
    tmp = tmp_path_factory.mktemp("auth")
    assert shots.build_demo_kb(tmp / "kb") > 0
    (tmp / "roles.toml").write_text(ROLES)
    users = [
        oidc.User(
            sub="dana", claims={"email": "dana@hospital.example", "groups": ["data-stewards"]}
        )
    ]
    with oidc.run_server_in_thread(user_claims=users) as provider:
        yield tmp, f"http://localhost:{provider.server_port}"


@pytest.fixture(scope="module")
def app_with_auth(setup):
    tmp, provider = setup
    port = shots.free_port()
    secrets = tmp / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{"k" * 48}"\n'
        'client_id = "marag-dashboard"\n'
        'client_secret = "test-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    args = ["--server.address", "127.0.0.1", "--secrets.files", str(secrets)]
    with streamlit(tmp, tmp / "kb", args, {}, port=port) as url:
        yield url, tmp


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS, headless=True
        )
        yield b
        b.close()


def _page(browser):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    return ctx, ctx.new_page()


def _sign_in(page, url: str, *, sub: str | None = None, predefined: str | None = None) -> None:
    page.goto(url)
    shots.wait_idle(page)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/oauth2/authorize**", timeout=30_000)
    if predefined:
        page.get_by_role("button", name=predefined, exact=True).click()
    else:
        page.fill("input[name=sub]", sub)
        page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(url + "/**", timeout=30_000)
    shots.wait_idle(page)


def _nav_links(page) -> list[str]:
    """Page names in the sidebar navigation (each link's text ends with the page title)."""
    return [
        t.strip().splitlines()[-1].strip()
        for t in page.locator("[data-testid=stSidebarNav] a").all_inner_texts()
        if t.strip()
    ]


def _trail(tmp: Path):
    from engine.audit.store import AuditStore

    return AuditStore(f"sqlite:///{tmp / 'audit.sqlite3'}")


def _submit_for_review(page, confirmation: str) -> None:
    """Press "Submit for review" under the shown result and wait for its confirmation."""
    page.get_by_role("button", name="Submit for review").click()
    page.get_by_text(confirmation).first.wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Submit for review").is_disabled()


def test_reviewer_signs_in_reviews_and_rejects(app_with_auth, chromium):
    url, tmp = app_with_auth
    OUT.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    ctx, page = _page(chromium)  # a clinician releases a summary
    page.on("pageerror", lambda e: errors.append(str(e)))
    _sign_in(page, url, sub="carl.clinician@hospital.example")
    assert "Review" not in _nav_links(page)
    page.goto(url + "/?patient=7&run=1")
    shots.wait_idle(page)
    page.wait_for_selector(".js-plotly-plot", timeout=30_000)
    summary = page.locator(".st-key-summary_box").inner_text()
    assert "patient 7" in summary.lower()
    _submit_for_review(page, "Submitted for review as #2")
    ctx.close()

    ctx, page = _page(chromium)  # the reviewer
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    shots.wait_idle(page)
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert _nav_links(page) == []  # nothing but the sign-in page before signing in

    _sign_in(page, url, sub="rita.reviewer@hospital.example")
    assert page.get_by_text("Signed in as").first.is_visible()
    links = _nav_links(page)
    assert "Review" in links and "Patient" in links and "Data" not in links, links

    page.goto(url + "/data")  # not registered for this user: the URL does not open it
    shots.wait_idle(page)
    assert not page.get_by_role("heading", name="Data").count()
    assert not page.get_by_role("button", name="Validate").count()

    page.goto(url + "/review")
    shots.wait_idle(page)
    assert page.get_by_role("heading", name="Review").first.is_visible()
    stored = page.locator(".st-key-review_summary").inner_text()
    assert stored.split()[:12] == summary.split()[:12]  # the release, as stored
    page.wait_for_selector(".st-key-review_trajectory_chart .js-plotly-plot", timeout=30_000)
    assert page.get_by_text("Stored result matches its recorded hash").first.is_visible()
    assert not page.get_by_text("your own release").count()
    page.get_by_label("Comment (required to reject)").fill(
        "Motor score at visit 2 needs a source check"
    )
    shots.screenshot(page, OUT / "review.png")
    page.get_by_role("button", name="Reject").click()
    shots.wait_idle(page)
    page.wait_for_timeout(500)

    # the rejected summary carries its banner on the Patient page (a release of the reviewer's)
    page.goto(url + "/?patient=7&run=1")
    shots.wait_idle(page)
    assert page.get_by_text("Rejected in review").first.is_visible()
    shots.screenshot(page, OUT / "patient-rejected.png")

    # four eyes: the reviewer's own submitted release says so, and a sign-off is refused
    page.goto(url + "/?patient=8&run=1")
    shots.wait_idle(page)
    page.wait_for_selector(".js-plotly-plot", timeout=30_000)
    _submit_for_review(page, "Submitted for review as #7")
    page.get_by_role("link", name="Review").first.click()
    shots.wait_idle(page)
    assert page.get_by_text("You cannot review your own release").first.is_visible()
    page.get_by_role("button", name="Sign off").click()
    shots.wait_idle(page)
    assert page.get_by_text("You cannot sign off your own release").first.is_visible()

    trail = _trail(tmp)
    rows = [(e.action, e.user, e.subject) for e in trail.entries()]
    assert rows == [
        ("sign_in", "carl.clinician@hospital.example", None),
        ("ask", "carl.clinician@hospital.example", None),
        ("submit_review", "carl.clinician@hospital.example", 2),
        ("sign_in", "rita.reviewer@hospital.example", None),
        ("reject", "rita.reviewer@hospital.example", 2),
        ("ask", "rita.reviewer@hospital.example", None),  # patient 7 again: not queued
        ("ask", "rita.reviewer@hospital.example", None),
        ("submit_review", "rita.reviewer@hospital.example", 7),
        ("review_refused", "rita.reviewer@hospital.example", 7),
    ], rows
    assert trail.get(5).comment == "Motor score at visit 2 needs a source check"
    assert trail.verify().ok
    assert not errors, errors
    ctx.close()


def test_user_without_role_is_denied_and_logged(app_with_auth, chromium):
    url, tmp = app_with_auth
    ctx, page = _page(chromium)
    _sign_in(page, url, sub="eve@hospital.example")
    assert page.get_by_role("heading", name="No access").first.is_visible()
    assert page.get_by_text("eve@hospital.example").first.is_visible()
    assert _nav_links(page) == []
    shots.screenshot(page, OUT / "denied.png")
    page.goto(url + "/review")
    shots.wait_idle(page)
    assert page.get_by_role("heading", name="No access").first.is_visible()
    denied = _trail(tmp).entries(actions=("denied",))
    assert [e.user for e in denied][:1] == ["eve@hospital.example"]
    ctx.close()


def test_data_manager_by_group_sees_only_data(app_with_auth, chromium):
    url, tmp = app_with_auth
    ctx, page = _page(chromium)
    _sign_in(page, url, predefined="dana")
    assert page.get_by_role("heading", name="Data").first.is_visible()
    assert _nav_links(page) in ([], ["Data"])  # a single page: Streamlit may hide the nav
    signins = _trail(tmp).entries(actions=("sign_in",), user="dana@hospital.example")
    assert signins and signins[-1].role == "data_manager"
    ctx.close()


def test_network_address_without_auth_is_refused(setup, chromium):
    tmp, _ = setup
    with streamlit(tmp, tmp / "kb", ["--server.address", "0.0.0.0"], {}) as url:
        ctx, page = _page(chromium)
        page.goto(url)
        shots.wait_idle(page)
        page.get_by_text("Refusing to serve").first.wait_for(timeout=30_000)
        body = page.locator("[data-testid=stMain]").inner_text()
        assert "Refusing to serve on network address '0.0.0.0'" in body, body
        assert _nav_links(page) == []
        ctx.close()
