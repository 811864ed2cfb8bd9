"""A damaged, unwritable or half-built KB
gives exit 2 with one line naming the file, `marag kb verify` checks a KB, a rebuild never calls a
damaged generation "unchanged", a dangling CURRENT never costs the intact generation, a killed
build's partial generation is removed, and the build lock is taken before ingest."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from engine.cli import main
from kb_store import chroma_kb, kb_lock
from kb_store import kb_cli as kb_commands
from kb_store.chroma_reader import open_kb
from kb_store.embeddings import HashingEmbeddingFunction


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for k in ("MARAG_KB_DIR", "MARAG_CHROMA_URL", "MARAG_EMBEDDING"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def kb(tmp_path) -> Path:
    d = tmp_path / "kb"
    assert main(["kb", "build", "--kb-dir", str(d), "--embedding", "hashing"]) == 0
    return d


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def args(kb: Path) -> list[str]:
    return ["--kb-dir", str(kb), "--embedding", "hashing"]


def truncate_sqlite(kb: Path) -> Path:
    db = next(kb.glob("gen-*/chroma.sqlite3"))
    os.truncate(db, db.stat().st_size // 3)
    return db


def test_truncated_sqlite_exits_2_with_one_line_naming_it(kb, capsys):
    db = truncate_sqlite(kb)
    rc, _, err = run(capsys, "ask", "trajectory of patient 3", "--llm", "facts", *args(kb))
    assert rc == 2 and err.count("\n") == 1 and str(db) in err
    rc, _, err = run(capsys, "kb", "verify", *args(kb))
    assert rc == 2 and err.count("\n") == 1 and str(db) in err


def test_rebuild_of_a_corrupt_kb_from_the_same_source_repairs_it(kb, capsys):
    truncate_sqlite(kb)
    rc, out, _ = run(capsys, "kb", "build", *args(kb))
    assert rc == 0 and "437 unchanged" not in out and "failed verification" in out
    assert open_kb(kb, embedding="hashing").count() == 437
    rc, out, _ = run(capsys, "kb", "verify", *args(kb))
    assert rc == 0 and "OK, 437 documents, 44 patients" in out


@pytest.mark.parametrize("name", ["manifest.json", "hashes.json"])
def test_garbled_kb_json_names_the_file(kb, capsys, name):
    f = next(kb.glob(f"gen-*/{name}"))
    f.write_text("{garbled", encoding="utf-8")
    rc, _, err = run(capsys, "kb", "verify", *args(kb))
    assert rc == 2 and str(f) in err and err.count("\n") == 1
    rc, _, err = run(capsys, "kb", "build", *args(kb))
    assert rc == 0  # the build notices, rebuilds and the KB verifies again
    assert run(capsys, "kb", "verify", *args(kb))[0] == 0


def test_current_naming_a_missing_generation_keeps_the_intact_one(kb, capsys, tmp_path):
    intact = next(kb.glob("gen-*"))
    (kb / "CURRENT").write_text("gen-000042\n")
    csv = tmp_path / "six.csv"
    assert main(["kb", "synth", "--patients", "6", "--out", str(csv)]) == 0
    rc, out, _ = run(capsys, "kb", "build", "--source", str(csv), *args(kb))
    assert rc == 0 and "CURRENT named a missing generation" in out
    assert intact.is_dir() and (intact / "chroma.sqlite3").is_file()
    assert open_kb(kb, embedding="hashing").patient_ids() == [1, 2, 3, 4, 5, 6]


def test_partial_generation_of_a_killed_build_is_removed(kb, capsys, tmp_path):
    live = next(kb.glob("gen-*"))
    partial = kb / "gen-000007"
    partial.mkdir()
    (partial / chroma_kb.PARTIAL).write_text("12345\n")
    (kb / "CURRENT").write_text("gen-000042\n")  # even while CURRENT is dangling
    csv = tmp_path / "six.csv"
    assert main(["kb", "synth", "--patients", "6", "--out", str(csv)]) == 0
    assert run(capsys, "kb", "build", "--source", str(csv), *args(kb))[0] == 0
    assert not partial.exists() and live.is_dir()


def test_build_lock_is_taken_before_ingest(kb, capsys, monkeypatch):
    called = []
    monkeypatch.setattr(kb_commands, "load", lambda *a, **k: called.append(1))
    with open(kb / kb_lock.LOCK, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        rc, _, err = run(capsys, "kb", "build", *args(kb))
    assert rc == 2 and "another process is building" in err and called == []


class DiskFullEF(HashingEmbeddingFunction):
    def __call__(self, input):  # noqa: A002 - Chroma's parameter name
        raise OSError(errno.ENOSPC, "No space left on device", "/kb/gen-000002/data_level0.bin")


def test_disk_full_exits_2_with_one_line_and_keeps_the_kb(kb, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(chroma_kb, "make_embedding_function", lambda name: DiskFullEF())
    csv = tmp_path / "six.csv"
    assert main(["kb", "synth", "--patients", "6", "--out", str(csv)]) == 0
    rc, _, err = run(capsys, "kb", "build", "--source", str(csv), *args(kb))
    assert rc == 2 and err.count("\n") == 1
    assert "No space left on device" in err and "data_level0.bin" in err and "intact" in err
    monkeypatch.undo()
    assert open_kb(kb, embedding="hashing").patient_ids() == list(range(1, 45))
    assert len(list(kb.glob("gen-*"))) == 1


def test_build_reports_embedding_progress(tmp_path):
    from kb_store.chroma_kb import build_kb
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    sessions = load_sources([default_sample_path()]).sessions
    seen: list[tuple[int, int]] = []
    chroma_kb_mod = chroma_kb
    chroma_kb_mod.EMBED_BATCH, old = 100, chroma_kb_mod.EMBED_BATCH
    try:
        st = build_kb(
            sessions, tmp_path, embedding="hashing", progress=lambda d, t: seen.append((d, t))
        )
    finally:
        chroma_kb_mod.EMBED_BATCH = old
    assert seen[0] == (0, st.total) and seen[-1] == (st.total, st.total) and len(seen) == 6


def test_partial_generation_is_removed_even_by_a_build_with_no_change(kb, capsys):
    partial = kb / "gen-000099"
    partial.mkdir()
    (partial / chroma_kb.PARTIAL).write_text("1\n")
    rc, out, _ = run(capsys, "kb", "build", *args(kb))
    assert rc == 0 and "437 unchanged" in out and not partial.exists()
