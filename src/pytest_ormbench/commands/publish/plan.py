"""The plan: publish's options, checked, and the pieces they make (one arm on one database each), found by
asking the chosen interpreter inside the frozen tree (``PLAN_SCRIPT``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pytest_ormbench.commands.publish.errors import PublishError
from pytest_ormbench.commands.publish.tree import tree_env
from pytest_ormbench.scheduling.config import PRESETS

DEFAULT_TEMPLATE = "{name}-{arm}{-db}"
PLACEHOLDERS = ("{name}", "{arm}", "{db}", "{-db}")
#: options publish sets itself, per piece or for the whole run
OWNED = ("--benchmark-json", "--ormbench-report", "--benchmark-save", "--benchmark-autosave")

#: run by the chosen interpreter inside the frozen tree: which arms exist there, whether they can run, and on
#: which databases (that needs the arm class, so only when a server database is asked for)
PLAN_SCRIPT = r"""
import json, sys
import pytest_ormbench
try:
    from pytest_ormbench.arms.registry import all_arms, import_arm
except ImportError:  # a tree from before the role packages
    from pytest_ormbench.registry import all_arms, import_arm
wanted, dbs, extra = json.loads(sys.argv[1])
arms = all_arms(tuple(extra))
out = {"package": pytest_ormbench.__file__, "arms": []}
import importlib.util
spec = importlib.util.find_spec("pytest_ormbench.plugin.options") or importlib.util.find_spec("pytest_ormbench.options")
source = open(spec.origin, encoding="utf-8").read() if spec and spec.origin else ""
out["db_flag"] = "--ormbench-dbs" if '"dbs"' in source or "ormbench-dbs" in source else "--ormbench-db"
try:  # the built-in arms, where they install as a subpackage: they must come from the tree too
    import pytest_ormbench.suites as suites
    out["suites"] = suites.__file__
except ImportError:
    pass
for name, entry in arms.items():
    info = {"name": name, "missing": entry.missing(), "control_for": getattr(entry, "control_for", ""),
            "databases": ["sqlite"]}
    if any(db != "sqlite" for db in dbs) and not info["missing"] and (not wanted or name in wanted):
        try:
            info["databases"] = list(getattr(import_arm(entry.target), "databases", ("sqlite",)))
        except Exception as exc:
            info["missing"] = f"{type(exc).__name__}: {exc}"
    out["arms"].append(info)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Piece:
    arm: str
    db: str
    stem: str
    db_flag: str = "--ormbench-db"  # the tree's spelling (--ormbench-dbs since the plural list axes)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p = sub.add_parser(
        "publish", allow_abbrev=False,
        help="run a preset's matrix as resumable pieces (one pytest process per arm and database) from a frozen "
             "tree, then write the report, charts, ratios and wall times",
        description="Run a preset's matrix as resumable pieces, one pytest process per arm and database, from a "
                    "frozen copy of the tree (git archive of --commit) with --python; then write report.md, charts/, "
                    "ratios-vs-reference.md and wall-times.md in --out. Options it does not know (--ormbench-*, -k, "
                    "...; or everything after --) go to every piece's pytest. A piece whose JSON exists and whose log "
                    "ends with exit=0 is skipped: run the same command again to resume. Exit status: 0 every piece "
                    "passed, 1 a piece failed, 2 bad input, 130/143 stopped by a signal.")
    p.add_argument("--out", type=Path, metavar="DIR", help="where the pieces' JSON and logs and the tables go")
    p.add_argument("--preset", default=None, metavar="{" + ",".join(PRESETS) + "}",
                   help="the plugin's preset (default full; --ormbench-preset=... works too)")
    p.add_argument("--name", default=None, help="the {name} in the piece names (default: the preset's name)")
    p.add_argument("--template", default=DEFAULT_TEMPLATE,
                   help=f"a piece's file stem (default {DEFAULT_TEMPLATE}); placeholders {', '.join(PLACEHOLDERS)} "
                        "({-db} is empty on sqlite, -DB elsewhere)")
    p.add_argument("--python", default=sys.executable, metavar="PATH",
                   help="the interpreter the pieces run with (default: this one); it needs the arms' packages")
    p.add_argument("--repo", type=Path, default=None, metavar="DIR",
                   help="the git checkout to take the tree from (default: the one around the current directory)")
    p.add_argument("--commit", default="HEAD", metavar="REV", help="the commit to freeze (default HEAD)")
    p.add_argument("--tree", type=Path, default=None, metavar="DIR",
                   help="keep the frozen tree here (reused when it holds the same commit; default: a temporary "
                        "directory, removed at the end)")
    p.add_argument("--finalize-only", action="store_true",
                   help="run nothing: write the report, charts, ratios and wall times from the JSON and logs in --out")
    p.add_argument("--no-finalize", action="store_true", help="run the pieces, write no tables")
    p.add_argument("--no-charts", action="store_true", help="write the report without charts")
    return p


