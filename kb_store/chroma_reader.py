"""Reads of the persistent Chroma knowledge base: `open_kb` and the `ChromaKB` reader.

This module owns the read side of the store that kb_store.chroma_kb builds: exact metadata `where`
filters (never similarity, except `query` for the dashboard and evaluation) for the engine through
the `KBReader` protocol, and the verified session table of the live generation
(kb_store.fact_table).

Embedded mode follows the generation pointer: every call re-reads CURRENT and reopens the
collection after a rebuild. Server mode (``chroma_url``) resolves the live collection by name; a
read that hits the instant of a rebuild's swap gets a not-found error and retries. Any number of
readers, in any number of threads (reopening is serialised by a lock).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chromadb.errors import InternalError, NotFoundError

from kb_store import fact_table
from kb_store.chroma_layout import (
    HASHES,
    MANIFEST,
    POINTER,
    http_client,
    persistent_client,
    release_client,
)
from kb_store.defaults import DEFAULT_COLLECTION
from kb_store.documents import KBDoc
from kb_store.embeddings import make_embedding_function
from kb_store.kb_health import KBCorruptError, one_line
from kb_store.kb_location import KBMissingError, current_generation, kb_exists, read_manifest

log = logging.getLogger("marag.kb")

RESOLVE_ATTEMPTS = 20  # server mode: waits for the live collection name during a swap
RESOLVE_WAIT_S = 0.1


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
        #: CURRENT's signature when it was last read (`_pointer_signature`)
        self._read_pointer: tuple[int, int, int, int] | None = None
        self._patients: list[int] | None = None
        self._lock = threading.RLock()  # reopening is shared by the threads of a dashboard
        self._facts: fact_table.FactTable | None = None  # the generation's session table
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

    def _pointer_signature(self) -> tuple[int, int, int, int] | None:
        """CURRENT's inode, size and times: a switch replaces the file (kb_store.generations
        `switch_pointer`), so an equal signature means the generation it names is unchanged."""
        try:
            st = os.stat(Path(self.kb_dir) / POINTER)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _collection(self) -> Any:
        if not self.chroma_url:
            sig = self._pointer_signature()
            if sig is not None and sig == self._read_pointer and self._col is not None:
                return self._col  # the pointer read last time is still in place: no re-read
            gen = current_generation(self.kb_dir)
            if gen is None:
                raise KBMissingError(f"knowledge base at {self.kb_dir} disappeared")
            if gen.name != self.generation:
                with self._lock:  # one reopen when several threads notice the new generation
                    if gen.name != self.generation:
                        self.close()
                        self._open()
            # the signature taken before the read: a switch after it makes the next call read
            self._read_pointer = sig
        return self._col

    def live_generation(self) -> str:
        """The generation a read would use now: embedded, the one CURRENT names (reopened here
        when another process switched it, so caches keyed by it follow a rebuild); with a server,
        the collection name (a swap there is noticed by the next read that fails)."""
        self._collection()
        return str(self.generation)

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

    # -- the session table of the live generation ---------------------------------------------
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
