"""Suite-wide settings: keep Hugging Face libraries offline and share the CPU cores between
pytest-xdist workers (two workers with torch's default threads each run generation ~10x slower
on a 2-core machine than with one thread each)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(scope="session", autouse=True)
def _share_cores_between_workers() -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
