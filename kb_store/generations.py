"""The generation pointer: which generation directory of a KB is live, and how it is switched.

A KB keeps its data in numbered generation directories (``gen-000007``) beside a one-line
``CURRENT`` file naming the live one. The embedded Chroma store (kb_store.chroma_kb: ``<kb_dir>``)
and the server-mode session table (kb_store.fact_table: ``<kb_dir>/facts``) both use this layout,
so the rules live here once: a pointer naming a missing or foreign directory means "no live
generation", the next generation is one past the highest number present, and the pointer is
replaced atomically (temp file, fsync, os.replace, fsync of the directory).

No kb_store imports: the light session table (imported by the engine) and the Chroma layer both
build on it.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

POINTER = "CURRENT"
GEN_PREFIX = "gen-"


def live_generation(directory: str | Path) -> Path | None:
    """The generation directory `directory/CURRENT` names, or None when there is none."""
    directory = Path(directory)
    try:
        name = (directory / POINTER).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    gen = directory / name
    return gen if name.startswith(GEN_PREFIX) and gen.is_dir() else None


def next_generation(directory: Path) -> Path:
    """The directory of the next generation: one past the highest ``gen-N`` present (not created)."""
    nums = [
        int(m.group(1))
        for p in directory.glob(f"{GEN_PREFIX}*")
        if (m := re.fullmatch(rf"{GEN_PREFIX}(\d+)", p.name))
    ]
    return directory / f"{GEN_PREFIX}{max(nums, default=0) + 1:06d}"


def switch_pointer(directory: Path, name: str) -> None:
    """Write `directory/CURRENT` = name: temp file, fsync, os.replace, fsync of the directory."""
    tmp = directory / f".{POINTER}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / POINTER)
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
