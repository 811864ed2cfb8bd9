"""The audit store: an append-only, hash-chained table in SQLite (embedded default, WAL mode) or
PostgreSQL (several dashboard replicas), both through SQLAlchemy Core.

Appends are serialised so that two writers never chain onto the same previous entry: SQLite takes
the database write lock at the start of the transaction (BEGIN IMMEDIATE; WAL keeps readers
running), PostgreSQL takes a transaction-level advisory lock. Inside that transaction the head
record (last id and hash) is read, the entry is inserted with the next id and the head moves on.
Nothing in this module updates or deletes an entry; `verify` re-reads the whole chain.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from engine.audit.chain import (
    FIELDS,
    GENESIS,
    Verdict,
    canonical,
    entry_hash,
    sha256,
    verify_rows,
)
from engine.audit.errors import AuditError

ACTIONS = (
    "ask",
    "check",
    "export",
    "kb_build",
    "sign_off",
    "reject",
    "review_refused",
    "submit_review",
    "sign_in",
    "denied",
    "trusted_network",
)
REVIEW_ACTIONS = ("sign_off", "reject")
RELEASE_ACTIONS = ("ask", "check")
SUBMIT_ACTIONS = ("submit_review",)  # a release put in the review queue (engine.audit.review)
_PG_LOCK_KEY = 0x4D41524147  # "MARAG": the advisory lock every writer of the trail takes

metadata = sa.MetaData()
log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("ts", sa.String(40), nullable=False),
    sa.Column("user", sa.String(320), nullable=False),
    sa.Column("role", sa.String(64), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("patients", sa.Text, nullable=False),  # ",3,8," (for --patient); "" when none
    sa.Column("plan", sa.Text),
    sa.Column("kb_generation", sa.String(200)),
    sa.Column("kb_hash", sa.String(64)),
    sa.Column("backend", sa.String(32)),
    sa.Column("model", sa.String(500)),
    sa.Column("result", sa.Text),  # the full result JSON as released (canonical)
    sa.Column("result_hash", sa.String(64)),
    sa.Column("verification", sa.Text),  # summary of the verification record (JSON)
    sa.Column("subject", sa.Integer),  # the entry a sign-off / rejection is about
    sa.Column("comment", sa.Text),
    sa.Column("detail", sa.Text),  # anything else worth keeping (JSON)
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False, unique=True),
)
head = sa.Table(
    "audit_head",
    metadata,
    sa.Column("k", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("last_id", sa.Integer, nullable=False),
    sa.Column("last_hash", sa.String(64), nullable=False),
)
sa.Index("audit_log_user", log.c.user)
sa.Index("audit_log_ts", log.c.ts)
sa.Index("audit_log_subject", log.c.subject)


@dataclass(frozen=True)
class Entry:
    """One audit entry as stored. JSON fields are decoded; `patients` is a list of ids."""

    id: int
    ts: str
    user: str
    role: str
    action: str
    patients: list[int] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    kb_generation: str | None = None
    kb_hash: str | None = None
    backend: str | None = None
    model: str | None = None
    result: dict[str, Any] | None = None
    result_hash: str | None = None
    verification: dict[str, Any] | None = None
    subject: int | None = None
    comment: str | None = None
    detail: dict[str, Any] | None = None
    prev_hash: str = GENESIS
    hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*FIELDS, "hash")}

    def brief(self) -> dict[str, Any]:
        """The fields `audit list` shows (no result body)."""
        summary = (self.result or {}).get("summary") or ""
        return {
            "id": self.id,
            "ts": self.ts,
            "user": self.user,
            "role": self.role,
            "action": self.action,
            "patients": self.patients,
            "backend": self.backend,
            "kb_generation": self.kb_generation,
            "subject": self.subject,
            "comment": self.comment,
            "summary": summary[:120],
        }


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(obj: Any) -> str | None:
    return None if obj is None else canonical(obj)


def _patients_text(patients: Any) -> str:
    ids = sorted({int(p) for p in patients or ()})
    return "," + ",".join(map(str, ids)) + "," if ids else ""


def _entry(row: Mapping[str, Any]) -> Entry:
    pats = [int(p) for p in (row["patients"] or "").strip(",").split(",") if p]
    return Entry(
        id=row["id"],
        ts=row["ts"],
        user=row["user"],
        role=row["role"],
        action=row["action"],
        patients=pats,
        plan=_loads(row["plan"]),
        kb_generation=row["kb_generation"],
        kb_hash=row["kb_hash"],
        backend=row["backend"],
        model=row["model"],
        result=_loads(row["result"]),
        result_hash=row["result_hash"],
        verification=_loads(row["verification"]),
        subject=row["subject"],
        comment=row["comment"],
        detail=_loads(row["detail"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


def _new_row(
    *,
    user: str,
    role: str,
    action: str,
    patients: Any = (),
    plan: dict[str, Any] | None = None,
    kb_generation: str | None = None,
    kb_hash: str | None = None,
    backend: str | None = None,
    model: str | None = None,
    result: dict[str, Any] | None = None,
    verification: dict[str, Any] | None = None,
    subject: int | None = None,
    comment: str | None = None,
    detail: dict[str, Any] | None = None,
    ts: datetime | None = None,
) -> dict[str, Any]:
    """The stored columns of a new entry (without id and chain hashes); ValueError for an unknown
    action or an entry without a user."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r} (one of {', '.join(ACTIONS)})")
    if not user:
        raise ValueError("an audit entry needs a user")
    result_text = _dumps(result)
    return {
        "ts": (ts or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds"),
        "user": user,
        "role": role or "",
        "action": action,
        "patients": _patients_text(patients),
        "plan": _dumps(plan),
        "kb_generation": kb_generation,
        "kb_hash": kb_hash,
        "backend": backend,
        "model": model,
        "result": result_text,
        "result_hash": None if result_text is None else sha256(result_text),
        "verification": _dumps(verification),
        "subject": subject,
        "comment": comment,
        "detail": _dumps(detail),
    }


def database_url(target: str | Path) -> str:
    """A SQLAlchemy URL for a path (SQLite) or a URL given as is."""
    text = str(target)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def _since_iso(since: str | date | datetime) -> str:
    if isinstance(since, datetime):
        dt = since
    elif isinstance(since, date):
        dt = datetime(since.year, since.month, since.day)
    else:
        try:
            dt = datetime.fromisoformat(since.strip())
        except ValueError as e:
            raise ValueError(
                f"--since must be an ISO date or date-time (2026-01-31), got {since!r}"
            ) from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


class AuditStore:
    """Append-only audit trail at `url` (a SQLAlchemy URL: sqlite:///... or postgresql+psycopg://...)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = sa.engine.make_url(url).get_backend_name()
        if self.dialect == "sqlite":
            path = sa.engine.make_url(url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.engine = sa.create_engine(url, connect_args={"timeout": 60})
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
        elif self.dialect == "postgresql":
            try:
                self.engine = sa.create_engine(url, pool_pre_ping=True)
            except ModuleNotFoundError as exc:
                raise AuditError(
                    f"the PostgreSQL audit trail needs the driver {exc.name!r}, which is not "
                    "installed: pip install 'marag[postgres]'"
                ) from None
        else:
            raise ValueError(
                f"MARAG_AUDIT_DB must be a SQLite path or a sqlite:// / postgresql:// URL, got {url!r}"
            )
        self.safe_url = sa.engine.make_url(url).render_as_string(hide_password=True)
        with self._errors("opened"), self._write() as conn:
            metadata.create_all(conn)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except sa.exc.SQLAlchemyError as e:
            detail = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
            raise AuditError(f"audit store {self.safe_url} could not be {what}: {detail}") from e

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """A transaction that holds the trail's write lock until it ends."""
        with self.engine.connect().execution_options(marag_write=True) as conn, conn.begin():
            if self.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            yield conn

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def append(self, **fields: Any) -> Entry:
        """Append one entry to the chain and return it as stored. Fields: user, role, action
        (one of ACTIONS), patients, plan, kb_generation, kb_hash, backend, model, result,
        verification, subject, comment, detail, ts (see the table `audit_log`)."""
        row = _new_row(**fields)
        with self._errors("written"), self._write() as conn:
            return self._insert(conn, row)

    def append_once(
        self, *, match: Callable[[Entry], bool], like: str, **fields: Any
    ) -> tuple[Entry, bool]:
        """Append an entry unless one of the same action already matches, both under the
        trail's write lock (two writers never both append). `like` narrows the search in SQL (a
        substring of the stored detail JSON); `match` decides on each candidate. Returns the
        existing entry and False, or the new one and True."""
        row = _new_row(**fields)
        pattern = "%" + like.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        q = (
            sa.select(log)
            .where(log.c.action == row["action"], log.c.detail.like(pattern, escape="\\"))
            .order_by(log.c.id)
        )
        with self._errors("written"), self._write() as conn:
            for r in conn.execute(q).mappings():
                found = _entry(r)
                if match(found):
                    return found, False
            return self._insert(conn, row), True

    def _insert(self, conn: sa.Connection, row: dict[str, Any]) -> Entry:
        """Chain `row` onto the head and insert it (inside a write transaction)."""
        h = conn.execute(sa.select(head.c.last_id, head.c.last_hash)).first()
        last_id, last_hash = (h.last_id, h.last_hash) if h else (0, GENESIS)
        row["id"] = last_id + 1
        row["prev_hash"] = last_hash
        row["hash"] = entry_hash(row)
        conn.execute(log.insert().values(**row))
        if h:
            conn.execute(
                head.update().where(head.c.k == 1).values(last_id=row["id"], last_hash=row["hash"])
            )
        else:
            conn.execute(head.insert().values(k=1, last_id=row["id"], last_hash=row["hash"]))
        return _entry(row)

    def get(self, entry_id: int) -> Entry | None:
        with self._read() as conn:
            r = conn.execute(sa.select(log).where(log.c.id == int(entry_id))).mappings().first()
        return _entry(r) if r else None

    def entries(
        self,
        *,
        user: str | None = None,
        patient: int | None = None,
        since: str | date | datetime | None = None,
        actions: tuple[str, ...] | None = None,
        subject: int | None = None,
        ids: Sequence[int] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Entry]:
        q = sa.select(log)
        if ids is not None:
            q = q.where(log.c.id.in_([int(i) for i in ids]))
        if user:
            q = q.where(log.c.user == user)
        if patient is not None:
            q = q.where(log.c.patients.like(f"%,{int(patient)},%"))
        if since is not None:
            q = q.where(log.c.ts >= _since_iso(since))
        if actions:
            q = q.where(log.c.action.in_(actions))
        if subject is not None:
            q = q.where(log.c.subject == int(subject))
        q = q.order_by(log.c.id.desc() if newest_first else log.c.id)
        if limit:
            q = q.limit(limit)
        with self._read() as conn:
            return [_entry(r) for r in conn.execute(q).mappings()]

    def count(self) -> int:
        with self._read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(log)).scalar_one())

    def reviews_of(self, entry_id: int) -> list[Entry]:
        """Sign-offs and rejections of one released entry, oldest first."""
        return self.entries(actions=REVIEW_ACTIONS, subject=entry_id)

    def review_status(self, entry_ids: list[int] | None = None) -> dict[int, Entry]:
        """The latest sign-off or rejection per reviewed entry id."""
        out: dict[int, Entry] = {}
        for e in self.entries(actions=REVIEW_ACTIONS):
            if e.subject is not None and (entry_ids is None or e.subject in entry_ids):
                out[e.subject] = e
        return out

    def rejected_summaries(self) -> dict[str, Entry]:
        """SHA-256 of a summary text -> its rejection, for every released result whose latest
        review rejects it (the banner follows the text wherever it is shown again)."""
        out: dict[str, Entry] = {}
        for sid, review in self.review_status().items():
            if review.action != "reject":
                continue
            released = self.get(sid)
            summary = ((released and released.result) or {}).get("summary")
            if summary:
                out[sha256(summary)] = review
        return out

    def verify(self) -> Verdict:
        """Re-read the whole chain in id order, in one snapshot, and check every link, every hash
        and the head record."""
        cols = [log.c[k] for k in FIELDS] + [log.c.hash]
        opts: dict[str, Any] = {"stream_results": True, "yield_per": 500}
        if self.dialect == "postgresql":
            opts["isolation_level"] = "REPEATABLE READ"
        with self.engine.connect().execution_options(**opts) as conn, conn.begin():
            h = conn.execute(sa.select(head.c.last_id, head.c.last_hash)).mappings().first()
            rows = conn.execute(sa.select(*cols).order_by(log.c.id)).mappings()
            return verify_rows(rows, h)


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (see _sqlite_begin)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin(conn: sa.Connection) -> None:
    write = conn.get_execution_options().get("marag_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
