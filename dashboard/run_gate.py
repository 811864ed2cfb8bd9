"""How many pipeline runs one dashboard process runs at once, and the queue in front of them.

Owns `RunGate`: a first-come-first-served queue in front of `capacity` run slots. A backend that is
safe to call from several threads (facts: pure Python over the fact table; openai: an HTTP client
to a server that batches requests) gets `Config.max_concurrent_runs` slots; the in-process local
model gets one (a transformers / llama.cpp model is neither thread-safe nor faster when shared), so
its users wait in line and see their position (`on_wait(position)`: 1 = next). A waiting user who
leaves (an exception in `on_wait`, e.g. Streamlit stopping the script) leaves the queue.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator

THREAD_SAFE_BACKENDS = frozenset({"facts", "openai"})


class RunGate:
    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._cond = threading.Condition()
        self._queue: deque[int] = deque()
        self._running = 0
        self._tickets = itertools.count()

    @classmethod
    def for_backend(cls, backend: str, max_concurrent: int) -> RunGate:
        return cls(max_concurrent if backend in THREAD_SAFE_BACKENDS else 1)

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @contextlib.contextmanager
    def slot(
        self, on_wait: Callable[[int], None] | None = None, poll_s: float = 0.25
    ) -> Iterator[None]:
        """Hold a run slot for the body; while waiting, `on_wait(position)` is called whenever the
        position in the queue changes (and not at all when a slot is free at once)."""
        ticket = next(self._tickets)
        with self._cond:
            self._queue.append(ticket)
            shown = None
            try:
                while not (self._queue[0] == ticket and self._running < self.capacity):
                    pos = self._queue.index(ticket) + 1
                    if pos != shown and on_wait is not None:
                        shown = pos
                        self._cond.release()
                        try:
                            on_wait(pos)
                        finally:
                            self._cond.acquire()
                    self._cond.wait(poll_s)
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._running += 1
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()
