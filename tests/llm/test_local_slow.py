"""Real-model tests with the bundled SmolLM2-135M-Instruct (slow): the GGUF conversion cache,
batched vs sequential greedy generation, and number-safe decoding end to end.

The model is shared through the default cache dir (cfg.model_cache_dir, i.e. MARAG_MODEL_CACHE_DIR
or ~/.cache/marag/models); only the conversion test uses a private temporary cache. All tests that
load the model share one xdist group so one worker pays the load."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.config import Config
from engine.llm.base import LLMRequest
from engine.llm.number_safe import extract_numbers, normalise_allowed

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-llm")]


def _cfg(**kw) -> Config:
    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    return Config.load({"llm": "local", "device": "cpu", **kw}, env=env)


@pytest.fixture(scope="module", autouse=True)
def _one_thread_per_worker():
    """Under `pytest -n N` every worker's torch would use all cores; on a 2-core machine two
    workers with 2 threads each run generation about 10x slower than with 1 thread each
    (measured). Share the cores for this module, then restore."""
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def llm():
    from engine.llm.local import LocalLLM

    return LocalLLM(_cfg())


def test_conversion_cache_second_load_is_fast(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.llm import gguf_cache
    from engine.llm.local import bundled_gguf_path

    gguf = bundled_gguf_path()
    t0 = time.perf_counter()
    first = gguf_cache.ensure_converted(gguf, tmp_path)
    convert_s = time.perf_counter() - t0
    assert gguf_cache.is_complete(first)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    t0 = time.perf_counter()
    again = gguf_cache.ensure_converted(gguf, tmp_path)
    model = AutoModelForCausalLM.from_pretrained(again, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(again, local_files_only=True)
    reload_s = time.perf_counter() - t0
    assert again == first
    assert reload_s < 3.0, f"reload from the converted copy took {reload_s:.1f} s"
    assert model.config.vocab_size == len(tok) == 49152
    assert tok.chat_template  # the copy keeps the chat template
    print(f"convert {convert_s:.1f} s, reload {reload_s:.2f} s")


def test_batched_equals_sequential_greedy(llm) -> None:
    reqs = [
        LLMRequest("You are a concise assistant.", "Name three colours.", max_new_tokens=12),
        LLMRequest(
            "You are a clinical assistant.",
            "Patient 3's motor score rose from 20 to 24 between visits 1 and 2. Describe it.",
            max_new_tokens=16,
        ),
        LLMRequest(
            "You are a concise assistant.", "What is Parkinson's disease?", max_new_tokens=12
        ),
    ]
    batched = llm.generate(reqs)
    sequential = [llm.generate([r])[0] for r in reqs]
    assert all(batched), batched
    assert batched == sequential


PROMPTS = [
    (
        "You are a clinical assistant. Summarise patient scores.",
        "Patient 5, visit 3 (2021-03-15): motor 14, +2 from visit 2; adl 9; nonmotor 12; qol 5. "
        "List the scores as a numbered list and explain each.",
        {"5", "3", "2021-03-15", "14", "+2", "2", "9", "12"},
    ),
    (
        "You are a helpful assistant.",
        "List the scores: motor 14, adl 9, nonmotor 12, qol 5. Then count from 1 to 20.",
        {"14", "9", "12", "5"},
    ),
    (
        "You are a clinical assistant.",
        "The motor score went from 22 at baseline to 31 at visit 4. Compute the change and the "
        "percentage change.",
        {"22", "31", "4", "9"},
    ),
    (
        "You are a helpful assistant.",
        "Write the numbers from 1 to 20, separated by commas.",
        {"1", "2", "3", "4", "5"},
    ),
]


def _disallowed(texts: list[str]) -> list[tuple[int, str]]:
    bad = []
    for i, (text, (_s, _u, allowed)) in enumerate(zip(texts, PROMPTS, strict=True)):
        ok = normalise_allowed(allowed)
        bad += [(i, n) for n in extract_numbers(text) if n not in ok]
    return bad


def test_number_safe_never_lets_a_disallowed_number_through(llm) -> None:
    reqs = [
        LLMRequest(s, u, allowed_numbers=frozenset(a), max_new_tokens=48) for s, u, a in PROMPTS
    ]
    llm.number_safe = True
    try:
        constrained = llm.generate(reqs)
        stats_on = dict(llm.last_stats)
        llm.number_safe = False
        free = llm.generate(reqs)
    finally:
        llm.number_safe = True
    assert stats_on["number_safe"] and stats_on["masked_steps"] > 0
    # it did write numbers, and none outside each prompt's allowed set
    assert sum(len(extract_numbers(t)) for t in constrained) >= 4, constrained
    assert _disallowed(constrained) == [], constrained
    # the same prompts without the processor do produce disallowed numbers: the test can fail
    assert _disallowed(free), free