def split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """publish's own arguments, and what follows a ``--`` (all of it for pytest)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _take(args: list[str], flag: str) -> tuple[str | None, list[str]]:
    """The value of ``flag`` (``--flag=V`` or ``--flag V``; the last one wins) and the arguments without it."""
    value, rest, i = None, [], 0
    while i < len(args):
        a = args[i]
        if a == flag:
            if i + 1 >= len(args):
                raise PublishError(f"{flag} needs a value")
            value, i = args[i + 1], i + 2
            continue
        if a.startswith(flag + "="):
            value = a[len(flag) + 1:]
        else:
            rest.append(a)
        i += 1
    return value, rest


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@dataclass
class Plan:
    out: Path
    preset: str
    name: str
    template: str
    python: str
    arms: list[str]  # as asked; empty: every arm that can run
    dbs: list[str]
    register: list[str]
    passthrough: list[str]


def make_plan(a: argparse.Namespace, extra: list[str]) -> Plan:
    """Validate publish's options and split the pass-through ones; raises PublishError."""
    from pytest_ormbench.plugin.options import DB_ALIASES, DB_AXIS
    from pytest_ormbench.scheduling.config import DEFAULT_PRESET, PRESETS

    if a.out is None:
        raise PublishError("--out DIR is required (where the pieces' JSON and logs go)")
    if a.out.exists() and not a.out.is_dir():
        raise PublishError(f"--out {a.out}: not a directory")
    stray = [x for x in extra if not x.startswith("-")]
    if stray and not any(x.startswith("-") for x in extra[:extra.index(stray[0])]):
        raise PublishError(f"unexpected argument {stray[0]!r} (pytest options go after --, or as --opt=value)")
    for owned in OWNED:
        if any(x == owned or x.startswith(owned + "=") for x in extra):
            raise PublishError(f"{owned}: publish names each piece's output itself (see --out, --template)")
    preset_opt, extra = _take(extra, "--ormbench-preset")
    if a.preset and preset_opt and a.preset.strip().lower() != preset_opt.strip().lower():
        raise PublishError(f"--preset {a.preset} and --ormbench-preset={preset_opt} disagree")
    preset = (a.preset or preset_opt or DEFAULT_PRESET).strip().lower()
    if preset not in PRESETS:
        raise PublishError(f"--preset: unknown value {preset!r}; valid: {', '.join(PRESETS)}")
    arms_opt, extra = _take(extra, "--ormbench-arms")
    db_opt, extra = _take(extra, "--ormbench-db")
    dbs_opt, extra = _take(extra, "--ormbench-dbs")  # the plural spelling of newer trees
    db_opt = dbs_opt or db_opt
    dbs = []
    for d in _csv(db_opt) or ["sqlite"]:
        d = DB_ALIASES.get(d.lower(), d.lower())
        if d not in DB_AXIS:
            raise PublishError(f"--ormbench-db: unknown value {d!r}; valid: {', '.join(DB_AXIS)}")
        if d not in dbs:
            dbs.append(d)
    register = [v for i, x in enumerate(extra) for v in
                ([x.split("=", 1)[1]] if x.startswith("--ormbench-register=")
                 else [extra[i + 1]] if x == "--ormbench-register" and i + 1 < len(extra) else [])]
    if not os.access(a.python, os.X_OK) or os.path.isdir(a.python):
        raise PublishError(f"--python {a.python}: not an executable file")
    template = a.template
    unknown = [t for t in re.findall(r"\{[^}]*\}", template) if t not in PLACEHOLDERS]
    if unknown:
        raise PublishError(f"--template: unknown placeholder {unknown[0]}; valid: {', '.join(PLACEHOLDERS)}")
    if "{arm}" not in template:
        raise PublishError("--template must contain {arm} (one piece per arm)")
    if len(dbs) > 1 and "{db}" not in template and "{-db}" not in template:
        raise PublishError("--template must contain {db} or {-db} when more than one database runs")
    name = preset if a.name is None else a.name
    if "/" in name + template or not re.fullmatch(r"[^\s/]+", stem(template, name, "x", "sqlite")):
        raise PublishError("--name and --template make file names: no '/' and no spaces")
    return Plan(a.out.resolve(), preset, name, template, str(Path(a.python).absolute()), _csv(arms_opt), dbs,
                register, extra)


def stem(template: str, name: str, arm: str, db: str) -> str:
    return (template.replace("{name}", name).replace("{arm}", arm).replace("{db}", db)
            .replace("{-db}", "" if db == "sqlite" else f"-{db}"))


def pieces_for(plan: Plan, tree: Path) -> tuple[list[Piece], list[str]]:
    """The pieces to run, in order (database, then the registry's or the given arm order), and notes on what
    does not run here."""
    cmd = [plan.python, "-c", PLAN_SCRIPT, json.dumps([plan.arms, plan.dbs, plan.register])]
    done = subprocess.run(cmd, cwd=tree, env=tree_env(tree), capture_output=True, text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PublishError(f"{plan.python} cannot load the plugin from the frozen tree: {last}")
    found = json.loads(done.stdout)
    for what in ("package", "suites"):
        if what in found and not Path(found[what]).resolve().is_relative_to(tree.resolve()):
            raise PublishError(f"{plan.python} imports {found[what]}, not the frozen tree's: the pieces would not "
                               "run the frozen code")
    arms = {a["name"]: a for a in found["arms"]}
    unknown = [a for a in plan.arms if a not in arms]
    if unknown:
        raise PublishError(f"--ormbench-arms: unknown arm {unknown[0]!r}; known: {', '.join(arms)}")
    notes = []
    for name in plan.arms:
        if arms[name]["missing"]:
            raise PublishError(f"arm {name} cannot run with {plan.python}: {arms[name]['missing']}")
    order = plan.arms or list(arms)
    pieces = []
    for db in plan.dbs:
        for name in order:
            info = arms[name]
            if info["missing"]:
                notes.append(f"{name}: not run ({info['missing']})")
                continue
            if db not in info["databases"] or info["control_for"] not in ("", db):
                if plan.arms:
                    notes.append(f"{name}: does not run on {db}")
                continue
            pieces.append(Piece(name, db, stem(plan.template, plan.name, name, db),
                                found.get("db_flag", "--ormbench-db")))
    if len({p.stem for p in pieces}) != len(pieces):
        raise PublishError(f"--template {plan.template} gives two pieces the same file name")
    if not pieces:
        raise PublishError("nothing to run: no arm of the selection runs on " + ",".join(plan.dbs))
    return pieces, notes
