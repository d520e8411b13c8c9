"""``ormbench publish``: a preset's whole matrix as resumable pieces, then the published tables.

    ormbench publish --out DIR [--preset full] [--python PATH] [--commit REV] [PYTEST/PLUGIN OPTIONS...]
    ormbench publish --out DIR --finalize-only

The matrix is split into pieces, one pytest process each: one arm on one database
(``--ormbench-arms=ARM --ormbench-db=DB``; the plugin runs the control arms beside every piece, as it
always does). Every piece runs from a frozen copy of the tree (``git archive`` of one commit: edits made
during a multi-hour run do not reach it) with a named interpreter, and writes ``DIR/STEM.json`` and
``DIR/STEM.log``; the log starts with the commit it ran from and ends with the line
``exit=N wall_seconds=S started=YYYY-MM-DDTHH:MM:SSZ``. A piece whose JSON exists and whose log ends
with ``exit=0`` is skipped when the same command runs again, so a stopped publish resumes where it
stopped: a piece writes its JSON to ``STEM.json.partial`` and renames it only once pytest has finished.
``DIR/publish-manifest.jsonl`` gets a line per invocation and per piece (tree, interpreter, options,
exit, wall time). At the end it writes what the published folder holds beside the JSON:
``report.md`` and ``charts/`` (``ormbench report``), ``ratios-vs-reference.md`` and ``wall-times.md``
(from every log's last line). One publish at a time per folder (a lock file, held by the running piece
too). Bad options: one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

#: the last line of a piece's log (run-large-arms.sh wrote it so before; wall-times.md and run tables read it)
END_LINE = re.compile(r"exit=(\d+) wall_seconds=(\d+) started=(\S+)")
TREE_PATHS = ("src", "bench_suites", "conftest.py", "pyproject.toml")
TREE_MARK = ".ormbench-tree"
#: the frozen commit as pytest-benchmark records it (commit_info), beside the mark
COMMIT_INFO = ".ormbench-commit-info.json"
MANIFEST = "publish-manifest.jsonl"
LOCK = ".publish.lock"
DEFAULT_TEMPLATE = "{name}-{arm}{-db}"
PLACEHOLDERS = ("{name}", "{arm}", "{db}", "{-db}")
#: options publish sets itself, per piece or for the whole run
OWNED = ("--benchmark-json", "--ormbench-report", "--benchmark-save", "--benchmark-autosave")
#: pytest's exit status for a usage error (a bad --ormbench-* value)
USAGE_ERROR = 4

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


class PublishError(Exception):
    """Bad input or a setup that cannot work: one line, exit status 2."""


@dataclass(frozen=True)
class Piece:
    arm: str
    db: str
    stem: str
    db_flag: str = "--ormbench-db"  # the tree's spelling (--ormbench-dbs since the plural list axes)


@dataclass
class Outcome:
    stem: str
    status: str  # "skipped", "ok", "failed", "stopped"
    code: int | None = None
    seconds: int | None = None


# --- options ---------------------------------------------------------------------------------------------

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
    p.add_argument("--preset", default=None, metavar="{quick,full,publication}",
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


# --- the frozen tree ---------------------------------------------------------------------------------------

def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise PublishError("git is not installed (publish freezes the tree with git archive)") from None
    if done.returncode:
        raise PublishError(f"git {' '.join(args)}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return done.stdout.strip()


def freeze(repo: Path, rev: str, tree: Path) -> tuple[str, bool]:
    """Extract ``rev``'s src, bench_suites, conftest.py and pyproject.toml into ``tree``; its sha, and whether
    the checkout had uncommitted changes (they are not in the frozen copy)."""
    top = Path(_git(repo, "rev-parse", "--show-toplevel"))
    try:
        sha = _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except PublishError:
        raise PublishError(f"--commit {rev}: not a commit in {top}") from None
    mark = tree / TREE_MARK
    if tree.exists() and any(tree.iterdir()):
        if mark.exists() and mark.read_text(encoding="utf-8").strip() == sha:
            return sha, False
        raise PublishError(f"--tree {tree}: not empty and not a frozen copy of {sha[:12]}")
    present = set(_git(top, "ls-tree", "--name-only", sha).splitlines())
    paths = [p for p in TREE_PATHS if p in present]
    if "src" not in paths or "bench_suites" not in paths:
        raise PublishError(f"commit {sha[:12]} has no src/ and bench_suites/: not a pytest-ormbench tree")
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(top), "archive", "--format=tar", sha, *paths],
                             capture_output=True, check=False)
    if archive.returncode:
        raise PublishError(f"git archive {sha[:12]}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # 3.11.4 and newer
            tar.extractall(tree, filter="data")
        else:  # pragma: no cover - git archive of our own commit: no absolute paths or links out
            tar.extractall(tree)
    _link_package_dirs(tree)
    # what pytest-benchmark records as the run's commit_info: the frozen copy has no checkout to read it from
    # (the plugin's pytest_benchmark_generate_commit_info reads this file, named in ORMBENCH_COMMIT_INFO)
    info = {"id": sha, "time": _git(top, "show", "-s", "--format=%cI", sha),
            "author_time": _git(top, "show", "-s", "--format=%aI", sha), "dirty": False,
            "project": top.name, "branch": None, "frozen_tree": True}
    (tree / COMMIT_INFO).write_text(json.dumps(info) + "\n", encoding="utf-8")
    mark.write_text(sha + "\n", encoding="utf-8")
    dirty = bool(_git(top, "status", "--porcelain", "--untracked-files=no", "--", *paths)) and rev == "HEAD"
    return sha, dirty


def _link_package_dirs(tree: Path) -> None:
    """The subpackages pyproject maps to other folders (``pytest_ormbench.suites = bench_suites``) linked into
    ``src/``, so that the frozen tree imports them from itself: an editable install would map them to the live
    checkout, and a regular one would not find them beside the tree's own ``pytest_ormbench``."""
    import tomllib

    try:
        mapping = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return
    for package, folder in (mapping.get("tool", {}).get("setuptools", {}).get("package-dir", {}) or {}).items():
        parts = package.split(".")
        if len(parts) > 1 and parts[0] == "pytest_ormbench" and (tree / folder).is_dir():
            link = tree.joinpath("src", *parts)
            if not link.exists():
                link.symlink_to(os.path.relpath(tree / folder, link.parent), target_is_directory=True)


