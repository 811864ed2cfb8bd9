"""Suite-wide settings: keep Hugging Face libraries offline, share the CPU cores between
pytest-xdist workers (two workers with torch's default threads each run generation ~10x slower
on a 2-core machine than with one thread each), and keep real models out of fast tests.

`_no_real_models` (autouse) replaces every entry point that loads real model weights or generates
with one, in each test NOT marked `slow`: the embedding model (kb_store.minilm.load_minilm, used by
the KB's MiniLM embedding function and the SBERT metric), the local LLM's loader
(engine.llm.local.load_model), its generation (LocalLLM.generate) and the GGUF conversion
(engine.llm.gguf_cache.convert_gguf). A fast test that reaches one fails with a message naming it;
`pytest.fail` raises an exception that `except Exception` in product code cannot swallow. A test
that means to load a model is marked `@pytest.mark.slow`; a test may still monkeypatch one of these
names with its own stub (its patch is applied after this fixture's).
"""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester"]  # tests/test_model_guard.py runs the guard in an inner session

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

#: (module, attribute) pairs that load or run a real model.
MODEL_ENTRY_POINTS = (
    ("kb_store.minilm", "load_minilm"),
    ("engine.llm.local", "load_model"),
    ("engine.llm.gguf_cache", "convert_gguf"),
)


@pytest.fixture(scope="session", autouse=True)
def _share_cores_between_workers() -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


def _refuse(what: str):
    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail(
            f"{what} loads or runs a real model in a test not marked slow; "
            "mark the test @pytest.mark.slow or use tests/fakes.py (FakeLLM, hashing embeddings)",
            pytrace=False,
        )

    return refuse


@pytest.fixture(autouse=True)
def _no_real_models(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("slow") is not None:
        return
    import importlib

    for module, attr in MODEL_ENTRY_POINTS:
        monkeypatch.setattr(importlib.import_module(module), attr, _refuse(f"{module}.{attr}"))
    from engine.llm.local import LocalLLM

    monkeypatch.setattr(LocalLLM, "generate", _refuse("engine.llm.local.LocalLLM.generate"))
