"""The frozen tree: ``git archive`` of one commit, the package folders it maps linked in, the commit as
pytest-benchmark records it, and the environment a process run inside it gets."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

from pytest_ormbench.commands.publish.errors import PublishError

TREE_PATHS = ("src", "bench_suites", "conftest.py", "pyproject.toml")
TREE_MARK = ".ormbench-tree"
#: the frozen commit as pytest-benchmark records it (commit_info), beside the mark
COMMIT_INFO = ".ormbench-commit-info.json"


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


def tree_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    if (tree / COMMIT_INFO).exists():
        env["ORMBENCH_COMMIT_INFO"] = str(tree / COMMIT_INFO)
    env["PYTHONPATH"] = f"{tree / 'src'}{os.pathsep}{tree}"
    env.pop("PYTEST_ADDOPTS", None)  # the piece's options are the command line's, recorded in its log
    for name in [n for n in env if n.startswith("PYTEST_XDIST_")]:
        del env[name]  # a publish started from inside an xdist worker must not make its pieces think they are one
    return env
