"""The columnar session table: one Parquet row per session document, written with the Chroma collection.

Chroma keeps the documents (text, provenance, similarity search); facts for plans, cohort
statistics and the dashboard's tables are read from this table, which answers a question over
10,000 patients in milliseconds instead of fetching 80,000 documents (bench/README.md, "Facts").

The table is derived from the same `KBDoc` metadata the collection stores (never from prose), in
the same build, and both carry the same two stamps:

- the **generation** id (embedded mode: the generation directory ``gen-000007``; server mode: the
  facts generation ``gen-000007`` under ``<kb_dir>/facts``), and
- the **digest**: sha256 of the sorted ``"<doc id>:<content_hash>"`` lines of the session
  documents (the content hashes of ``hashes.json`` / the collection metadata).

They are recorded in the Parquet file's key-value metadata, in ``manifest.json`` (``fact_table``)
and in the Chroma collection's metadata (``marag_generation``, ``marag_facts_digest``). `open_table`
checks that all agree, and loading the rows recomputes the digest from the rows themselves: any
disagreement raises `FactTableMismatchError` naming the files, so a stale or foreign table can never
give facts for a different KB generation.

Layout. Embedded: ``<kb_dir>/gen-N/sessions.parquet`` beside the Chroma files (one atomic
generation). Server mode (Chroma server, table on shared storage): ``<kb_dir>/facts/CURRENT`` names
``<kb_dir>/facts/gen-N/`` holding ``sessions.parquet`` and ``manifest.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kb_store.documents import KBDoc
from kb_store.generations import GEN_PREFIX, live_generation, next_generation, switch_pointer
from kb_store.profiles import DOMAINS

TABLE_FILE = "sessions.parquet"
FACTS_DIR = "facts"  # server mode: <kb_dir>/facts/{CURRENT, gen-N/}
MANIFEST = "manifest.json"
META_KEY = b"marag"
FORMAT_VERSION = 1
STAMP_GENERATION = "marag_generation"  # Chroma collection metadata keys
STAMP_DIGEST = "marag_facts_digest"

#: Fixed columns, in file order; then score_<domain> and missing_<domain> per domain.
BASE_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("doc_id", pa.string()),
    ("content_hash", pa.string()),
    ("proj_id", pa.int64()),
    ("visit", pa.int64()),
    ("date", pa.string()),
    ("instrument", pa.string()),
    ("profile", pa.string()),
    ("condition", pa.string()),
    ("source", pa.string()),
    ("items_json", pa.string()),
    ("pdq8_si", pa.float64()),
)
_DOMAIN_KEY = re.compile(r"(score|missing)_(\w+)")


class FactTableError(ValueError):
    """The session table is missing or unreadable where the KB says it should be."""


class FactTableMismatchError(FactTableError):
    """The session table and the Chroma collection are not of the same generation / content."""


def digest(pairs: Iterable[tuple[str, str]]) -> str:
    """sha256 of the sorted '<doc id>:<content_hash>' lines."""
    h = hashlib.sha256()
    for i, c in sorted(pairs):
        h.update(f"{i}:{c}\n".encode())
    return h.hexdigest()


def session_docs(docs: Iterable[KBDoc]) -> list[KBDoc]:
    return [d for d in docs if d.metadata.get("granularity") == "session"]


def docs_digest(docs: Iterable[KBDoc]) -> str:
    return digest((d.id, str(d.metadata.get("content_hash", ""))) for d in session_docs(docs))


def hashes_digest(hashes: Mapping[str, str]) -> str:
    """Digest of the session entries of a {doc id: content_hash} map (hashes.json)."""
    return digest((i, h) for i, h in hashes.items() if i.startswith("s-"))


def _domains(docs: Sequence[KBDoc]) -> list[str]:
    found: set[str] = set()
    for d in docs:
        for k in d.metadata:
            m = _DOMAIN_KEY.fullmatch(k)
            if m:
                found.add(m.group(2))
    return [*DOMAINS, *sorted(found - set(DOMAINS))]


def to_arrow(docs: Iterable[KBDoc]) -> pa.Table:
    """The session documents' metadata as an Arrow table (one row per session document)."""
    rows = sorted(session_docs(docs), key=lambda d: (int(d.metadata["proj_id"]), d.id))
    doms = _domains(rows)
    cols: dict[str, list[Any]] = {name: [] for name, _ in BASE_COLUMNS}
    for dom in doms:
        cols[f"score_{dom}"] = []
        cols[f"missing_{dom}"] = []
    for d in rows:
        m = d.metadata
        cols["doc_id"].append(d.id)
        cols["content_hash"].append(str(m.get("content_hash", "")))
        cols["proj_id"].append(int(m["proj_id"]))
        cols["visit"].append(int(m["visit"]))
        cols["date"].append(str(m["date"]))
        cols["instrument"].append(str(m["instrument"]))
        cols["profile"].append(str(m["profile"]))
        cols["condition"].append(str(m.get("condition", "") or ""))
        cols["source"].append(str(m.get("source", "")))
        cols["items_json"].append(str(m.get("items_json") or "{}"))
        cols["pdq8_si"].append(m.get("pdq8_si"))
        for dom in doms:
            s = m.get(f"score_{dom}")
            cols[f"score_{dom}"].append(None if s is None else float(s))
            miss = m.get(f"missing_{dom}")
            cols[f"missing_{dom}"].append(None if miss is None else int(miss))
    fields = [pa.field(n, t) for n, t in BASE_COLUMNS]
    for dom in doms:
        fields += [pa.field(f"score_{dom}", pa.float64()), pa.field(f"missing_{dom}", pa.int64())]
    return pa.table(cols, schema=pa.schema(fields))


