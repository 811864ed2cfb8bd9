"""Number-safe decoding on a toy vocabulary: the automaton, the allowed-set normalisation, and the
processor driven by random logits (greedy argmax), batch-aware. Fast (no model)."""

from __future__ import annotations

import random

import pytest
import torch

from engine.llm.number_safe import (
    NumberSafeProcessor,
    NumberSet,
    advance,
    extract_numbers,
    normalise_allowed,
    skeleton,
)

# Multi-digit tokens, signs, '%', '.', date-like and decimal pieces, a space-prefixed number, and
# an end-of-sequence marker (index 0 decodes to "" and stands for EOS / special tokens).
# fmt: off
VOCAB = [
    "", " ", "a", " motor", ",", ".", ". ", "..", "%", "-", "+", "\n",
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    "14", "140", " 14", "20", "2021", "-03", "-3", "+2", "1.5", ".5", "5%", "3-", " 9.",
    "12", "99", " 7", "x9", "0.",
]
# fmt: on


def decode(ids: list[int]) -> str:
    """Decoded text up to the first end-of-sequence token (index 0), as generation stops there."""
    if 0 in ids:
        ids = ids[: ids.index(0)]
    return "".join(VOCAB[i] for i in ids)


def test_extract_numbers_definition() -> None:
    got = extract_numbers("motor 14, +2 from visit 2 (2021-03-15); 2.5% and 14.")
    assert got == ["14", "2", "2", "2021", "03", "15", "2.5", "14"]
    assert extract_numbers("1,200 and 2.5.3 and 1..2") == ["1", "200", "2.5", "3", "1", "2"]


def test_normalise_allowed_splits_dates_signs_and_adds_canonical_forms() -> None:
    got = normalise_allowed(["2021-03-15", "-3", "+2", "2.50", "4.0", 7, 1.5])
    assert {"2021", "03", "3", "15", "2", "2.50", "2.5", "4.0", "4", "7", "1.5"} <= got
    assert "-3" not in got and "2021-03-15" not in got


def test_skeleton() -> None:
    assert skeleton(" 14") == "x14"
    assert skeleton("hello world") == "x"
    assert skeleton("") == "x"
    assert skeleton("-03") == "x03"
    assert skeleton("5%") == "5x"
    assert skeleton(" 9.") == "x9."


def test_advance_automaton() -> None:
    ns = NumberSet(normalise_allowed(["14", "2.5", "9"]))
    assert advance("", "1", ns) == "1"
    assert advance("1", "4", ns) == "14"
    assert advance("1", "x", ns) is None  # "1" alone is not allowed: cannot end here
    assert advance("14", "x", ns) == ""
    assert advance("", "3", ns) is None  # no allowed number starts with 3
    assert advance("14", "0", ns) is None  # 140 is not allowed
    assert advance("14", ".", ns) == "14."  # full stop after 14 (pending)
    assert advance("14.", "x", ns) == ""
    assert advance("14.", "5", ns) is None  # 14.5 is not allowed
    assert advance("2", ".", ns) == "2."  # prefix of 2.5
    assert advance("2.", "x", ns) is None  # "2" is not allowed on its own
    assert advance("2.", "5", ns) == "2.5"
    assert advance("2.5", ".", ns) == ""  # 2.5 then a full stop
    assert advance("", "x14x9x", ns) == ""  # a multi-number token
    assert advance("", "x14x3", ns) is None
    assert advance("", ".", ns) == ""  # punctuation outside a number


def _run(proc: NumberSafeProcessor, rows: int, steps: int, rng: random.Random) -> list[list[int]]:
    """Greedy decoding against random logits through the processor."""
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    prompt = torch.full((rows, 3), 2, dtype=torch.long)  # "a a a"
    ids = prompt
    for _ in range(steps):
        scores = torch.randn(rows, len(VOCAB), generator=gen)
        scores[:, 12:22] += 1.5  # make digits attractive so numbers are attempted often
        scores = proc(ids, scores)
        nxt = torch.argmax(scores, dim=-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return [row[3:] for row in ids.tolist()]


@pytest.mark.parametrize("seed", range(40))
def test_processor_never_lets_a_disallowed_number_through(seed: int) -> None:
    rng = random.Random(seed)
    allowed_a = frozenset({"14", "9", "2021-03-15", "2.5", "+2"})
    allowed_b = frozenset({"7", "140"})
    steps = 30
    proc = NumberSafeProcessor(VOCAB, [allowed_a, allowed_b, None], max_new_tokens=[steps] * 3)
    out = _run(proc, 3, steps, rng)
    for allowed, ids in zip([allowed_a, allowed_b], out[:2], strict=True):
        text = decode(ids)
        ok = normalise_allowed(allowed)
        bad = [n for n in extract_numbers(text) if n not in ok]
        assert not bad, f"{text!r} contains {bad}, allowed {sorted(ok)}"


def test_unconstrained_rows_and_no_processor_do_produce_other_numbers() -> None:
    """Shows the test above could fail: the same random logits without constraint leak numbers."""
    rng = random.Random(0)
    proc = NumberSafeProcessor(VOCAB, [None, None])
    leaked = 0
    for _ in range(5):
        for ids in _run(proc, 2, 30, rng):
            leaked += len([n for n in extract_numbers(decode(ids)) if n not in {"14", "9"}])
    assert leaked > 0


def test_last_step_cannot_leave_a_truncated_number() -> None:
    # With only "2021" allowed and 3 steps, the model must not stop at "20" or "202".
    for seed in range(20):
        rng = random.Random(seed)
        proc = NumberSafeProcessor(VOCAB, [frozenset({"2021"})], max_new_tokens=[3])
        (ids,) = _run(proc, 1, 3, rng)
        text = decode(ids)
        assert all(n == "2021" for n in extract_numbers(text)), text


def test_processor_state_is_per_row_and_masks_are_cached() -> None:
    proc = NumberSafeProcessor(VOCAB, [frozenset({"14"}), frozenset({"140"})])
    ids = torch.tensor([[2, 13, 16], [2, 13, 16]])  # prompt "a", then both rows wrote "14"
    scores = torch.zeros(2, len(VOCAB))
    proc(ids[:, :1], scores.clone())  # first call: the prompt
    out = proc(ids, scores.clone())
    zero = VOCAB.index("0")
    space = VOCAB.index(" ")
    assert out[0, zero] == float("-inf") and out[0, space] == 0  # 14 complete: may end, no 140
    assert out[1, zero] == 0 and out[1, space] == float("-inf")  # must continue to 140
    n_cached = len(proc._mask_cache)
    proc(ids[:, :1], scores.clone())  # a new generation: states reset, masks reused
    proc(ids, scores.clone())
    assert len(proc._mask_cache) == n_cached


def test_processor_never_masks_everything() -> None:
    # An allowed set whose digits no token can form leaves the row unconstrained, not empty.
    vocab = ["", " ", "a"]
    proc = NumberSafeProcessor(vocab, [frozenset({"5"})])
    out = proc(torch.tensor([[2]]), torch.zeros(1, 3))
    assert torch.isfinite(out).any()
