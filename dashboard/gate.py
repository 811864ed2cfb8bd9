"""The door of the dashboard, run by dashboard/app.py before st.navigation:

- refuses to serve on a network address without sign-in unless MARAG_TRUSTED_NETWORK is set
  (then the start is recorded in the audit trail once per process);
- with an [auth] section in .streamlit/secrets.toml, signs users in through the hospital's
  OpenID Connect provider (st.login) and maps their e-mail / groups to roles (dashboard.access);
  roles only for an e-mail the ID token says is verified (unless the roles file turns that off);
  a signed-in user with no role gets a "no access" page, and the attempt is recorded once per
  login;
- without [auth], local single-user mode: the OS login (or MARAG_USER) holds every role.

It returns the session's Identity and filters the pages to those its roles open.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

import streamlit as st

from dashboard import access, trail
from dashboard.access import ROLES, Identity
from engine.audit.errors import AuditError
from engine.config import Config

LOG = logging.getLogger("marag.dashboard")


def auth_configured() -> bool:
    """True when secrets.toml has an [auth] section (st.login can reach a provider)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all (StreamlitSecretNotFoundError)
        return False


@st.cache_resource(show_spinner=False)
def _trusted_network_start(address: str, audit_url: str) -> bool:  # noqa: ARG001  # cache key: once per trail
    """Record, once per process and address, that the app serves a network without sign-in."""
    LOG.warning("serving on %s without sign-in (MARAG_TRUSTED_NETWORK)", address or "*")
    trail.record(
        "trusted_network",
        detail={"address": address or "*", "note": "served without sign-in (trusted network)"},
    )
    return True


def _refuse(message: str) -> None:
    LOG.error(message)
    st.title("MA-RAG clinician dashboard")
    st.error(message, icon=":material/lock:")
    st.stop()


def _sign_in_page() -> None:
    st.title("MA-RAG clinician dashboard")
    st.write(
        "This dashboard shows patient data. Sign in with your hospital account; what you can "
        "open depends on your role (clinician, study staff, reviewer, data manager)."
    )
    st.button("Sign in", type="primary", icon=":material/login:", on_click=st.login)
    st.stop()


def _no_access_page(ident: Identity, verified: bool) -> None:
    st.title("No access")
    if not verified:
        st.error(
            f"You are signed in as **{ident.user}**, but your e-mail address is not verified by "
            "the hospital's sign-in service, so no page is open to you. Verify your e-mail "
            "address with the sign-in service (or ask its administrator), then sign in again. "
            "This attempt has been recorded.",
            icon=":material/block:",
        )
    else:
        st.error(
            f"You are signed in as **{ident.user}**, but this account has no role in the MA-RAG "
            "dashboard, so no page is open to you. Ask the dashboard's administrator to add your "
            "e-mail or one of your groups to the roles file. This attempt has been recorded.",
            icon=":material/block:",
        )
    st.button("Sign out", icon=":material/logout:", on_click=st.logout)
    st.stop()


def enter(cfg: Config) -> Identity:
    """Apply the door's rules; returns the session's identity or stops the script."""
    address = str(st.get_option("server.address") or "")
    auth = auth_configured()
    refusal = access.bind_refusal(address, auth, cfg.trusted_network)
    if refusal:
        _refuse(refusal)
    if not auth:
        trusted = cfg.trusted_network and not access.is_loopback(address)
        from engine.audit import resolve_user

        ident = Identity(
            resolve_user(cfg), frozenset(ROLES), "trusted_network" if trusted else "local"
        )
        st.session_state[trail.IDENTITY_KEY] = ident
        if trusted:
            from engine.audit import audit_url

            try:
                _trusted_network_start(address, audit_url(cfg))
            except AuditError as e:
                _refuse(f"Trusted-network mode must be recorded, and the audit trail failed: {e}")
        return ident
    if importlib.util.find_spec("authlib") is None:
        _refuse(
            "Sign-in is configured ([auth] in secrets.toml) but Authlib, which Streamlit's "
            "sign-in needs, is not installed: pip install 'marag[auth]'."
        )
    return _signed_in(cfg)


def _signed_in(cfg: Config) -> Identity:
    """Sign-in: roles from the roles file for a verified e-mail; no role stops at "no access"."""
    if not st.user.is_logged_in:
        _sign_in_page()
    try:
        rolemap = access.load_roles(cfg.roles_file)
    except access.RolesFileError as e:
        _refuse(f"The roles file is invalid: {e}")
    email = st.user.get("email")
    groups = st.user.get(rolemap.group_claim) or []
    if isinstance(groups, str):
        groups = [groups]
    verified = access.email_verified(st.user.get("email_verified"), rolemap.require_verified_email)
    roles = rolemap.roles_for(email, groups) if verified else frozenset()
    user = str(email or st.user.get("sub") or "unknown")
    ident = Identity(user, roles, "signed_in", email)
    st.session_state[trail.IDENTITY_KEY] = ident
    if not ident.roles:
        detail = {"email": email, "groups": list(groups), "roles_file": rolemap.source}
        if not verified:
            detail["reason"] = "email not verified"
        _record_once_per_login(ident, "denied", detail)
        LOG.warning("denied: %s has no role (roles file %s)", user, rolemap.source)
        _no_access_page(ident, verified)
    _record_once_per_login(ident, "sign_in", {"groups": list(groups)})
    return ident


def _record_once_per_login(ident: Identity, action: str, detail: dict[str, Any]) -> None:
    """One `action` entry (sign_in, denied) per login, identified by the ID token's issue time,
    not per page load: every browser reload or typed URL is a new Streamlit session of the same
    login. The session remembers it in st.session_state; a new session of the same login finds
    the entry already in the trail."""
    iat = st.user.get("iat")
    flag = f"marag_audit_{action}_{iat}"
    if st.session_state.get(flag):
        return
    if isinstance(iat, int | float):
        from datetime import UTC, datetime, timedelta

        since = datetime.fromtimestamp(iat, UTC) - timedelta(seconds=1)
        try:
            seen = trail.store().entries(user=ident.user, actions=(action,), since=since)
        except AuditError:
            seen = []
        if any((e.detail or {}).get("iat") == iat for e in seen):
            st.session_state[flag] = True
            return
    trail.record_once(flag, action, detail={**detail, "iat": iat})


def visible(pages: dict[str, list[Any]], ident: Identity) -> dict[str, list[Any]]:
    """The navigation sections with only the pages this identity's roles open."""
    keys = access.visible_pages(ident.roles)
    out = {sec: [p for p in ps if p.url_path in keys] for sec, ps in pages.items()}
    return {sec: ps for sec, ps in out.items() if ps}


def sidebar(ident: Identity) -> None:
    if ident.mode == "local":
        st.info(
            f"**Local single-user mode** ({ident.user}): no sign-in, served on this computer "
            "only. Configure [auth] to serve others (docs/audit-and-access.md).",
            icon=":material/computer:",
        )
    elif ident.mode == "trusted_network":
        st.warning(
            f"**Trusted-network mode** ({ident.user}): served on the network without sign-in "
            "(MARAG_TRUSTED_NETWORK, recorded in the audit trail).",
            icon=":material/lan:",
        )
    else:
        st.caption(f"Signed in as **{ident.user}** \u00b7 {', '.join(sorted(ident.roles))}")
        st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="sign_out")