def _tree_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    if (tree / COMMIT_INFO).exists():
        env["ORMBENCH_COMMIT_INFO"] = str(tree / COMMIT_INFO)
    env["PYTHONPATH"] = f"{tree / 'src'}{os.pathsep}{tree}"
    env.pop("PYTEST_ADDOPTS", None)  # the piece's options are the command line's, recorded in its log
    return env


def pieces_for(plan: Plan, tree: Path) -> tuple[list[Piece], list[str]]:
    """The pieces to run, in order (database, then the registry's or the given arm order), and notes on what
    does not run here."""
    cmd = [plan.python, "-c", PLAN_SCRIPT, json.dumps([plan.arms, plan.dbs, plan.register])]
    done = subprocess.run(cmd, cwd=tree, env=_tree_env(tree), capture_output=True, text=True, check=False)
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


# --- running -----------------------------------------------------------------------------------------------

def last_end_line(log: Path) -> tuple[int, int, str] | None:
    """(exit, wall seconds, started) from a log's last end line, or None (no log, or a piece still running or
    killed before it could write one)."""
    try:
        found = END_LINE.findall(log.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if not found:
        return None
    code, secs, started = found[-1]
    return int(code), int(secs), started


def is_done(out: Path, piece: Piece) -> tuple[int, int, str] | None:
    end = last_end_line(out / f"{piece.stem}.log")
    return end if end and end[0] == 0 and (out / f"{piece.stem}.json").is_file() else None


def _minsec(secs: int) -> str:
    return f"{secs // 60} min {secs % 60:02d} s"


def _stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Stop(Exception):
    """A signal asked the publish to stop; the running piece was stopped and recorded."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Runner:
    """Runs pieces one at a time; a SIGTERM, SIGINT or SIGHUP stops the running piece's whole process group."""

    def __init__(self, plan: Plan, tree: Path, sha: str, lock_fd: int, say: IO[str]) -> None:
        self.plan, self.tree, self.sha, self.lock_fd, self.say = plan, tree, sha, lock_fd, say
        self.child: subprocess.Popen[bytes] | None = None
        self.signum = 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signum = self.signum or signum
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signal.SIGTERM)

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def command(self, piece: Piece, json_path: Path) -> list[str]:
        return [self.plan.python, "-m", "pytest", "bench_suites", "-p", "no:cacheprovider", "-q",
                f"--ormbench-preset={self.plan.preset}", f"--ormbench-arms={piece.arm}", f"{piece.db_flag}={piece.db}",
                *self.plan.passthrough, f"--benchmark-json={json_path}"]

    def run(self, piece: Piece) -> Outcome:
        out = self.plan.out
        log, final, partial = out / f"{piece.stem}.log", out / f"{piece.stem}.json", out / f"{piece.stem}.json.partial"
        # an earlier attempt's log and JSON are kept beside, out of the *.log and *.json that finalize reads: a
        # piece stopped now leaves no JSON
        for earlier in (log, final):
            if earlier.exists():
                os.replace(earlier, earlier.with_name(earlier.name + ".prev"))
        partial.unlink(missing_ok=True)
        cmd = self.command(piece, partial)
        start = time.time()
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"ormbench publish: piece {piece.stem}: tree {self.sha} ({self.tree}); python {self.plan.python}; "
                     f"started={_stamp(start)}\n")
            fh.write(f"ormbench publish: {shlex.join(cmd)}\n")
            fh.flush()
            if self.signum:
                raise Stop(self.signum)
            # a session of its own, so that a stop reaches its workers too; the lock goes with it, so that no
            # second publish starts in this folder while an orphaned piece still writes to it
            self.child = subprocess.Popen(cmd, cwd=self.tree, env=_tree_env(self.tree), stdout=fh,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, pass_fds=(self.lock_fd,))
            code = self._wait(self.child)
            self.child = None
            wall = int(time.time() - start)
            if code < 0:  # killed by a signal: as a shell reports it
                code = 128 - code
            if self.signum and code == 0:
                code = 128 + self.signum  # stopped between pytest's end and here: count it as stopped
            # 0: every cell passed; 1: pytest finished and a cell failed (its JSON is kept for the record, the log's
            # exit=1 makes the next run redo it); anything else: the JSON, if any, is not a whole run
            if code in (0, 1) and partial.exists():
                os.replace(partial, final)
            else:
                partial.unlink(missing_ok=True)
            fh.write(f"exit={code} wall_seconds={wall} started={_stamp(start)}\n")
        if self.signum:
            raise Stop(self.signum)
        return Outcome(piece.stem, "ok" if code == 0 else "failed", code, wall)

    def _wait(self, child: subprocess.Popen[bytes]) -> int:
        while True:
            try:
                return child.wait(timeout=60 if self.signum else None)
            except subprocess.TimeoutExpired:  # a minute after the stop it is still running: kill the group
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)


