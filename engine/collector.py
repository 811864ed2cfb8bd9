"""When Python's cyclic garbage collector runs during an engine run: not at all.

A facts-backend run builds thousands of short-lived container objects (ledger values, statements,
claims, record dicts) that all stay alive until the run ends, then are freed by reference
counting: measured on the bench KBs, a trajectory, a comparison and a cohort question leave 0, 0
and 45 unreachable objects for the collector. With the collector on, every 700 allocations it
walks the young objects, all still alive, and promotes them; a full collection then walks them
again. That walking was 10-35 % of a run's time (bench/README.md, "The collector during a run").
So a run pauses the collector and restores it afterwards; what little cyclic garbage a run leaves
is collected by the next automatic collection. The process-wide switch is restored only by the
run that turned it off, so overlapping runs in threads (the dashboard) end with it on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """The cyclic collector off for the block (reference counting still frees objects)."""
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
