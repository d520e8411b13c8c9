"""`python -m pytest_ormbench.commands.scaffold`: the module it writes passes the selfcheck as it stands, and
it refuses, in one line and with exit status 2, what it must not do."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ormbench.commands import scaffold
from pytest_ormbench.workload.spec import MODELS, OPS

REPO_ROOT = Path(__file__).resolve().parents[1]


def _selfcheck(name: str, target: str, path_dir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path_dir), env.get("PYTHONPATH")) if p)
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        # the selfcheck's databases on tmpfs: the same checks, without waiting for a disk's fsyncs
        env["TMPDIR"] = "/dev/shm"
    return subprocess.run(
        [sys.executable, "-m", "pytest_ormbench.commands.selfcheck", name, "--register", target,
         "--iterations", "5", "--batch", "50", "--tables", "default"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.parametrize("variant", ["sync", "async"])
def test_the_scaffolded_arm_passes_the_selfcheck(tmp_path: Path, variant: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    if variant == "async" and importlib.util.find_spec("aiosqlite") is None:
        pytest.skip("aiosqlite is not installed")
    name = f"scaffolded_{variant}"
    argv = [name, "--dir", str(tmp_path), "--label", f"Scaffolded ({variant})"]
    assert scaffold.main(argv + (["--async"] if variant == "async" else [])) == 0
    out = capsys.readouterr().out
    target = f"{name}_arm:{scaffold.class_name(name)}"
    assert f"--register {target}" in out
    text = (tmp_path / f"{name}_arm.py").read_text(encoding="utf-8")
    # every op is written out, each with the comment saying what the ORM's version does there
    for op in OPS:
        head = f"{'async ' if variant == 'async' else ''}def {op.name}("
        assert head in text, head
        assert "# your ORM: " in text.split(head, 1)[1].split("\n    def ", 1)[0], op.name
    proc = _selfcheck(name, target, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "0 failed", proc.stdout[-4000:]
    # every model x op checked (none declared unsupported), one table
    assert sum(line.startswith("ok ") for line in lines) == len(MODELS) * len(OPS), proc.stdout[-4000:]


def test_next_steps_name_every_file_an_arm_touches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "suites"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    assert scaffold.main(["newone", "--dir", str(pkg), "--label", "New One"]) == 0
    out = capsys.readouterr().out
    # a module in a package is registered by its dotted name, the package's parent on the path
    assert '"suites.newone_arm:NewoneArm"' in out
    assert f"PYTHONPATH={tmp_path.resolve()} python -m pytest_ormbench.commands.selfcheck newone" in out
    for needle in ("src/pytest_ormbench/arms/registry.py", 'ArmEntry("newone", "suites.newone_arm:NewoneArm", "New One"',
                   "pyproject.toml", "all extra", "docs/arms.md", "tests/test_arms.py", "tests/test_arm_newone.py",
                   "docs/adding-an-arm.md"):
        assert needle in out, needle
    assert 'name = "newone"' in (pkg / "newone_arm.py").read_text(encoding="utf-8")


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert scaffold.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scaffold: "), captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize("name", ["Pony", "my-orm", "2nd", "class", "with space", "ünï", ""])
def test_a_name_that_is_not_a_lowercase_identifier_is_refused(name: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a valid arm name" in _refused([name, "--dir", str(tmp_path)], capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["sqlite3", "peewee", "objectbox_nocodegen"])
def test_an_existing_arm_name_is_refused(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "exists already" in _refused([name, "--dir", str(tmp_path)], capsys)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "pony_arm.py"
    mine.write_text("# my work\n", encoding="utf-8")
    assert "not overwriting" in _refused(["pony", "--dir", str(tmp_path)], capsys)
    assert mine.read_text(encoding="utf-8") == "# my work\n"


def test_a_module_that_would_shadow_an_importable_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "zed_arm.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "out"
    out.mkdir()
    assert "would shadow" in _refused(["zed", "--dir", str(out)], capsys)
    assert list(out.iterdir()) == []


def test_a_missing_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a directory" in _refused(["pony", "--dir", str(tmp_path / "nowhere")], capsys)
    assert not (tmp_path / "nowhere").exists()


def test_the_command_refuses_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    for argv in (["Bad-Name"], ["peewee"]):
        proc = subprocess.run([sys.executable, "-m", "pytest_ormbench.commands.scaffold", *argv, "--dir", str(tmp_path)],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == ""


@pytest.mark.parametrize("label", ["two\nlines", 'a """ b', "back\\slash"])
def test_a_label_that_would_break_the_module_is_refused(label: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert "--label" in _refused(["pony", "--dir", str(tmp_path), "--label", label], capsys)
    assert list(tmp_path.iterdir()) == []
