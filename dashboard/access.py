"""Who may see what: the roles mapping file, the pages each role opens, and the rule that keeps an
unauthenticated dashboard off the network. Pure functions (no Streamlit), so the door's decisions
are tested directly; dashboard.gate applies them to the running app.

Roles file (`.streamlit/roles.toml`, MARAG_ROLES_FILE to move it):

    [users]                      # e-mail (case-insensitive) -> roles
    "a.clinician@hospital.example" = ["clinician"]
    [groups]                     # a group named in the identity token -> roles
    "neurology-qa" = ["reviewer"]
    [settings]
    group_claim = "groups"       # which ID-token claim lists the user's groups
    require_verified_email = true  # roles only when the ID token says email_verified (default)

Two [users] keys that differ only in case are an error (they would name the same person).
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLES = ("clinician", "staff", "reviewer", "data_manager")
ANALYSIS = frozenset({"clinician", "staff", "reviewer"})
#: page key (its url_path; "" is the Patient page) -> roles that see it
PAGE_ROLES: dict[str, frozenset[str]] = {
    "": ANALYSIS,
    "compare": ANALYSIS,
    "cohort": ANALYSIS,
    "provenance": ANALYSIS,
    "search": ANALYSIS,
    "review": frozenset({"reviewer"}),
    "data": frozenset({"data_manager"}),
}
LOOPBACK_NAMES = {"localhost", "ip6-localhost"}


class RolesFileError(ValueError):
    """The roles file cannot be read or names an unknown role; the message names file and key."""


@dataclass(frozen=True)
class RoleMap:
    users: dict[str, frozenset[str]] = field(default_factory=dict)
    groups: dict[str, frozenset[str]] = field(default_factory=dict)
    group_claim: str = "groups"
    source: str = ""
    require_verified_email: bool = True

    def roles_for(self, email: str | None, groups: Iterable[str] = ()) -> frozenset[str]:
        out: set[str] = set()
        if email:
            out |= self.users.get(email.strip().lower(), frozenset())
        for g in groups:
            out |= self.groups.get(str(g), frozenset())
        return frozenset(out)


def _roles(value: Any, where: str) -> frozenset[str]:
    vals = [value] if isinstance(value, str) else value
    if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
        raise RolesFileError(f"{where}: expected a role or a list of roles, got {value!r}")
    bad = [v for v in vals if v not in ROLES]
    if bad:
        raise RolesFileError(f"{where}: unknown role {bad[0]!r} (roles: {', '.join(ROLES)})")
    return frozenset(vals)


def _user_roles(table: Mapping[str, Any], source: str) -> dict[str, frozenset[str]]:
    """[users]: e-mail (lower-cased) -> roles. Two keys naming the same e-mail in different case
    are an error naming both, not a silent last-one-wins."""
    users: dict[str, frozenset[str]] = {}
    first: dict[str, str] = {}
    for k, v in table.items():
        key = str(k).strip().lower()
        if key in first:
            raise RolesFileError(
                f"{source} [users]: {first[key]!r} and {str(k)!r} name the same e-mail (e-mails "
                "are compared case-insensitively); keep one entry with all its roles"
            )
        first[key] = str(k)
        users[key] = _roles(v, f"{source} [users] {k!r}")
    return users


def parse_roles(data: Mapping[str, Any], source: str = "roles.toml") -> RoleMap:
    unknown = set(data) - {"users", "groups", "settings"}
    if unknown:
        raise RolesFileError(f"{source}: unknown section [{sorted(unknown)[0]}]")
    users = _user_roles(data.get("users") or {}, source)
    groups = {
        str(k): _roles(v, f"{source} [groups] {k!r}") for k, v in (data.get("groups") or {}).items()
    }
    settings = data.get("settings") or {}
    claim = settings.get("group_claim", "groups")
    verified = settings.get("require_verified_email", True)
    if not isinstance(verified, bool):
        raise RolesFileError(
            f"{source} [settings] require_verified_email: expected true or false, got {verified!r}"
        )
    return RoleMap(users, groups, str(claim), source, verified)


def email_verified(claim: Any, required: bool = True) -> bool:
    """May this ID token's user be given roles? Only when its `email_verified` claim is true
    (a JSON true, or the string "true" some providers send); a missing claim counts as not
    verified. `required=False` ([settings] require_verified_email = false, for providers that
    do not send the claim) turns the check off."""
    if not required:
        return True
    return claim is True or (isinstance(claim, str) and claim.strip().lower() == "true")


def load_roles(path: Path) -> RoleMap:
    """Read the roles file; a missing file gives an empty map (everyone is denied)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return RoleMap(source=str(path))
    except OSError as e:
        raise RolesFileError(f"{path}: cannot be read ({e.strerror})") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RolesFileError(f"{path}: not valid TOML ({e})") from e
    return parse_roles(data, str(path))


@dataclass(frozen=True)
class Identity:
    """The person using this session: the name the audit trail records, their roles, and how they
    got in (local single-user mode, a trusted network without sign-in, or signed in)."""

    user: str
    roles: frozenset[str]
    mode: str  # local | trusted_network | signed_in
    email: str | None = None

    @property
    def role_label(self) -> str:
        return ",".join(r for r in ROLES if r in self.roles) or "none"


def visible_pages(roles: Iterable[str]) -> set[str]:
    """Page keys (url paths) the roles open."""
    rs = set(roles)
    return {page for page, allowed in PAGE_ROLES.items() if rs & allowed}


def is_loopback(address: str | None) -> bool:
    """True for addresses only this machine reaches (127.0.0.0/8, ::1, localhost, a Unix socket).
    An unset address means every interface."""
    a = (address or "").strip().strip("[]")
    if not a:
        return False
    if a.startswith("unix://") or a.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(a).is_loopback
    except ValueError:
        return False


def bind_refusal(address: str | None, auth_configured: bool, trusted_network: bool) -> str | None:
    """Why the dashboard must not serve on `address`, or None when it may."""
    if auth_configured or trusted_network or is_loopback(address):
        return None
    where = f"network address {address!r}" if address else "every network interface"
    return (
        f"Refusing to serve on {where} without sign-in: there is no [auth] section in "
        ".streamlit/secrets.toml, so anyone who reaches the port would see every patient. "
        "Configure the hospital's identity provider (docs/audit-and-access.md), serve on "
        "127.0.0.1 (`make run`), or, on a network you trust, set MARAG_TRUSTED_NETWORK=1 "
        "(recorded in the audit trail)."
    )
