"""Access control: the roles file, pages per role, the refusal to serve a network address without
sign-in, and the app's door under AppTest (signed out, denied, each role, local single-user mode,
trusted network), with the audit entries each one writes (real SQLite trail in tmp)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dashboard import access
from engine.audit.store import AuditStore

ROLES_TOML = """
[users]
"Rita.Reviewer@Hospital.example" = ["reviewer"]
"dana@hospital.example" = "data_manager"
"carl@hospital.example" = ["clinician"]
[groups]
"study-team" = ["staff"]
"""
APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "x" * 32,
    "client_id": "marag",
    "client_secret": "s",
    "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration",
}


# --- pure rules ---------------------------------------------------------------------------------


def test_roles_file_maps_emails_case_insensitively_and_groups(tmp_path):
    p = tmp_path / "roles.toml"
    p.write_text(ROLES_TOML)
    m = access.load_roles(p)
    assert m.roles_for("rita.reviewer@hospital.EXAMPLE") == {"reviewer"}
    assert m.roles_for("dana@hospital.example") == {"data_manager"}
    assert m.roles_for("someone@else.example", ["study-team"]) == {"staff"}
    assert m.roles_for("carl@hospital.example", ["study-team"]) == {"clinician", "staff"}
    assert m.roles_for("nobody@hospital.example", ["other"]) == frozenset()
    assert access.load_roles(tmp_path / "missing.toml").roles_for("carl@hospital.example") == set()


def test_roles_file_errors_name_file_and_key(tmp_path):
    p = tmp_path / "roles.toml"
    p.write_text('[users]\n"a@b.c" = ["admin"]\n')
    with pytest.raises(
        access.RolesFileError, match=r"roles.toml \[users\] 'a@b.c': unknown role 'admin'"
    ):
        access.load_roles(p)
    p.write_text("[users\n")
    with pytest.raises(access.RolesFileError, match="not valid TOML"):
        access.load_roles(p)
    p.write_text("[admins]\n")
    with pytest.raises(access.RolesFileError, match=r"unknown section \[admins\]"):
        access.load_roles(p)


def test_user_keys_differing_only_in_case_are_an_error_naming_both(tmp_path):
    p = tmp_path / "roles.toml"
    p.write_text('[users]\n"Dr.Smith@x.org" = ["clinician"]\n"dr.smith@x.org" = ["reviewer"]\n')
    with pytest.raises(access.RolesFileError) as e:
        access.load_roles(p)
    msg = str(e.value)
    assert str(p) in msg and "'Dr.Smith@x.org'" in msg and "'dr.smith@x.org'" in msg
    assert "case" in msg
    with pytest.raises(access.RolesFileError, match=r"x.toml \[users\]: ' A@b.c' and 'a@B.c'"):
        access.parse_roles({"users": {" A@b.c": "staff", "a@B.c": "staff"}}, "x.toml")


@pytest.mark.parametrize(
    ("claim", "required", "granted"),
    [
        (True, True, True),  # verified
        ("true", True, True),  # some providers send the claim as a string
        (False, True, False),  # unverified
        ("false", True, False),
        (None, True, False),  # claim missing counts as not verified
        (False, False, True),  # check turned off in the roles file
        (None, False, True),
    ],
)
def test_roles_only_for_a_verified_email(claim, required, granted):
    assert access.email_verified(claim, required) is granted


def test_verified_email_setting_defaults_on_and_is_validated():
    assert access.parse_roles({}).require_verified_email is True
    off = access.parse_roles({"settings": {"require_verified_email": False}})
    assert off.require_verified_email is False
    with pytest.raises(
        access.RolesFileError, match="require_verified_email: expected true or false"
    ):
        access.parse_roles({"settings": {"require_verified_email": "no"}})


def test_pages_per_role():
    assert access.visible_pages({"clinician"}) == {"", "compare", "cohort", "provenance", "search"}
    assert access.visible_pages({"staff"}) == {"", "compare", "cohort", "provenance", "search"}
    assert access.visible_pages({"reviewer"}) == {
        "",
        "compare",
        "cohort",
        "provenance",
        "search",
        "review",
    }
    assert access.visible_pages({"data_manager"}) == {"data"}
    assert access.visible_pages(set()) == set()


@pytest.mark.parametrize(
    ("address", "auth", "trusted", "refused"),
    [
        ("127.0.0.1", False, False, False),
        ("localhost", False, False, False),
        ("::1", False, False, False),
        ("unix:///tmp/s.sock", False, False, False),
        ("", False, False, True),  # unset = every interface
        ("0.0.0.0", False, False, True),
        ("10.1.2.3", False, False, True),
        ("0.0.0.0", True, False, False),  # sign-in configured
        ("0.0.0.0", False, True, False),  # explicit trusted-network flag
    ],
)
def test_bind_refusal(address, auth, trusted, refused):
    msg = access.bind_refusal(address, auth, trusted)
    assert (msg is not None) == refused
    if refused:
        assert "MARAG_TRUSTED_NETWORK" in msg and "[auth]" in msg


def test_shipped_streamlit_config_binds_loopback():
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"  # also skips Streamlit's external-IP lookup
    assert cfg["browser"]["gatherUsageStats"] is False


# --- the app's door under AppTest -------------------------------------------------------------


@pytest.fixture
def roles_file(tmp_path, monkeypatch):
    p = tmp_path / "roles.toml"
    p.write_text(ROLES_TOML)
    monkeypatch.setenv("MARAG_ROLES_FILE", str(p))
    return p


def _app(user=None, auth=True):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=30)
    if auth:
        at.secrets["auth"] = AUTH
    if user is not None:
        at.user = user
    return at


def _not_registered(at, page: str) -> None:
    """The page is not in this user's navigation at all (AppTest cannot even switch to it)."""
    with pytest.raises(ValueError, match="Could not find a navigation page") as e:
        at.switch_page(page)
    assert page.split("/")[-1] not in str(e.value).split("Known pages:")[1]


