"""Fixtures for the audit-trail tests: a store in SQLite (tmp) or in a real PostgreSQL server the
session starts (tests/audit/pg_server.py), so every chain and tamper test runs on both."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if "audit_pg_server" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("audit_pg_server", HERE / "pg_server.py")
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["audit_pg_server"] = _mod
    _spec.loader.exec_module(_mod)
pg = sys.modules["audit_pg_server"]


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    if pg.pg_bindir() is None:
        pytest.skip("PostgreSQL binaries not found: `make test` installs Debian's postgresql")
    with pg.postgres_server() as url:
        yield url


_db_counter = iter(range(1, 10_000))


@pytest.fixture(params=["sqlite", "postgresql"])
def audit_url(request, tmp_path) -> Iterator[str]:
    """A fresh, empty audit store URL: a SQLite file in tmp, or a new database on the server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'audit.sqlite3'}"
        return
    import sqlalchemy as sa

    server = request.getfixturevalue("pg_server_url")
    name = f"audit_{next(_db_counter)}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    yield server.rsplit("/", 1)[0] + "/" + name
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()
