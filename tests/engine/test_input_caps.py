"""Bounded work: documented caps on what a user types (engine.query_input): the search text, a
text to check and the patients of a per-patient plan are refused with one line (exit 2 in the
CLI) before any work, and the refusal comes in well under a second whatever the input's size."""

from __future__ import annotations

import time

import pytest

from engine import cli
from engine.check_command import read_text
from engine.config import Config
from engine.pipeline import Engine
from engine.query_input import (
    MAX_CHECK_CHARS,
    MAX_PLAN_PATIENTS,
    MAX_SEARCH_CHARS,
    QueryInputError,
    check_plan_size,
    check_search_text,
)
from engine.search import SearchIndex
from engine.types import Plan
from kb_store import synth
from kb_store.documents import build_documents
from kb_store.ingest import load_sources
from kb_store.reader import InMemoryKB


@pytest.fixture(scope="module")
def big_kb(tmp_path_factory):
    csv = tmp_path_factory.mktemp("caps") / "c.csv"
    synth.generate(patients=MAX_PLAN_PATIENTS + 5, visits=2, seed=3).to_csv(csv, index=False)
    return InMemoryKB(build_documents(load_sources([csv]).sessions))


def test_a_per_patient_plan_over_the_cap_is_refused_before_any_work(big_kb):
    ids = tuple(big_kb.patient_ids())
    assert len(ids) > MAX_PLAN_PATIENTS
    eng = Engine(Config.load(env={}), big_kb, None)
    t0 = time.perf_counter()
    for analysis in ("trajectory", "comparison"):
        with pytest.raises(QueryInputError, match=f"at most {MAX_PLAN_PATIENTS}"):
            eng.run(Plan(ids, analysis))
        with pytest.raises(QueryInputError):  # "every patient" counts as every patient
            eng.run(Plan((), analysis))
    assert time.perf_counter() - t0 < 5
    ok = eng.run(Plan(ids[:3], "trajectory"))
    assert ok.summary
    check_plan_size("cohort", ids)  # a cohort question reads the session table: no cap
    assert eng.run(Plan((), "cohort", query="highest motor")).cohort["n_patients"] == len(ids)


def test_search_text_over_the_cap_is_refused(big_kb):
    """The cap is the user's (CLI and Search page); the index itself also serves the search
    evaluation, whose queries are whole clinician notes."""
    with pytest.raises(QueryInputError, match=f"at most {MAX_SEARCH_CHARS}"):
        check_search_text("falls " * 1000)
    assert check_search_text("falls") == "falls"
    index = SearchIndex.from_kb(big_kb)
    assert index.search("falls " * 200, k=3)


def test_cli_search_and_check_refuse_long_text_with_exit_2(tmp_path, capsys):
    t0 = time.perf_counter()
    assert cli.main(["search", "x" * (MAX_SEARCH_CHARS + 1), "--embedding", "hashing"]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_SEARCH_CHARS} are accepted" in err and "Traceback" not in err
    big = tmp_path / "big.txt"
    big.write_text("Patient 1: motor 20 at visit 1. " * 40_000)  # about 1.3 MB
    with pytest.raises(QueryInputError, match=f"at most {MAX_CHECK_CHARS}"):
        read_text(str(big))
    small_over = tmp_path / "over.txt"
    small_over.write_text("a" * (MAX_CHECK_CHARS + 1))
    with pytest.raises(QueryInputError, match=f"has {MAX_CHECK_CHARS + 1} characters"):
        read_text(str(small_over))
    assert time.perf_counter() - t0 < 5
