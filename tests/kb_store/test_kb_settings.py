"""KBSettings: built by engine.config from flags and MARAG_* variables (kb_store reads no
environment), and the one place the store settings reach kb_store.chroma_kb (exists, build, open)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from engine.config import Config
from kb_store import synth
from kb_store.ingest import load_sources
from kb_store.settings import KBSettings


def test_config_builds_the_kb_settings_from_flags_then_environment(tmp_path):
    env = {
        "MARAG_KB_DIR": str(tmp_path / "from-env"),
        "MARAG_COLLECTION": "c01",  # Chroma: 3-512 characters (validated)
        "MARAG_CHROMA_URL": "http://127.0.0.1:9",
        "MARAG_VISIT_WINDOW_DAYS": "3",
    }
    cfg = Config.load({"kb_dir": str(tmp_path / "flag"), "embedding": "hashing"}, env=env)
    assert cfg.kb == KBSettings(
        kb_dir=tmp_path / "flag",
        collection="c01",
        embedding="hashing",
        chroma_url="http://127.0.0.1:9",
        visit_window_days=3,
    )
    assert cfg.kb.location == "http://127.0.0.1:9"
    with pytest.raises(FrozenInstanceError):
        cfg.kb.kb_dir = Path("elsewhere")  # type: ignore[misc]


def test_defaults_match_the_configuration_defaults():
    cfg = Config.load(env={})
    assert (cfg.kb.collection, cfg.kb.embedding, cfg.kb.chroma_url) == (
        KBSettings(Path("x")).collection,
        KBSettings(Path("x")).embedding,
        None,
    )


def test_exists_build_open_round_trip(tmp_path):
    csv = synth.write_csv(synth.generate(patients=3, visits=2, seed=1), tmp_path / "c.csv")
    sessions = load_sources([csv]).sessions
    kb = KBSettings(tmp_path / "kb", embedding="hashing")
    assert not kb.exists()
    stats = kb.build(sessions)
    assert stats.added == stats.total > 0
    assert kb.exists()
    assert kb.open().patient_ids() == sorted({s.proj_id for s in sessions})
    assert kb.location == str(tmp_path / "kb")
