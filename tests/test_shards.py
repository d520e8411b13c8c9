"""A matrix split across machines (--ormbench-shard=K/N) and merged back by ormbench report (issue 33)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import child_env

from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.commands.main import main
from pytest_ormbench.results.report.load import ReportError, load
from pytest_ormbench.scheduling.shards import Shard, ShardError, estimated_seconds, partition, shard_cells
from pytest_ormbench.workload.cells import CellKey

ROOT = Path(__file__).resolve().parents[1]

# its module-scoped fixture built once, on one worker (tests/conftest.py, pytest_collection_modifyitems)
pytestmark = pytest.mark.xdist_group("test_shards")


def _keys() -> list[CellKey]:
    return [CellKey(arm, "simple", op, mode, table) for arm in ("sqlite3", "peewee", "django", "sqlalchemy", "tortoise")
            for op in "ABCDEFGHIJK" for mode in ("cold", "warm") for table in ("default", "large")]


def test_every_cell_is_in_one_shard_and_the_controls_in_every_shard() -> None:
    keys = _keys()
    shards = partition(keys, 3, rounds=5)
    others = [k for k in keys if k.arm not in CONTROL_ARMS]
    seen = [k for s in shards for k in s if k.arm not in CONTROL_ARMS]
    assert sorted(seen) == sorted(others)  # each once
    controls = {k for k in keys if k.arm in CONTROL_ARMS}
    assert all(controls <= set(s) for s in shards)
    assert partition(list(reversed(keys)), 3, rounds=5) == [sorted(s, key=list(reversed(keys)).index) for s in shards]
    loads = [sum(estimated_seconds(k, 5) for k in s if k.arm not in CONTROL_ARMS) for s in shards]
    assert max(loads) - min(loads) <= max(estimated_seconds(k, 5) for k in others)  # balanced to one cell
    assert shard_cells(keys, Shard(2, 3), 5) == set(shards[1])


def test_recorded_durations_balance_the_split() -> None:
    keys = [CellKey("peewee", "simple", op, "warm", "default") for op in "ABCD"]
    # A alone is as long as the three others together: it gets a shard of its own
    durations = {keys[0].id: 30.0, keys[1].id: 10.0, keys[2].id: 10.0, keys[3].id: 10.0}
    shards = partition(keys, 2, durations=durations)
    assert [keys[0]] in shards and keys[1:] in shards


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0"])
def test_a_bad_shard_is_one_line(text: str) -> None:
    with pytest.raises(ShardError, match="--ormbench-shard"):
        Shard.parse(text)


MATRIX = ["--ormbench-arms=sqlite3,peewee,sqlalchemy", "--ormbench-models=simple", "--ormbench-ops=B,F,K",
          "--ormbench-modes=warm", "--ormbench-rounds=2", "--ormbench-iterations=5", "--ormbench-batch=50",
          "--ormbench-no-probe"]
SCRIPT = ROOT / ".ci" / "shard"


def _ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def _script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """.ci/shard, the script the workflow's steps call, with this interpreter."""
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=child_env(ORMBENCH_PYTHON=sys.executable))


@pytest.fixture(scope="module")
def shard_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The matrix run whole, and as three shards one after the other through the workflow's script."""
    tmp = tmp_path_factory.mktemp("shards")
    whole = tmp / "whole.json"
    _ok(subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "bench_suites"), "-p", "no:cacheprovider", "-q",
                        *MATRIX, f"--benchmark-json={whole}"], cwd=tmp, capture_output=True, text=True, timeout=600,
                       env=child_env()))
    for k in (1, 2, 3):
        _ok(_script("run", str(k), "3", str(tmp / "out"), *MATRIX, cwd=tmp))
    return whole, [tmp / "out" / f"shard-{k}.json" for k in (1, 2, 3)]


def _ids(path: Path) -> list[str]:
    return [b["extra_info"] and CellKey.from_info(b["extra_info"]).id for b in json.loads(path.read_text())["benchmarks"]]


def test_three_shards_run_the_whole_matrix_once_and_merge_back(shard_files: tuple[Path, list[Path]]) -> None:
    whole, parts = shard_files
    per_shard = [set(_ids(p)) for p in parts]
    controls = {i for i in _ids(whole) if i.startswith("sqlite3-")}
    assert all(controls <= s for s in per_shard)  # the yardstick in every shard
    others = [i for s in per_shard for i in s if i not in controls]
    assert sorted(others) == sorted(set(_ids(whole)) - controls)  # every other cell once
    facts = [json.loads(p.read_text())["ormbench"]["shard"] for p in parts]
    assert [(f["index"], f["count"]) for f in facts] == [(1, 3), (2, 3), (3, 3)]
    merged, alone = load(parts), load([whole])
    assert set(merged.cells) == set(alone.cells)
    for key, cell in merged.cells.items():  # statements are exact: the same on every machine and in every split
        assert cell.statements_per_op == alone.cells[key].statements_per_op, key.id
    assert any(line.startswith("Shards: ") and "1/3, 2/3, 3/3" in line for line in merged.header), merged.header


