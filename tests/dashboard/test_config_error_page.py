"""An invalid MARAG_* value stops the dashboard with one line naming the variable (issue 13, item 12),
not a traceback and not a silently defaulted setting."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"


def test_invalid_variable_stops_the_page_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.setenv("MARAG_NUMBER_SAFE", "maybe")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "MARAG_NUMBER_SAFE" in errors[0] and "maybe" in errors[0]
    assert not at.button  # no page was rendered behind the error


def test_valid_configuration_renders_the_app(monkeypatch, tmp_path):
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.setenv("MARAG_NUMBER_SAFE", "on")
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    assert not at.exception
    assert not any("invalid configuration" in e.value for e in at.error)
