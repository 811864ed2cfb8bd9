"""The Data page with the real ingest and the real Chroma store (hashing embeddings, tmp KB):
the validation report is shown before anything is built; building replaces the KB and the
analysis pages then read it."""

from __future__ import annotations

from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
MARAG = Path(__file__).resolve().parents[3] / "shared" / "data" / "ma-rag"


@pytest.fixture
def real_app(monkeypatch, tmp_path):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path / "kb"))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_LLM", "facts")
    st.cache_resource.clear()
    st.cache_data.clear()
    yield AppTest.from_file(str(APP), default_timeout=120)
    st.cache_resource.clear()
    st.cache_data.clear()


def _all_text(at) -> str:
    parts = (
        [m.value for m in at.markdown] + [c.value for c in at.code] + [c.value for c in at.caption]
    )
    parts += (
        [x.value for x in at.warning] + [x.value for x in at.success] + [x.value for x in at.error]
    )
    return "\n".join(parts)


def test_validate_then_build_the_default_sample(real_app, tmp_path):
    at = real_app.run()
    assert "There is no knowledge base" in _all_text(at)
    at.switch_page("views/data.py").run()
    assert "No KB yet" in _all_text(at)
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Sessions accepted"]) > 0 and int(metrics["Patients"]) == 44
    assert not (tmp_path / "kb").exists() or not any(
        (tmp_path / "kb").iterdir()
    )  # nothing built yet
    build = at.button(key="build")
    assert build.label.startswith("Build the KB from these")
    build.click().run()
    assert not at.exception, at.exception
    assert "The KB was replaced" in _all_text(at)
    at.switch_page("views/patient.py").run()
    assert not at.exception, at.exception
    assert len(at.selectbox(key="patient").options) == 44
    at.button(key="run_patient").click().run()
    assert "Grounding check passed" in _all_text(at)


def test_validation_report_names_rejected_rows(real_app, tmp_path, monkeypatch):
    monkeypatch.setenv("MARAG_DATA_ROOTS", str(tmp_path))
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "proj_id,date,NP3SPCH,NP3FACXP\n1,2021-01-05,2,9\n1,2021-04-05,1,1\n", encoding="utf-8"
    )
    at = real_app.run()
    at.switch_page("views/data.py").run()
    at.radio(key="data_source").set_value("folder").run()
    at.text_input(key="data_path").input(str(bad)).run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    report = "\n".join(c.value for c in at.code)
    assert "bad.csv" in report and "NP3FACXP" in report
    assert int({m.label: m.value for m in at.metric}["Rejected rows"]) >= 1


@pytest.mark.skipif(not MARAG.exists(), reason=f"MA-RAG study CSVs not found at {MARAG}")
def test_validate_the_marag_study_files(real_app, monkeypatch):
    monkeypatch.setenv("MARAG_DATA_ROOTS", str(MARAG.parent))
    at = real_app.run()
    at.switch_page("views/data.py").run()
    at.radio(key="data_source").set_value("folder").run()
    at.text_input(key="data_path").input(str(MARAG)).run()
    at.selectbox(key="data_format").set_value("marag").run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    assert int({m.label: m.value for m in at.metric}["Patients"]) >= 40


# ---------------------------------------------------------------- issue 13, items 6 and 14


def _data_page(real_app, tmp_path, monkeypatch, roots: str | None):
    if roots is not None:
        monkeypatch.setenv("MARAG_DATA_ROOTS", roots)
    at = real_app.run()
    at.switch_page("views/data.py").run()
    at.radio(key="data_source").set_value("folder").run()
    return at


def test_server_paths_need_data_roots_and_never_echo_content(real_app, tmp_path, monkeypatch):
    at = _data_page(real_app, tmp_path, monkeypatch, None)
    assert at.text_input(key="data_path").disabled
    assert "MARAG_DATA_ROOTS" in "\n".join(i.value for i in at.info)
    root = tmp_path / "data"
    root.mkdir()
    at = _data_page(real_app, tmp_path, monkeypatch, str(root))
    at.text_input(key="data_path").input("/etc/passwd").run()
    errors = "\n".join(e.value for e in at.error)
    assert "not inside a configured data folder" in errors and "root:" not in errors
    assert at.button(key="validate").disabled


