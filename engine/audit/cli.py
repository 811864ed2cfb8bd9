"""`marag audit list | show | verify`: read the audit trail from the command line.

`verify` exits 0 when the chain holds and 1 naming the first broken entry; errors a user can fix
(an unknown id, a bad --since) raise ValueError, which engine.cli prints as one line (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from engine.config import Config

if TYPE_CHECKING:
    from engine.audit.store import AuditStore, Entry


def add_parser(sub: Any, common: Any = None) -> None:
    """Register `audit` and its subcommands on the top-level subparsers of engine.cli."""
    audit = sub.add_parser("audit", help="the audit trail: list, show and verify entries")
    asub = audit.add_subparsers(dest="audit_command", required=True)
    ls = asub.add_parser("list", help="list entries (newest last)")
    ls.add_argument("--user", default=None, help="only entries by this user")
    ls.add_argument("--patient", type=int, default=None, help="only entries naming this patient")
    ls.add_argument("--since", default=None, help="only entries at or after this ISO date/time")
    ls.add_argument("--action", default=None, help="only this action (ask, sign_off, ...)")
    ls.add_argument("--json", action="store_true")
    show = asub.add_parser("show", help="one entry in full, with its reviews")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    asub.add_parser("verify", help="check the hash chain (exit 1 naming the first broken entry)")
    for p in asub.choices.values():
        if common is not None:
            common(p)  # --kb-dir etc.: the default store lies beside the KB
        add_audit_db_flag(p)


def add_audit_db_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--audit-db",
        dest="audit_db",
        default=None,
        help="audit store: SQLite path or SQLAlchemy URL (MARAG_AUDIT_DB)",
    )


def add_user_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user", default=None, help="user recorded in the audit trail (MARAG_USER, OS login)"
    )


def _list(store: AuditStore, args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit list`: the entries the filters select, one line each (or JSON)."""
    from engine.audit.trail import audit_url

    actions = (args.action,) if args.action else None
    rows = store.entries(user=args.user, patient=args.patient, since=args.since, actions=actions)
    if args.json:
        print(json.dumps({"entries": [e.brief() for e in rows]}, default=str))
        return 0
    for e in rows:
        pats = ",".join(map(str, e.patients)) or "-"
        extra = f" on #{e.subject}" if e.subject else ""
        note = f" \u2014 {e.comment}" if e.comment else ""
        print(
            f"#{e.id:<6} {e.ts[:19]}Z  {e.user} ({e.role})  {e.action}{extra}  patients {pats}{note}"
        )
    print(f"({len(rows)} entries in {audit_url(cfg)})")
    return 0


def _print_entry(e: Entry, reviews: list[Entry]) -> None:
    """One entry in full for `marag audit show`: its fields, summary, reviews and hashes."""
    print(f"entry #{e.id}: {e.action} by {e.user} ({e.role}) at {e.ts}")
    if reviews and reviews[-1].action == "reject":
        r = reviews[-1]
        print(f"  REJECTED in review by {r.user} at {r.ts} (entry #{r.id}): {r.comment}")
    for k in ("patients", "kb_generation", "kb_hash", "backend", "model", "subject", "comment"):
        v = getattr(e, k)
        if v not in (None, [], ""):
            print(f"  {k}: {v}")
    if e.plan:
        print(f"  plan: {json.dumps(e.plan)}")
    if e.verification:
        print(f"  verification: {json.dumps(e.verification)}")
    if e.result_hash:
        print(f"  result hash: {e.result_hash}")
    if e.result and e.result.get("summary"):
        print("\n" + e.result["summary"] + "\n")
    for r in reviews:
        print(f"  {r.action} #{r.id} by {r.user} at {r.ts}: {r.comment or ''}")
    print(f"  hash: {e.hash}\n  previous: {e.prev_hash}")


def _show(store: AuditStore, args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit show ID`: one entry with its reviews; ValueError for an unknown id."""
    from engine.audit.trail import audit_url

    e = store.get(args.id)
    if e is None:
        raise ValueError(f"no audit entry with id {args.id} in {audit_url(cfg)}")
    reviews = store.reviews_of(e.id)
    if args.json:
        print(json.dumps({**e.to_dict(), "reviews": [r.brief() for r in reviews]}, default=str))
        return 0
    _print_entry(e, reviews)
    return 0


def run(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit list | show | verify`; verify exits 1 when the chain is broken."""
    from engine.audit.trail import open_store

    store = open_store(cfg)
    cmd = args.audit_command
    if cmd == "list":
        return _list(store, args, cfg)
    if cmd == "show":
        return _show(store, args, cfg)
    verdict = store.verify()
    print(verdict.line())
    return 0 if verdict.ok else 1


def kb_state(cfg: Config) -> tuple[str | None, str | None]:
    """The live KB's (generation, content hash), taken before `marag kb build`."""
    from engine.audit.trail import kb_identity

    return kb_identity(cfg)


def record_kb_build(args: argparse.Namespace, cfg: Config, before: tuple) -> None:
    """Record `marag kb build` when it changed the live KB (not for --if-missing no-ops)."""
    from engine.audit.trail import kb_identity, record

    after = kb_identity(cfg)
    if after == before and after != (None, None) and not cfg.chroma_url:
        return
    entry = record(
        cfg,
        "kb_build",
        user=getattr(args, "user", None),
        with_kb=True,
        detail={
            "sources": list(getattr(args, "source", None) or ["synthetic"]),
            "format": getattr(args, "format", None),
            "previous_generation": before[0],
            "previous_hash": before[1],
        },
    )
    print(f"[audit entry #{entry.id}]", file=sys.stderr)
