"""Structure rules that ruff and import-linter do not express, run by `make lint`.

For every module of the product packages (engine, kb_store, dashboard):
- at most MAX_MODULE_LINES lines per module and MAX_FUNCTION_LINES lines per function;
- no private name (a leading underscore) imported from another module;
- no mutable module-level cache: no `global` rebinding inside a function, and no module-level
  dict / list / set that a function mutates (a per-run memo belongs in a ContextVar or an object);
- no issue or ticket number in a module's name or its text ("issue" or "ticket" followed by a number);
- every top-level module and package of engine/ is named in the import-linter layers contract
  `engine-layers` (pyproject.toml), so that no module escapes the layer and cycle checks.

Prints one line per violation (path:line: rule) and exits 1 when there is any.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

PACKAGES = ("engine", "kb_store", "dashboard")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "setdefault", "clear", "pop", "popitem", "add"}
)
_MUTABLE_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter"})
_ISSUE_REF = re.compile(r"\b(?:issue|ticket)[ -]?#?\d+\b", re.IGNORECASE)


def _is_mutable_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in _MUTABLE_CALLS
    return False


def _module_mutables(tree: ast.Module) -> dict[str, int]:
    names: dict[str, int] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is None or not _is_mutable_literal(value):
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                names[t.id] = stmt.lineno
    return names


def _mutated_in_functions(tree: ast.Module, names: dict[str, int]) -> set[str]:
    hit: set[str] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = (
                    node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                )
                for t in targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        target = t.value.id
                        if target in names:
                            hit.add(target)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in names
            ):
                hit.add(node.func.value.id)
    return hit


def check_file(path: Path, rel: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    out: list[str] = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > MAX_MODULE_LINES:
        out.append(f"{rel}:1: module has {lines} lines (max {MAX_MODULE_LINES})")
    if _ISSUE_REF.search(path.name.replace("_", " ")) or re.search(r"issue\d+", path.name):
        out.append(f"{rel}:1: module named by an issue number")
    for i, line in enumerate(text.splitlines(), 1):
        if _ISSUE_REF.search(line):
            out.append(f"{rel}:{i}: issue number in the code ({_ISSUE_REF.search(line).group(0)})")
    tree = ast.parse(text, filename=rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(
                    f"{rel}:{node.lineno}: function {node.name} has {n} lines (max {MAX_FUNCTION_LINES})"
                )
            for sub in ast.walk(node):
                if isinstance(sub, ast.Global):
                    out.append(f"{rel}:{sub.lineno}: global {', '.join(sub.names)} (module state)")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append(
                        f"{rel}:{node.lineno}: private name {alias.name} imported from {node.module}"
                    )
    mutables = _module_mutables(tree)
    for name in sorted(_mutated_in_functions(tree, mutables)):
        out.append(f"{rel}:{mutables[name]}: module-level {name} is mutated by a function (cache)")
    return out


def unlayered_engine_modules(root: Path) -> list[str]:
    """Top-level engine modules and packages missing from the `engine-layers` contract."""
    conf = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = conf["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("id") == "engine-layers")
    named = {n.strip().strip("()") for layer in layers for n in re.split(r"[|:]", layer)}
    engine = root / "engine"
    present = {p.stem for p in engine.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in engine.iterdir() if (p / "__init__.py").exists()}
    return sorted(present - named)


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    problems: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            problems += check_file(path, str(path.relative_to(root)))
    for name in unlayered_engine_modules(root):
        problems.append(f"engine/{name}: not in the engine-layers contract of pyproject.toml")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} structure violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
