"""Where the Data page's sources come from: uploads kept in one temporary folder per browser session,
and server paths restricted to the configured data roots.

Owns (no Streamlit calls here, so tests drive it directly):
- `UploadStore`: writes the uploaded files once per set of uploads (not on every rerun), each in its
  own sub-folder named by the upload id so two uploads with the same name never overwrite each
  other, deletes the previous set when the uploads change, and deletes its folder when the session
  ends (a `weakref.finalize` on the store kept in `st.session_state`) or on `close()`.
- `resolve_server_path`: a path typed into the "file or folder on the server" box is read only when
  its real path (symlinks followed) lies inside one of `Config.data_roots` (MARAG_DATA_ROOTS), and,
  for a folder, so does every entry in it (a link inside a data folder that points outside is
  refused); the error never shows anything read from the file.
- `fingerprint`: the identity of the current selection, so that Build builds exactly the files that
  were validated (a new upload after validation asks for a new validation).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

UPLOAD_PREFIX = "marag-upload-"


class ServerPathError(ValueError):
    """A server path outside the data roots (or with none configured); the message shows no
    content of any file."""


class UploadStore:
    """The current uploads of one browser session, on disk."""

    def __init__(self, base: Path | None = None):
        self.base = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX, dir=base))
        self._key: tuple[str, ...] = ()
        self._paths: list[Path] = []
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.base), True)

    def paths(self, files: Sequence[Any]) -> list[Path]:
        """Paths of `files` (Streamlit UploadedFile: file_id, name, getvalue()); written only when
        the set of uploads changed since the last call."""
        key = tuple(str(getattr(f, "file_id", "") or id(f)) for f in files)
        if key == self._key:
            return list(self._paths)
        for old in self.base.iterdir():
            shutil.rmtree(old, ignore_errors=True)
        out = []
        for n, f in enumerate(files):
            folder = self.base / f"{n:02d}-{_safe(key[n])}"
            folder.mkdir()
            target = folder / (Path(str(f.name)).name or "upload.csv")
            target.write_bytes(f.getvalue())
            out.append(target)
        self._key, self._paths = key, out
        return list(out)

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive


def _safe(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]


def resolve_server_path(text: str, roots: Iterable[Path]) -> Path:
    """The real path of `text` when it lies inside a data root; ServerPathError otherwise."""
    roots = [Path(r).resolve() for r in roots]
    if not roots:
        raise ServerPathError(
            "reading files on the server is off: no data folders are configured (MARAG_DATA_ROOTS)"
        )
    raw = str(text).strip()
    if not raw or "\x00" in raw:
        raise ServerPathError("type a file or folder path inside a data folder")
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = roots[0] / p
    real = p.resolve()
    if not any(real == r or real.is_relative_to(r) for r in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise ServerPathError(f"{raw} is not inside a configured data folder ({allowed})")
    if not real.exists():
        raise ServerPathError(f"{raw}: no such file or folder inside the data folders")
    if real.is_dir():
        _folder_inside(real, roots)
    return real


def _folder_inside(folder: Path, roots: Sequence[Path]) -> None:
    """Every entry of `folder` the import would read (kb_store.ingest reads its files, links
    followed) must resolve inside a data root: a link that points outside is refused by name,
    never read."""
    for entry in sorted(folder.iterdir()):
        target = entry.resolve()
        if not any(target == r or target.is_relative_to(r) for r in roots):
            raise ServerPathError(
                f"{entry.name} in {folder} links outside the configured data folders; "
                "remove the link or copy the file into a data folder"
            )


def fingerprint(source: str, fmt: str, paths: Sequence[Path], window: int) -> str:
    """Identity of a selection: source kind, format, visit window, and each file's path, size and
    modification time (a re-upload or an edited server file is a new selection)."""
    h = hashlib.sha256(f"{source}|{fmt}|{window}".encode())
    for p in paths:
        try:
            st = p.stat()
            h.update(f"|{p}|{st.st_size}|{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"|{p}|missing".encode())
    return h.hexdigest()
