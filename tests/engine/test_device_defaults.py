"""Per-device generation defaults in the one config object."""

from __future__ import annotations

from engine.config import (
    CPU_GROUNDING_ROUNDS,
    CPU_MAX_NEW_TOKENS,
    PAPER_GROUNDING_ROUNDS,
    PAPER_MAX_NEW_TOKENS,
    Config,
)


def test_cpu_local_gets_the_small_budget_gpu_and_servers_the_papers():
    assert (
        Config.load({"llm": "local", "device": "cpu"}, env={}).max_new_tokens == CPU_MAX_NEW_TOKENS
    )
    assert (
        Config.load({"llm": "local", "device": "cuda"}, env={}).max_new_tokens
        == PAPER_MAX_NEW_TOKENS
    )
    openai = Config.load({"llm": "openai", "openai_base_url": "http://127.0.0.1:9/v1"}, env={})
    assert openai.max_new_tokens == PAPER_MAX_NEW_TOKENS
    assert Config.load({}, env={}).max_new_tokens == PAPER_MAX_NEW_TOKENS  # facts: unused


def test_explicit_budget_wins_over_the_device_default():
    env = {"MARAG_LLM": "local", "MARAG_DEVICE": "cuda", "MARAG_MAX_NEW_TOKENS": "64"}
    assert Config.load({}, env=env).max_new_tokens == 64
    assert (
        Config.load({"max_new_tokens": 300, "llm": "local", "device": "cpu"}, env={}).max_new_tokens
        == 300
    )


def test_cpu_local_skips_regeneration_gpu_and_servers_keep_the_rounds():
    assert CPU_GROUNDING_ROUNDS == 0 < PAPER_GROUNDING_ROUNDS
    cpu = Config.load({"llm": "local", "device": "cpu"}, env={})
    assert cpu.grounding_rounds == CPU_GROUNDING_ROUNDS
    cuda = Config.load({"llm": "local", "device": "cuda"}, env={})
    assert cuda.grounding_rounds == PAPER_GROUNDING_ROUNDS
    openai = Config.load({"llm": "openai", "openai_base_url": "http://127.0.0.1:9/v1"}, env={})
    assert openai.grounding_rounds == PAPER_GROUNDING_ROUNDS
    # resolved for the final backend, not for the facts default the object starts from
    assert Config.load({}, env={"MARAG_LLM": "local", "MARAG_DEVICE": "cpu"}).grounding_rounds == 0


def test_explicit_rounds_win_over_the_device_default():
    env = {"MARAG_LLM": "local", "MARAG_DEVICE": "cpu", "MARAG_GROUNDING_ROUNDS": "3"}
    assert Config.load({}, env=env).grounding_rounds == 3
    assert (
        Config.load(
            {"grounding_rounds": 1, "llm": "local", "device": "cpu"}, env={}
        ).grounding_rounds
        == 1
    )


def test_demonstration_model_flag():
    assert Config.load({"llm": "local"}, env={}).demonstration_model
    assert not Config.load({"llm": "local", "model": "/models/llama"}, env={}).demonstration_model
    assert not Config.load({}, env={}).demonstration_model
