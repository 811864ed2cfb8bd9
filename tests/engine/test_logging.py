"""The CLI logs to the standard "marag" logger at the configured level: quiet by default (an
error stays one line), `--log-level INFO` / MARAG_LOG_LEVEL=INFO says what each command did."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import cli


@pytest.fixture
def kb_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "audit.sqlite3"))
    monkeypatch.delenv("MARAG_LOG_LEVEL", raising=False)
    return tmp_path / "kb"


def test_info_logs_the_build_and_the_run(kb_env: Path, capsys: pytest.CaptureFixture[str]):
    kb = ["--kb-dir", str(kb_env), "--embedding", "hashing"]
    assert cli.main(["--log-level", "info", "kb", "build", *kb]) == 0
    err = capsys.readouterr().err
    assert (
        "INFO marag.cli: marag kb" in err and "INFO marag.kb: embedded 437 of 437 documents" in err
    )
    assert cli.main(["--log-level", "INFO", "ask", "--patients", "3", *kb]) == 0
    err = capsys.readouterr().err
    assert "INFO marag.query: ask: trajectory for patients [3] in" in err and "audit entry #" in err
    assert cli.main(["--log-level", "WARNING", "ask", "--patients", "3", *kb]) == 0
    assert "INFO" not in capsys.readouterr().err


def test_log_level_from_the_environment_is_validated(
    kb_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("MARAG_LOG_LEVEL", "chatty")
    assert cli.main(["plan", "How did patient 3 change?"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MARAG_LOG_LEVEL='chatty'" in err[0]


def test_kb_build_draws_a_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch):
    import io

    from kb_store import kb_cli

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    monkeypatch.setattr(kb_cli.sys, "stderr", term)
    with kb_cli.embedding_bar() as progress:
        for done in (0, 200, 437):
            progress(done, 437)
    out = term.getvalue()
    assert "embedding" in out and "437/437" in out, out
    plain = io.StringIO()  # not a terminal: no bar
    monkeypatch.setattr(kb_cli.sys, "stderr", plain)
    with kb_cli.embedding_bar() as progress:
        progress(437, 437)
    assert plain.getvalue() == ""