def write_table(directory: Path, docs: Sequence[KBDoc], generation: str) -> dict[str, Any]:
    """Write `<directory>/sessions.parquet` (temp file + fsync + os.replace); returns the manifest
    entry {file, generation, digest, rows, format_version}."""
    table = to_arrow(docs)
    entry = {
        "file": TABLE_FILE,
        "generation": generation,
        "digest": docs_digest(docs),
        "rows": table.num_rows,
        "format_version": FORMAT_VERSION,
    }
    table = table.replace_schema_metadata({META_KEY: json.dumps(entry).encode()})
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{TABLE_FILE}.tmp"
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, directory / TABLE_FILE)
    return entry


def stamp(entry: Mapping[str, Any]) -> dict[str, str]:
    """Chroma collection metadata that ties the collection to the table's generation and content."""
    return {STAMP_GENERATION: str(entry["generation"]), STAMP_DIGEST: str(entry["digest"])}


def file_entry(path: Path) -> dict[str, Any]:
    """The stamps recorded inside a Parquet file (schema metadata only; rows are not read)."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except FileNotFoundError:
        raise FactTableError(f"session table {path} is missing") from None
    except (OSError, pa.ArrowInvalid) as e:
        raise FactTableError(f"session table {path} cannot be read: {e}") from None
    try:
        return json.loads(meta[META_KEY])
    except (KeyError, ValueError):
        raise FactTableError(f"session table {path} has no marag metadata") from None


@dataclass
class FactTable:
    """A verified session table. `frame()` loads the rows once (and re-verifies their digest)."""

    path: Path
    generation: str
    digest: str
    rows: int
    _frame: Any = field(default=None, repr=False)

    def frame(self) -> Any:
        """The rows as a pandas DataFrame (cached; do not mutate)."""
        if self._frame is None:
            tbl = pq.read_table(self.path)
            got = digest(
                zip(
                    tbl.column("doc_id").to_pylist(),
                    tbl.column("content_hash").to_pylist(),
                    strict=True,
                )
            )
            if got != self.digest or tbl.num_rows != self.rows:
                raise FactTableMismatchError(
                    f"session table {self.path}: its rows (digest {got[:12]}, {tbl.num_rows} rows) "
                    f"do not match the generation's record (digest {self.digest[:12]}, "
                    f"{self.rows} rows); rebuild the KB with `marag kb build`"
                )
            self._frame = tbl.to_pandas()
        return self._frame

    @classmethod
    def from_docs(cls, docs: Sequence[KBDoc], generation: str = "memory") -> FactTable:
        """An in-memory table over documents (InMemoryKB and tests); nothing is written."""
        t = cls(Path(f"<memory:{generation}>"), generation, docs_digest(docs), 0)
        tbl = to_arrow(docs)
        t.rows = tbl.num_rows
        t._frame = tbl.to_pandas()
        return t


def open_table(
    directory: Path,
    entry: Mapping[str, Any] | None,
    collection_meta: Mapping[str, Any] | None,
    *,
    generation: str,
    manifest_path: Path,
    collection_where: str,
    hashes: Mapping[str, str] | None = None,
    hashes_path: Path | None = None,
) -> FactTable:
    """Open and check the table of one generation. Every stamp must agree: the manifest's entry,
    the Parquet file's metadata, the collection's metadata and (when given) the digest of the
    generation's hashes.json. Any disagreement is a `FactTableMismatchError` naming the files."""
    if not entry:
        raise FactTableError(
            f"{manifest_path} records no session table for {generation}; rebuild the KB with "
            "`marag kb build`"
        )
    path = directory / str(entry.get("file", TABLE_FILE))
    in_file = file_entry(path)
    claims = {
        f"{manifest_path} (fact_table)": (entry.get("generation"), entry.get("digest")),
        str(path): (in_file.get("generation"), in_file.get("digest")),
    }
    if collection_meta is not None:
        claims[f"{collection_where} (collection metadata)"] = (
            collection_meta.get(STAMP_GENERATION),
            collection_meta.get(STAMP_DIGEST),
        )
    if hashes is not None:
        claims[str(hashes_path or "hashes.json")] = (generation, hashes_digest(hashes))
    expected = (generation, entry.get("digest"))
    bad = {k: v for k, v in claims.items() if v != expected}
    if bad:
        lines = "; ".join(
            f"{k}: generation {g!r}, digest {str(d)[:12]}" for k, (g, d) in claims.items()
        )
        raise FactTableMismatchError(
            f"the session table and the Chroma collection disagree for generation {generation} "
            f"(expected digest {str(expected[1])[:12]}): {lines}. Do not read facts from it; "
            "rebuild the KB with `marag kb build` (a build in progress may also cause this: retry)"
        )
    return FactTable(path, generation, str(entry["digest"]), int(entry.get("rows", 0)))


