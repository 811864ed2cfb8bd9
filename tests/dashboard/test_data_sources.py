"""Issue 13 items 4, 6 and 14: uploads written once per upload set, same-named uploads kept apart,
temporary folders deleted; server paths only inside MARAG_DATA_ROOTS; Build follows validation."""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from dashboard.data_sources import (
    ServerPathError,
    UploadStore,
    fingerprint,
    resolve_server_path,
)


@dataclass
class Upload:
    file_id: str
    name: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


def test_uploads_are_written_once_and_same_names_do_not_collide(tmp_path):
    store = UploadStore(tmp_path)
    files = [Upload("a1", "sessions.csv", b"x\n"), Upload("b2", "sessions.csv", b"y\n")]
    first = store.paths(files)
    assert [p.read_bytes() for p in first] == [b"x\n", b"y\n"] and first[0] != first[1]
    mtimes = [p.stat().st_mtime_ns for p in first]
    assert store.paths(files) == first  # a rerun writes nothing
    assert [p.stat().st_mtime_ns for p in first] == mtimes
    second = store.paths([Upload("c3", "other.csv", b"z\n")])
    assert not any(p.exists() for p in first) and second[0].read_bytes() == b"z\n"
    assert len(list(store.base.iterdir())) == 1


def test_upload_folder_removed_on_close_and_when_the_session_goes(tmp_path):
    store = UploadStore(tmp_path)
    store.paths([Upload("a", "s.csv", b"1")])
    base = store.base
    store.close()
    assert not base.exists()
    other = UploadStore(tmp_path)
    other.paths([Upload("a", "s.csv", b"1")])
    base = other.base
    del other
    gc.collect()
    assert not base.exists() and list(tmp_path.iterdir()) == []


def test_server_paths_only_inside_data_roots(tmp_path):
    root = tmp_path / "data"
    (root / "study").mkdir(parents=True)
    (root / "study" / "a.csv").write_text("proj_id,date\n")
    assert resolve_server_path(str(root / "study"), [root]) == (root / "study").resolve()
    assert resolve_server_path("study/a.csv", [root]) == (root / "study" / "a.csv").resolve()
    for bad in ("/etc/passwd", str(root / ".." / "data" / ".." / "x"), "../../etc/passwd"):
        with pytest.raises(ServerPathError) as exc:
            resolve_server_path(bad, [root])
        assert "root:" not in str(exc.value)
    os.symlink("/etc", root / "link")
    with pytest.raises(ServerPathError, match="not inside"):
        resolve_server_path(str(root / "link" / "passwd"), [root])
    with pytest.raises(ServerPathError, match="MARAG_DATA_ROOTS"):
        resolve_server_path(str(root / "study"), [])


def test_fingerprint_changes_with_the_files(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("1")
    f1 = fingerprint("upload", "auto", [p], 0)
    assert fingerprint("upload", "auto", [p], 0) == f1
    assert fingerprint("upload", "marag", [p], 0) != f1
    p.write_text("12")
    assert fingerprint("upload", "auto", [p], 0) != f1
    assert fingerprint("upload", "auto", [Path(tmp_path / "b.csv")], 0) != f1


def test_a_link_inside_a_data_folder_that_points_outside_is_refused(tmp_path):
    root = tmp_path / "data"
    (root / "study").mkdir(parents=True)
    (root / "study" / "a.csv").write_text("proj_id,date\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    os.symlink(outside, root / "study" / "b.csv")  # a CSV name, pointing outside the roots
    with pytest.raises(ServerPathError, match="b.csv in .* links outside") as exc:
        resolve_server_path(str(root / "study"), [root])
    assert "root:" not in str(exc.value)
    with pytest.raises(ServerPathError, match="not inside"):
        resolve_server_path(str(root / "study" / "b.csv"), [root])
    (root / "study" / "b.csv").unlink()
    os.symlink(root / "study" / "a.csv", root / "study" / "c.csv")  # a link inside is fine
    assert resolve_server_path(str(root / "study"), [root]) == (root / "study").resolve()