def _trail(tmp_path) -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite3'}")


def _texts(at) -> str:
    parts = (
        [e.value for e in at.markdown] + [e.value for e in at.error] + [e.value for e in at.title]
    )
    parts += (
        [e.value for e in at.caption] + [e.value for e in at.info] + [e.value for e in at.warning]
    )
    parts += [e.value for e in at.header]
    return "\n".join(str(p) for p in parts)


def test_signed_out_user_sees_only_the_sign_in_page(handle, roles_file, tmp_path):
    at = _app({"is_logged_in": False}).run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert "Patient" not in [h.value for h in at.header]
    assert _trail(tmp_path).count() == 0


def test_user_without_role_is_denied_and_logged(handle, roles_file, tmp_path):
    at = _app(
        {
            "is_logged_in": True,
            "email_verified": True,
            "email": "eve@hospital.example",
            "sub": "eve",
        }
    ).run()
    assert not at.exception
    assert at.title[0].value == "No access"
    assert "eve@hospital.example" in at.error[0].value
    assert "has been recorded" in at.error[0].value
    assert [h.value for h in at.header] == []  # no page ran
    at.run()  # a rerun in the same session does not log the attempt twice
    entries = _trail(tmp_path).entries()
    assert [(e.action, e.user, e.role) for e in entries] == [
        ("denied", "eve@hospital.example", "none")
    ]
    assert entries[0].detail["roles_file"] == str(roles_file)


def test_user_without_role_loading_two_pages_writes_one_denied_entry(handle, roles_file, tmp_path):
    """Each browser page load (a reload, a typed URL) is a new Streamlit session of the same
    login: the denied attempt is recorded once for that login, not once per load."""
    eve = {"is_logged_in": True, "email_verified": True, "email": "eve@hospital.example"}
    eve["iat"] = int(time.time()) - 60  # issued a minute ago
    first = _app(eve).run()
    first.run()  # a rerun in the same session
    second = _app(eve)
    second.query_params["page"] = "review"  # another page of the same login, a new session
    second.run()
    for at in (first, second):
        assert not at.exception
        assert at.title[0].value == "No access"
    assert [(e.action, e.user) for e in _trail(tmp_path).entries()] == [
        ("denied", "eve@hospital.example")
    ]


@pytest.mark.parametrize("claims", [{"email_verified": False}, {}], ids=["false", "missing"])
def test_unverified_email_gets_no_role_and_is_told_so(handle, roles_file, tmp_path, claims):
    at = _app({"is_logged_in": True, "email": "carl@hospital.example", **claims}).run()
    assert not at.exception
    assert at.title[0].value == "No access"
    assert "e-mail address is not verified" in at.error[0].value
    assert [h.value for h in at.header] == []  # no page ran
    entries = _trail(tmp_path).entries()
    assert [(e.action, e.role) for e in entries] == [("denied", "none")]
    assert entries[0].detail["reason"] == "email not verified"


