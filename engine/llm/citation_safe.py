"""Citation-safe decoding: the number-safe logits processor extended to rows that may cite
statements (`LLMRequest.citable`), so that a marker names only citable ids and every number of a
cited clause is one of the cited statements' numbers.

Per batch row: a row without `citable` runs the number-safe code unchanged
(engine.llm.number_safe.NumberSafeProcessor, which this class extends); a row with `citable` runs
the citation automaton (engine.llm.cite_automaton) over its own token skeletons ("[S", "4]", "]."
are simulated character by character). A batch may mix both.

Cost: the citation skeletons of a tokenizer's vocabulary are computed once per process (cached with
the tokenizer's number-safe index) and grouped; a mask for a new (row sets, state) pair costs one
automaton run per group plus a gather, and is cached per processor, so a step costs a dict lookup
and a `masked_fill` per row, as for number-safe rows.

Near a row's length limit only tokens that leave the row closable in the remaining steps are kept
(one character per step): no half-written marker and no truncated number at a length cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest

import torch

from engine.llm.cite_automaton import (
    START,
    CiteSets,
    CiteState,
    advance_cite,
    chars_to_close,
    cite_skeleton,
)
from engine.llm.keyed_cache import KeyedCache
from engine.llm.number_safe import NumberSafeProcessor, VocabIndex, expand_mask

Citable = Sequence[tuple[str, Iterable[str]]]


class CiteVocab:
    """A vocabulary's citation skeletons, grouped (the counterpart of number_safe.VocabIndex)."""

    def __init__(self, texts: Sequence[str]):
        skels = [cite_skeleton(t) for t in texts]
        self.groups: list[str] = sorted(set(skels))
        gid = {s: i for i, s in enumerate(self.groups)}
        self.token_skeleton = skels
        self.group_of = torch.tensor([gid[s] for s in skels], dtype=torch.long)
        self.size = len(skels)


#: the citation skeleton indexes built in this process, by the tokenizer key of their VocabIndex
_CITE_VOCABS: KeyedCache[CiteVocab] = KeyedCache()


def cite_vocab(vocab: VocabIndex) -> CiteVocab:
    """The citation skeletons of `vocab`'s texts (once per tokenizer when `vocab.key` names one)."""
    if vocab.key is None:
        return CiteVocab(vocab.texts)
    return _CITE_VOCABS.get_or_make(vocab.key, lambda: CiteVocab(vocab.texts))


class CitationSafeProcessor(NumberSafeProcessor):
    """NumberSafeProcessor whose rows with `citable[i]` (not None) follow the citation automaton.

    `citable[i]` is row i's (statement id, numbers) pairs as in `LLMRequest.citable`; rows with
    None keep number-safe decoding against `allowed[i]` exactly. Create one per `generate` call.
    `lead`: every sentence of a citable row opens with a marker (the prompt asks each clause to
    begin with its statement's id; a small model otherwise writes none); `ordered` (with `lead`):
    one sentence per citable statement, in the order the row lists them
    (engine.llm.cite_automaton).
    """

    def __init__(
        self,
        vocab: VocabIndex | Sequence[str],
        allowed: Sequence[Iterable[str] | None],
        citable: Sequence[Citable | None],
        *,
        max_new_tokens: Sequence[int | None] | None = None,
        lead: bool = True,
        ordered: bool = True,
    ):
        rows = max(len(allowed), len(citable))
        allowed = list(allowed) + [None] * (rows - len(allowed))
        plain = [a if c is None else None for a, c in zip_longest(allowed, citable)]
        super().__init__(vocab, plain, max_new_tokens=max_new_tokens)
        self.cite_vocab = cite_vocab(self.vocab)
        #: the distinct sets of the citable rows, and each row's index into them (None: plain row)
        self.cite_sets: list[CiteSets] = []
        self.cite_row: list[int | None] = []
        seen: dict[tuple, int] = {}
        for a, c in zip_longest(allowed, citable):
            if c is None:
                self.cite_row.append(None)
                continue
            key = (
                None if a is None else frozenset(a),
                tuple((sid, frozenset(nums)) for sid, nums in c),
            )
            if key not in seen:
                seen[key] = len(self.cite_sets)
                self.cite_sets.append(CiteSets.of(a, c, lead, ordered))
            self.cite_row.append(seen[key])
        self.cite_states: list[CiteState] = [START] * rows
        self._cite_next: dict[tuple[int, CiteState], list[CiteState | None]] = {}
        self._cite_masks: dict[tuple, torch.Tensor] = {}

    def _reset(self, rows: int) -> None:
        super()._reset(rows)
        self.cite_states = [START] * rows

    def _sets_of(self, row: int) -> int | None:
        return self.cite_row[row] if row < len(self.cite_row) else None

    def _advance_row(self, row: int, tok: int) -> None:
        k = self._sets_of(row)
        if k is None:
            super()._advance_row(row, tok)
            return
        state = self.cite_states[row]
        skel = self.cite_vocab.token_skeleton[tok] if tok < self.cite_vocab.size else "x"
        nxt = advance_cite(state, skel, self.cite_sets[k])
        # a forced token (nothing was allowed): outside any marker and number, same scope
        self.cite_states[row] = (
            nxt if nxt is not None else CiteState(scope=state.scope, led=state.led)
        )

    def _next_cite_states(self, k: int, state: CiteState) -> list[CiteState | None]:
        key = (k, state)
        res = self._cite_next.get(key)
        if res is None:
            sets = self.cite_sets[k]
            res = [advance_cite(state, g, sets) for g in self.cite_vocab.groups]
            self._cite_next[key] = res
        return res

    def _row_mask(self, row: int, remaining: int | None, width: int, device):
        k = self._sets_of(row)
        if k is None:
            return super()._row_mask(row, remaining, width, device)
        sets, state = self.cite_sets[k], self.cite_states[row]
        if remaining is not None and remaining > sets.horizon:
            remaining = None  # the limit cannot matter yet: share the cached unlimited mask
        key = (k, state, remaining, width, str(device))
        m = self._cite_masks.get(key)
        if m is None:
            nxt = self._next_cite_states(k, state)
            ok = [
                s is not None and (remaining is None or chars_to_close(s, sets) <= remaining - 1)
                for s in nxt
            ]
            if remaining is not None and not any(ok):  # cannot close in time: best effort
                ok = [s is not None for s in nxt]
            m = expand_mask(ok, self.cite_vocab.group_of, width, device)
            self._cite_masks[key] = m
        return m
