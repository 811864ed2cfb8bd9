"""The declared streamlit floor is the version the dashboard is built and tested
with (st.navigation deep links, st.status), and contexts/ is declared as shipped data."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: the streamlit release the dashboard is developed and tested against
TESTED_STREAMLIT = Version("1.67")


def test_streamlit_floor_is_the_tested_version():
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    req = next(Requirement(d) for d in deps if d.startswith("streamlit"))
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert floors and min(floors) >= TESTED_STREAMLIT


def test_contexts_are_package_data():
    cfg = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]
    assert "contexts" in cfg["packages"]["find"]["include"]
    assert set(cfg["package-data"]["contexts"]) >= {"*.md", "*.json"}
