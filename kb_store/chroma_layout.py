"""Where a Chroma KB keeps its files and how to open a client on it.

The lowest layer of the Chroma store: the generation layout names and the client constructors,
shared by the store (kb_store.chroma_kb) and its health checks (kb_store.kb_health) so that
neither imports the other.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.config import Settings

from kb_store.generations import GEN_PREFIX, POINTER

__all__ = [
    "GEN_PREFIX",
    "HASHES",
    "MANIFEST",
    "POINTER",
    "http_client",
    "persistent_client",
    "release_client",
    "settings",
]

MANIFEST = "manifest.json"
HASHES = "hashes.json"  # {doc id: content_hash} of the generation, for the diff without a scan


def settings() -> Settings:
    return Settings(anonymized_telemetry=False, allow_reset=False)


def http_client(url: str) -> Any:
    u = urlparse(url if "://" in url else f"http://{url}")
    if not u.hostname:
        raise ValueError(f"chroma_url {url!r} has no host (expected e.g. http://localhost:8000)")
    try:
        return chromadb.HttpClient(
            host=u.hostname,
            port=u.port or (443 if u.scheme == "https" else 8000),
            ssl=u.scheme == "https",
            settings=settings(),
        )
    except ValueError as e:  # chromadb: "Could not connect to a Chroma server..."
        raise ValueError(f"cannot reach the Chroma server at {url}: {e}") from None


def persistent_client(path: Path) -> Any:
    return chromadb.PersistentClient(path=str(path), settings=settings())


def release_client(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.close()
