"""The arrows run one way: checked on the source, so that a new import that breaks them fails here.

- the role packages stand on floors (docs/architecture.md): a module imports only from its own floor or below;
- no import cycle among the plugin's modules;
- the contract imports no database module (the harness reaches storage through ``backends``);
- only the pytest layer (``plugin/``) imports pytest or pytest-benchmark;
- ``results/`` imports no ORM and no pytest (the reporter reads JSON).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pytest_ormbench"
ORMS = ("peewee", "sqlalchemy", "django", "tortoise", "piccolo", "ormar", "sqlobject", "objectbox", "sqlmodel",
        "aiosqlite")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function-level imports count: they run too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{alias.name}" for alias in node.names)  # "from . import x" imports module x
    return out


MODULES = {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}
PYTEST_LAYER = {m for m in MODULES if m.startswith("pytest_ormbench.plugin.")}


def _internal(name: str) -> set[str]:
    return {m for m in MODULES[name] if m in MODULES and m != name}


def test_the_source_is_found() -> None:
    assert {"pytest_ormbench.arms.contract", "pytest_ormbench.plugin", "pytest_ormbench.backends.sqlite",
            "pytest_ormbench.results.report.tables"} <= set(MODULES)


#: the role packages, ground first; a package may import its own floor and the floors below it
FLOORS: tuple[tuple[str, ...], ...] = (
    ("workload",),              # the ground: models, ops, settings, seeded data, the cell key, measures, statement kinds
    ("backends",),              # the storage seam inside the measuring child
    ("arms", "provision"),      # what arms build on; the parent's servers and proxies
    ("results",),               # the record, statistics, report and comparison (read JSON; import no ORM)
    ("measuring",),             # the child: its loop, runner, verification, callgrind
    ("scheduling",),            # the parent: scheduler, worker handles, progress, run configuration
    ("plugin",),                # the pytest layer
    ("commands",),              # ormbench report | compare | publish | scaffold | selfcheck
)
FLOOR_OF = {pkg: i for i, floor in enumerate(FLOORS) for pkg in floor}
#: old import paths kept for third-party arms (pytest_ormbench._moved): they sit above every floor
SHIMS = {"_moved", "contract", "arm_helpers", "sqlite_support", "server_support", "registry", "record", "plan",
         "databases", "scaffold", "selfcheck"}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_sits_in_a_role_package() -> None:
    loose = {m for m in MODULES if _package(m) and _package(m) not in FLOOR_OF and _package(m) not in SHIMS}
    assert not loose, f"modules outside the role packages: {sorted(loose)}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if _package(m) in FLOOR_OF))
def test_imports_run_down_the_floors(name: str) -> None:
    own = FLOOR_OF[_package(name)]
    up = {m for m in _internal(name) if _package(m) in SHIMS
          or (_package(m) in FLOOR_OF and FLOOR_OF[_package(m)] > own)
          or (_package(m) in FLOOR_OF and FLOOR_OF[_package(m)] == own and _package(m) != _package(name))}
    assert not up, f"{name} (floor {own + 1}) imports upwards or sideways: {sorted(up)}"


def test_no_import_cycle() -> None:
    # a package's __init__ re-exporting its submodules is not a cycle: edges into a package's own
    # __init__ from its submodules are ignored
    graph = {m: {d for d in _internal(m) if not m.startswith(d + ".")} for m in MODULES}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                pytest.fail("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_contract_imports_no_database_module() -> None:
    bad = {m for m in MODULES["pytest_ormbench.arms.contract"]
           if m.startswith(("pytest_ormbench.backends", "pytest_ormbench.arms.sql", "sqlite3"))}
    assert not bad


@pytest.mark.parametrize("name", sorted(set(MODULES) - PYTEST_LAYER))
def test_only_the_pytest_layer_imports_pytest(name: str) -> None:
    bad = {m for m in MODULES[name] if m.split(".")[0] in ("pytest", "_pytest", "pytest_benchmark", "xdist")}
    assert not bad, f"{name} imports {sorted(bad)}"


def test_the_reporter_and_the_comparison_import_no_orm_and_no_pytest_when_run() -> None:
    code = ("import sys, pytest_ormbench.results.compare, pytest_ormbench.results.report.write, pytest_ormbench.commands.main;"
            f"bad=[m for m in {ORMS + ('pytest',)!r} if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
