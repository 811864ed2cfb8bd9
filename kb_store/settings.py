"""`KBSettings`: where the knowledge base lives and how it is built, as one typed value.

engine.config builds it from flags, `MARAG_*` variables and defaults (`Config.kb`); kb_store never
reads the environment. The four store settings (directory, collection, embedding, Chroma server) are
unpacked here and only here: callers open, build or probe the KB through `open()`, `build()` and
`exists()`, so a new store option changes one class, not every call site.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_store.defaults import DEFAULT_COLLECTION

if TYPE_CHECKING:  # pragma: no cover - types only; chroma_kb loads Chroma
    from kb_store.chroma_kb import BuildStats
    from kb_store.chroma_reader import ChromaKB
    from kb_store.model import Session


@dataclass(frozen=True)
class KBSettings:
    kb_dir: Path
    collection: str = DEFAULT_COLLECTION
    embedding: str = "minilm"  # minilm (all-MiniLM-L6-v2 from package files) | hashing (tests)
    chroma_url: str | None = None  # a Chroma server (HttpClient) instead of the embedded store
    visit_window_days: int = 0  # ingest: sessions of different instruments this close share a visit

    @property
    def location(self) -> str:
        """Where the KB is, for messages: the server URL or the directory."""
        return self.chroma_url or str(self.kb_dir)

    def exists(self) -> bool:
        from kb_store.kb_location import kb_exists

        return kb_exists(self.kb_dir, collection=self.collection, chroma_url=self.chroma_url)

    def open(self) -> ChromaKB:
        """The reader over the live KB; raises KBMissingError when there is none."""
        from kb_store.chroma_reader import open_kb

        return open_kb(
            self.kb_dir,
            embedding=self.embedding,
            collection=self.collection,
            chroma_url=self.chroma_url,
        )

    def build(self, sessions: Sequence[Session], progress: Any = None) -> BuildStats:
        """Build or update the KB from validated sessions (atomic; see kb_store.chroma_kb).
        `progress(done, total)`: documents embedded so far (the dashboard's progress bar)."""
        from kb_store.chroma_kb import build_kb

        return build_kb(
            sessions,
            self.kb_dir,
            embedding=self.embedding,
            collection=self.collection,
            chroma_url=self.chroma_url,
            progress=progress,
        )
