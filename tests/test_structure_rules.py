"""tools/check_structure.py catches what it promises (a module that breaks each rule is reported),
and the product packages hold every rule today."""

from __future__ import annotations

from pathlib import Path

from tools import check_structure

BAD = '''"""A module that breaks the rules (issue 42)."""
from engine.grounding.facts_view import _fv

_CACHE = {}


def remember(key, value):
    global _LAST
    _CACHE[key] = value
'''


def test_each_rule_is_reported(tmp_path: Path) -> None:
    long_fn = "def long():\n" + "    x = 1\n" * 85
    path = tmp_path / "bad.py"
    path.write_text(BAD + "\n\n" + long_fn + "\n" * 450, encoding="utf-8")
    found = "\n".join(check_structure.check_file(path, "engine/bad.py"))
    assert "module has" in found and "(max 500)" in found
    assert "function long has 86 lines" in found
    assert "private name _fv imported from engine.grounding.facts_view" in found
    assert "global _LAST" in found
    assert "module-level _CACHE is mutated by a function" in found
    assert "issue number in the code (issue 42)" in found


def test_an_engine_module_outside_the_layers_is_reported(tmp_path: Path) -> None:
    root = Path(check_structure.__file__).resolve().parents[1]
    (tmp_path / "engine").mkdir()
    for name in ("cli.py", "stray.py"):
        (tmp_path / "engine" / name).write_text("", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        (root / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert check_structure.unlayered_engine_modules(tmp_path) == ["stray"]


def test_the_product_packages_hold_every_rule() -> None:
    assert check_structure.main([]) == 0
