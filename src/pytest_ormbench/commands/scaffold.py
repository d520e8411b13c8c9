"""Start a new arm from a module that already passes the selfcheck.

    python -m pytest_ormbench.commands.scaffold NAME [--dir bench_suites] [--label LABEL] [--async]

writes ``<dir>/<NAME>_arm.py``: a class with every method of the contract, in the order the
harness calls them, each saying in a comment what the ORM's version does there. The module is one of two
templates, ``templates/arm_sync.py.tmpl`` and ``templates/arm_async.py.tmpl`` beside this file, as written
out (``string.Template``: ``$name``, ``$label``, ``$label_repr``, ``$cls``, ``$target``). Until it is
edited, every method hands its work to the control arm (``pytest_ormbench.suites.raw_sqlite3``), so the
module is green from the start::

    python -m pytest_ormbench.commands.selfcheck NAME --register <module>:<Class>

The placeholder is one visible object, ``self._control``, rather than a base class or a copy of
the control arm's SQL: the class already has the base it will keep (``SqliteArm``, or
``AiosqliteArm`` with ``--async``), no placeholder can survive unseen (``grep _control``), and no
second adapter is written out that could drift from the control arm. The async template runs the
control arm's methods in aiosqlite's thread, on the one connection aiosqlite holds.

Refuses (one line on stderr, exit status 2) a NAME that is not a lowercase identifier, that an
arm already has, or whose module would shadow an importable one, and an existing file.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import json
import keyword
import re
import sys
import textwrap
from pathlib import Path
from string import Template

from pytest_ormbench.arms.registry import BUILTIN_ARMS, all_arms

#: an arm name: a lowercase Python identifier (it is a test-id prefix, a module stem and a pip extra)
NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")


class ScaffoldError(Exception):
    """A refusal: printed as one line, exit status 2."""


# --------------------------------------------------------------------------
# The templates: the module as written, one file per shape (commands/templates/arm_sync.py.tmpl, arm_async.py.tmpl)
# --------------------------------------------------------------------------

#: the template of each shape (is_async -> file in pytest_ormbench.commands.templates)
TEMPLATES = {False: "arm_sync.py.tmpl", True: "arm_async.py.tmpl"}


def template(is_async: bool = False) -> Template:
    """The module template of a sync or async arm (``$name``, ``$label``, ``$label_repr``, ``$cls``, ``$target``)."""
    text = importlib.resources.files("pytest_ormbench.commands").joinpath("templates", TEMPLATES[is_async])
    return Template(text.read_text(encoding="utf-8"))


def class_name(name: str) -> str:
    """``my_orm`` -> ``MyOrmArm``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) + "Arm"


def render(name: str, label: str, target: str, is_async: bool = False) -> str:
    """The module text for a new arm (``target``: its ``module:Class``, for the docstring's command)."""
    return template(is_async).substitute(name=name, label=label, label_repr=json.dumps(label), cls=class_name(name),
                                         target=target)


# --------------------------------------------------------------------------
# Checks, writing, next steps
# --------------------------------------------------------------------------


def _known_arms() -> set[str]:
    try:
        return set(all_arms())
    except Exception:  # a broken third-party entry point must not stop a scaffold
        return {e.name for e in BUILTIN_ARMS}


def module_target(directory: Path, stem: str) -> tuple[str, Path]:
    """The dotted module name of ``<directory>/<stem>.py`` and the directory that must be on sys.path."""
    parts, root = [stem], directory.resolve()
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    return ".".join(parts), root


def check(name: str, directory: Path, label: str = "") -> Path:
    """The file to write for ``name`` in ``directory``; raises :class:`ScaffoldError` for a bad name or place."""
    if not label.isprintable() or '"""' in label or "\\" in label:
        raise ScaffoldError(f"--label {label!r}: one line of printable text, without backslashes or triple quotes")
    if not NAME_RE.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(f"{name!r} is not a valid arm name: use a lowercase Python identifier "
                            "(letters, digits, underscores; a letter first), e.g. 'pony'")
    if name in _known_arms():
        raise ScaffoldError(f"an arm named {name!r} exists already; choose another name")
    if not directory.is_dir():
        raise ScaffoldError(f"{directory} is not a directory")
    path = directory / f"{name}_arm.py"
    if path.exists():
        raise ScaffoldError(f"{path} exists; not overwriting it")
    stem = path.stem
    try:
        spec = importlib.util.find_spec(stem)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin or ", ".join(spec.submodule_search_locations or ()) or "?"
        raise ScaffoldError(f"a module named {stem!r} is importable already ({where}); {path.name} "
                            "would shadow it: choose another name")
    return path


def next_steps(name: str, path: Path, target: str, root: Path, label: str) -> str:
    cwd = Path.cwd().resolve()
    env = "" if root == cwd else f"PYTHONPATH={root} "
    try:
        shown = path.resolve().relative_to(cwd)
    except ValueError:
        shown = path
    return textwrap.dedent(f"""\
        wrote {shown}: {target.partition(':')[2]}, the control arm's plain sqlite3 behind every method
        next steps:
          1. it is green now: {env}python -m pytest_ormbench.commands.selfcheck {name} --register {target}
          2. replace each self._control call with the ORM's code, method by method, in the order the module
             docstring gives, re-running the selfcheck with --ops for the ops written so far
          3. the registry: add to BUILTIN_ARMS in src/pytest_ormbench/arms/registry.py, where the tables should show it:
               ArmEntry("{name}", "{target}", {json.dumps(label)}, ("<import name>",), "{name}"),
          4. pyproject.toml, [project.optional-dependencies]: an extra {name} = ["<distribution>>=<version>"],
             and the same requirement in the all extra
          5. bench_suites/notes/{name}.toml: its unsupported, deviations and [doc] rows (docs/adding-an-arm.md),
             then python -m pytest_ormbench.commands.arms_doc rewrites docs/arms.md
          6. tests: tests/test_arms.py selfchecks every registered arm on its own; add tests/test_arm_{name}.py
             for what the selfcheck cannot see (caches cleared, relations, process-wide state)
        the guide: docs/adding-an-arm.md
        """)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_ormbench.commands.scaffold",
                                description="Write <dir>/<NAME>_arm.py, a new arm that already passes the selfcheck.")
    p.add_argument("name", metavar="NAME", help="the arm's registry name, e.g. pony")
    p.add_argument("--dir", default="bench_suites", help="where to write the module (default: bench_suites)")
    p.add_argument("--label", default=None, help="the label the tables show (default: NAME)")
    p.add_argument("--async", dest="is_async", action="store_true",
                   help="an async arm on aiosqlite (AiosqliteArm) instead of a sync one on sqlite3")
    a = p.parse_args(argv)
    label = a.label or a.name
    directory = Path(a.dir)
    try:
        path = check(a.name, directory, label)
        module, root = module_target(directory, path.stem)
        target = f"{module}:{class_name(a.name)}"
        text = render(a.name, label, target, a.is_async)
        with open(path, "x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except ScaffoldError as exc:
        print(f"scaffold: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"scaffold: cannot write {directory / f'{a.name}_arm.py'}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(next_steps(a.name, path, target, root, label), end="")
    if a.is_async and importlib.util.find_spec("aiosqlite") is None:
        print("note: aiosqlite is not installed here; the async template needs it (pip install aiosqlite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["ScaffoldError", "check", "class_name", "main", "module_target", "render"]