def _usage_line(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    errors = [ln for ln in lines if ln.startswith("ERROR:") or "error:" in ln]
    return (errors[-1] if errors else lines[-2] if len(lines) > 1 else "usage error").removeprefix("ERROR: ")


# --- the folder --------------------------------------------------------------------------------------------

@contextlib.contextmanager
def locked(out: Path) -> Iterator[int]:
    """Hold ``out``'s lock file (an flock, so a killed holder leaves no stale lock); removed when done."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise PublishError(f"{out} is being published by another process (pid {holder}); one publish per "
                               "folder") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed the file after we opened it: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        path.unlink(missing_ok=True)  # still ours: nobody else can hold the lock on this file
        os.close(fd)


def _manifest(out: Path, record: dict[str, object]) -> None:
    with open(out / MANIFEST, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


# --- finalize ----------------------------------------------------------------------------------------------

def wall_times(out: Path) -> str:
    """wall-times.md: every log's last ``wall_seconds=`` line, as finalize.sh tabled it."""
    rows = ["| run log | started (UTC) | wall time | exit |", "| --- | --- | ---: | ---: |"]
    for log in sorted(out.glob("*.log"), key=lambda p: p.name.encode()):
        lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if "wall_seconds=" in ln]
        line = lines[-1] if lines else ""
        secs = m.group(1) if (m := re.match(r".*wall_seconds=([0-9]*)", line)) else ""
        started = m.group(1).replace("T", " ")[:16] if (m := re.match(r".*started=([0-9T:-]*)", line)) else ""
        code = m.group(1) if (m := re.match(r"exit=([0-9]*)", line)) else ""
        if secs:
            rows.append(f"| {log.name} | {started or '?'} | {_minsec(int(secs))} | {code} |")
        else:
            rows.append(f"| {log.name} | — | running or stopped | — |")
    return "\n".join(rows) + "\n"


