"""A per-process cache of values made once per key (loaded models, backends, vocabulary indexes).

The owner of a cache holds one `KeyedCache`; `get_or_make(key, make)` returns the value kept for
`key`, calling `make()` under the cache's lock the first time, so that concurrent callers (the
dashboard's threads) load a model once and never see a half-made value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class KeyedCache(Generic[V]):
    """Values by hashable key, each made once under one lock; `clear()` forgets them all."""

    def __init__(self) -> None:
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `key`; the first call makes it with `make()` (holding the lock, so
        a second caller waits for it instead of making another). A `make()` that raises keeps
        nothing."""
        with self._lock:
            if key in self._values:
                return self._values[key]
            value = make()
            self._values[key] = value
            return value

    def clear(self) -> None:
        """Forget every kept value."""
        with self._lock:
            self._values.clear()
