"""Number-safe decoding: a logits processor that lets the model write only allowed numbers.

Facts first: every number in a summary must come from the fact table. The grounding guard checks
that after generation; this processor prevents most violations during generation, so that the local
model needs fewer critique rounds and facts fallbacks.

What counts as a number (the same rule as `extract_numbers`):
- a maximal run of ASCII digits, optionally followed by ONE '.' and at least one more digit:
  ``\\d+(?:\\.\\d+)?``. "14." at the end of a sentence is the number 14 followed by a full stop.
- signs are not part of the number: "+2" and "-2" both contain the number 2. Sign/direction
  correctness is left to the claim checker (the guard), which reads the surrounding words.
- every other character ends a number: "2021-03-15" is three numbers 2021, 03 and 15; "1,200" is
  1 and 200; "14%" is 14; "2.5.3" is 2.5 and 3; a '.' not followed by a digit is punctuation.
- the allowed set is normalised with the same rule (`normalise_allowed`): "2021-03-15" allows 2021,
  03 and 15; "-3" allows 3; forms without leading zeros ("03" -> "3") and without trailing decimal
  zeros ("2.50" -> "2.5", "2.0" -> "2") are added.

How decoding is constrained (per batch row, each row with its own allowed set; a row whose set is
None is left alone):
- the processor keeps the number currently being written (its characters so far, possibly ending
  with a pending '.') for every row, advancing it with each generated token's decoded text;
- a token is masked when, applied to that state, it would extend the number to a string that is not
  a prefix of an allowed number, START a number that no allowed number starts with, or END the
  number (any non-digit, end-of-sequence included) while its digits are not a complete allowed
  number. Tokens holding several digits / '.', '-', '+', '%' are simulated character by character.
- near a row's length limit only tokens that leave a number finishable in the remaining steps are
  allowed (one character per step assumed, as single-digit tokens exist), so a length cut cannot
  leave a truncated number either.

Cost: each vocabulary entry's decoded text is reduced once per tokenizer to a "skeleton" (digits and
'.' kept, any other run of characters collapsed to 'x'); tokens share skeletons (SmolLM2's 49k
entries have a few dozen), so a mask for a new (allowed set, state) pair costs one automaton run
per skeleton plus a gather, and masks are cached; a step costs a dict lookup and a masked_fill.

Limits: the processor controls digits only. It cannot stop a number written in words ("fourteen"),
a wrong sign, or an allowed number attached to the wrong patient/visit/domain; those are the claim
checker's job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor

from engine.llm.keyed_cache import KeyedCache

NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


def extract_numbers(text: str) -> list[str]:
    """Every number in `text` under the module's definition, in order, as written."""
    return NUMBER_RE.findall(text)


def _variants(num: str) -> set[str]:
    out = {num}
    if "." in num:
        whole, frac = num.split(".", 1)
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        out.add(f"{whole}.{frac}" if frac else whole)
    else:
        out.add(num.lstrip("0") or "0")
    return out


def normalise_allowed(values: Iterable[str | int | float]) -> frozenset[str]:
    """The numbers (module definition) contained in `values`, plus their canonical forms."""
    out: set[str] = set()
    for v in values:
        for num in extract_numbers(str(v)):
            out |= _variants(num)
    return frozenset(out)


def skeleton(text: str) -> str:
    """Reduce a token's text to what the number automaton sees: digits, '.', and 'x' for any run of
    other characters (an empty text is treated as a separator too)."""
    out: list[str] = []
    for ch in text:
        if "0" <= ch <= "9" or ch == ".":
            out.append(ch)
        elif not out or out[-1] != "x":
            out.append("x")
    return "".join(out) if out else "x"


