"""A reader opened before another process rebuilds the KB keeps working.

Server mode against a real `chroma run` on 127.0.0.1 (free port, started here): the rebuild swaps
the collection (new id), and the reader re-resolves the live collection and retries once instead of
failing with NotFoundError forever. Embedded mode: the reader follows CURRENT across rebuilds that
delete the generation it had open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kb_store import synth
from kb_store.chroma_reader import open_kb

REPO = Path(__file__).resolve().parents[2]


def build_in_other_process(csv: Path, *extra: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    for k in ("MARAG_KB_DIR", "MARAG_CHROMA_URL"):
        env.pop(k, None)
    subprocess.run(
        [sys.executable, "-m", "engine.cli", "kb", "build", "--source", str(csv), *extra],
        check=True,
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )


def cohorts(tmp_path: Path) -> tuple[Path, Path]:
    six, four = tmp_path / "six.csv", tmp_path / "four.csv"
    synth.write_csv(synth.generate(patients=6, visits=3, seed=1), six)
    synth.write_csv(synth.generate(patients=4, visits=2, seed=2), four)
    return six, four


def test_server_reader_survives_a_rebuild_by_another_process(chroma_server, tmp_path):
    six, four = cohorts(tmp_path)
    args = [
        "--chroma-url",
        chroma_server,
        "--embedding",
        "hashing",
        "--kb-dir",
        str(tmp_path / "k"),
    ]
    build_in_other_process(six, *args)
    reader = open_kb(tmp_path / "k", embedding="hashing", chroma_url=chroma_server)
    assert reader.patient_ids() == [1, 2, 3, 4, 5, 6]
    before = reader.session_docs(1)
    assert len(before) == 6
    build_in_other_process(four, *args)  # staging swap: the collection the reader held is gone
    after = reader.session_docs(1)
    assert len(after) == 4 and {d.metadata["visit"] for d in after} == {1, 2}
    assert reader.patient_ids() == [1, 2, 3, 4]
    fresh = open_kb(tmp_path / "k", embedding="hashing", chroma_url=chroma_server)
    assert reader.count() == fresh.count() and reader.get_docs([after[0].id]) == [after[0]]
    assert reader.query("tremor", n_results=2)


def test_embedded_reader_follows_rebuilds(tmp_path):
    six, four = cohorts(tmp_path)
    kb = tmp_path / "kb"
    args = ["--embedding", "hashing", "--kb-dir", str(kb)]
    build_in_other_process(six, *args)
    reader = open_kb(kb, embedding="hashing")
    assert len(reader.session_docs(1)) == 6
    build_in_other_process(four, *args)
    assert len(reader.session_docs(1)) == 4 and reader.patient_ids() == [1, 2, 3, 4]
