"""`marag ask` records an audit entry (user from --user, MARAG_USER or the OS login; KB generation
and content hash; the result as released and its hash); `marag audit list | show | verify` read
the trail, and `verify` exits 1 naming the first broken entry. Runs on a real KB built in tmp from
the shipped synthetic sample (hashing embeddings), into SQLite and into a real PostgreSQL server."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.audit.chain import canonical, sha256
from engine.cli import main


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory) -> Path:
    from kb_store.chroma_kb import build_kb
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    kb = tmp_path_factory.mktemp("auditkb") / "kb"
    build_kb(load_sources([default_sample_path()]).sessions, kb, embedding="hashing")
    return kb


@pytest.fixture
def env(monkeypatch, kb_dir, tmp_path):
    monkeypatch.setenv("MARAG_KB_DIR", str(kb_dir))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_LLM", "facts")
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "trail.sqlite3"))
    monkeypatch.delenv("MARAG_USER", raising=False)
    return tmp_path


def _json(capsys, argv) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_ask_records_who_what_and_from_which_kb(env, capsys, monkeypatch, kb_dir):
    out = _json(capsys, ["ask", "trajectory of patient 3", "--json", "--user", "dr.alice"])
    monkeypatch.setenv("MARAG_USER", "dr.bob")
    _json(capsys, ["ask", "--patients", "3,8", "--analysis", "comparison", "--json"])
    monkeypatch.delenv("MARAG_USER")
    _json(capsys, ["ask", "--patients", "8", "--json"])

    listed = _json(capsys, ["audit", "list", "--json"])["entries"]
    assert [(e["id"], e["user"], e["action"]) for e in listed] == [
        (1, "dr.alice", "ask"),
        (2, "dr.bob", "ask"),
        (3, getpass.getuser(), "ask"),
    ]
    assert [
        e["id"] for e in _json(capsys, ["audit", "list", "--patient", "8", "--json"])["entries"]
    ] == [2, 3]
    assert [
        e["id"] for e in _json(capsys, ["audit", "list", "--user", "dr.bob", "--json"])["entries"]
    ] == [2]
    assert _json(capsys, ["audit", "list", "--since", "2999-01-01", "--json"])["entries"] == []

    shown = _json(capsys, ["audit", "show", "1", "--json"])
    assert shown["result"] == json.loads(json.dumps(out))  # the result exactly as released
    assert shown["result_hash"] == sha256(canonical(out))
    from kb_store.chroma_layout import HASHES
    from kb_store.kb_location import current_generation

    gen = current_generation(kb_dir)
    assert shown["kb_generation"] == gen.name
    assert shown["kb_hash"] == sha256(canonical(json.loads((gen / HASHES).read_text())))
    assert shown["backend"] == "facts" and shown["patients"] == [3]
    assert shown["verification"]["passed"] is True
    assert shown["verification"]["numbers"] == out["verification"]["numbers"]

    capsys.readouterr()
    assert main(["audit", "verify"]) == 0
    assert "3 entries verified" in capsys.readouterr().out


def test_verify_exits_1_naming_the_edited_entry(env, capsys):
    for p in ("3", "8"):
        _json(capsys, ["ask", "--patients", p, "--json", "--user", "u"])
    eng = sa.create_engine(f"sqlite:///{env / 'trail.sqlite3'}")
    with eng.begin() as c:
        c.execute(sa.text("UPDATE audit_log SET backend = 'local' WHERE id = 1"))
    eng.dispose()
    capsys.readouterr()
    assert main(["audit", "verify"]) == 1
    assert "audit chain broken at entry 1" in capsys.readouterr().out


def test_show_unknown_id_and_bad_since_exit_2(env, capsys):
    capsys.readouterr()
    assert main(["audit", "show", "99"]) == 2
    assert "no audit entry with id 99" in capsys.readouterr().err
    assert main(["audit", "list", "--since", "last tuesday"]) == 2
    assert "--since must be an ISO date" in capsys.readouterr().err


def test_unreachable_audit_store_exits_2_with_one_line(env, capsys, monkeypatch):
    monkeypatch.setenv("MARAG_AUDIT_DB", "postgresql+psycopg://nobody:secret@127.0.0.1:1/x")
    capsys.readouterr()
    assert main(["ask", "--patients", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("marag: error: audit store postgresql+psycopg://nobody:***@127.0.0.1:1/x")
    assert "secret" not in err and len(err.splitlines()) == 1


def test_ask_records_into_postgresql(env, capsys, monkeypatch, pg_server_url):
    monkeypatch.setenv("MARAG_AUDIT_DB", pg_server_url)
    _json(capsys, ["ask", "--patients", "5", "--json", "--user", "pg-user"])
    listed = _json(capsys, ["audit", "list", "--user", "pg-user", "--json"])["entries"]
    assert listed and listed[-1]["patients"] == [5]
    capsys.readouterr()
    assert main(["audit", "verify"]) == 0


def test_kb_build_is_recorded_when_it_changes_the_kb(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.delenv("MARAG_AUDIT_DB", raising=False)  # default: beside the KB
    monkeypatch.delenv("MARAG_USER", raising=False)
    assert main(["kb", "build", "--source", "synthetic", "--user", "dm"]) == 0
    assert main(["kb", "build", "--source", "synthetic", "--if-missing", "--user", "dm"]) == 0
    assert (tmp_path / "audit.sqlite3").exists()
    entries = _json(capsys, ["audit", "list", "--json"])["entries"]
    assert [(e["action"], e["user"], e["kb_generation"]) for e in entries] == [
        ("kb_build", "dm", "gen-000001")
    ]
    shown = _json(capsys, ["audit", "show", "1", "--json"])
    assert (
        shown["detail"]["sources"] == ["synthetic"]
        and shown["detail"]["previous_generation"] is None
    )
    assert shown["kb_hash"] and len(shown["kb_hash"]) == 64


def test_record_api_for_marag_check(env):
    """The call `marag check` makes: the check JSON is stored as released, with its summary."""
    from engine.audit import record
    from engine.config import Config
    from engine.types import Plan

    cfg = Config.load()
    check = {
        "passed": False,
        "coverage": 0.5,
        "sentences": [{"text": "x", "status": "unsupported"}],
    }
    plan = Plan(patients=(3, 8), analysis="comparison", instruments=("updrs",), visit_filter="none")
    e = record(cfg, "check", user="qa", result=check, plan=plan)
    assert (e.action, e.user, e.patients) == ("check", "qa", [3, 8])
    assert e.verification == {"passed": False, "coverage": 0.5}
    assert e.result == check and e.kb_generation is not None
