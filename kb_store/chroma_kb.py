"""The persistent Chroma knowledge base: atomic, incremental build and exact-metadata reads.

This module owns the KB on disk (or on a Chroma server). It stores `build_documents(sessions)`
(kb_store.documents) in one collection with deterministic ids, and reads them back by exact
metadata `where` filters (never similarity) for the engine through the `KBReader` protocol.

Embedded layout (``kb_dir``)::

    CURRENT                 name of the live generation (one line), replaced atomically
    gen-000007/             Chroma persist directory of that generation
    gen-000007/manifest.json  embedding, collection, document and patient counts, build time
    gen-000007/hashes.json  {document id: content_hash} of that generation (the diff reads it)
    .build.lock             held (fcntl) by the one process building

Build rule: documents whose id and ``content_hash`` metadata are already in the live generation are
unchanged and are not embedded again; new ids are added, changed hashes updated (upsert), ids no
longer produced are deleted. When nothing changed, the live generation is kept as it is. Otherwise
the live generation is copied to a new generation directory, the changes are applied there, the
count is checked, and only then CURRENT is switched (write to a temp file + fsync + os.replace).
A failure at any point before the switch removes the new directory and leaves the previous KB
untouched; the previous generation is deleted after a successful switch. Readers re-read CURRENT on
every call and reopen when it changed.

Server mode (``chroma_url``, e.g. http://localhost:8000): `chromadb.HttpClient`; the build writes a
staging collection ``<name>__staging`` (unchanged documents copied with their stored embeddings, the
rest embedded), checks its count, then swaps names (live -> ``<name>__old``, staging -> live) and
drops the old one. Readers that hit the swap instant get a not-found error and retry.

One writer process per KB directory (Chroma's rule for persist directories); `.build.lock` turns a
second concurrent build into a clear error instead of a corrupt index. Any number of readers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chromadb.errors import ChromaError, InternalError, NotFoundError

from kb_store import fact_table
from kb_store.chroma_layout import (
    GEN_PREFIX,
    HASHES,
    MANIFEST,
    POINTER,
    http_client,
    persistent_client,
    release_client,
)
from kb_store.defaults import DEFAULT_COLLECTION
from kb_store.documents import KBDoc, build_documents
from kb_store.embeddings import make_embedding_function
from kb_store.kb_health import (
    KBCorruptError,
    KBWriteError,
    one_line,
    read_json_file,
    verify_generation,
)
from kb_store.model import Session

log = logging.getLogger(__name__)

LOCK = ".build.lock"
PARTIAL = ".partial"  # in a generation directory while a build writes it; removed before the switch
EMBED_BATCH = 1000  # texts per embedding call and per upsert (fewer, larger Chroma writes)
FORMAT_VERSION = 1
RESOLVE_ATTEMPTS = 20  # server mode: waits for the live collection name during a swap
RESOLVE_WAIT_S = 0.1
_EMBEDDING_BY_EF_NAME = {"marag-minilm": "minilm", "marag-hashing": "hashing"}


class KBMissingError(FileNotFoundError):
    """No knowledge base at the given location."""


class KBBusyError(ValueError):
    """Another process is building the same knowledge base."""


@dataclass(frozen=True)
class BuildStats:
    added: int
    updated: int
    unchanged: int
    deleted: int
    total: int
    seconds: float
    embedded: int = 0  # texts sent to the embedding function
    generation: str = ""  # live generation (embedded) or collection name (server)
    location: str = ""
    note: str = ""  # e.g. the live generation failed verification and was rebuilt

    def line(self) -> str:
        return (
            f"KB {self.location} [{self.generation}]: {self.total} documents "
            f"({self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.deleted} deleted; {self.embedded} embedded) in {self.seconds:.2f} s"
            + (f"; {self.note}" if self.note else "")
        )

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# locations
# ---------------------------------------------------------------------------------------------


def current_generation(kb_dir: str | Path) -> Path | None:
    """The live generation directory, or None when the KB does not exist."""
    kb_dir = Path(kb_dir)
    try:
        name = (kb_dir / POINTER).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    gen = kb_dir / name
    return gen if name.startswith(GEN_PREFIX) and gen.is_dir() else None


def read_manifest(gen: Path) -> dict:
    """manifest.json of a generation ({} when absent); a garbled one raises KBCorruptError."""
    try:
        return read_json_file(gen / MANIFEST)
    except FileNotFoundError:
        return {}


def kb_exists(
    kb_dir: str | Path, *, collection: str = DEFAULT_COLLECTION, chroma_url: str | None = None
) -> bool:
    if chroma_url:
        client = http_client(chroma_url)
        try:
            client.get_collection(collection)
            return True
        except Exception:  # noqa: BLE001 - chromadb raises NotFoundError / ValueError by version
            return False
    gen = current_generation(kb_dir)
    return gen is not None and read_manifest(gen).get("collection", collection) == collection


_HELD_LOCKS: set[Path] = set()  # KB directories whose build lock this process holds


@contextlib.contextmanager
def build_lock(kb_dir: str | Path) -> Iterator[None]:
    """The KB's build lock, held by this process (re-entrant): `marag kb build` takes it before
    ingest so that two builds never interleave reading sources and writing the KB."""
    key = Path(kb_dir).resolve()
    if key in _HELD_LOCKS:
        yield
        return
    with _write_lock(Path(kb_dir)):
        _HELD_LOCKS.add(key)
        try:
            yield
        finally:
            _HELD_LOCKS.discard(key)


@contextlib.contextmanager
def _write_lock(kb_dir: Path) -> Iterator[None]:
    if kb_dir.resolve() in _HELD_LOCKS:
        yield
        return
    kb_dir.mkdir(parents=True, exist_ok=True)
    with open(kb_dir / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KBBusyError(
                f"another process is building the KB at {kb_dir}; one writer at a time"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------


def build_kb(
    sessions: Iterable[Session],
    kb_dir: str | Path,
    *,
    embedding: str = "minilm",
    collection: str = DEFAULT_COLLECTION,
    chroma_url: str | None = None,
    embedding_function: Any = None,
    progress: Any = None,
) -> BuildStats:
    """Build or update the KB from sessions (visits assigned). Atomic; unchanged docs not re-embedded.

    `embedding_function` overrides `embedding` with a ready Chroma embedding function (tests use it
    to count or fail embedding calls). `progress(done, total)` is called before the first and after
    every embedding batch with the documents embedded so far of those to embed (the dashboard's
    progress bar)."""
    t0 = time.perf_counter()
    docs = build_documents(sessions)
    ef = (
        embedding_function if embedding_function is not None else make_embedding_function(embedding)
    )
    try:
        if chroma_url:
            return _build_server(docs, ef, chroma_url, collection, t0, Path(kb_dir), progress)
        return _build_embedded(docs, ef, Path(kb_dir), collection, t0, progress)
    except (KBBusyError, KBMissingError, KBCorruptError, fact_table.FactTableError):
        raise
    except (OSError, sqlite3.Error, ChromaError) as exc:  # disk full, permissions, Chroma I/O
        where = getattr(exc, "filename", None) or chroma_url or str(kb_dir)
        raise KBWriteError(
            f"{where}: cannot write the KB ({one_line(exc)}); the previous KB is intact"
        ) from None


def _diff(
    docs: Sequence[KBDoc], existing: dict[str, str]
) -> tuple[list[KBDoc], list[KBDoc], list[str], list[str]]:
    added = [d for d in docs if d.id not in existing]
    updated = [d for d in docs if d.id in existing and existing[d.id] != d.metadata["content_hash"]]
    unchanged = [d.id for d in docs if existing.get(d.id) == d.metadata["content_hash"]]
    new_ids = {d.id for d in docs}
    deleted = sorted(i for i in existing if i not in new_ids)
    return added, updated, unchanged, deleted


def _existing_hashes(col: Any, page: int) -> dict[str, str]:
    out: dict[str, str] = {}
    offset = 0
    while True:
        got = col.get(include=["metadatas"], limit=page, offset=offset)
        for i, m in zip(got["ids"], got["metadatas"], strict=True):
            out[i] = (m or {}).get("content_hash", "")
        if len(got["ids"]) < page:
            return out
        offset += page


def _write_docs(
    col: Any, docs: Sequence[KBDoc], ef: Any, max_batch: int, progress: Any = None
) -> int:
    """Embed and upsert `docs` in batches; returns the number of texts embedded. Documents go in
    length order (longest first), so each model batch holds texts of similar length and pads
    little, across chunks too (sentence-transformers sorts only within one call). `progress(done,
    total)` is called before the first and after every batch."""
    n = 0
    docs = sorted(docs, key=lambda d: (-len(d.text), d.id))
    step = max(1, min(EMBED_BATCH, max_batch))
    if progress is not None:
        progress(0, len(docs))
    for k in range(0, len(docs), step):
        chunk = docs[k : k + step]
        vecs = ef([d.text for d in chunk])
        n += len(chunk)
        col.upsert(
            ids=[d.id for d in chunk],
            documents=[d.text for d in chunk],
            metadatas=[d.metadata for d in chunk],
            embeddings=vecs,
        )
        if progress is not None:
            progress(n, len(docs))
    return n


def _delete(col: Any, ids: Sequence[str], max_batch: int) -> None:
    for k in range(0, len(ids), max_batch):
        col.delete(ids=list(ids[k : k + max_batch]))


def _next_generation(kb_dir: Path) -> Path:
    nums = [
        int(m.group(1))
        for p in kb_dir.glob(f"{GEN_PREFIX}*")
        if (m := re.fullmatch(rf"{GEN_PREFIX}(\d+)", p.name))
    ]
    return kb_dir / f"{GEN_PREFIX}{max(nums, default=0) + 1:06d}"


def _switch_pointer(kb_dir: Path, gen: Path) -> None:
    tmp = kb_dir / f".{POINTER}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(gen.name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, kb_dir / POINTER)
    with contextlib.suppress(OSError):
        fd = os.open(kb_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _build_embedded(
    docs: list[KBDoc], ef: Any, kb_dir: Path, collection: str, t0: float, progress: Any = None
) -> BuildStats:
    ef_name = ef.name()
    with _write_lock(kb_dir):
        live = current_generation(kb_dir)
        note = ""
        # remove leftovers of builds that died before switching (marked PARTIAL), and, when
        # CURRENT names a live generation, superseded ones; never a generation that may be the
        # only intact KB while CURRENT names a missing one
        dangling = live is None and (kb_dir / POINTER).exists()
        for stale in kb_dir.glob(f"{GEN_PREFIX}*"):
            if live is not None and stale.resolve() == live.resolve():
                continue
            if (stale / PARTIAL).exists() or (live is not None and not dangling):
                shutil.rmtree(stale, ignore_errors=True)
        if dangling:
            kept = sorted(p.name for p in kb_dir.glob(f"{GEN_PREFIX}*") if p.is_dir())
            log.warning("%s names no generation; kept %s untouched", kb_dir / POINTER, kept)
            note = f"CURRENT named a missing generation; kept {', '.join(kept) or 'nothing'}"
        try:
            manifest = read_manifest(live) if live else {}
        except KBCorruptError as exc:  # rebuilt from scratch below
            manifest, note = {}, f"{exc}: rebuilt"
        reuse = (
            bool(live)
            and manifest.get("ef") == ef_name
            and manifest.get("collection") == collection
        )
        if reuse and live is not None:
            health = verify_generation(live, collection)
            if not health.ok:  # never call a damaged generation "unchanged" or copy it
                reuse = False
                note = f"live {live.name} failed verification ({health.problems[0]}); rebuilt"
        existing: dict[str, str] = {}
        if reuse and live is not None and (live / HASHES).is_file():
            existing = read_json_file(live / HASHES)
        elif reuse and live is not None:
            client = persistent_client(live)
            try:
                existing = _existing_hashes(
                    client.get_collection(collection), client.get_max_batch_size()
                )
            finally:
                release_client(client)
        added, updated, unchanged, deleted = _diff(docs, existing)
        has_table = "fact_table" in manifest  # issue 16: a KB built before the table gets one
        if reuse and live is not None and not (added or updated or deleted) and has_table:
            return BuildStats(
                0,
                0,
                len(unchanged),
                0,
                len(docs),
                time.perf_counter() - t0,
                0,
                live.name,
                str(kb_dir),
            )
        new = _next_generation(kb_dir)
        client = None
        try:
            new.mkdir(parents=True)
            (new / PARTIAL).write_text(f"{os.getpid()}\n", encoding="utf-8")
            if reuse and live is not None:
                shutil.copytree(live, new, dirs_exist_ok=True)
            client = persistent_client(new)
            col = client.get_or_create_collection(collection, embedding_function=ef)
            batch = client.get_max_batch_size()
            embedded = _write_docs(col, [*added, *updated], ef, batch, progress)
            _delete(col, deleted, batch)
            count = col.count()
            if count != len(docs):
                raise RuntimeError(
                    f"KB build check failed: collection has {count} documents, expected {len(docs)}"
                )
            # --- issue 16: the columnar session table in the same generation, stamped on both sides
            facts_entry = fact_table.write_table(new, docs, new.name)
            col.modify(metadata=fact_table.stamp(facts_entry))
            # ---
            release_client(client)
            client = None
            patients = sorted({int(d.metadata["proj_id"]) for d in docs})
            hashes = {d.id: d.metadata["content_hash"] for d in docs}
            (new / HASHES).write_text(json.dumps(hashes, sort_keys=True), encoding="utf-8")
            (new / MANIFEST).write_text(
                json.dumps(
                    {
                        "format_version": FORMAT_VERSION,
                        "collection": collection,
                        "ef": ef_name,
                        "embedding": _EMBEDDING_BY_EF_NAME.get(ef_name, ef_name),
                        "documents": len(docs),
                        "patients": patients,
                        "fact_table": facts_entry,
                        "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    },
                    indent=1,
                ),
                encoding="utf-8",
            )
            (new / PARTIAL).unlink()
            _switch_pointer(kb_dir, new)
        except BaseException:
            if client is not None:
                release_client(client)
            shutil.rmtree(new, ignore_errors=True)
            raise
        if live is not None and live.resolve() != new.resolve():
            shutil.rmtree(live, ignore_errors=True)
        return BuildStats(
            len(added) if reuse else len(docs),
            len(updated),
            len(unchanged),
            len(deleted),
            len(docs),
            time.perf_counter() - t0,
            embedded,
            new.name,
            str(kb_dir),
            note,
        )


def _build_server(
    docs: list[KBDoc],
    ef: Any,
    url: str,
    collection: str,
    t0: float,
    kb_dir: Path,
    progress: Any = None,
) -> BuildStats:
    """Staging collection + swap; the session table is a new facts generation under
    ``<kb_dir>/facts`` (shared storage), staged first and published after the swap (issue 16)."""
    client = http_client(url)
    batch = client.get_max_batch_size()
    try:
        live = client.get_collection(collection, embedding_function=ef)
    except Exception:  # noqa: BLE001 - absent collection
        live = None
    existing = _existing_hashes(live, batch) if live is not None else {}
    added, updated, unchanged, deleted = _diff(docs, existing)
    if live is not None and not (added or updated or deleted):
        if not _server_table_agrees(kb_dir, live, docs):
            # documents unchanged, but the table is missing or stale: write and stamp it alone
            gen, entry = fact_table.stage_facts_generation(kb_dir, docs)
            live.modify(metadata=fact_table.stamp(entry))
            fact_table.publish_facts_generation(kb_dir, gen)
        return BuildStats(
            0, 0, len(unchanged), 0, len(docs), time.perf_counter() - t0, 0, collection, url
        )
    staging_name, old_name = f"{collection}__staging", f"{collection}__old"
    for name in (staging_name, old_name):
        with contextlib.suppress(Exception):
            client.delete_collection(name)
    facts_gen, facts_entry = fact_table.stage_facts_generation(kb_dir, docs)
    try:
        staging = client.create_collection(staging_name, embedding_function=ef)
    except BaseException:
        shutil.rmtree(facts_gen, ignore_errors=True)
        raise
    try:
        for k in range(0, len(unchanged), batch):  # copy unchanged docs with their stored vectors
            got = live.get(
                ids=unchanged[k : k + batch], include=["documents", "metadatas", "embeddings"]
            )
            staging.add(
                ids=got["ids"],
                documents=got["documents"],
                metadatas=got["metadatas"],
                embeddings=got["embeddings"],
            )
        embedded = _write_docs(staging, [*added, *updated], ef, batch, progress)
        if staging.count() != len(docs):
            raise RuntimeError(
                f"KB build check failed: staging has {staging.count()} documents, expected {len(docs)}"
            )
        staging.modify(metadata=fact_table.stamp(facts_entry))
    except BaseException:
        with contextlib.suppress(Exception):
            client.delete_collection(staging_name)
        shutil.rmtree(facts_gen, ignore_errors=True)
        raise
    if live is not None:
        live.modify(name=old_name)
    staging.modify(name=collection)
    # between the swap and this switch a reader sees a stamp mismatch (an error, retried), never
    # the new collection with the old table
    fact_table.publish_facts_generation(kb_dir, facts_gen)
    if live is not None:
        client.delete_collection(old_name)
    return BuildStats(
        len(added),
        len(updated),
        len(unchanged),
        len(deleted),
        len(docs),
        time.perf_counter() - t0,
        embedded,
        collection,
        url,
    )


def _server_table_agrees(kb_dir: Path, col: Any, docs: Sequence[KBDoc]) -> bool:
    gen = fact_table.current_facts_generation(kb_dir)
    if gen is None:
        return False
    entry = fact_table.read_entry(gen)
    meta = col.metadata or {}
    return (
        entry.get("generation") == gen.name
        and entry.get("digest") == fact_table.docs_digest(docs)
        and meta.get(fact_table.STAMP_GENERATION) == gen.name
        and meta.get(fact_table.STAMP_DIGEST) == entry.get("digest")
        and (gen / fact_table.TABLE_FILE).is_file()
    )


# ---------------------------------------------------------------------------------------------
# read
# ---------------------------------------------------------------------------------------------


def open_kb(
    kb_dir: str | Path,
    *,
    embedding: str = "minilm",
    collection: str = DEFAULT_COLLECTION,
    chroma_url: str | None = None,
) -> ChromaKB:
    """Open the KB for reading; raises KBMissingError when it was never built."""
    if not kb_exists(kb_dir, collection=collection, chroma_url=chroma_url):
        where = chroma_url or str(kb_dir)
        raise KBMissingError(
            f"no knowledge base (collection {collection!r}) at {where}; build it with `marag kb build`"
        )
    return ChromaKB(kb_dir, embedding=embedding, collection=collection, chroma_url=chroma_url)


class ChromaKB:
    """KBReader over the Chroma collection. Exact metadata filters only; similarity via `query`.

    The embedded store follows CURRENT: every call checks the pointer and reopens the collection
    after a rebuild. The embedding function used for similarity queries is the one the KB was
    built with (recorded in the manifest); a different requested `embedding` is logged."""

    def __init__(
        self,
        kb_dir: str | Path,
        *,
        embedding: str = "minilm",
        collection: str = DEFAULT_COLLECTION,
        chroma_url: str | None = None,
    ):
        self.kb_dir = Path(kb_dir)
        self.collection_name = collection
        self.chroma_url = chroma_url
        self.requested_embedding = embedding
        self.embedding = embedding
        self.generation: str | None = None
        self._client: Any = None
        self._col: Any = None
        self._patients: list[int] | None = None
        self._lock = threading.RLock()  # reopening is shared by the threads of a dashboard
        self._facts: fact_table.FactTable | None = None  # issue 16: the generation's session table
        self._open()

    def excluded_sessions(self) -> list[dict]:
        """Sessions rejected at ingest, written beside the KB at build (kb_store.exclusions)."""
        from kb_store.exclusions import read_excluded

        return read_excluded(self.kb_dir)

    @staticmethod
    def exists(
        kb_dir: str | Path, *, collection: str = DEFAULT_COLLECTION, chroma_url: str | None = None
    ) -> bool:
        return kb_exists(kb_dir, collection=collection, chroma_url=chroma_url)

    # -- connection ---------------------------------------------------------------------------
    def _open(self) -> None:
        self._patients = None
        self._facts = None
        if self.chroma_url:
            self._client = http_client(self.chroma_url)
            self.generation = self.collection_name
            # a rebuild swaps the collection by two renames: between them the name is briefly
            # absent, so wait a moment for the live one
            for attempt in range(RESOLVE_ATTEMPTS):
                try:
                    self._col = self._client.get_collection(
                        self.collection_name,
                        embedding_function=make_embedding_function(self.embedding),
                    )
                    return
                except NotFoundError:
                    if attempt == RESOLVE_ATTEMPTS - 1:
                        raise
                    time.sleep(RESOLVE_WAIT_S)
            return
        gen = current_generation(self.kb_dir)
        if gen is None:
            raise KBMissingError(
                f"no knowledge base at {self.kb_dir}; build it with `marag kb build`"
            )
        manifest = read_manifest(gen)
        built = manifest.get("embedding", self.requested_embedding)
        if built != self.requested_embedding:
            log.warning(
                "KB at %s was built with embedding %r, not %r: similarity queries use %r",
                self.kb_dir,
                built,
                self.requested_embedding,
                built,
            )
        self.embedding = built if built in ("minilm", "hashing") else self.requested_embedding
        self._manifest = manifest
        try:
            self._client = persistent_client(gen)
            self._col = self._client.get_collection(
                self.collection_name, embedding_function=make_embedding_function(self.embedding)
            )
        except Exception as exc:  # noqa: BLE001 - chromadb InternalError / sqlite errors
            if self._client is not None:
                release_client(self._client)
            self._client = self._col = None
            raise KBCorruptError(
                f"{gen / 'chroma.sqlite3'}: the KB cannot be opened ({one_line(exc)}); "
                "check it with `marag kb verify`, rebuild with `marag kb build`"
            ) from None
        self.generation = gen.name

    def _collection(self) -> Any:
        if not self.chroma_url:
            gen = current_generation(self.kb_dir)
            if gen is None:
                raise KBMissingError(f"knowledge base at {self.kb_dir} disappeared")
            if gen.name != self.generation:
                with self._lock:  # one reopen when several threads notice the new generation
                    if gen.name != self.generation:
                        self.close()
                        self._open()
        return self._col

    def close(self) -> None:
        if self._client is not None and not self.chroma_url:
            release_client(self._client)
        self._client = self._col = None

    def _with_retry(self, op: Any) -> Any:
        """Run `op(collection)`; when the collection vanished under it (a rebuild by another
        process swapped the server collection, or replaced the embedded generation), re-resolve
        the live collection and run it once more."""
        col = self._collection()
        try:
            return op(col)
        except (NotFoundError, InternalError, ValueError) as exc:
            if isinstance(exc, KBCorruptError | KBMissingError):
                raise
            log.info("KB collection changed under a read (%s); re-resolving", one_line(exc))
            with self._lock:
                if self._col is col:  # another thread may have re-resolved already
                    self.close()
                    self._open()
            return op(self._collection())

    # -- issue 16: the session table of the live generation ------------------------------------
    def fact_table(self) -> fact_table.FactTable | None:
        """The verified session table of the live generation (None for a KB built before the
        table existed: the engine then reads documents). Raises `FactTableMismatchError` when the
        table and the collection disagree (generation or content digest)."""
        col = self._collection()
        if self.chroma_url:
            gen = fact_table.current_facts_generation(self.kb_dir)
            meta = col.metadata or {}
            if gen is None:
                if meta.get(fact_table.STAMP_GENERATION):
                    raise fact_table.FactTableError(
                        f"the collection {self.collection_name!r} at {self.chroma_url} names session "
                        f"table generation {meta[fact_table.STAMP_GENERATION]}, but "
                        f"{fact_table.facts_root(self.kb_dir)} has none (is the KB directory the "
                        "shared one the build wrote?)"
                    )
                return None
            if self._facts is not None and self._facts.generation == gen.name:
                return self._facts
            # the collection object may predate a swap: read its metadata afresh
            meta = self._client.get_collection(self.collection_name).metadata or {}
            self._facts = fact_table.open_table(
                gen,
                fact_table.read_entry(gen),
                meta,
                generation=gen.name,
                manifest_path=gen / fact_table.MANIFEST,
                collection_where=f"{self.chroma_url} {self.collection_name!r}",
            )
            return self._facts
        if self._facts is None:
            gen = self.kb_dir / str(self.generation)
            entry = self._manifest.get("fact_table")
            if entry is None:
                return None
            hashes_path = gen / HASHES
            hashes = (
                json.loads(hashes_path.read_text(encoding="utf-8"))
                if hashes_path.is_file()
                else None
            )
            self._facts = fact_table.open_table(
                gen,
                entry,
                col.metadata or {},
                generation=str(self.generation),
                manifest_path=gen / MANIFEST,
                collection_where=f"{gen} {self.collection_name!r}",
                hashes=hashes,
                hashes_path=hashes_path,
            )
        return self._facts

    # -- KBReader -----------------------------------------------------------------------------
    def patient_ids(self) -> list[int]:
        col = self._collection()
        if self.chroma_url and self._patients is not None:
            # the cache belongs to one collection id: a rebuild elsewhere makes a new one
            try:
                live_id = self._client.get_collection(self.collection_name).id
            except NotFoundError:
                live_id = None
            if live_id != col.id:
                self.close()
                self._open()
        if self._patients is None:
            if not self.chroma_url and "patients" in getattr(self, "_manifest", {}):
                self._patients = [int(p) for p in self._manifest["patients"]]
            else:
                self._patients = self._with_retry(self._scan_patients)
        return list(self._patients)

    def _scan_patients(self, col: Any) -> list[int]:
        ids: set[int] = set()
        page = self._client.get_max_batch_size()
        offset = 0
        while True:
            got = col.get(include=["metadatas"], limit=page, offset=offset)
            ids.update(int(m["proj_id"]) for m in got["metadatas"])
            if len(got["ids"]) < page:
                return sorted(ids)
            offset += page

    def session_docs(self, proj_id: int, instruments: Sequence[str] | None = None) -> list[KBDoc]:
        return self._fetch(proj_id, "session", instruments)

    def longitudinal_docs(
        self, proj_id: int, instruments: Sequence[str] | None = None
    ) -> list[KBDoc]:
        """The patient's per-instrument longitudinal documents (granularity == longitudinal)."""
        return self._fetch(proj_id, "longitudinal", instruments)

    def get_docs(self, ids: Sequence[str]) -> list[KBDoc]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        got = self._with_retry(lambda c: c.get(ids=ids, include=["documents", "metadatas"]))
        by_id = {
            i: KBDoc(i, t, dict(m))
            for i, t, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        return [by_id[i] for i in ids if i in by_id]

    def count(self) -> int:
        return int(self._with_retry(lambda c: c.count()))

    def query(
        self, text: str, n_results: int = 5, where: dict | None = None
    ) -> list[tuple[KBDoc, float]]:
        """Similarity search (dashboard/evaluation only; the pipeline never uses it)."""
        res = self._with_retry(
            lambda c: c.query(
                query_texts=[text],
                n_results=n_results,
                where=where,
                include=["documents", "metadatas", "distances"],
            )
        )
        return [
            (KBDoc(i, t, dict(m)), float(d))
            for i, t, m, d in zip(
                res["ids"][0],
                res["documents"][0],
                res["metadatas"][0],
                res["distances"][0],
                strict=True,
            )
        ]

    # -- helpers ------------------------------------------------------------------------------
    def _fetch(
        self, proj_id: int, granularity: str, instruments: Sequence[str] | None
    ) -> list[KBDoc]:
        """Exact metadata match. Chroma evaluates the selective clause (proj_id, a handful of
        documents); granularity and instrument, which match about half of a large collection
        each, are then checked exactly here: at 20,000 documents the full `$and` filter took
        187 ms per patient in Chroma, `{"proj_id": p}` 24 ms (bench/README.md)."""
        got = self._with_retry(
            lambda c: c.get(where={"proj_id": int(proj_id)}, include=["documents", "metadatas"])
        )
        wanted = set(instruments or ())
        docs = [
            KBDoc(i, t, dict(m))
            for i, t, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
            if m.get("granularity") == granularity
            and (not wanted or m.get("instrument") in wanted)
            and m.get("proj_id") == int(proj_id)
        ]
        return sorted(
            docs, key=lambda d: (d.metadata.get("visit", 0), d.metadata["instrument"], d.id)
        )

    def all_docs(
        self, granularities: Sequence[str] = ("session", "note"), *, embeddings: bool = False
    ) -> list[tuple[KBDoc, Any]]:
        """Every document of the given granularities with its stored embedding (None unless
        `embeddings`), in id order. For free-text search (engine.search), never the pipeline."""
        col = self._collection()
        page = self._client.get_max_batch_size()
        include = ["documents", "metadatas", *(["embeddings"] if embeddings else [])]
        wanted = set(granularities)
        out: list[tuple[KBDoc, Any]] = []
        offset = 0
        while True:
            got = col.get(include=include, limit=page, offset=offset)
            embs = got.get("embeddings") if embeddings else None
            for n, (i, t, m) in enumerate(
                zip(got["ids"], got["documents"], got["metadatas"], strict=True)
            ):
                if m.get("granularity") in wanted:
                    out.append((KBDoc(i, t, dict(m)), None if embs is None else embs[n]))
            if len(got["ids"]) < page:
                break
            offset += page
        return sorted(out, key=lambda x: x[0].id)

    def embed_query(self, text: str) -> Any:
        """The query's vector from the embedding function the KB was built with."""
        return make_embedding_function(self.embedding)([text])[0]
