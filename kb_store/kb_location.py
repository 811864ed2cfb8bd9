"""Where the live knowledge base is: its generation, its manifest, and whether it exists.

Owns the look-ups that both the build (kb_store.chroma_kb) and the reader (kb_store.chroma_reader)
start from, and `KBMissingError`, raised when there is no KB, so that the reader does not depend on
the build. The embedded store's live generation is the one its CURRENT pointer names
(kb_store.generations); a Chroma server's KB exists when its collection does.
"""

from __future__ import annotations

from pathlib import Path

from kb_store.chroma_layout import MANIFEST, http_client
from kb_store.defaults import DEFAULT_COLLECTION
from kb_store.generations import live_generation
from kb_store.kb_health import read_json_file


class KBMissingError(FileNotFoundError):
    """No knowledge base at the given location."""


def current_generation(kb_dir: str | Path) -> Path | None:
    """The live generation directory, or None when the KB does not exist."""
    return live_generation(kb_dir)


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
