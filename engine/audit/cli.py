"""`marag audit list | show | verify | head | init | backup | queue | submit`: read the audit trail
from the command line, anchor and back it up, list the review queue of a KB and put a release in
it (engine.audit.review; there are no sign-off commands: reviews are made on the dashboard's
Review page).

`verify` opens the store read-only (it never creates anything) and exits 0 when the chain holds
and matches the head record outside the store (engine.audit.anchor), 1 with one line naming what
is missing or broken: no store, no tables, entries fewer than the head says, the first broken
entry; `--head HASH` also needs an entry with that hash, `--file` checks a JSON-lines backup.
`init` starts a chain (recorded as `audit_init`); errors a user can fix (an unknown id, a bad
--since, a refused init) raise ValueError, which engine.cli prints as one line (exit 2).
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
    audit = sub.add_parser(
        "audit", help="the audit trail: list, show and verify entries; the review queue"
    )
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
    _add_anchor_parsers(asub)
    _add_review_parsers(asub)
    for p in asub.choices.values():
        if common is not None:
            common(p)  # --kb-dir etc.: the default store lies beside the KB
        add_audit_db_flag(p)


def _add_anchor_parsers(asub: Any) -> None:
    """`audit verify`, `audit head`, `audit init` and `audit backup FILE`."""
    v = asub.add_parser(
        "verify", help="check the hash chain and the head record (exit 1 naming what is broken)"
    )
    v.add_argument("--head", default=None, metavar="HASH", help="an entry hash the chain must hold")
    v.add_argument("--file", default=None, help="check a JSON-lines backup instead of the store")
    hd = asub.add_parser("head", help="print the head record kept outside the store")
    hd.add_argument("--json", action="store_true")
    init = asub.add_parser("init", help="create the audit store (a recorded audit_init entry)")
    init.add_argument(
        "--force", action="store_true", help="start a new chain where the head names a lost one"
    )
    add_user_flag(init)
    bk = asub.add_parser("backup", help="a consistent copy of the live store into a new FILE")
    bk.add_argument("file", help="new SQLite file (or FILE.jsonl: a JSON-lines export)")


def _add_review_parsers(asub: Any) -> None:
    """`audit queue` (the review queue of this KB) and `audit submit ID`."""
    q = asub.add_parser("queue", help="the review queue of this KB (submitted releases)")
    q.add_argument("--status", choices=("pending", "reviewed", "all"), default="pending")
    q.add_argument("--patient", type=int, default=None, help="only items naming this patient")
    q.add_argument("--user", default=None, help="only releases to this user")
    q.add_argument("--since", default=None, help="only items submitted at or after this date")
    q.add_argument("--generation", default=None, help="only items of this KB generation")
    q.add_argument("--all-kbs", action="store_true", help="every KB's items, not only this one's")
    q.add_argument("--json", action="store_true")
    sb = asub.add_parser("submit", help="put a released result (ask / check entry) up for review")
    sb.add_argument("id", type=int, help="the audit entry of the release")
    sb.add_argument("--comment", default=None, help="a note for the reviewer")
    sb.add_argument("--json", action="store_true")
    add_user_flag(sb)


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


def _item_json(item: Any) -> dict[str, Any]:
    """One queue item for `audit queue --json` / `audit submit --json`."""
    sub = item.submission
    return {
        "number": item.number,
        "status": item.status,
        "release": item.entry.brief(),
        "kb": item.kb,
        "kb_generation": item.entry.kb_generation,
        "result_hash": item.entry.result_hash,
        "submission": sub.id if sub else None,
        "submitted_by": sub.user if sub else None,
        "submitted_at": sub.ts if sub else None,
        "review": item.review.brief() if item.review else None,
    }


def _queue(store: AuditStore, args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit queue`: the submitted releases of this KB (every KB with --all-kbs)."""
    from engine.audit.review import queue
    from engine.audit.trail import kb_source

    kb = None if args.all_kbs else kb_source(cfg)
    items = queue(
        store,
        status=args.status,
        patient=args.patient,
        user=args.user,
        since=args.since,
        kb=kb,
        kb_generation=args.generation,
    )
    if args.json:
        print(json.dumps({"kb": kb, "items": [_item_json(i) for i in items]}, default=str))
        return 0
    for i in items:
        e, pats = i.entry, ",".join(map(str, i.entry.patients)) or "-"
        by = f" by {i.submission.user}" if i.submission else ""
        print(
            f"#{i.number:<6} {e.ts[:19]}Z  {e.user}  patients {pats}  {e.kb_generation or '-'}  "
            f"{i.status} (submitted{by})"
        )
    print(f"({len(items)} {args.status} items for KB {kb or 'any'})")
    return 0


