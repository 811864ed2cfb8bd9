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


def test_validation_report_names_rejected_rows(real_app, tmp_path):
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
    assert int({m.label: m.value for m in at.metric}["Rejected rows (errors)"]) >= 1


@pytest.mark.skipif(not MARAG.exists(), reason=f"MA-RAG study CSVs not found at {MARAG}")
def test_validate_the_marag_study_files(real_app):
    at = real_app.run()
    at.switch_page("views/data.py").run()
    at.radio(key="data_source").set_value("folder").run()
    at.text_input(key="data_path").input(str(MARAG)).run()
    at.selectbox(key="data_format").set_value("marag").run()
    at.button(key="validate").click().run()
    assert not at.exception, at.exception
    assert int({m.label: m.value for m in at.metric}["Patients"]) >= 40