def test_a_shard_run_again_replaces_its_cells(shard_files: tuple[Path, list[Path]], tmp_path: Path) -> None:
    _, parts = shard_files
    again = tmp_path / "shard1-again.json"
    doc = json.loads(parts[0].read_text())
    doc["datetime"] = "2099-01-01T00:00:00"
    again.write_text(json.dumps(doc))
    runs = load([*parts, again])
    assert len(runs.cells) == len(load(parts).cells)  # replaced, never doubled
    assert any(again.name in note for note in runs.notes)


def test_the_workflows_script_merges_the_shards(shard_files: tuple[Path, list[Path]], tmp_path: Path) -> None:
    _, parts = shard_files
    _ok(_script("merge", str(parts[0].parent), str(tmp_path / "merged"), cwd=tmp_path))
    report = (tmp_path / "merged" / "report.md").read_text()
    assert "Shards: " in report and "1/3, 2/3, 3/3" in report
    assert (tmp_path / "merged" / "index.html").is_file() and list((tmp_path / "merged" / "charts").glob("*.png"))
    bad = _script("merge", str(tmp_path / "nothing"), str(tmp_path / "x"), cwd=tmp_path)
    assert bad.returncode == 2 and "no shard-*.json" in bad.stderr


def test_the_sharded_workflow_is_a_valid_github_workflow() -> None:
    """Validated against GitHub's workflow schema as check-jsonschema ships it (no network)."""
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert any(w.name == "ormbench-sharded.yml" for w in workflows)
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                             *map(str, workflows)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (ROOT / ".github" / "workflows" / "ormbench-sharded.yml").read_text()
    assert "bash .ci/shard run" in text and "bash .ci/shard merge" in text


def _other_machine(src: Path, dst: Path) -> Path:
    doc = json.loads(src.read_text())
    doc["machine_info"] = {**doc.get("machine_info", {}), "node": "another-host",
                           "cpu": {**doc.get("machine_info", {}).get("cpu", {}), "brand_raw": "Other CPU", "count": 64}}
    dst.write_text(json.dumps(doc))
    return dst


def test_shards_from_two_machines_are_refused_or_normalised_and_labelled(shard_files: tuple[Path, list[Path]],
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, parts = shard_files
    moved = _other_machine(parts[2], tmp_path / "shard3.json")
    with pytest.raises(ReportError, match="shards ran on 2 machines .* --shards=normalise"):
        load([parts[0], parts[1], moved])
    assert main(["report", str(parts[0]), str(parts[1]), str(moved), "--format", "text"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    out = tmp_path / "merged.md"
    assert main(["report", str(parts[0]), str(parts[1]), str(moved), "--shards=normalise", "-o", str(out),
                 "--no-charts"]) == 0
    text = out.read_text()
    assert "normalised by each shard's own control arms" in text
    assert "— normalised by each shard's control" in text  # in the tables' titles
    runs = load([parts[0], parts[1], moved], shards="normalise")
    assert runs.normalised and any("Other CPU" in line for line in runs.header)
    moved_cells = [c for c in runs.cells.values() if c.source == str(moved)]
    assert moved_cells and all("shard normalised" in c.record.deviations for c in moved_cells)


def test_files_from_two_machines_that_are_not_shards_say_so(shard_files: tuple[Path, list[Path]],
                                                            tmp_path: Path) -> None:
    whole, _ = shard_files
    moved = _other_machine(whole, tmp_path / "elsewhere.json")
    runs = load([whole, moved])
    assert any("come from 2 machines" in line for line in runs.header)


def test_a_timed_run_that_pytest_benchmark_would_not_record_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    result = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "bench_suites"), "-p", "no:cacheprovider", "-q",
                             *MATRIX, f"--benchmark-json={out}"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env=child_env(PYTEST_XDIST_WORKER="gw0"))
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert "pytest-benchmark would record no timings (PYTEST_XDIST_WORKER=gw0 is set" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout and not out.exists()


def test_the_shard_script_keeps_its_own_inputs_out_of_the_runs_environment(tmp_path: Path) -> None:
    """An instruction count depends on the environment's size (docs/methodology.md): a shard's pytest, and so its
    measuring processes, must not inherit the script's own input variables, only the option they become."""
    seen = tmp_path / "seen.json"
    fake = tmp_path / "python"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ)}}, open({str(seen)!r}, 'w'))\n")
    fake.chmod(0o755)
    env = {**child_env(), "ORMBENCH_PYTHON": str(fake), "ORMBENCH_SHARD_DURATIONS": str(tmp_path / "whole.json")}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "shard"), "run", "2", "3", str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(seen.read_text())
    assert f"--ormbench-shard-durations={tmp_path / 'whole.json'}" in got["argv"]
    assert "--ormbench-shard=2/3" in got["argv"]
    assert "ORMBENCH_SHARD_DURATIONS" not in got["env"] and "ORMBENCH_PYTHON" not in got["env"]