def test_verified_email_check_turned_off_in_roles_file(handle, roles_file, tmp_path):
    roles_file.write_text(ROLES_TOML + "[settings]\nrequire_verified_email = false\n")
    at = _app({"is_logged_in": True, "email": "carl@hospital.example"}).run()
    assert not at.exception
    assert at.header[0].value == "Patient"


def test_case_variant_roles_file_keys_are_shown_at_start_up(handle, roles_file, tmp_path):
    roles_file.write_text('[users]\n"Dr.Smith@x.org" = ["clinician"]\n"dr.smith@x.org" = "staff"\n')
    at = _app({"is_logged_in": True, "email_verified": True, "email": "dr.smith@x.org"}).run()
    assert not at.exception
    msg = at.error[0].value
    assert msg.startswith("The roles file is invalid:") and str(roles_file) in msg
    assert "'Dr.Smith@x.org'" in msg and "'dr.smith@x.org'" in msg
    assert [h.value for h in at.header] == []


def test_reviewer_sees_review_not_data_and_sign_in_is_logged(handle, roles_file, tmp_path):
    at = _app(
        {"is_logged_in": True, "email_verified": True, "email": "rita.reviewer@hospital.example"}
    ).run()
    assert not at.exception
    assert at.header[0].value == "Patient"
    assert any(
        "Signed in as **rita.reviewer@hospital.example**" in c.value for c in at.sidebar.caption
    )
    at.switch_page("views/review.py").run()
    assert not at.exception
    assert at.header[0].value == "Review"
    _not_registered(at, "views/data.py")
    assert [e.action for e in _trail(tmp_path).entries()] == ["sign_in"]


def test_data_manager_sees_only_data(handle, roles_file, tmp_path):
    at = _app(
        {"is_logged_in": True, "email_verified": True, "email": "dana@hospital.example"}
    ).run()
    assert not at.exception
    assert at.header[0].value == "Data"  # the only page, so the default
    _not_registered(at, "views/review.py")


def test_staff_by_group_sees_analysis_but_not_review(handle, roles_file, monkeypatch):
    at = _app(
        {
            "is_logged_in": True,
            "email_verified": True,
            "email": "s@hospital.example",
            "groups": ["study-team"],
        }
    ).run()
    assert not at.exception
    assert at.header[0].value == "Patient"
    _not_registered(at, "views/review.py")


def test_local_single_user_mode_without_auth(handle, monkeypatch, tmp_path):
    monkeypatch.setenv("MARAG_USER", "dr.local")
    at = _app(auth=False).run()
    assert not at.exception
    assert any(
        "Local single-user mode" in i.value and "dr.local" in i.value for i in at.sidebar.info
    )
    assert at.header[0].value == "Patient"
    at.switch_page("views/review.py").run()
    assert at.header[0].value == "Review"


@pytest.fixture
def network_address():
    from streamlit import config

    old = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    yield
    config.set_option("server.address", old)


def test_network_address_without_auth_is_refused(handle, network_address, tmp_path):
    at = _app(auth=False).run()
    assert not at.exception
    assert "Refusing to serve on network address '0.0.0.0' without sign-in" in at.error[0].value
    assert [h.value for h in at.header] == []


def test_trusted_network_flag_serves_and_is_logged(handle, network_address, monkeypatch, tmp_path):
    import streamlit as st

    monkeypatch.setenv("MARAG_TRUSTED_NETWORK", "1")
    st.cache_resource.clear()
    at = _app(auth=False).run()
    assert not at.exception
    assert at.header[0].value == "Patient"
    assert any("Trusted-network mode" in w.value for w in at.sidebar.warning)
    entries = _trail(tmp_path).entries()
    assert [e.action for e in entries] == ["trusted_network"]
    assert entries[0].detail["address"] == "0.0.0.0"


def test_data_manager_kb_build_is_recorded(monkeypatch, tmp_path, roles_file):
    """A data manager signed in builds the KB on the Data page; the build is an audit entry with
    the new generation and content hash (real ingest + Chroma, hashing embeddings, tmp KB)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets["auth"] = AUTH
    at.user = {"is_logged_in": True, "email_verified": True, "email": "dana@hospital.example"}
    at.run()
    assert at.header[0].value == "Data"
    at.button(key="validate").click().run()
    at.button(key="build").click().run()
    assert not at.exception, at.exception
    builds = _trail(tmp_path).entries(actions=("kb_build",))
    assert [(e.user, e.role, e.kb_generation) for e in builds] == [
        ("dana@hospital.example", "data_manager", "gen-000001")
    ]
    assert builds[0].detail["total"] > 0 and len(builds[0].kb_hash) == 64
    st.cache_resource.clear()
