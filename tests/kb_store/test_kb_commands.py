"""`marag kb synth | build | report` through engine.cli.main, into temporary directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from kb_store import synth
from kb_store.chroma_reader import open_kb

pytest.importorskip("kb_store.ingest")

REPO = Path(__file__).resolve().parents[2]
MARAG_DIR = REPO.parent / "shared" / "data" / "ma-rag"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for k in ("MARAG_KB_DIR", "MARAG_CHROMA_URL", "MARAG_EMBEDDING"):
        monkeypatch.delenv(k, raising=False)


def kb_args(kb: Path) -> list[str]:
    return ["--kb-dir", str(kb), "--embedding", "hashing"]


def test_synth_command_writes_reproducible_csv(tmp_path, capsys):
    out = tmp_path / "c.csv"
    assert (
        main(["kb", "synth", "--patients", "10", "--visits", "3", "--seed", "5", "--out", str(out)])
        == 0
    )
    assert "10 patients" in capsys.readouterr().out
    first = out.read_bytes()
    assert (
        main(["kb", "synth", "--patients", "10", "--visits", "3", "--seed", "5", "--out", str(out)])
        == 0
    )
    assert out.read_bytes() == first
    assert main(["kb", "synth", "--patients", "0", "--out", str(out)]) == 2


def test_default_sample_ingests_without_errors():
    from kb_store.ingest import load_sources

    res = load_sources([synth.default_sample_path()], "auto")
    errors = [i for i in res.issues if i.severity == "error"]
    assert errors == []
    assert {i.rule for i in res.issues if i.severity == "warning"} == {"month_precision_date"}
    assert len({s.proj_id for s in res.sessions}) == 44
    visits = {}
    for s in res.sessions:
        visits.setdefault(s.proj_id, set()).add(s.visit)
    assert all(v == {1, 2, 3, 4} for p, v in visits.items() if p != synth.MISSED_VISIT)
    assert visits[synth.MISSED_VISIT] == {1, 2, 3}
    assert not any(
        s.proj_id == synth.MISSING_PDQ8 and s.visit == 2 and s.instrument == "pdq8"
        for s in res.sessions
    )


def test_build_default_sample_then_unchanged_then_if_missing(tmp_path, capsys):
    kb = tmp_path / "kb"
    assert main(["kb", "build", *kb_args(kb)]) == 0
    out = capsys.readouterr().out
    assert "sessions made: 349" in out and "0 errors" in out
    assert "437 added" in out and f"full validation report: {kb / 'validation_report.txt'}" in out
    assert (kb / "validation_report.txt").read_text().startswith("Validation report")
    report = json.loads((kb / "validation_report.json").read_text())
    assert report["stats"]["patients"] == 44
    assert main(["kb", "build", "--source", "synthetic", *kb_args(kb)]) == 0
    assert "0 added, 0 updated, 437 unchanged, 0 deleted; 0 embedded" in capsys.readouterr().out
    assert main(["kb", "build", "--if-missing", *kb_args(kb)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    reader = open_kb(kb, embedding="hashing")
    assert reader.patient_ids() == list(range(1, 45))
    assert [d.metadata["visit"] for d in reader.session_docs(synth.MISSED_VISIT, ["updrs"])] == [
        1,
        2,
        3,
    ]


def test_build_from_generated_csv_and_kb_dir_from_env(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "cohort.csv"
    assert main(["kb", "synth", "--patients", "6", "--out", str(csv)]) == 0
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "envkb"))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    assert main(["kb", "build", "--source", str(csv)]) == 0
    assert open_kb(tmp_path / "envkb", embedding="hashing").patient_ids() == [1, 2, 3, 4, 5, 6]


@pytest.mark.skipif(not MARAG_DIR.is_dir(), reason=f"MA-RAG study data not found at {MARAG_DIR}")
def test_build_marag_files(tmp_path, capsys):
    kb = tmp_path / "kb"
    assert main(["kb", "build", "--source", str(MARAG_DIR), "--format", "marag", *kb_args(kb)]) == 0
    out = capsys.readouterr().out
    assert "KB " in out and "added" in out
    reader = open_kb(kb, embedding="hashing")
    assert len(reader.patient_ids()) >= 40
    pid = reader.patient_ids()[0]
    docs = reader.session_docs(pid)
    assert docs and {d.metadata["profile"] for d in docs} <= {"marag-updrs44", "pdq8"}


def _write_ppmi(folder: Path) -> None:
    folder.mkdir()
    p1 = ["NP1COG", "NP1HALL", "NP1DPRS", "NP1ANXS", "NP1APAT", "NP1DDS"]
    p1p = ["NP1SLPN", "NP1SLPD", "NP1PAIN", "NP1URIN", "NP1CNST", "NP1LTHD", "NP1FATG"]
    p2 = synth.item_codes("adl")
    p3 = synth.item_codes("motor")
    events = [("BL", "03/2021"), ("V04", "03/2022")]

    def write(name: str, codes: list[str], extra_head: list[str], extra: dict) -> None:
        head = ["REC_ID", "PATNO", "EVENT_ID", "PAG_NAME", "INFODT", *extra_head, *codes]
        lines = [",".join(head)]
        n = 0
        for patno in (3001, 3002):
            for ev, date in events:
                n += 1
                vals = [str((n + j) % 3) for j in range(len(codes))]
                lines.append(
                    ",".join(
                        [
                            str(n),
                            str(patno),
                            ev,
                            extra["pag"],
                            date,
                            *[extra.get(h, "") for h in extra_head],
                            *vals,
                        ]
                    )
                )
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    write("MDS_UPDRS_Part_I.csv", p1, [], {"pag": "NUPDRS1"})
    write("MDS_UPDRS_Part_I__Patient_Questionnaire.csv", p1p, [], {"pag": "NUPDRS1P"})
    write("MDS_UPDRS_Part_II__Patient_Questionnaire.csv", p2, [], {"pag": "NUPDRS2P"})
    write(
        "MDS_UPDRS_Part_III.csv",
        p3,
        ["PDSTATE", "NHY"],
        {"pag": "NUPDRS3", "PDSTATE": "OFF", "NHY": "2"},
    )


def test_build_ppmi_style_folder(tmp_path, capsys):
    folder = tmp_path / "ppmi"
    _write_ppmi(folder)
    kb = tmp_path / "kb"
    assert main(["kb", "build", "--source", str(folder), "--format", "ppmi", *kb_args(kb)]) == 0
    reader = open_kb(kb, embedding="hashing")
    assert reader.patient_ids() == [3001, 3002]
    docs = reader.session_docs(3001)
    assert [d.metadata["visit"] for d in docs] == [1, 2]
    assert all(d.metadata["profile"] == "mds-updrs" for d in docs)
    assert all(d.metadata["missing_motor"] == 0 for d in docs)


def test_report_command_text_and_json(capsys):
    assert main(["kb", "report"]) == 0
    assert "Validation report" in capsys.readouterr().out
    assert main(["kb", "report", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["patients"] == 44


def test_unreadable_or_missing_source_exits_2(tmp_path, capsys):
    bad = tmp_path / "junk.csv"
    bad.write_bytes(b"\x00\x01\x02 not,a,known\nformat,at,all\n")
    kb = tmp_path / "kb"
    assert main(["kb", "build", "--source", str(bad), *kb_args(kb)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("marag: error:") and "junk.csv" in err[0]
    assert main(["kb", "build", "--source", str(tmp_path / "absent.csv"), *kb_args(kb)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.csv" in err[0]
    assert main(["kb", "report", "--source", str(bad)]) == 2
    assert not (kb / "CURRENT").exists()
