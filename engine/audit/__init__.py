"""Audit trail: who saw which summary, from which data, and who checked it.

An append-only, hash-chained log (engine.audit.store) in SQLite beside the KB by default or in
PostgreSQL (MARAG_AUDIT_DB); `record` (engine.audit.trail) is the one call that writes an entry;
a head record outside the store anchors it (engine.audit.anchor); engine.audit.backup copies it;
engine.audit.cli implements `marag audit list | show | verify | head | init | backup | ...`.
Names are imported lazily so that `marag` does not load SQLAlchemy for commands that never touch
the trail.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Verdict": "engine.audit.chain",
    "AuditError": "engine.audit.errors",
    "audit_url": "engine.audit.trail",
    "open_store": "engine.audit.trail",
    "record": "engine.audit.trail",
    "resolve_user": "engine.audit.trail",
    "ACTIONS": "engine.audit.store",
    "AuditStore": "engine.audit.store",
    "Entry": "engine.audit.store",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'engine.audit' has no attribute {name!r}")
