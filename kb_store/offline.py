"""Keeps the Hugging Face libraries off the network. Both model loaders (the embedding model here in
kb_store and the local LLM in engine.llm) apply it before importing sentence-transformers or
transformers; it only sets defaults, so a variable the user exported wins. No setting is read here.
"""

from __future__ import annotations

import os

OFFLINE_ENVIRONMENT: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
}


def apply_offline_environment() -> None:
    for k, v in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(k, v)