def _submit(store: AuditStore, args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit submit ID`: queue a release once per review key (ValueError: no release)."""
    from engine.audit.review import submit
    from engine.audit.trail import kb_source, resolve_user

    done = submit(
        store,
        args.id,
        resolve_user(cfg, args.user),
        role="cli",
        kb=kb_source(cfg),
        comment=args.comment,
    )
    if args.json:
        print(json.dumps({"created": done.created, **_item_json(done.item)}, default=str))
    else:
        print(done.message)
    return 0


def _verify(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit verify [--head HASH] [--file FILE]`: exit 0 when it holds, else 1."""
    from engine.audit.anchor import read_head
    from engine.audit.backup import verify_file
    from engine.audit.errors import AuditError
    from engine.audit.trail import head_path, read_store

    if args.file:
        verdict = verify_file(args.file)
    else:
        try:
            store = read_store(cfg)
        except AuditError as e:
            print(str(e))
            return 1
        try:
            verdict = store.verify(find=args.head)
        finally:
            store.close()
    print(verdict.line())
    if verdict.ok and not args.file and not args.head:
        head = read_head(head_path(cfg))
        print(head.line() if head else f"(no head record at {head_path(cfg)}: not anchored yet)")
    return 0 if verdict.ok else 1


def _head(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit head [--json]`: the head record; exit 1 when there is none."""
    from engine.audit.anchor import read_head
    from engine.audit.trail import head_path

    path = head_path(cfg)
    head = read_head(path)
    if head is None:
        print(f"no head record at {path}")
        return 1
    print(json.dumps(head.to_dict()) if args.json else head.line())
    return 0


def _entries_held(cfg: Config) -> int | None:
    """How many entries the store holds, None when it is missing (no file, no tables)."""
    from engine.audit.errors import AuditError
    from engine.audit.trail import read_store

    try:
        store = read_store(cfg)
    except AuditError:
        return None
    try:
        return store.count() if store.has_tables() else None
    finally:
        store.close()


def _init(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit init [--force]`: create the store and record `audit_init` as its first
    entry. A store that holds entries is left alone; a head record naming a lost chain needs
    --force (the new chain's first entry names that head)."""
    from engine.audit import trail
    from engine.audit.anchor import missing_message, read_head
    from engine.audit.store import AuditStore

    url, path = trail.audit_url(cfg), trail.head_path(cfg)
    head, held = read_head(path), _entries_held(cfg)
    if held:
        store = trail.open_store(cfg)  # refuses a store that no longer matches its head
        print(f"the audit trail at {store.safe_url} already holds {held} entries: nothing to do")
        return 0 if not args.force else _refuse_force(store.safe_url, held)
    if head is not None and head.last_id > 0 and not args.force:
        raise ValueError(missing_message(url, head))
    store = AuditStore(url, head=path, mode="init")
    try:
        store.start_chain()
        entry = trail.record(
            cfg,
            "audit_init",
            user=args.user,
            with_kb=False,
            store=store,
            detail={"forced": bool(args.force), "previous_head": head and head.to_dict()},
        )
    finally:
        store.close()
    trail.forget_stores()
    print(f"audit trail initialised at {store.safe_url}: entry #{entry.id} (audit_init)")
    return 0


def _refuse_force(where: str, held: int) -> int:
    raise ValueError(
        f"init --force never starts a chain over a store that holds entries ({held} at {where}): "
        "move it aside (keep it as evidence), then run `marag audit init --force`"
    )


def _backup(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit backup FILE`: a consistent copy; exit 1 when the copy does not verify."""
    from pathlib import Path

    from engine.audit.backup import backup
    from engine.audit.trail import read_store

    store = read_store(cfg)
    try:
        verdict = backup(store, Path(args.file))
    finally:
        store.close()
    print(f"backed up {verdict.entries} entries to {Path(args.file).expanduser().resolve()}")
    print(verdict.line())
    return 0 if verdict.ok else 1


def run(args: argparse.Namespace, cfg: Config) -> int:
    """`marag audit list | show | verify | head | init | backup | queue | submit`; verify exits 1
    when the trail is missing or broken."""
    from engine.audit.trail import open_store

    direct = {"verify": _verify, "head": _head, "init": _init, "backup": _backup}
    if args.audit_command in direct:
        return direct[args.audit_command](args, cfg)
    store = open_store(cfg)
    commands = {"list": _list, "show": _show, "queue": _queue, "submit": _submit}
    return commands[args.audit_command](store, args, cfg)


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