# ---------------------------------------------------------------------------------------------
# server mode: the table's own generations under <kb_dir>/facts (shared storage)
# ---------------------------------------------------------------------------------------------


def facts_root(kb_dir: str | Path) -> Path:
    return Path(kb_dir) / FACTS_DIR


def current_facts_generation(kb_dir: str | Path) -> Path | None:
    return live_generation(facts_root(kb_dir))


def read_entry(gen: Path) -> dict[str, Any]:
    try:
        return json.loads((gen / MANIFEST).read_text(encoding="utf-8")).get("fact_table") or {}
    except FileNotFoundError:
        return {}


def stage_facts_generation(kb_dir: str | Path, docs: Sequence[KBDoc]) -> tuple[Path, dict]:
    """Write the next facts generation (not yet live) and its manifest; returns (dir, entry)."""
    root = facts_root(kb_dir)
    root.mkdir(parents=True, exist_ok=True)
    live = current_facts_generation(kb_dir)
    for stale in root.glob(f"{GEN_PREFIX}*"):  # leftovers of builds that died before publishing
        if live is None or stale.resolve() != live.resolve():
            shutil.rmtree(stale, ignore_errors=True)
    gen = next_generation(root)
    try:
        entry = write_table(gen, docs, gen.name)
        (gen / MANIFEST).write_text(json.dumps({"fact_table": entry}, indent=1), encoding="utf-8")
    except BaseException:
        shutil.rmtree(gen, ignore_errors=True)
        raise
    return gen, entry


def publish_facts_generation(kb_dir: str | Path, gen: Path) -> None:
    """Switch <kb_dir>/facts/CURRENT to `gen` atomically and remove the previous generation."""
    root = facts_root(kb_dir)
    old = current_facts_generation(kb_dir)
    switch_pointer(root, gen.name)
    if old is not None and old.resolve() != gen.resolve():
        shutil.rmtree(old, ignore_errors=True)
