"""The product's logging: one handler on the "marag" logger, level from the configuration.

The CLI (engine.cli) and the dashboard (dashboard/app.py) call `configure(cfg.log_level)` once at
start; modules log to `logging.getLogger("marag.<part>")` and never configure handlers
themselves. Records go to stderr as one line each (time, level, logger, message), so a service
manager or a container collects them; MARAG_LOG_LEVEL=INFO shows what each command did.
"""

from __future__ import annotations

import logging
import sys

ROOT = "marag"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Stderr(logging.StreamHandler):
    """A handler on whatever sys.stderr is when a record is written (a test's capture, a
    redirected stream), not the one at start."""

    @property  # type: ignore[override]
    def stream(self):  # noqa: ANN201
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:  # noqa: ANN001
        return None


def configure(level: str = "WARNING") -> logging.Logger:
    """Set the "marag" logger's level and give it one stderr handler (idempotent)."""
    root = logging.getLogger(ROOT)
    root.setLevel(level.strip().upper())
    if not any(getattr(h, "_marag", False) for h in root.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(FORMAT))
        handler._marag = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        root.propagate = False
    return root
