"""Health of a built knowledge base: verification, and one-line errors naming the broken file.

Owns `verify_generation` / `verify_kb` (what `marag kb verify` runs and what a build checks before
it calls a live generation "unchanged" or copies it), the error types a damaged or unwritable KB
raises (each a `ValueError` whose message is one line naming the file, so the CLI exits 2), and
`one_line` for turning a Chroma / SQLite / OS error into such a line.

A generation is healthy when its manifest.json and hashes.json parse, chroma.sqlite3 passes SQLite's
`PRAGMA quick_check`, the collection opens, and it holds exactly the documents of hashes.json (the
count the manifest records). quick_check reads the whole database file (milliseconds for the
default sample, seconds for a 1 GB KB).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_store.chroma_layout import (
    GEN_PREFIX,
    HASHES,
    MANIFEST,
    POINTER,
    http_client,
    persistent_client,
    release_client,
)

SQLITE = "chroma.sqlite3"


def kb_read_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a read of a KB that vanished or broke under its reader can raise (beyond the
    ValueErrors of this module): the dashboard catches them and reopens the KB."""
    from chromadb.errors import ChromaError

    return (OSError, sqlite3.Error, ChromaError)


class KBCorruptError(ValueError):
    """A KB file is unreadable (garbled JSON, truncated or corrupt chroma.sqlite3)."""


class KBWriteError(ValueError):
    """A build could not write the KB (disk full, permission); the previous KB is intact."""


def one_line(exc: BaseException) -> str:
    """The message of an exception on one line (Chroma's Rust errors span several)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def read_json_file(path: Path) -> Any:
    """json.loads of a KB file; a garbled file raises KBCorruptError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KBCorruptError(
            f"{path}: the KB file is garbled ({one_line(exc)}); rebuild with `marag kb build`"
        ) from None


@dataclass
class Verification:
    location: str
    generation: str = ""
    documents: int = 0
    patients: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if self.ok:
            return (
                f"KB {self.location} [{self.generation}]: OK, {self.documents} documents, "
                f"{self.patients} patients"
            )
        return f"KB {self.location} [{self.generation or '-'}]: {self.problems[0]}"


def sqlite_problem(db: Path) -> str | None:
    """None when chroma.sqlite3 passes PRAGMA quick_check, else one line naming the file."""
    if not db.is_file():
        return f"{db}: missing"
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"{db}: corrupt or truncated ({one_line(exc)})"
    if rows != [("ok",)]:
        return f"{db}: corrupt ({one_line(Exception(rows[0][0] if rows else 'no result'))})"
    return None


def verify_generation(gen: Path, collection: str) -> Verification:
    """Check one embedded generation (see the module docstring); never raises for a damaged KB."""
    out = Verification(str(gen.parent), gen.name)
    try:
        manifest = read_json_file(gen / MANIFEST)
        hashes_path = gen / HASHES
        # hashes.json is an index the diff can rebuild from the collection: optional
        hashes = read_json_file(hashes_path) if hashes_path.is_file() else None
    except FileNotFoundError as exc:
        out.problems.append(f"{exc.filename}: missing")
        return out
    except KBCorruptError as exc:
        out.problems.append(str(exc))
        return out
    if not isinstance(manifest, dict) or not isinstance(hashes, dict | None):
        out.problems.append(f"{gen}: manifest.json or hashes.json is not a JSON object")
        return out
    problem = sqlite_problem(gen / SQLITE)
    if problem:
        out.problems.append(problem)
        return out
    client = None
    try:
        client = persistent_client(gen)
        col = client.get_collection(manifest.get("collection", collection))
        count = int(col.count())
        ids: set[str] = set()
        page = client.get_max_batch_size()
        offset = 0
        while True:
            got = col.get(include=[], limit=page, offset=offset)
            ids.update(got["ids"])
            if len(got["ids"]) < page:
                break
            offset += page
    except Exception as exc:  # noqa: BLE001 - chromadb raises InternalError/NotFoundError/...
        out.problems.append(f"{gen / SQLITE}: cannot be read ({one_line(exc)})")
        return out
    finally:
        if client is not None:
            release_client(client)
    expected = manifest.get("documents", len(hashes) if hashes is not None else count)
    want = set(hashes) if hashes is not None else ids
    if count != expected or ids != want:
        missing, extra = len(want - ids), len(ids - want)
        out.problems.append(
            f"{gen / SQLITE}: holds {count} documents, the manifest says {expected} "
            f"({missing} missing, {extra} unexpected)"
        )
    out.documents = count
    out.patients = len(manifest.get("patients", []))
    return out


def verify_kb(
    kb_dir: str | Path, *, collection: str = "marag_sessions", chroma_url: str | None = None
) -> Verification:
    """Verify the live KB (embedded: the generation CURRENT names; server: the collection)."""
    if chroma_url:
        out = Verification(chroma_url, collection)
        try:
            client = http_client(chroma_url)
            col = client.get_collection(collection)
            out.documents = int(col.count())
            metas = col.get(include=["metadatas"])["metadatas"]
            out.patients = len({m.get("proj_id") for m in metas})
        except Exception as exc:  # noqa: BLE001
            out.problems.append(f"collection {collection!r} at {chroma_url}: {one_line(exc)}")
        return out
    kb_dir = Path(kb_dir)
    pointer = kb_dir / POINTER
    if not pointer.is_file():
        return Verification(str(kb_dir), problems=[f"{pointer}: missing (no KB built here)"])
    name = pointer.read_text(encoding="utf-8", errors="replace").strip()
    gen = kb_dir / name
    if not name.startswith(GEN_PREFIX) or not gen.is_dir():
        return Verification(
            str(kb_dir), problems=[f"{pointer}: names {name!r}, which is not a generation here"]
        )
    return verify_generation(gen, collection)
