"""The export downloads (dashboard.downloads): the file is built and its export recorded by the
deferred callable, which runs outside the script thread (no st.session_state there), so what the
entry names is captured when the button is drawn; an export that cannot be recorded is not
delivered. The browser test (test_browser.py) clicks every download twice in quick succession."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from dashboard.downloads import ExportRecord, recorded
from engine.audit.errors import AuditError
from engine.audit.store import AuditStore, database_url
from engine.config import Config
from engine.types import Plan


def _result():
    return SimpleNamespace(
        plan=Plan((7,), "trajectory"),
        summary="Patient 7: motor 20 at visit 3.",
        facts=[SimpleNamespace(patient=7)],
    )


def _in_a_thread(fn):
    box: dict = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    return box


def test_the_deferred_file_is_recorded_outside_the_script_thread(tmp_path):
    db = tmp_path / "audit.sqlite3"
    cfg = Config.load(env={"MARAG_AUDIT_DB": str(db), "MARAG_KB_DIR": str(tmp_path / "kb")})
    rec = ExportRecord(cfg, "dr.local", "clinician", 4)
    box = _in_a_thread(lambda: recorded(lambda: b"%PDF-1.4", _result(), "pdf", rec))
    assert box == {"value": b"%PDF-1.4"}
    (entry,) = AuditStore(database_url(db)).entries(actions=("export",))
    assert (entry.user, entry.role, entry.patients) == ("dr.local", "clinician", [7])
    assert entry.detail["format"] == "pdf" and entry.detail["of_entry"] == 4


def test_an_export_that_cannot_be_recorded_is_not_delivered(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the audit DB's folder should be")
    cfg = Config.load(
        env={"MARAG_AUDIT_DB": str(blocked / "audit.sqlite3"), "MARAG_KB_DIR": str(tmp_path)}
    )
    made = []
    rec = ExportRecord(cfg, "dr.local", "clinician", None)
    box = _in_a_thread(lambda: recorded(lambda: made.append(1) or b"x", _result(), "pdf", rec))
    assert "value" not in box
    assert isinstance(box["error"], (AuditError, OSError)), box
    with pytest.raises(KeyError):
        box["value"]


def test_csv_exports_neutralise_spreadsheet_formulas():
    import pandas as pd

    from dashboard.export import neutral, safe_csv

    assert neutral('=HYPERLINK("http://x.example","y")').startswith("'=")
    assert neutral("@SUM(A1)") == "'@SUM(A1)" and neutral("\tx") == "'\tx"
    assert neutral("-2+3") == "'-2+3"  # a formula, not a number
    assert (neutral("+6"), neutral("-5"), neutral("-0.5"), neutral(-5), neutral("motor")) == (
        "+6",
        "-5",
        "-0.5",
        -5,
        "motor",
    )
    text = safe_csv(pd.DataFrame({"note": ["=1+1", "calm"], "delta": [-5, 3], "=h": ["a", "b"]}))
    assert text.splitlines() == ["note,delta,'=h", "'=1+1,-5,a", "calm,3,b"]