def test_rejected_rows_count_rows_not_issues(real_app, tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    bad = tmp_path / "d" / "bad.csv"
    bad.write_text(  # one row with two bad cells (two issues), one good row
        "proj_id,date,NP3SPCH,NP3FACXP\n1,2021-01-05,9,9\n1,2021-04-05,1,1\n", encoding="utf-8"
    )
    at = _data_page(real_app, tmp_path, monkeypatch, str(tmp_path / "d"))
    at.text_input(key="data_path").input(str(bad)).run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    assert int({m.label: m.value for m in at.metric}["Rejected rows"]) == 1


def test_build_builds_the_validated_files_only(real_app, tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    a, b = d / "a.csv", d / "b.csv"
    a.write_text("proj_id,date,PDQ8_1\n1,2021-01-05,2\n", encoding="utf-8")
    b.write_text("proj_id,date,PDQ8_1\n7,2021-01-05,2\n8,2021-01-05,1\n", encoding="utf-8")
    at = _data_page(real_app, tmp_path, monkeypatch, str(d))
    at.text_input(key="data_path").input(str(a)).run()
    at.button(key="validate").click().run()
    assert [x.key for x in at.button if x.key == "build"] == ["build"]
    at.text_input(key="data_path").input(str(b)).run()  # a new selection, not validated
    assert not [x for x in at.button if x.key == "build"]
    assert "Validate** again" in "\n".join(w.value for w in at.warning)
    at.button(key="validate").click().run()
    at.button(key="build").click().run()
    assert not at.exception, at.exception
    from kb_store.chroma_reader import open_kb

    assert open_kb(tmp_path / "kb", embedding="hashing").patient_ids() == [7, 8]


def test_an_ingest_error_names_the_file_not_the_server_path(real_app, tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    bad = tmp_path / "d" / "empty.csv"
    bad.write_text("", encoding="utf-8")
    at = _data_page(real_app, tmp_path, monkeypatch, str(tmp_path / "d"))
    at.text_input(key="data_path").input(str(bad)).run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    errors = "\n".join(e.value for e in at.error)
    assert "empty.csv: cannot read: the file is empty" in errors
    assert str(tmp_path) not in errors


def test_plain_messages_keep_file_names_and_drop_paths():
    from dashboard.messages import plain

    assert plain("/tmp/marag-upload-x/00-ab/v.csv, row 4: bad") == "v.csv, row 4: bad"
    assert plain(OSError(2, "No such file", "/srv/kb/gen-000001/c.sqlite3")).endswith("'c.sqlite3'")
    assert plain("scores 3/4 and 12/2020") == "scores 3/4 and 12/2020"


def test_an_undecidable_date_column_refuses_until_an_order_is_chosen(
    real_app, tmp_path, monkeypatch
):
    """Days all 12 or less: the column decides no day/month order, so Build is refused with the
    rule named; choosing "day first" (a new validation) lets it build, read day-first."""
    d = tmp_path / "d"
    d.mkdir()
    f = d / "b.csv"
    f.write_text("proj_id,date,PDQ8_1\n2,05/02/2021,2\n2,11/03/2021,1\n", encoding="utf-8")
    at = _data_page(real_app, tmp_path, monkeypatch, str(d))
    at.text_input(key="data_path").input(str(f)).run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    refused = "\n".join(e.value for e in at.error)
    assert "Build refused" in refused and "[ambiguous_date_order]" in refused
    assert not [x for x in at.button if x.key == "build"]
    at.selectbox(key="data_date_order").set_value("dmy").run()
    assert "Validate** again" in "\n".join(w.value for w in at.warning)  # an option changed
    at.button(key="validate").click().run()
    at.button(key="build").click().run()
    assert not at.exception, at.exception
    from kb_store.chroma_reader import open_kb

    (doc,) = open_kb(tmp_path / "kb", embedding="hashing").session_docs(2)[:1]
    assert doc.metadata["date"].startswith("2021-02-05")