@dataclass(frozen=True)
class NumberSet:
    """Allowed complete numbers and all their prefixes (a prefix may end with the decimal '.')."""

    complete: frozenset[str]
    prefixes: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        prefixes = {n[:i] for n in self.complete for i in range(1, len(n) + 1)}
        object.__setattr__(self, "prefixes", frozenset(prefixes))

    def is_closed(self, state: str) -> bool:
        """True when ending the number here is allowed (no number open, or a complete one)."""
        return state == "" or state.rstrip(".") in self.complete

    def chars_to_close(self, state: str) -> int:
        """Fewest characters still needed before the open number may end (0 when closed)."""
        if self.is_closed(state):
            return 0
        return min(len(n) - len(state) for n in self.complete if n.startswith(state))

    @property
    def longest(self) -> int:
        return max((len(n) for n in self.complete), default=0)


def advance(state: str, skel: str, numbers: NumberSet) -> str | None:
    """Apply a token skeleton to the automaton state; None when the token must be masked.

    `state` is the number being written ("" when none), possibly ending with a pending '.', which
    becomes a decimal point if a digit follows and a full stop otherwise.
    """
    for ch in skel:
        if ch == "x":
            if state:
                if state.rstrip(".") not in numbers.complete:
                    return None
                state = ""
        elif ch == ".":
            if not state:
                continue  # punctuation
            if "." in state:  # "14." + "." or "2.5" + ".": the number ended before this dot
                if state.rstrip(".") not in numbers.complete:
                    return None
                state = ""
            elif state + "." in numbers.prefixes or state in numbers.complete:
                state += "."
            else:
                return None
        else:  # digit
            nxt = state + ch
            if nxt not in numbers.prefixes:
                return None
            state = nxt
    return state


class VocabIndex:
    """Per-tokenizer precomputation: every token id's skeleton, grouped. `texts` keeps the token
    texts (special tokens as "") for other skeletons (engine.llm.citation_safe); `key` names the
    tokenizer when the index came from `vocab_index` (None for a plain list of texts)."""

    def __init__(
        self,
        token_texts: Sequence[str],
        special_ids: Iterable[int] = (),
        key: tuple | None = None,
    ):
        texts = list(token_texts)
        for i in special_ids:
            if 0 <= i < len(texts):
                texts[i] = ""  # a separator: skeleton "x"
        skels = [skeleton(t) for t in texts]
        self.texts = texts
        self.key = key
        self.groups: list[str] = sorted(set(skels))
        gid = {s: i for i, s in enumerate(self.groups)}
        self.token_skeleton = skels
        self.group_of = torch.tensor([gid[s] for s in skels], dtype=torch.long)
        self.size = len(skels)


def expand_mask(ok: list[bool], group_of: torch.Tensor, width: int, device) -> torch.Tensor:
    """A vocabulary mask from one verdict per skeleton group: `width` entries on `device` (ids
    past the index are masked)."""
    m = torch.tensor(ok, dtype=torch.bool)[group_of]
    if width > m.shape[0]:
        m = torch.cat([m, torch.zeros(width - m.shape[0], dtype=torch.bool)])
    return m[:width].to(device)


#: the vocabulary indexes built in this process, by tokenizer (name, class, length) and size
_VOCAB_INDEXES: KeyedCache[VocabIndex] = KeyedCache()


