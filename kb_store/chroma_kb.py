"""The persistent Chroma knowledge base: where it is, and its atomic, incremental build.

This module owns writing the KB on disk (or on a Chroma server): `build_kb` stores
`build_documents(sessions)` (kb_store.documents) in one collection with deterministic ids. Reads
(`open_kb`, `ChromaKB`: exact metadata `where` filters for the engine through the `KBReader`
protocol) are kb_store.chroma_reader; where the live KB is (`current_generation`, `kb_exists`,
`KBMissingError`) is kb_store.kb_location, the generation pointer kb_store.generations, and the
build lock kb_store.kb_lock.

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
import json
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chromadb.errors import ChromaError

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
from kb_store.generations import next_generation, switch_pointer
from kb_store.kb_health import (
    KBCorruptError,
    KBWriteError,
    one_line,
    read_json_file,
    verify_generation,
)
from kb_store.kb_location import KBMissingError, current_generation, read_manifest
from kb_store.kb_lock import KBBusyError, write_lock
from kb_store.model import Session

log = logging.getLogger("marag.kb")

PARTIAL = ".partial"  # in a generation directory while a build writes it; removed before the switch
EMBED_BATCH = 1000  # texts per embedding call and per upsert (fewer, larger Chroma writes)
FORMAT_VERSION = 1
_EMBEDDING_BY_EF_NAME = {"marag-minilm": "minilm", "marag-hashing": "hashing"}


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


def _build_embedded(
    docs: list[KBDoc], ef: Any, kb_dir: Path, collection: str, t0: float, progress: Any = None
) -> BuildStats:
    ef_name = ef.name()
    with write_lock(kb_dir):
        live = current_generation(kb_dir)
        note = _remove_stale_generations(kb_dir, live)
        manifest, reuse, note = _reusable_live(live, ef_name, collection, note)
        existing = _live_hashes(live, collection) if reuse and live is not None else {}
        added, updated, unchanged, deleted = _diff(docs, existing)
        has_table = "fact_table" in manifest  # a KB built before the session table gets one
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
        new = next_generation(kb_dir)
        embedded = _write_generation(
            kb_dir,
            new,
            live if reuse else None,
            docs,
            ef,
            ef_name=ef_name,
            collection=collection,
            changed=[*added, *updated],
            deleted=deleted,
            progress=progress,
        )
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


def _remove_stale_generations(kb_dir: Path, live: Path | None) -> str:
    """Remove leftovers of builds that died before switching (marked PARTIAL), and, when CURRENT
    names a live generation, superseded ones; never a generation that may be the only intact KB
    while CURRENT names a missing one. Returns the build's note ("" when nothing to say)."""
    dangling = live is None and (kb_dir / POINTER).exists()
    for stale in kb_dir.glob(f"{GEN_PREFIX}*"):
        if live is not None and stale.resolve() == live.resolve():
            continue
        if (stale / PARTIAL).exists() or (live is not None and not dangling):
            shutil.rmtree(stale, ignore_errors=True)
    if not dangling:
        return ""
    kept = sorted(p.name for p in kb_dir.glob(f"{GEN_PREFIX}*") if p.is_dir())
    log.warning("%s names no generation; kept %s untouched", kb_dir / POINTER, kept)
    return f"CURRENT named a missing generation; kept {', '.join(kept) or 'nothing'}"


def _reusable_live(
    live: Path | None, ef_name: str, collection: str, note: str
) -> tuple[dict, bool, str]:
    """(manifest, reuse, note): whether the build may start from the live generation (same
    embedding function and collection, and it passes verification)."""
    try:
        manifest = read_manifest(live) if live else {}
    except KBCorruptError as exc:  # rebuilt from scratch
        manifest, note = {}, f"{exc}: rebuilt"
    reuse = (
        bool(live) and manifest.get("ef") == ef_name and manifest.get("collection") == collection
    )
    if reuse and live is not None:
        health = verify_generation(live, collection)
        if not health.ok:  # never call a damaged generation "unchanged" or copy it
            reuse = False
            note = f"live {live.name} failed verification ({health.problems[0]}); rebuilt"
    return manifest, reuse, note


def _live_hashes(live: Path, collection: str) -> dict[str, str]:
    """{document id: content_hash} of the live generation: hashes.json, or a scan without it."""
    if (live / HASHES).is_file():
        return read_json_file(live / HASHES)
    client = persistent_client(live)
    try:
        return _existing_hashes(client.get_collection(collection), client.get_max_batch_size())
    finally:
        release_client(client)


def _write_generation(
    kb_dir: Path,
    new: Path,
    base: Path | None,
    docs: Sequence[KBDoc],
    ef: Any,
    *,
    ef_name: str,
    collection: str,
    changed: Sequence[KBDoc],
    deleted: Sequence[str],
    progress: Any,
) -> int:
    """Write generation `new` (a copy of `base` when given, with `changed` upserted and `deleted`
    removed), check its count, write its session table and files, then switch CURRENT to it. Any
    failure removes `new` and leaves the live KB untouched. Returns the number of texts embedded."""
    client = None
    try:
        new.mkdir(parents=True)
        (new / PARTIAL).write_text(f"{os.getpid()}\n", encoding="utf-8")
        if base is not None:
            shutil.copytree(base, new, dirs_exist_ok=True)
        client = persistent_client(new)
        col = client.get_or_create_collection(collection, embedding_function=ef)
        batch = client.get_max_batch_size()
        embedded = _write_docs(col, changed, ef, batch, progress)
        _delete(col, deleted, batch)
        count = col.count()
        if count != len(docs):
            raise RuntimeError(
                f"KB build check failed: collection has {count} documents, expected {len(docs)}"
            )
        # the columnar session table in the same generation, stamped on both sides
        facts_entry = fact_table.write_table(new, docs, new.name)
        col.modify(metadata=fact_table.stamp(facts_entry))
        release_client(client)
        client = None
        _write_generation_files(new, docs, collection, ef_name, facts_entry)
        (new / PARTIAL).unlink()
        switch_pointer(kb_dir, new.name)
    except BaseException:
        if client is not None:
            release_client(client)
        shutil.rmtree(new, ignore_errors=True)
        raise
    return embedded


def _write_generation_files(
    new: Path, docs: Sequence[KBDoc], collection: str, ef_name: str, facts_entry: dict[str, Any]
) -> None:
    """hashes.json and manifest.json of a new generation."""
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
    ``<kb_dir>/facts`` (shared storage), staged first and published after the swap."""
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
