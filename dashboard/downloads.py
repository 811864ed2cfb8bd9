"""Download buttons whose file is built, and its export recorded, when the browser asks for it.

Why: a download_button with a callback reruns the script on click, and a rerun that finishes
before the browser's request for the deferred file drops the file's id ("Deferred file ... not
found", intermittently). Here the button does not rerun the script (`on_click="ignore"`), and
the audit entry of the export is written by the deferred callable itself, just before it returns
the bytes. That callable runs outside the script thread, without st.session_state, so everything
it needs (the user, the role, the configuration, the release's audit entry) is read while the
button is drawn. An export that cannot be recorded is not delivered (the error says why), as a
release that cannot be recorded is not shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard import services, trail
from engine.audit.chain import sha256
from engine.types import Result

Data = str | bytes


@dataclass(frozen=True)
class ExportRecord:
    """What the audit entry of one export of `result` says, captured in the script thread."""

    cfg: Any
    user: str
    role: str
    of_entry: int | None

    @classmethod
    def capture(cls, result: Result) -> ExportRecord:
        ident = trail.identity()
        entry = st.session_state.get(trail.ENTRY_IDS, {}).get(id(result))
        return cls(services.base_config(), ident.user, ident.role_label, entry)

    def write(self, result: Result, fmt: str) -> None:
        """Append the `export` entry (raises AuditError when the trail is unavailable)."""
        from engine.audit import record

        record(
            self.cfg,
            "export",
            user=self.user,
            role=self.role,
            result=None,
            plan=result.plan,
            detail={
                "format": fmt,
                "of_entry": self.of_entry,
                "summary_sha256": sha256(result.summary or ""),
            },
            patients={int(f.patient) for f in result.facts},
        )


def recorded(make: Callable[[], Data], result: Result, fmt: str, rec: ExportRecord) -> Data:
    """`make()` once its export is in the audit trail: the deferred callable of a download."""
    data = make()
    rec.write(result, fmt)
    return data


def download(
    where: DeltaGenerator,
    label: str,
    make: Callable[[], Data],
    *,
    result: Result,
    fmt: str,
    file_name: str,
    mime: str,
    key: str,
    icon: str,
) -> None:
    """A download button for `make()`'s file that does not rerun the page; the export of
    `result` in `fmt` is recorded when the file is built."""
    rec = ExportRecord.capture(result)
    where.download_button(
        label,
        lambda: recorded(make, result, fmt, rec),
        file_name=file_name,
        mime=mime,
        key=key,
        icon=icon,
        on_click="ignore",
    )
