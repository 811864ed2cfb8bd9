"""The audit store: an append-only, hash-chained table in SQLite (embedded default, WAL mode) or
PostgreSQL (several dashboard replicas), both through SQLAlchemy Core.

Appends are serialised so that two writers never chain onto the same previous entry: SQLite takes
the database write lock at the start of the transaction (BEGIN IMMEDIATE; WAL keeps readers
running), PostgreSQL takes a transaction-level advisory lock. Inside that transaction the head
record (last id and hash) is read, the entry is inserted with the next id and the head moves on.
Nothing in this module updates or deletes an entry; `verify` re-reads the whole chain.

After each commit the head record outside the store (engine.audit.anchor) moves on; before each
append the store checks that it still matches it (and that its SQLite file is the one it opened),
so an emptied, truncated, deleted or replaced store refuses releases instead of starting a new
chain. The tables are created only on a first use (no store and no head record) or by `marag
audit init`; a store opened with mode="read" (verify, backup) never creates anything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event

from engine.audit.anchor import default_head_path, mismatch, missing_message, read_head, write_head
from engine.audit.chain import (
    FIELDS,
    GENESIS,
    Verdict,
    entry_hash,
    sha256,
    verify_rows,
)
from engine.audit.errors import AuditError
from engine.audit.rows import (
    ACTIONS,
    Entry,
    entry_from_row,
    new_row,
    pack_result,
    since_iso,
    unpacked,
)

__all__ = ["ACTIONS", "AuditStore", "Entry", "database_url", "head", "log", "metadata"]

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


def database_url(target: str | Path) -> str:
    """A SQLAlchemy URL for a path (SQLite) or a URL given as is."""
    text = str(target)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


class AuditStore:
    """Append-only audit trail at `url` (a SQLAlchemy URL: sqlite:///... or postgresql+psycopg://...).

    `head`: the head record outside the store (engine.audit.anchor; default beside a SQLite file,
    none for another store unless named). `mode`: "use" creates the tables only where neither the
    store nor a head record exists (a first use) and refuses a missing store that a head record
    names; "read" never creates anything (verify, backup); "init" creates the tables even though a
    head record exists (`marag audit init --force`)."""

    def __init__(self, url: str, *, head: Path | None | str = "default", mode: str = "use") -> None:
        if mode not in ("use", "read", "init"):
            raise ValueError(f"unknown audit store mode {mode!r}")
        self.url, self.mode = url, mode
        self.dialect = sa.engine.make_url(url).get_backend_name()
        self.file = sqlite_file(url) if self.dialect == "sqlite" else None
        self.head_path = default_head_path(self.file) if head == "default" else _path(head)
        self.safe_url = sa_url(url)
        self.engine = self._engine(url)
        self._inode = _inode(self.file)
        if mode != "read":
            self._open_for_writing()
            self._inode = _inode(self.file)

    def _engine(self, url: str) -> sa.Engine:
        if self.dialect == "sqlite":
            if self.file is not None and self.mode == "read":
                if not self.file.exists():
                    raise AuditError(f"no audit store at {self.file}")
                ro = f"file:{quote(str(self.file))}?mode=ro"  # never creates the file
                engine = sa.create_engine(
                    url, creator=lambda: sqlite3.connect(ro, uri=True, timeout=60)
                )
            else:
                engine = sa.create_engine(url, connect_args={"timeout": 60})
            event.listen(
                engine, "connect", _sqlite_read if self.mode == "read" else _sqlite_connect
            )
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        if self.dialect == "postgresql":
            try:
                return sa.create_engine(url, pool_pre_ping=True)
            except ModuleNotFoundError as exc:
                raise AuditError(
                    f"the PostgreSQL audit trail needs the driver {exc.name!r}, which is not "
                    "installed: pip install 'marag[postgres]'"
                ) from None
        raise ValueError(
            f"MARAG_AUDIT_DB must be a SQLite path or a sqlite:// / postgresql:// URL, got {url!r}"
        )

    def _open_for_writing(self) -> None:
        """Create the tables on a first use (no store, no head record) or for `init`; refuse a
        store that a head record names but that is missing, or holds fewer entries than it says."""
        anchor = read_head(self.head_path)
        exists = self.file is None or self.file.exists()
        with self._errors("opened"):
            if exists and self.has_tables():
                problem = self._anchor_problem(anchor)
                if problem and self.mode != "init":
                    raise AuditError(f"audit store {self.safe_url}: {problem}")
                return
            if anchor is not None and self.mode != "init":
                raise AuditError(missing_message(str(self.file or self.safe_url), anchor))
            if self.file is not None:
                self.file.parent.mkdir(parents=True, exist_ok=True)
            with self._write() as conn:
                metadata.create_all(conn)
        if anchor is None:
            write_head(self.head_path, last_id=0, last_hash=GENESIS, store=self.safe_url)

    def has_tables(self) -> bool:
        """Whether both tables of the trail exist (False for a dropped or never created store)."""
        with self._read() as conn:
            insp = sa.inspect(conn)
            return insp.has_table(log.name) and insp.has_table(head.name)

    def _anchor_problem(self, anchor: Any, conn: sa.Connection | None = None) -> str | None:
        """Why the store does not match the head record `anchor` (None when it does)."""
        if anchor is None or anchor.last_id == 0:
            return None
        if conn is None:
            with self._read() as c:
                return self._anchor_problem(anchor, c)
        last = conn.execute(sa.select(sa.func.max(log.c.id))).scalar() or 0
        at = conn.execute(sa.select(log.c.hash).where(log.c.id == anchor.last_id)).scalar()
        return mismatch(anchor, int(last), at)

    def stale(self) -> bool:
        """Whether the SQLite file this store opened was deleted or replaced since."""
        return (
            self.file is not None and self._inode is not None and _inode(self.file) != self._inode
        )

    def _check_file(self) -> None:
        """Before an append: the file opened is still the store's file (not deleted, not
        replaced); otherwise the entry would go into a deleted inode, or another trail."""
        if not self.stale():
            return
        state = "deleted" if not self.file.exists() else "replaced by another file"
        raise AuditError(
            f"the audit store {self.file} was {state} while this process had it open; nothing "
            "was recorded. Restore it from a backup (marag audit backup) or run "
            "`marag audit init --force` to start a new chain"
        )

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
        row = new_row(**fields)
        self._check_file()
        with self._errors("written"), self._write() as conn:
            entry = self._insert(conn, row)
        self._advance_head(entry)
        return entry

    def append_once(
        self, *, match: Callable[[Entry], bool], like: str, **fields: Any
    ) -> tuple[Entry, bool]:
        """Append an entry unless one of the same action already matches, both under the
        trail's write lock (two writers never both append). `like` narrows the search in SQL (a
        substring of the stored detail JSON); `match` decides on each candidate. Returns the
        existing entry and False, or the new one and True."""
        row = new_row(**fields)
        pattern = "%" + like.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        q = (
            sa.select(log)
            .where(log.c.action == row["action"], log.c.detail.like(pattern, escape="\\"))
            .order_by(log.c.id)
        )
        self._check_file()
        with self._errors("written"), self._write() as conn:
            for r in conn.execute(q).mappings():
                found = entry_from_row(r)
                if match(found):
                    return found, False
            entry = self._insert(conn, row)
        self._advance_head(entry)
        return entry, True

    def _advance_head(self, entry: Entry) -> None:
        """After the commit: the head record outside the store moves on to `entry`."""
        write_head(
            self.head_path,
            last_id=entry.id,
            last_hash=entry.hash,
            store=self.safe_url,
            force=self.mode == "init",  # a new chain: the head of the lost one is replaced
        )

    def start_chain(self) -> None:
        """`marag audit init`: an empty log starts at entry 1 (a head row left over from
        emptied entries is cleared); refused when the log holds entries."""
        with self._errors("initialised"), self._write() as conn:
            if conn.execute(sa.select(sa.func.count()).select_from(log)).scalar_one():
                raise AuditError(f"audit store {self.safe_url} holds entries: no new chain")
            conn.execute(head.delete())

    def _insert(self, conn: sa.Connection, row: dict[str, Any]) -> Entry:
        """Chain `row` onto the head and insert it (inside a write transaction)."""
        h = conn.execute(sa.select(head.c.last_id, head.c.last_hash)).first()
        last_id, last_hash = (h.last_id, h.last_hash) if h else (0, GENESIS)
        problem = self.mode != "init" and self._anchor_problem(read_head(self.head_path), conn)
        if problem:
            raise AuditError(f"audit store {self.safe_url}: {problem}; nothing was recorded")
        row["id"] = last_id + 1
        row["prev_hash"] = last_hash
        row["hash"] = entry_hash(row)  # over the canonical result; stored packed when long
        conn.execute(log.insert().values(**{**row, "result": pack_result(row["result"])}))
        if h:
            conn.execute(
                head.update().where(head.c.k == 1).values(last_id=row["id"], last_hash=row["hash"])
            )
        else:
            conn.execute(head.insert().values(k=1, last_id=row["id"], last_hash=row["hash"]))
        return entry_from_row(row)

    def get(self, entry_id: int) -> Entry | None:
        with self._read() as conn:
            r = conn.execute(sa.select(log).where(log.c.id == int(entry_id))).mappings().first()
        return entry_from_row(r) if r else None

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
            q = q.where(log.c.ts >= since_iso(since))
        if actions:
            q = q.where(log.c.action.in_(actions))
        if subject is not None:
            q = q.where(log.c.subject == int(subject))
        q = q.order_by(log.c.id.desc() if newest_first else log.c.id)
        if limit:
            q = q.limit(limit)
        with self._read() as conn:
            return [entry_from_row(r) for r in conn.execute(q).mappings()]

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

    def verify(self, *, find: str | None = None) -> Verdict:
        """Re-read the whole chain in id order, in one snapshot, and check every link, every hash,
        the head row inside the store and the head record outside it (engine.audit.anchor).
        A missing file or missing tables fail; nothing is created. `find`: an entry hash (or a
        prefix of at least 12 hex digits) the chain must contain."""
        with self._errors("read"):
            return self._verify(find)

    def _verify(self, find: str | None) -> Verdict:
        if self.file is not None and not self.file.exists():
            return Verdict(False, 0, None, note=f"no audit store at {self.file}")
        anchor = read_head(self.head_path)
        if not self.has_tables():
            where = self.file or self.safe_url
            said = anchor and f"; the head record {anchor.path} says {anchor.count} entries"
            return Verdict(
                False,
                0,
                None,
                note=f"the audit store at {where} has no audit tables (dropped, or never "
                f"initialised){said or ''}",
            )
        cols = [log.c[k] for k in FIELDS] + [log.c.hash]
        opts: dict[str, Any] = {"stream_results": True, "yield_per": 500}
        if self.dialect == "postgresql":
            opts["isolation_level"] = "REPEATABLE READ"
        with self.engine.connect().execution_options(**opts) as conn, conn.begin():
            h = conn.execute(sa.select(head.c.last_id, head.c.last_hash)).mappings().first()
            rows = conn.execute(sa.select(*cols).order_by(log.c.id)).mappings()
            verdict = verify_rows(map(unpacked, rows), h)
            if not verdict.ok:
                return verdict
            problem = self._anchor_problem(anchor, conn)
            if problem:
                return Verdict(False, verdict.entries, verdict.entries + 1, problem)
            if find is not None:
                return _found(conn, find, verdict)
        return verdict

    def export_rows(self) -> Iterator[dict[str, Any]]:
        """Every stored row (the columns the chain covers, and the hash) in id order, in one
        snapshot: what a JSON-lines backup holds (engine.audit.backup)."""
        cols = [log.c[k] for k in FIELDS] + [log.c.hash]
        opts: dict[str, Any] = {"stream_results": True, "yield_per": 500}
        if self.dialect == "postgresql":
            opts["isolation_level"] = "REPEATABLE READ"
        with self.engine.connect().execution_options(**opts) as conn, conn.begin():
            for r in conn.execute(sa.select(*cols).order_by(log.c.id)).mappings():
                yield unpacked(r)  # a JSON-lines backup holds the canonical result


def _found(conn: sa.Connection, find: str, verdict: Verdict) -> Verdict:
    """`verify --head HASH`: the verdict of a chain that holds; fails unless an entry has HASH."""
    text = find.strip().lower()
    if len(text) < 12:
        return Verdict(False, verdict.entries, None, note="--head needs at least 12 hex digits")
    q = sa.select(log.c.id, log.c.hash).where(log.c.hash.like(text + "%")).order_by(log.c.id)
    hit = conn.execute(q).first()
    if hit is None:
        return Verdict(
            False,
            verdict.entries,
            None,
            note=f"no entry of the audit chain has the hash {text} ({verdict.entries} entries "
            "verified): the trail was truncated or replaced since that hash was taken",
        )
    return Verdict(
        True,
        verdict.entries,
        note=f"audit chain holds: {verdict.entries} entries verified; entry #{hit.id} has the "
        f"hash {hit.hash}",
    )


def sa_url(url: str) -> str:
    """The URL as shown: the password hidden."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _path(p: Path | str | None) -> Path | None:
    return None if p is None else Path(p).expanduser()


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (resolved), None for an in-memory database."""
    parsed = sa.engine.make_url(url)
    db = parsed.database
    if (
        parsed.get_backend_name() != "sqlite"
        or not db
        or db == ":memory:"
        or db.startswith("file:")
    ):
        return None
    return Path(db).expanduser().resolve()


def _inode(file: Path | None) -> tuple[int, int] | None:
    try:
        st = file.stat() if file is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_dev, st.st_ino)


def _sqlite_read(dbapi_conn: Any, _record: Any) -> None:
    """A read-only connection (mode=ro): no journal-mode change, nothing written."""
    dbapi_conn.isolation_level = None
    dbapi_conn.execute("PRAGMA busy_timeout=60000")


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
