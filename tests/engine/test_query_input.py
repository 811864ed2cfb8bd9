"""Malformed patient lists and queries give a plain one-line error (exit 2) and
never widen a plan to every patient."""

from __future__ import annotations

import pytest

from engine.cli import main


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    for k in ("MARAG_KB_DIR", "MARAG_CHROMA_URL"):
        monkeypatch.delenv(k, raising=False)
    # no KB here: the checks must fire before any engine or KB is opened
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "no-kb"))


def err_of(capsys, argv) -> tuple[int, str]:
    rc = main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    ("patients", "needle"),
    [
        (",", "names no patient id"),
        ("", "names no patient id"),
        ("3,,4", "empty id"),
        ("\u00b2", "'\u00b2' is not a patient id"),
        ("\u0663", "is not a patient id"),
        ("1e1", "is not a patient id"),
        ("9" * 5000, "(5000 characters) is too long"),
    ],
)
def test_bad_patient_lists_exit_2_with_a_plain_line(capsys, patients, needle):
    rc, err = err_of(capsys, ["ask", "trajectory", "--patients", patients, "--llm", "facts"])
    assert rc == 2 and needle in err and err.count("\n") == 1 and len(err) < 200


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("patient\x00 3", "U+0000"),
        ("patient\x1b3 trajectory", "U+001B"),
        ("patient\u200b3", "U+200B"),
        ("patient \u0663", "non-ASCII digits"),
        ("patient " + "9" * 5000, "characters; at most 2000"),
        ("patient " + "9" * 40, "40-digit number"),
    ],
)
@pytest.mark.parametrize("command", ["ask", "plan"])
def test_bad_queries_exit_2_and_never_plan_all_patients(capsys, query, needle, command):
    extra = ["--llm", "facts"] if command == "ask" else ["--json"]
    rc, err = err_of(capsys, [command, query, *extra])
    assert rc == 2 and needle in err and err.count("\n") == 1 and len(err) < 250
