"""Names shared by the KB settings, the store and the embedding functions, defined once in a leaf
module so that kb_store.settings (light: engine.config imports it) and kb_store.chroma_kb /
kb_store.embeddings (heavy: they load Chroma) need not import each other."""

from __future__ import annotations

#: The one Chroma collection the KB lives in, unless configured otherwise.
DEFAULT_COLLECTION = "marag_sessions"
#: Embedding functions by configuration name: all-MiniLM-L6-v2 (package files) | hashing (tests).
EMBEDDINGS = ("minilm", "hashing")
