"""Every MARAG_* value is validated; an invalid one exits 2 naming the variable."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.config import Config

BAD = [
    ("MARAG_NUMBER_SAFE", "maybe"),
    ("MARAG_LOAD_IN_4BIT", "ture"),
    ("MARAG_BATCH_DOMAIN_AGENTS", "2"),
    ("MARAG_DEVICE", "gpu"),
    ("MARAG_MAX_NEW_TOKENS", "abc"),
    ("MARAG_MAX_NEW_TOKENS", "0"),
    ("MARAG_TORCH_THREADS", "-1"),
    ("MARAG_REPETITION_PENALTY", "nan"),
    ("MARAG_GROUNDING_ROUNDS", "1.5"),
    ("MARAG_VISIT_WINDOW_DAYS", "-3"),
    ("MARAG_LLM", "gpt"),
    ("MARAG_EMBEDDING", "bert"),
    ("MARAG_PLANNER", "magic"),
    ("MARAG_CHROMA_URL", "not a url"),
    ("MARAG_OPENAI_BASE_URL", "ftp://x"),
    ("MARAG_COLLECTION", "a b/c"),
]


@pytest.mark.parametrize(("var", "value"), BAD)
def test_invalid_value_is_refused_naming_the_variable(var, value):
    with pytest.raises(ValueError, match=var):
        Config.load(env={var: value})


@pytest.mark.parametrize(("var", "value"), BAD[:6])
def test_cli_exits_2_naming_the_variable(monkeypatch, capsys, tmp_path, var, value):
    monkeypatch.setenv("MARAG_KB_DIR", str(tmp_path))
    monkeypatch.setenv(var, value)
    assert main(["plan", "patient 3", "--json"]) == 2
    err = capsys.readouterr().err
    assert var in err and repr(value) in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("var", "value", "field", "expected"),
    [
        ("MARAG_NUMBER_SAFE", "off", "number_safe", False),
        ("MARAG_NUMBER_SAFE", "TRUE", "number_safe", True),
        ("MARAG_LOAD_IN_4BIT", "0", "load_in_4bit", False),
        ("MARAG_DEVICE", "cuda:1", "device", "cuda:1"),
        ("MARAG_MAX_NEW_TOKENS", " 64 ", "max_new_tokens", 64),
        ("MARAG_CHROMA_URL", "http://127.0.0.1:8000", "chroma_url", "http://127.0.0.1:8000"),
    ],
)
def test_valid_values_still_read(var, value, field, expected):
    assert getattr(Config.load(env={var: value}), field) == expected