def _base(out: Path) -> Path:
    """Where the report's source names start: the checkout around ``out`` (results/… as before), else its parent."""
    done = subprocess.run(["git", "-C", str(out), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else out.parent


def finalize(out: Path, charts: bool, say: IO[str]) -> None:
    from pytest_ormbench.results.reference import ratios_markdown
    from pytest_ormbench.results.report.load import load
    from pytest_ormbench.results.report.write import write_report

    out = out.resolve()
    files = sorted(out.glob("*.json"))
    if not files:
        raise PublishError(f"{out}: no piece JSON to report on")
    base = _base(out)
    with contextlib.chdir(base):  # the report names its sources as given: relative to the checkout
        runs = load([os.path.relpath(f, base) for f in files])
        write_report(runs, out / "report.md", "markdown", out / "charts" if charts else None, err=say)
    (out / "ratios-vs-reference.md").write_text(ratios_markdown(runs), encoding="utf-8")
    (out / "wall-times.md").write_text(wall_times(out), encoding="utf-8")
    print(f"ormbench publish: wrote {out}/report.md{'' if not charts else ', charts/'}, ratios-vs-reference.md, "
          f"wall-times.md ({len(files)} JSON files)", file=say)


# --- the command -------------------------------------------------------------------------------------------

def publish(a: argparse.Namespace, extra: list[str], say: IO[str]) -> int:
    if a.finalize_only:
        if a.out is None:
            raise PublishError("--out DIR is required")
        if extra:
            raise PublishError(f"--finalize-only runs nothing: {extra[0]} does not apply")
        if not a.out.is_dir():
            raise PublishError(f"--out {a.out}: no such directory")
        with locked(a.out.resolve()):
            finalize(a.out, not a.no_charts, say)
        return 0
    plan = make_plan(a, extra)
    repo = (a.repo or Path.cwd()).resolve()
    with locked(plan.out) as lock_fd, contextlib.ExitStack() as stack:
        if a.tree is None:
            tree = Path(tempfile.mkdtemp(prefix="ormbench-tree-"))
            stack.callback(shutil.rmtree, tree, True)
        else:
            tree = a.tree.resolve()
        sha, dirty = freeze(repo, a.commit, tree)
        print(f"ormbench publish: tree {sha[:12]} ({a.commit}) frozen in {tree}; python {plan.python}", file=say)
        if dirty:
            print("ormbench publish: note: the checkout has uncommitted changes; the pieces run the commit without "
                  "them", file=say)
        pieces, notes = pieces_for(plan, tree)
        for n in notes:
            print(f"ormbench publish: {n}", file=say)
        print(f"ormbench publish: preset {plan.preset}, {len(pieces)} piece(s) into {plan.out}: "
              + ", ".join(p.stem for p in pieces), file=say, flush=True)
        _manifest(plan.out, {"event": "publish", "started": _stamp(time.time()), "commit": sha, "rev": a.commit,
                             "repo": str(repo), "tree": str(tree), "python": plan.python, "preset": plan.preset,
                             "template": plan.template, "name": plan.name, "dbs": plan.dbs, "arms": plan.arms,
                             "options": plan.passthrough, "pieces": [p.stem for p in pieces]})
        runner = Runner(plan, tree, sha, lock_fd, say)
        outcomes: list[Outcome] = []
        with runner.signals():
            for i, piece in enumerate(pieces, 1):
                tag = f"[{i}/{len(pieces)}] {piece.stem}"
                done = is_done(plan.out, piece)
                if done:
                    print(f"{tag}: done before (exit=0, {_minsec(done[1])}, started {done[2]}): skipped", file=say,
                          flush=True)
                    outcomes.append(Outcome(piece.stem, "skipped", 0, done[1]))
                    continue
                print(f"{tag}: running (log: {plan.out / (piece.stem + '.log')})", file=say, flush=True)
                try:
                    result = runner.run(piece)
                except Stop as stop:
                    end = last_end_line(plan.out / f"{piece.stem}.log")
                    _manifest(plan.out, {"event": "piece", "piece": piece.stem, "commit": sha, "status": "stopped",
                                         "exit": end[0] if end else None, "wall_seconds": end[1] if end else None,
                                         "arm": piece.arm, "db": piece.db})
                    print(f"{tag}: stopped by {stop} after {_minsec(end[1]) if end else '?'}; its JSON is not kept. "
                          "Run the same command again to resume.", file=say, flush=True)
                    return 128 + stop.signum
                outcomes.append(result)
                _manifest(plan.out, {"event": "piece", "piece": piece.stem, "commit": sha, "status": result.status,
                                     "exit": result.code, "wall_seconds": result.seconds, "arm": piece.arm,
                                     "db": piece.db})
                print(f"{tag}: exit={result.code} in {_minsec(result.seconds or 0)}", file=say, flush=True)
                if result.code == USAGE_ERROR:
                    raise PublishError(f"pytest refused the options: {_usage_line(plan.out / (piece.stem + '.log'))}")
        failed = [o for o in outcomes if o.status == "failed"]
        ran = [o for o in outcomes if o.status == "ok"]
        print(f"ormbench publish: {len(ran)} piece(s) ran, {len(outcomes) - len(ran) - len(failed)} skipped as done, "
              f"{len(failed)} failed" + (f" ({', '.join(o.stem for o in failed)}: see their logs)" if failed else ""),
              file=say, flush=True)
        if a.no_finalize:
            pass
        elif any(plan.out.glob("*.json")):
            finalize(plan.out, not a.no_charts, say)
        else:
            print("ormbench publish: no piece JSON yet: no report written", file=say)
        return 1 if failed else 0


def run(a: argparse.Namespace, extra: list[str]) -> int:
    """The ``publish`` subcommand (its PublishError, like every bad input, is one line from ``main``)."""
    return publish(a, extra, sys.stderr)


__all__ = ["END_LINE", "PublishError", "add_parser", "finalize", "last_end_line", "run", "split_passthrough",
           "wall_times"]
