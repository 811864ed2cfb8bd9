"""`marag dashboard` passes the packaged Streamlit configuration as options (so it holds from an
installed wheel, where no .streamlit/ folder exists); the repo's .streamlit/config.toml is the
same file; optional features name the extra that installs them."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from dashboard import launch
from engine import cli

REPO = Path(__file__).resolve().parents[2]


def test_packaged_configuration_becomes_options():
    flags = launch.config_flags(server__port=8600)
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    assert pairs["--server.address"] == "127.0.0.1"
    assert pairs["--server.enableXsrfProtection"] == "true"
    assert pairs["--client.showErrorDetails"] == "none"
    assert pairs["--browser.gatherUsageStats"] == "false"
    assert pairs["--theme.primaryColor"] == "#1D6A96"
    assert pairs["--server.port"] == "8600"
    assert launch.config_flags(server__address=None).count("--server.address") == 1


def test_repo_config_is_the_packaged_file():
    repo_cfg = REPO / ".streamlit" / "config.toml"
    assert repo_cfg.resolve() == launch.CONFIG.resolve()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "streamlit_config.toml" in pyproject["tool"]["setuptools"]["package-data"]["dashboard"]


def test_dashboard_command_execs_the_launcher(monkeypatch):
    seen = {}

    def fake_execve(path, argv, env):
        seen.update(path=path, argv=argv, env=env)
        raise SystemExit(0)

    monkeypatch.setattr(cli.os, "execve", fake_execve)
    with pytest.raises(SystemExit):
        cli.main(["dashboard", "--port", "8777", "--kb-dir", "/tmp/some-kb", "--llm", "facts"])
    assert seen["argv"][:3] == [sys.executable, "-m", "dashboard.launch"]
    assert seen["argv"][3:] == ["--port", "8777"]
    assert seen["env"]["MARAG_KB_DIR"] == "/tmp/some-kb" and seen["env"]["MARAG_LLM"] == "facts"


def test_optional_features_live_in_extras():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    assert "psycopg" not in base and "authlib" not in base and "pydantic" in base
    assert any("psycopg" in d for d in project["optional-dependencies"]["postgres"])
    assert any("authlib" in d for d in project["optional-dependencies"]["auth"])


def test_postgres_without_its_driver_names_the_extra(monkeypatch):
    from engine.audit.errors import AuditError
    from engine.audit.store import AuditStore

    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(AuditError, match=r"marag\[postgres\]"):
        AuditStore("postgresql+psycopg://u@127.0.0.1:1/db")
