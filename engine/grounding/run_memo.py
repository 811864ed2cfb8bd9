"""A per-run memo for the grounding reader's pure text functions (cues, content hits).

One engine run checks the same texts several times: the claim check and the statement check read
the same text, and the final facts text repeats the domain texts verbatim. Inside `run_memo()`
(the engine wraps each run in one) a function decorated with `memoised` computes each distinct
argument once; outside, it is called as is. The memo lives for one run only, so a run never
reuses another run's work (and a benchmark's repeated runs measure real work). Memoised results
are shared between callers and must be treated as read-only (tuples; frozen or unmutated items).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

_MEMO: ContextVar[dict[Hashable, Any] | None] = ContextVar("grounding_run_memo", default=None)

R = TypeVar("R")


@contextmanager
def run_memo() -> Iterator[None]:
    """Memoise `memoised` functions until the block ends (nested blocks share the outer memo)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def active() -> bool:
    """Whether a `run_memo()` block is open (a memo lookup then pays off)."""
    return _MEMO.get() is not None


def memoised(fn: Callable[[str], R]) -> Callable[[str], R]:
    """`fn(text)` computed once per distinct text inside a `run_memo()` block."""

    @wraps(fn)
    def wrapper(text: str) -> R:
        memo = _MEMO.get()
        if memo is None:
            return fn(text)
        key = (wrapper, text)
        if key not in memo:
            memo[key] = fn(text)
        return memo[key]

    return wrapper


def cached(key: Hashable, compute: Callable[[], R]) -> R:
    """`compute()` once per `key` inside a `run_memo()` block (always, outside one)."""
    memo = _MEMO.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]
