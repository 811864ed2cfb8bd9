"""The repetition rules of local decoding: transformers' repetition penalty as configured, or,
for a batch whose every row cites statements, no penalty and no n-gram of a row's own text
repeated (docs/engine.md, "Every sentence cites").

Owns the rule and its constant; engine.llm.local applies them to each `generate` batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.config import Config
from engine.llm.base import LLMRequest

#: a cited row may not repeat an n-gram of its own text (its prompt's are free to copy)
CITED_NO_REPEAT_NGRAM = 5


class NoRepeatInText:
    """Bans, per row, the tokens that would repeat an n-gram the row has already written (not
    its prompt's, as transformers' `no_repeat_ngram_size` would): a copying row that starts
    looping ("change from baseline to current, change from baseline to current, ...") must
    write something else, often the full stop. It runs after number- and citation-safe
    decoding and never bans a row's last allowed token: after "[" only "S" may follow, and a
    ban there would force a token outside the marker grammar."""

    def __init__(self, prompt_len: int, n: int = CITED_NO_REPEAT_NGRAM):
        self.prompt_len, self.n = prompt_len, n

    def __call__(self, input_ids, scores):
        import torch

        n = self.n
        for row in range(input_ids.shape[0]):
            text = input_ids[row, self.prompt_len :].tolist()
            if len(text) < n:
                continue
            prefix = text[len(text) - n + 1 :]
            banned = [
                text[i + n - 1] for i in range(len(text) - n + 1) if text[i : i + n - 1] == prefix
            ]
            if banned:
                kept = scores[row].clone()
                kept[banned] = float("-inf")
                if torch.isfinite(kept).any():  # never the last token decoding allows
                    scores[row] = kept
        return scores


def repetition_penalty(cfg: Config, requests: Sequence[LLMRequest]) -> float:
    """cfg.repetition_penalty, or none (1.0) for a batch whose every row cites statements.

    transformers applies the penalty to every token already in a row, its prompt included, so a
    cited row that copies its statement's words and numbers is pushed off them ("visited" for
    "visit", "+1" for "+4": measured on the synthetic trajectories, 3 of 6 digests failed their
    lookup with 1.1 and none with 1.0). Such a row cannot run on: citation-safe decoding ends it
    after one sentence per listed statement (engine.llm.cite_automaton, `order`), and it may
    not repeat an n-gram of its own text (`NoRepeatInText`)."""
    return 1.0 if cites_only(requests) else cfg.repetition_penalty


def cites_only(requests: Sequence[LLMRequest]) -> bool:
    """Whether every row of a batch cites statements (`LLMRequest.citable`)."""
    return bool(requests) and all(r.citable for r in requests)
