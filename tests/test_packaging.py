"""What a wheel ships: every package folder of the plugin and of the built-in arms, under pytest_ormbench.

The built-in arms live in bench_suites/ in the repository and install as ``pytest_ormbench.suites``
(pyproject's package-dir), so that a user's site-packages gets no generic top-level ``bench_suites``.
pyproject lists the packages by hand (setuptools cannot discover a mapped folder): a folder added
without its line would be missing from the wheel, and this test says which.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    found = set()
    for name, folder in CONFIG["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


def test_every_package_folder_is_listed() -> None:
    listed = set(CONFIG["packages"])
    on_disk = _packages_on_disk()
    assert on_disk - listed == set(), f"add to [tool.setuptools] packages in pyproject.toml: {sorted(on_disk - listed)}"
    assert listed - on_disk == set(), f"listed but not on disk: {sorted(listed - on_disk)}"


def test_package_data_exists() -> None:
    for package, patterns in CONFIG["package-data"].items():
        folder = ROOT / next(path for name, path in sorted(CONFIG["package-dir"].items(), key=lambda kv: -len(kv[0]))
                             if package == name or package.startswith(name + "."))
        prefix = next(name for name in sorted(CONFIG["package-dir"], key=len, reverse=True)
                      if package == name or package.startswith(name + "."))
        folder = folder.joinpath(*package[len(prefix):].strip(".").split(".")) if package != prefix else folder
        for pattern in patterns:
            assert list(folder.glob(pattern)), f"{package}: nothing matches {pattern} in {folder}"


def test_the_built_in_arms_are_registered_under_the_package() -> None:
    from pytest_ormbench.arms.registry import BUILTIN_ARMS

    assert all(entry.target.startswith("pytest_ormbench.suites.") for entry in BUILTIN_ARMS)


def test_nothing_imports_the_arms_by_their_folder_name() -> None:
    """In the repository ``bench_suites`` is also importable by its folder name, and a module imported both ways
    is two modules (two registries of ObjectBox entities, two copies of a class): code names it one way only."""
    import re

    pattern = re.compile(r"^\s*(from\s+bench_suites[\s.]|import\s+bench_suites\b)", re.MULTILINE)
    offenders = [str(p.relative_to(ROOT)) for folder in ("src", "bench_suites", "tests", "experiments")
                 for p in (ROOT / folder).rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"import pytest_ormbench.suites instead of bench_suites in: {offenders}"
