"""The generation length rule: how many new tokens one agent request may write, from the number
of statements its text must render (docs/engine.md, "Generation length").

Owns the rule and its constants; engine.agents.budget counts each agent's statements and sets the
result on the request, so the local and the OpenAI-compatible backends get the same limit.

The constants were measured on the MA-RAG study data (facts backend, every patient's trajectory,
single session and comparison, and the evaluation queries; SmolLM2 tokenizer): the facts text of a
domain agent takes about 18 tokens per statement it renders (median 16.8 for a trajectory, 23 for
a single session, correlation 0.95), with about 30 tokens of opening and closing words (the part
name, the MCID and severity caveats).
"""

from __future__ import annotations

#: tokens of every text beyond its statements: the part name, the opening and the caveats
BASE_TOKENS = 32
#: tokens per statement the text renders (a score, a change with its label, a band, a flag ...)
TOKENS_PER_STATEMENT = 20
#: the least an agent may write: one sentence with its patient, visit and number
FLOOR_TOKENS = 64
#: the most one agent may write without an explicit setting: a four-paragraph summary; below the
#: paper's 1,200, which a small model that does not stop writes to the end on every call
CAP_TOKENS = 1024


def generation_length(n_statements: int, cap: int | None = None) -> int:
    """New tokens for a text that renders `n_statements` statements: BASE_TOKENS plus
    TOKENS_PER_STATEMENT per statement, at least FLOOR_TOKENS, at most CAP_TOKENS and at most
    `cap` (cfg.max_new_tokens: an explicit MARAG_MAX_NEW_TOKENS or the per-device budget)."""
    tokens = BASE_TOKENS + TOKENS_PER_STATEMENT * max(0, n_statements)
    tokens = min(max(tokens, FLOOR_TOKENS), CAP_TOKENS)
    return max(1, min(tokens, cap)) if cap is not None else tokens


def statements_within(tokens: int) -> int:
    """How many statements a text of `tokens` new tokens can render, the inverse of
    `generation_length` (at least 1): a prompt lists no more lines to cite than its text can
    state, since every listed line is prompt the model reads (64 tokens on the CPU: 1)."""
    return max(1, (tokens - BASE_TOKENS) // TOKENS_PER_STATEMENT)
