"""The suite's model guard (tests/conftest.py `_no_real_models`): a fast test that loads or runs a
real model fails, even when product code wraps the call in `except Exception`; a slow test sees the
real entry points. Proven in an inner pytest session (a subprocess) that uses the suite's conftest."""

from __future__ import annotations

from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

INNER_TESTS = """
import pytest

from engine.config import Config
from engine.llm import gguf_cache, local
from kb_store import minilm


def test_fast_loads_the_embedding_model():
    minilm.load_minilm()


def test_fast_loads_the_local_llm():
    local.LocalLLM(Config(llm="local")).load()  # the model loads on load() or the first run


def test_fast_generation_hidden_behind_a_broad_except():
    try:
        local.LocalLLM.generate(object(), ["hello"])
    except Exception:
        pass


def test_fast_gguf_conversion(tmp_path):
    gguf_cache.convert_gguf(tmp_path / "m.gguf", tmp_path / "out")


@pytest.mark.slow
def test_slow_sees_the_real_entry_points():
    assert minilm.load_minilm.__qualname__ == "load_minilm"
    assert local.load_model.__qualname__ == "load_model"
    assert local.LocalLLM.generate.__qualname__ == "LocalLLM.generate"
"""


def test_guard_fails_fast_tests_that_load_a_model_and_spares_slow_ones(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)  # the inner run needs no torch
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_inner=INNER_TESTS)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "addopts=")
    res.assert_outcomes(failed=4, passed=1)
    out = res.stdout.str()
    for name in (
        "kb_store.minilm.load_minilm",
        "engine.llm.local.load_model",
        "engine.llm.local.LocalLLM.generate",
        "engine.llm.gguf_cache.convert_gguf",
    ):
        assert f"{name} loads or runs a real model in a test not marked slow" in out
