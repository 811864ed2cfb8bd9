"""The KB build lock: one writer process per KB directory, re-entrant within that process.

Chroma allows one writer per persist directory, so a build holds an exclusive, non-blocking
``fcntl`` lock on ``<kb_dir>/.build.lock``; a second concurrent build gets `KBBusyError` (a clear
error) instead of a corrupt index. `marag kb build` takes the lock before ingest (`build_lock`),
and the build itself takes it again (`write_lock`), so the process remembers which directories it
holds (`HeldLocks`) and a nested take is a no-op.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

LOCK = ".build.lock"


class KBBusyError(ValueError):
    """Another process is building the same knowledge base."""


class HeldLocks:
    """The KB directories (resolved paths) whose build lock this process holds."""

    def __init__(self) -> None:
        self._held: set[Path] = set()

    def __contains__(self, key: Path) -> bool:
        return key in self._held

    def add(self, key: Path) -> None:
        self._held.add(key)

    def discard(self, key: Path) -> None:
        self._held.discard(key)


HELD_LOCKS = HeldLocks()  # the one registry of this process


@contextlib.contextmanager
def build_lock(kb_dir: str | Path) -> Iterator[None]:
    """The KB's build lock, held by this process (re-entrant): `marag kb build` takes it before
    ingest so that two builds never interleave reading sources and writing the KB."""
    key = Path(kb_dir).resolve()
    if key in HELD_LOCKS:
        yield
        return
    with write_lock(Path(kb_dir)):
        HELD_LOCKS.add(key)
        try:
            yield
        finally:
            HELD_LOCKS.discard(key)


@contextlib.contextmanager
def write_lock(kb_dir: Path) -> Iterator[None]:
    """The lock a build holds while it writes the KB (a no-op when `build_lock` holds it already)."""
    if kb_dir.resolve() in HELD_LOCKS:
        yield
        return
    kb_dir.mkdir(parents=True, exist_ok=True)
    with open(kb_dir / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KBBusyError(
                f"another process is building the KB at {kb_dir}; one writer at a time"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
