"""The dashboard's search index follows the live KB generation: a rebuild by another process
(`marag kb build` in a subprocess) gives the Search page a new index on its next run; without a
rebuild the cached index is reused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from dashboard import search_services
from kb_store.chroma_reader import open_kb

MARAG = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "ma-rag"
PDQ8 = MARAG / "PDQ8_UPDRS_one2one_summaries.csv"
UPDRS = MARAG / "UPDRS_one2one_summaries.csv"


def _build(kb_dir: Path, *sources: Path) -> None:
    args = [sys.executable, "-m", "engine.cli", "kb", "build", "--kb-dir", str(kb_dir)]
    for s in sources:
        args += ["--source", str(s)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MARAG_AUDIT_DB": str(kb_dir.parent / "a.db")}
    proc = subprocess.run(
        [*args, "--embedding", "hashing"], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.skipif(not UPDRS.exists(), reason=f"MA-RAG study data not found at {MARAG}")
def test_search_index_follows_a_rebuild_by_another_process(tmp_path):
    kb_dir = tmp_path / "kb"
    _build(kb_dir, UPDRS)
    handle = SimpleNamespace(kb=open_kb(kb_dir, embedding="hashing"))
    first = search_services.search_index(handle)
    assert search_services.search_index(handle) is first  # cached while the KB is unchanged
    before = {u.doc.id for u in first.units}
    _build(kb_dir, UPDRS, PDQ8)  # another process adds the PDQ-8 sessions
    second = search_services.search_index(handle)
    assert second is not first
    after = {u.doc.id for u in second.units}
    assert not any(d.endswith("-pdq8") for d in before)
    assert any(d.endswith("-pdq8") for d in after) and len(after) > len(before)
    assert handle.kb.generation == handle.kb.live_generation() != ""