def _build_vocab_index(tokenizer, n: int, key: tuple) -> VocabIndex:
    """The skeleton index of a tokenizer's `len(tokenizer)` entries padded to `n` rows."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    texts += [""] * (n - len(texts))  # padded embedding rows: never valid, treat as separators
    return VocabIndex(texts, getattr(tokenizer, "all_special_ids", ()), key)


def vocab_index(tokenizer, vocab_size: int | None = None) -> VocabIndex:
    """Build (once per tokenizer and size) the skeleton index for a Hugging Face tokenizer."""
    n = max(vocab_size or 0, len(tokenizer))
    key = (getattr(tokenizer, "name_or_path", ""), type(tokenizer).__name__, len(tokenizer), n)
    return _VOCAB_INDEXES.get_or_make(key, lambda: _build_vocab_index(tokenizer, n, key))


class NumberSafeProcessor(LogitsProcessor):
    """transformers LogitsProcessor constraining the digits each batch row may write.

    `allowed[i]` is row i's allowed set (strings, normalised here) or None for no constraint;
    `max_new_tokens[i]` (optional) is row i's own length limit, used to forbid ending mid-number.
    Create one per `generate` call: it remembers the prompt length on its first call.
    """

    def __init__(
        self,
        vocab: VocabIndex | Sequence[str],
        allowed: Sequence[Iterable[str] | None],
        *,
        max_new_tokens: Sequence[int | None] | None = None,
    ):
        self.vocab = vocab if isinstance(vocab, VocabIndex) else VocabIndex(vocab)
        self.numbers: list[NumberSet | None] = [
            None if a is None else NumberSet(normalise_allowed(a)) for a in allowed
        ]
        self.limits = list(max_new_tokens) if max_new_tokens is not None else [None] * len(allowed)
        self.states: list[str] = [""] * len(allowed)
        self._prompt_len: int | None = None
        self._seen: int | None = None
        self._group_cache: dict[tuple, list[str | None]] = {}
        self._mask_cache: dict[tuple, object] = {}
        self.masked_steps = 0  # steps where the constraint removed the model's top choice

    def _next_states(self, numbers: NumberSet, state: str) -> list[str | None]:
        key = (numbers.complete, state)
        res = self._group_cache.get(key)
        if res is None:
            res = [advance(state, g, numbers) for g in self.vocab.groups]
            self._group_cache[key] = res
        return res

    def _mask(self, numbers: NumberSet, state: str, remaining: int | None, width: int, device):
        """Boolean mask over the vocabulary: True = allowed. `remaining` = steps left including
        this one (None = no limit); the chosen token must leave a number finishable in time."""
        if remaining is not None and remaining > numbers.longest:
            remaining = None  # the limit cannot matter yet: share the cached unlimited mask
        key = (numbers.complete, state, remaining, width, str(device))
        m = self._mask_cache.get(key)
        if m is None:
            nxt = self._next_states(numbers, state)
            ok = [
                s is not None and (remaining is None or numbers.chars_to_close(s) <= remaining - 1)
                for s in nxt
            ]
            if remaining is not None and not any(ok):  # cannot finish in time: best effort
                ok = [s is not None for s in nxt]
            m = expand_mask(ok, self.vocab.group_of, width, device)
            self._mask_cache[key] = m
        return m

    def _advance_row(self, row: int, tok: int) -> None:
        """Advance row's state by the token it was given (rows without a set are skipped)."""
        numbers = self.numbers[row] if row < len(self.numbers) else None
        if numbers is None:
            return
        skel = self.vocab.token_skeleton[tok] if tok < self.vocab.size else "x"
        nxt = advance(self.states[row], skel, numbers)
        self.states[row] = nxt if nxt is not None else ""  # a forced token: restart

    def _row_mask(self, row: int, remaining: int | None, width: int, device):
        """Row's mask for this step (True = allowed), or None when the row is unconstrained."""
        numbers = self.numbers[row] if row < len(self.numbers) else None
        if numbers is None:
            return None
        return self._mask(numbers, self.states[row], remaining, width, device)

    def _reset(self, rows: int) -> None:
        """A new generation: every row starts outside any number."""
        self.states = [""] * rows

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        cur_len = input_ids.shape[1]
        if self._prompt_len is None or self._seen is None or cur_len <= self._seen:
            self._prompt_len = cur_len
            self._seen = cur_len
            self._reset(input_ids.shape[0])
        for pos in range(self._seen, cur_len):
            for row, tok in enumerate(input_ids[:, pos].tolist()):
                self._advance_row(row, tok)
        self._seen = cur_len
        generated = cur_len - self._prompt_len
        for row in range(scores.shape[0]):
            limit = self.limits[row] if row < len(self.limits) else None
            remaining = None if limit is None else max(limit - generated, 1)
            mask = self._row_mask(row, remaining, scores.shape[1], scores.device)
            if mask is None or not bool(mask.any()):
                continue  # unconstrained, or never leave a row with nothing to write
            if not bool(mask[int(torch.argmax(scores[row]))]):
                self.masked_steps += 1
            scores[row] = scores[row].masked_fill(~mask, float("-inf"))
        return scores
