"""Comparing runs: the statistics, the verdicts, every bad input, saved-run lookup and the rendering.

Every document here is synthetic: round times drawn from seeded distributions whose true change is known.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_ormbench.commands.main import main
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.results.compare import (GONE, IMPROVEMENT, NEW, NOISE, REGRESSION, UNCHANGED, CompareError,
    Side, Thresholds, compare, load_side, render_markdown, render_text)
from pytest_ormbench.results.stats import holm, mann_whitney

MACHINE = {"node": "runner-1", "machine": "x86_64", "python_version": "3.13.0", "system": "Linux",
           "release": "6.0", "cpu": {"brand_raw": "Test CPU", "count": 2}}
PEEWEE_A = CellKey("peewee", "simple", "A", "warm", "default")


def rounds(rng: random.Random, seconds: float, spread: float = 0.01, n: int = 5) -> list[float]:
    """n round times around ``seconds`` with a relative standard deviation of ``spread``."""
    return [seconds * (1 + rng.gauss(0, spread)) for _ in range(n)]


def bench(times: list[float], arm: str = "peewee", model: str = "simple", op: str = "A",
          op_name: str = "insert_single", **extra: Any) -> dict[str, Any]:
    """One benchmark as pytest-benchmark writes it, with the plugin's extra_info."""
    info = {"arm": arm, "arm_label": arm, "model": model, "test": 1, "op": op, "op_name": op_name, "mode": "warm",
            "table": "default", "rows": 100, "verified": True, "iterations": 100, "batch": 10000,
            "round_seconds": times, "versions": {"peewee": "3.18.0"} if arm == "peewee" else {},
            "python": "3.13.0", "sqlite_version": "3.40.1",
            "settings": {"journal_mode": "delete", "synchronous": "full", "foreign_keys": True}}
    info.update(extra)
    return {"name": f"test_orm[{arm}-{model}-{op_name}-warm-default]", "extra_info": info,
            "stats": {"data": times}}


def document(*benchmarks: dict[str, Any], floor: float | None = 0.0, machine: dict[str, Any] | None = None,
             when: str = "2026-12-01T10:00:00") -> dict[str, Any]:
    doc: dict[str, Any] = {"machine_info": machine or MACHINE, "datetime": when, "version": "5.1.0",
                           "benchmarks": list(benchmarks)}
    if floor is not None:
        doc["ormbench"] = {"drift_floor": floor, "probes": [], "schedule": "interleaved"}
    return doc


def side(*benchmarks: dict[str, Any], source: str = "doc", **kw: Any) -> Side:
    return Side.from_document(document(*benchmarks, **kw), source)


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def verdict(base_times: list[float], new_times: list[float], thresholds: Sequence[str] = (),
            floor: float | None = 0.0) -> str:
    cmp = compare(side(bench(base_times), floor=floor), side(bench(new_times), floor=floor),
                  Thresholds.parse(list(thresholds)))
    (cell,) = cmp.cells
    return cell.category


# -- the statistics ------------------------------------------------------------------------------

def test_mann_whitney_exact_values() -> None:
    # complete separation of 5 against 5: 2 of the C(10, 5) = 252 arrangements are as extreme
    assert mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == (0, pytest.approx(2 / 252))
    assert mann_whitney([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == (25, pytest.approx(2 / 252))
    # one pair swapped: U = 1, and U <= 1 happens in 2 arrangements per tail
    assert mann_whitney([1, 2, 3, 4, 6], [5, 7, 8, 9, 10])[1] == pytest.approx(4 / 252)
    # 3 against 3 can never go below 2/20
    assert mann_whitney([1, 2, 3], [4, 5, 6])[1] == pytest.approx(0.1)
    # perfectly interleaved samples from one distribution: U sits at the centre, p = 1
    assert mann_whitney([1, 4, 5, 8, 9], [2, 3, 6, 7, 10]) == (12, pytest.approx(1.0))


def test_exact_distribution_matches_brute_force() -> None:
    for n, m in [(2, 3), (3, 4), (4, 4), (5, 5), (6, 3)]:
        values = list(range(n + m))
        us = Counter(sum(a > b for a in xs for b in set(values) - set(xs))
                     for xs in itertools.combinations(values, n))
        total = math.comb(n + m, n)
        for xs in itertools.islice(itertools.combinations(values, n), 0, None, 7):
            ys = [v for v in values if v not in xs]
            u, p = mann_whitney(list(xs), ys)
            tail = min(u, n * m - u)
            expected = min(1.0, 2 * sum(c for k, c in us.items() if k <= tail) / total)
            assert p == pytest.approx(expected), (n, m, xs)


def test_mann_whitney_normal_approximation_with_ties() -> None:
    # By hand: pooled 1 2 3 3 4 4 5 5 6 7; midranks of x = 1 + 2 + 3.5 + 5.5 + 7.5 = 19.5, U = 19.5 - 15 = 4.5.
    # Mean 12.5; ties: three pairs, sum(t^3 - t) = 18; variance = 25/12 * (11 - 18/90) = 22.5.
    # z = (|4.5 - 12.5| - 0.5) / sqrt(22.5) = 1.58114; p = 2 * (1 - Phi(1.58114)) = 0.11385.
    u, p = mann_whitney([1, 2, 3, 4, 5], [3, 4, 5, 6, 7])
    assert u == 4.5 and p == pytest.approx(0.11385, abs=1e-5)
    assert mann_whitney([2.0] * 5, [2.0] * 5)[1] == 1.0  # no spread at all: no evidence


def test_large_samples_use_the_normal_approximation() -> None:
    # 21 against 21, separated, no ties: U = 0, z = (220.5 - 0.5) / sqrt(21 * 21 * 43 / 12) = 5.53, p = erfc(z/√2)
    x, y = list(range(21)), list(range(100, 121))
    sigma = math.sqrt(21 * 21 * 43 / 12)
    assert mann_whitney(x, y)[1] == pytest.approx(math.erfc((220.5 - 0.5) / sigma / math.sqrt(2)))


# -- verdicts ------------------------------------------------------------------------------------

def test_a_30_percent_slowdown_is_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(1)
    base, new = rounds(rng, 0.100), rounds(rng, 0.130)
    cmp = compare(side(bench(base)), side(bench(new)), Thresholds())
    (cell,) = cmp.regressions
    assert cell.ratio == pytest.approx(1.3, rel=0.03) and cell.p == pytest.approx(2 / 252)
    assert cell.change == pytest.approx(1 / cell.ratio - 1)
    assert cmp.exit_code == 1
    b, n = write(tmp_path / "base.json", document(bench(base))), write(tmp_path / "new.json", document(bench(new)))
    assert main(["compare", str(b), str(n)]) == 1
    out = capsys.readouterr().out
    assert "peewee-simple-insert_single-warm-default" in out and "regression" in out


def test_a_2_percent_change_inside_the_noise_is_not_flagged() -> None:
    rng = random.Random(2)
    assert verdict(rounds(rng, 0.100, spread=0.03), rounds(rng, 0.102, spread=0.03)) == NOISE


def test_the_drift_floor_absorbs_a_small_significant_difference() -> None:
    rng = random.Random(3)
    base, new = rounds(rng, 0.100, spread=0.003), rounds(rng, 0.104, spread=0.003)
    assert mann_whitney(new, base)[1] < 0.05  # the 4 % is real for this run...
    assert verdict(base, new, ["*=3"], floor=0.05) == NOISE  # ...but smaller than what the machine drifts by
    assert verdict(base, new, ["*=3"], floor=None) == REGRESSION
    assert verdict(base, new, floor=None) == UNCHANGED  # significant, beyond the floor, inside 10 %


def test_the_floor_is_the_larger_of_the_two_sides() -> None:
    rng = random.Random(3)
    base, new = rounds(rng, 0.100, spread=0.003), rounds(rng, 0.104, spread=0.003)
    cmp = compare(side(bench(base), floor=0.01), side(bench(new), floor=0.05), Thresholds.parse(["*=3"]))
    assert cmp.floor == 0.05 and cmp.cells[0].category == NOISE


def test_thresholds_per_cell_and_the_last_match_wins() -> None:
    rng = random.Random(4)
    base, new = rounds(rng, 0.100), rounds(rng, 0.115)
    assert verdict(base, new) == REGRESSION
    assert verdict(base, new, ["peewee=20"]) == UNCHANGED
    assert verdict(base, new, ["peewee=20", "simple=12"]) == REGRESSION
    assert verdict(base, new, ["simple=12", "peewee=20"]) == UNCHANGED
    assert verdict(base, new, ["peewee=20,*=12"]) == REGRESSION
    for pattern in ("A", "insert_single", "peewee-simple-*", "*-warm-default"):
        assert verdict(base, new, [f"{pattern}=20"]) == UNCHANGED, pattern
    for pattern in ("sqlalchemy", "fk", "B", "insert_bulk", "peewee-fk-*"):
        assert verdict(base, new, [f"{pattern}=20"]) == REGRESSION, pattern


@pytest.mark.parametrize("spec", ["peewee", "peewee=", "=15", "peewee=abc", "peewee=-5"])
def test_bad_threshold_is_one_line(spec: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CompareError, match="threshold"):
        Thresholds.parse([spec])
    doc = write(tmp_path / "x.json", document(bench([0.1] * 5)))
    assert main(["compare", str(doc), str(doc), "--threshold", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ormbench: error: threshold") and len(err.strip().splitlines()) == 1


def test_an_improvement(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = random.Random(5)
    base, new = rounds(rng, 0.100), rounds(rng, 0.070)
    assert verdict(base, new) == IMPROVEMENT
    b, n = write(tmp_path / "b.json", document(bench(base))), write(tmp_path / "n.json", document(bench(new)))
    assert main(["compare", str(b), str(n)]) == 0


def test_new_and_gone_cells() -> None:
    rng = random.Random(6)
    common = bench(rounds(rng, 0.1))
    gone = bench(rounds(rng, 0.1), op="B", op_name="insert_batch")
    added = bench(rounds(rng, 0.1), arm="sqlite3")
    cmp = compare(side(common, gone), side(common, added), Thresholds())
    assert [c.id for c in cmp.of(NEW)] == ["sqlite3-simple-insert_single-warm-default"]
    assert [c.id for c in cmp.of(GONE)] == ["peewee-simple-insert_batch-warm-default"]
    assert cmp.exit_code == 0 and cmp.counts[NEW] == cmp.counts[GONE] == 1


# -- bad input -----------------------------------------------------------------------------------

def _bad_baseline(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / "base.json"
    if kind == "missing":
        return path
    if kind == "not json":
        return write(path, "{ not json")
    if kind == "not pytest-benchmark":
        return write(path, {"results": []})
    if kind == "no cells":
        return write(path, {"benchmarks": [{"name": "test_x", "stats": {"data": [1.0]}, "extra_info": {}}]})
    if kind == "no common cell":
        return write(path, document(bench([0.1] * 5, arm="sqlite3", op="B", op_name="insert_batch")))
    if kind == "sizes":
        return write(path, document(bench([0.1] * 5, iterations=200, rows=200)))
    if kind == "settings":
        return write(path, document(bench([0.1] * 5, settings={"journal_mode": "wal", "synchronous": "normal",
                                                                  "foreign_keys": True})))
    raise AssertionError(kind)


@pytest.mark.parametrize("kind, message", [
    ("missing", "no such file"),
    ("not json", "not valid JSON"),
    ("not pytest-benchmark", "not pytest-benchmark JSON"),
    ("no cells", "no pytest-ormbench cells in it (was it written without the plugin?)"),
    ("no common cell", "no cell in common: the runs measured different matrices (arms: baseline sqlite3, new "
                       "peewee; ops: baseline B, new A)"),
    ("sizes", "not comparable: 1 cell(s) ran with different sizes or SQLite settings in the two runs: "
              "peewee-simple-insert_single-warm-default (iterations 200 vs 100, rows 200 vs 100)"),
    ("settings", "peewee-simple-insert_single-warm-default (SQLite settings"),
])
def test_bad_baseline_gives_one_line_and_exit_2(kind: str, message: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    new = write(tmp_path / "new.json", document(bench([0.1] * 5)))
    assert main(["compare", str(_bad_baseline(kind, tmp_path)), str(new), "--storage", str(tmp_path / "none")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and captured.err.startswith("ormbench: error: ")


# -- saved runs ----------------------------------------------------------------------------------

def _storage(tmp_path: Path) -> Path:
    storage = tmp_path / ".benchmarks"
    runs = storage / "Linux-CPython-3.13-64bit"
    runs.mkdir(parents=True)
    for name, seconds, when in [("0001_main", 0.1, "2026-12-01T10:00:00"), ("0002_feature", 0.2, "2026-12-02T10:00:00"),
                                ("0003_main", 0.3, "2026-12-03T10:00:00")]:
        write(runs / f"{name}.json", document(bench([seconds] * 5), when=when))
    return storage


@pytest.mark.parametrize("spec, expected", [
    ("0001", "0001_main"), ("1", "0001_main"), ("0002_feature", "0002_feature"), ("0002_f", "0002_feature"),
    ("feature", "0002_feature"), ("main", "0003_main"), ("Linux-CPython-3.13-64bit/0001", "0001_main"),
])
def test_saved_runs_by_number_or_name(spec: str, expected: str, tmp_path: Path) -> None:
    loaded = load_side(spec, _storage(tmp_path))
    assert Path(loaded.source).stem == expected


def test_unknown_saved_run_lists_the_storage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    storage = _storage(tmp_path)
    assert main(["compare", "release", "main", "--storage", str(storage)]) == 2
    err = capsys.readouterr().err
    assert "release: no such file, and no run saved with --benchmark-save by that number or name" in err
    assert "Linux-CPython-3.13-64bit/0001_main.json, Linux-CPython-3.13-64bit/0002_feature.json" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(CompareError, match="there is no .* directory"):
        load_side("main", tmp_path / "nowhere")


def test_compare_two_saved_runs_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 0.1 s -> 0.3 s, every round alike: two tied groups of 5, so the normal approximation: p = 0.0040
    assert main(["compare", "0001", "main", "--storage", str(_storage(tmp_path)), "--alpha", "0.01"]) == 1
    assert "1 regression" in capsys.readouterr().out


# -- warnings ------------------------------------------------------------------------------------

def _warnings(base: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return compare(Side.from_document(base, "b"), Side.from_document(new, "n"), Thresholds(), drift="off").warnings


def test_different_machines_are_a_warning() -> None:
    times = [0.1, 0.11, 0.12, 0.13, 0.14]
    other = dict(MACHINE, node="runner-2", cpu={"brand_raw": "Other CPU"})
    (w,) = _warnings(document(bench(times)), document(bench(times), machine=other))
    assert w.startswith("different machines (baseline: runner-1, Test CPU, x86_64; new: runner-2, Other CPU, x86_64)")
    (w,) = _warnings(document(bench(times)), document(bench(times), machine=dict(MACHINE, node="runner-2")))
    assert w.startswith("different hosts (runner-1, runner-2) with the same CPU (Test CPU, x86_64)")


def test_a_server_cell_warns_of_a_different_server_or_driver_version() -> None:
    times = [0.1, 0.11, 0.12, 0.13, 0.14]

    def pg(version: str, driver: str) -> dict[str, Any]:
        return bench(times, db="postgresql", arm_info={"postgresql_version": version, "postgresql_driver": driver,
                                                       "mysql_driver": "MySQLdb 2.2.8"})

    base = document(pg("15.18", "psycopg 3.3.9"))
    new = document(pg("16.4", "psycopg 3.2.0"))
    (w,) = _warnings(base, new)
    assert "PostgreSQL 15.18 → 16.4" in w and "PostgreSQL driver psycopg 3.3.9 → psycopg 3.2.0" in w, w
    assert "MySQLdb" not in w and "SQLite" not in w, w  # the drivers of other databases are not this cell's


def test_versions_floor_and_rounds_warnings() -> None:
    times = [0.1, 0.11, 0.12]
    base = document(bench(times, versions={"peewee": "3.17.0"}, python="3.12.1"), floor=None)
    warnings = _warnings(base, document(bench(times)))
    assert "versions differ: Python 3.12.1 → 3.13.0; peewee 3.17.0 → 3.18.0" in warnings[0]
    assert "the baseline (b) records no drift floor" in warnings[1]
    assert "the smallest two-sided p-value Mann–Whitney can give for 3 against 3 is 0.1" in warnings[2]
    assert len(warnings) == 3


def test_holm_adjusted_p_values() -> None:
    # sorted: 0.01*4, 0.03*3, 0.04*2 -> 0.04, 0.09, 0.08 made non-decreasing -> 0.09; then 0.5
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.2]) == [0.2] and holm([]) == []


def _noise_matrix(seed: int, cells: int, n: int, slow: dict[int, float] | None = None) -> tuple[Side, Side]:
    """``cells`` cells whose rounds come from one distribution on both sides, except those in ``slow``."""
    rng = random.Random(seed)
    base = [bench(rounds(rng, 0.1, spread=0.1, n=n), arm=f"arm{i}") for i in range(cells)]
    new = [bench(rounds(rng, 0.1 * (slow or {}).get(i, 1.0), spread=0.1, n=n), arm=f"arm{i}") for i in range(cells)]
    return side(*base), side(*new)


def test_holm_keeps_chance_significance_out_of_a_large_matrix() -> None:
    flagged = {"holm": 0, "none": 0}
    for seed in range(10):
        pair = _noise_matrix(seed, 44, 15)
        for correction in flagged:
            cmp = compare(*pair, Thresholds.parse(["*=0"]), correction=correction)
            flagged[correction] += cmp.counts[REGRESSION] + cmp.counts[IMPROVEMENT]
    assert flagged["holm"] == 0  # 440 cells of pure noise, not one verdict
    assert flagged["none"] > 5  # uncorrected, about alpha of them come out "significant"


def test_holm_still_flags_a_real_slowdown_among_44_cells() -> None:
    cmp = compare(*_noise_matrix(1, 44, 15, slow={3: 1.3}), Thresholds())
    assert [r.key.arm for r in cmp.regressions] == ["arm3"] and not cmp.improvements
    (cell,) = cmp.regressions
    assert cell.p_raw is not None and cell.p == pytest.approx(min(1.0, 44 * cell.p_raw)) and cell.p < 0.05
    assert "alpha 0.05 for the whole comparison (Holm over 44 cells)" in render_text(cmp)


def test_five_rounds_cannot_reach_holm_over_44_cells_and_the_warning_says_how_many_would() -> None:
    cmp = compare(*_noise_matrix(2, 44, 5, slow={0: 2.0}), Thresholds())
    assert not cmp.regressions  # even a doubling: 2/252 * 44 > 0.05
    (warning,) = [w for w in cmp.warnings if "round(s)" in w]
    assert "44 cell(s) have 5 round(s)" in warning and "none of them can ever be flagged" in warning
    assert "--ormbench-rounds=8" in warning
    uncorrected = compare(*_noise_matrix(2, 44, 5, slow={0: 2.0}), Thresholds(), correction="none")
    assert [r.key.arm for r in uncorrected.regressions][:1] == ["arm0"]


def test_the_command_takes_the_correction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b_side, n_side = _noise_matrix(2, 44, 5, slow={0: 2.0})
    docs = []
    for name, s in (("b", b_side), ("n", n_side)):
        docs.append(write(tmp_path / f"{name}.json", document(*[{"name": f"test_orm[{c.record.id}]",
                    "extra_info": c.record.to_json(), "stats": {"data": c.seconds}} for c in s.cells.values()])))
    assert main(["compare", str(docs[0]), str(docs[1])]) == 0
    assert "(Holm over 44 cells)" in capsys.readouterr().out
    assert main(["compare", "--correction", "none", str(docs[0]), str(docs[1])]) == 1
    assert "alpha 0.05 per cell (no correction for the 44 cells tested)" in capsys.readouterr().out


def _drifting_runs(seed: int, machine: float, slow: dict[str, float]) -> tuple[Side, Side]:
    """The control arm and two ORM arms, 11 ops each, 15 rounds; the whole new run ``machine`` times
    slower (the machine drifted) and the arms in ``slow`` slower still."""
    rng = random.Random(seed)
    base, new = [], []
    for arm in ("sqlite3", "peewee", "sqlalchemy"):
        for op in "ABCDEFGHIJK":
            base.append(bench(rounds(rng, 0.1, spread=0.05, n=15), arm=arm, op=op, op_name=f"op_{op}"))
            factor = machine * slow.get(arm, 1.0)
            new.append(bench(rounds(rng, 0.1 * factor, spread=0.05, n=15), arm=arm, op=op, op_name=f"op_{op}"))
    return side(*base, floor=0.5), side(*new, floor=0.5)


def test_a_machine_that_drifted_is_not_a_regression() -> None:
    base, new = _drifting_runs(11, 1.3, {})
    cmp = compare(base, new, Thresholds())
    assert not cmp.regressions and not cmp.improvements
    (d,) = cmp.drifts.values()
    assert d.cells == 11 and d.shift == pytest.approx(1.3, rel=0.03) and d.floor < 0.1
    assert all(c.floor == d.floor for c in cmp.cells)
    text = render_text(cmp)
    assert f"drift correction: warm/default: the control arm ran ×{d.shift:.2f} the baseline's time (11 cells)" in text
    assert "the control arm's floor is used instead" in text
    # the same runs judged without the correction (and without a floor): every cell "regressed"
    base.floor = new.floor = 0.0
    assert len(compare(base, new, Thresholds(), drift="off").regressions) == 33


def test_a_real_slowdown_shows_through_the_drift() -> None:
    cmp = compare(*_drifting_runs(12, 0.8, {"peewee": 1.3}), Thresholds())
    assert {c.key.arm for c in cmp.regressions} == {"peewee"} and len(cmp.regressions) == 11
    assert not cmp.improvements  # sqlalchemy ran 20 % faster, like the machine: not an improvement
    assert all(c.ratio == pytest.approx(1.3, rel=0.1) for c in cmp.regressions)


def test_too_few_control_cells_fall_back_to_the_probe_floor() -> None:
    base, new = _drifting_runs(13, 1.0, {})
    for s in (base, new):
        s.cells = {k: c for k, c in s.cells.items() if k.arm != "sqlite3" or k.op in "AB"}
    cmp = compare(base, new, Thresholds())
    assert not cmp.drifts and all(c.floor == 0.5 for c in cmp.cells if c.p_raw is not None)
    assert any("the control arm sqlite3 has 2 cell(s) in both runs, fewer than 3" in w for w in cmp.warnings)


def test_unused_threshold_pattern_is_a_warning() -> None:
    doc = document(bench([0.1, 0.11, 0.12, 0.13, 0.14]))
    cmp = compare(Side.from_document(doc, "b"), Side.from_document(doc, "n"), Thresholds.parse(["pewee=20"]),
                  drift="off")
    assert cmp.warnings == ["threshold pattern 'pewee' matches no cell (a typo?)"]


# -- rendering and the live session -------------------------------------------------------------

def _mixed() -> tuple[Side, Side]:
    rng = random.Random(7)
    ops = [("A", "insert_single", 1.30), ("B", "insert_batch", 0.70), ("C", "insert_bulk", 1.00),
           ("D", "filter_large", 1.25)]
    base = [bench(rounds(rng, 0.1), op=o, op_name=name) for o, name, _ in ops]
    new = [bench(rounds(rng, 0.1 * f), op=o, op_name=name) for o, name, f in ops]
    return side(*base, floor=0.02), side(*new, floor=0.03)


def test_text_table_is_sorted_by_verdict_then_id() -> None:
    cmp = compare(*_mixed(), Thresholds())
    assert [(r.category, r.key.op) for r in cmp.cells] == [(REGRESSION, "D"), (REGRESSION, "A"),
                                                           (IMPROVEMENT, "B"), (NOISE, "C")]
    text = render_text(cmp)
    lines = text.splitlines()
    expected = ("filter_large", "insert_single", "insert_batch", "insert_bulk")
    order = [i for op in expected for i, line in enumerate(lines) if line.startswith(f"peewee-simple-{op}-")]
    assert order == sorted(order) and len(order) == 4
    assert "2 regressions, 1 improvement, 1 within noise (4 cells)" in text
    assert "drift floor 3% (the larger of the runs' probe floors: baseline 2%, new 3%)" in text
    # no control arm in these runs: nothing corrected, and the comparison says why
    assert "warning: warm/default cells: the control arm sqlite3 has 0 cell(s) in both runs" in text


def test_markdown_has_the_headline_and_the_regressions_table_first() -> None:
    md = render_markdown(compare(*_mixed(), Thresholds.parse(["insert_bulk=5"])))
    assert "**2 regressions**, 1 improvement, 1 within noise (4 cells)." in md
    regressions = md.index("#### Regressions")
    assert regressions < md.index("#### Improvements") < md.index("<details>") < md.index("#### The two runs")
    table = md[regressions:md.index("#### Improvements")]
    assert "| cell | baseline rows/s | new rows/s | rows/s change | median time | p | threshold | floor |" in table
    # 2/252 for each cell, times 4 for Holm over the four cells
    assert "| peewee-simple-insert_single-warm-default |" in table and "| 0.032 | 10% | 3% |" in table
    assert "<details><summary>1 other cell: 1 within noise</summary>" in md
    assert "| drift floor | 2% | 3% |" in md and "| packages | peewee 3.18.0 | peewee 3.18.0 |" in md


def test_side_from_live_records() -> None:
    rng = random.Random(8)
    base = side(bench(rounds(rng, 0.1)))
    record = CellRecord.from_json(bench(rounds(rng, 0.2))["extra_info"])
    new = Side.from_records([record], MACHINE, 0.01, schedule="interleaved")
    cmp = compare(base, new, Thresholds())
    assert new.source == "this run" and new.datetime and cmp.regressions[0].key == PEEWEE_A


def test_compare_imports_no_orm_and_no_pytest() -> None:
    code = ("import sys, pytest_ormbench.results.compare;"
            "bad=[m for m in ('peewee','sqlalchemy','django','tortoise','piccolo','ormar','sqlobject','objectbox',"
            "'sqlmodel','pytest') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_floor_treats_a_speedup_like_a_slowdown_of_the_same_factor() -> None:
    # a floor of 95 %: x10 either way is far beyond it (on a time ratio, x10 faster is only 0.9 below 1)
    rng = random.Random(3)
    base = rounds(rng, 0.1, n=8)
    assert verdict(base, [t * 10 for t in rounds(rng, 0.1, n=8)], floor=0.95) == REGRESSION
    assert verdict(base, [t / 10 for t in rounds(rng, 0.1, n=8)], floor=0.95) == IMPROVEMENT
    assert verdict(base, [t / 1.5 for t in rounds(rng, 0.1, n=8)], floor=0.95) == NOISE


# -- judging by instructions, and statements ------------------------------------------------------

#: one cell's instructions in three rounds: they repeat to within 0.03 %, as callgrind's counts do
COUNTS = [2_000_000.0, 2_000_600.0, 2_000_200.0]
SELECT_40 = {"SELECT": 40, "INSERT": 0, "UPDATE": 0, "DELETE": 0, "BEGIN": 1, "COMMIT": 1, "other": 0}


def counted(counts: Sequence[float] | None = COUNTS, factor: float = 1.0, statements: dict[str, int] | None = None,
            **extra: Any) -> dict[str, Any]:
    """A cell of a run made with --ormbench-instructions: valgrind-slowed times, ``counts`` times ``factor``."""
    if counts is not None:
        extra.update(measures={"instructions": [c * factor for c in counts]}, instrumented="callgrind")
    if statements is not None:
        extra["statements"] = [dict(statements)]
    return bench([4.0, 4.2, 4.1], **extra)


def by_instructions(base: dict[str, Any], new: dict[str, Any], thresholds: Sequence[str] = ()) -> Any:
    return compare(side(base), side(new), Thresholds.parse(list(thresholds), default_pct=2.0),
                   measure="instructions")


def test_five_percent_more_instructions_is_a_regression_at_the_default_threshold() -> None:
    cmp = by_instructions(counted(), counted(factor=1.05))
    (cell,) = cmp.regressions
    assert cell.ratio == pytest.approx(1.05) and cell.p is None and cell.threshold == pytest.approx(0.02)
    assert cell.floor == pytest.approx(0.002)  # the rounds' own spread (0.03 %) is below the floor
    assert cmp.exit_code == 1 and cmp.measure == "instructions"
    # the user's pattern wins over the default
    assert by_instructions(counted(), counted(factor=1.05), ["peewee=8"]).cells[0].category == UNCHANGED
    # without thresholds, compare() takes the measure's default (2 %); given ones (here 10 %) stand
    assert compare(side(counted()), side(counted(factor=1.05)), measure="instructions").regressions
    assert not compare(side(counted()), side(counted(factor=1.05)), Thresholds(),
                       measure="instructions").regressions


def test_instruction_counts_within_their_repeatability_are_noise() -> None:
    assert by_instructions(counted(), counted(factor=1.001)).cells[0].category == NOISE
    assert by_instructions(counted(), counted(factor=1 / 1.001)).cells[0].category == NOISE
    same = by_instructions(counted(), counted())
    assert same.cells[0].category == NOISE and same.cells[0].ratio == 1.0 and same.exit_code == 0
    # beyond the floor, inside the threshold: a real change, too small to act on
    assert by_instructions(counted(), counted(factor=1.01)).cells[0].category == UNCHANGED
    assert by_instructions(counted(), counted(factor=0.95)).cells[0].category == IMPROVEMENT


def test_a_cell_whose_counts_spread_more_gets_its_own_floor() -> None:
    wide = [2_000_000.0, 2_020_000.0, 2_010_000.0]  # 1 % between its rounds
    cmp = by_instructions(counted(wide), counted(wide, factor=1.008), ["*=0.5"])
    assert cmp.cells[0].floor == pytest.approx(0.01) and cmp.cells[0].category == NOISE
    assert by_instructions(counted(), counted(factor=1.008), ["*=0.5"]).cells[0].category == REGRESSION


@pytest.mark.parametrize("lacking, label", [("base", "the baseline (doc)"), ("new", "the new run (doc)")])
def test_a_side_without_instructions_cannot_be_judged_by_them(lacking: str, label: str) -> None:
    plain = bench([0.1] * 5)
    base, new = (plain, counted()) if lacking == "base" else (counted(), plain)
    with pytest.raises(CompareError) as err:
        compare(side(base), side(new), measure="instructions")
    message = str(err.value)
    assert message.startswith(f"{label} has no instruction counts") and "--ormbench-instructions" in message
    assert "\n" not in message


def test_an_instrumented_run_has_no_times_to_judge() -> None:
    with pytest.raises(CompareError, match="the baseline was run with --ormbench-instructions: its times are not "
                                           "speeds; compare with --ormbench-compare-measure=instructions"):
        compare(side(counted()), side(bench([0.1] * 5)))
    with pytest.raises(CompareError, match="the new run was made with --ormbench-instructions"):
        compare(side(bench([0.1] * 5)), side(counted()))


def test_cells_that_ran_under_callgrind_on_one_side_are_left_out_of_a_time_comparison() -> None:
    rng = random.Random(9)
    other = dict(op="B", op_name="insert_batch")
    base = side(bench(rounds(rng, 0.1)), counted(**other))
    new = side(bench(rounds(rng, 0.1)), bench(rounds(rng, 0.1), **other))
    cmp = compare(base, new, drift="off")
    assert [c.id for c in cmp.cells] == ["peewee-simple-insert_single-warm-default"]
    assert any(w.startswith("1 cell(s) ran under --ormbench-instructions in one of the runs") for w in cmp.warnings)


def test_more_statements_are_reported_by_kind_and_fail_the_comparison(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(10)
    times = rounds(rng, 0.1)
    n_plus_1 = dict(SELECT_40, SELECT=80)
    cmp = compare(side(bench(times, statements=[SELECT_40])), side(bench(times, statements=[n_plus_1])),
                  drift="off")
    assert not cmp.regressions  # the time did not move...
    (change,) = cmp.statement_changes  # ...the statements did
    assert change.moved == [("SELECT", 40, 80)] and change.describe() == "SELECT 40→80 (+40)" and change.more
    assert cmp.exit_code == 1
    text = render_text(cmp)
    assert "SELECT 40→80 (+40)" in text and "42→82 (+40)" in text and "1 cell sends more statements" in text
    md = render_markdown(cmp)
    assert md.index("#### Statement changes") < md.index("<details>")
    assert "| peewee-simple-insert_single-warm-default | SELECT 40→80 (+40) | 42→82 (+40) | more statements |" in md
    assert "No regressions, 1 within noise (1 cells); **1 cell sends more statements**." in md
    b = write(tmp_path / "b.json", document(bench(times, statements=[SELECT_40])))
    n = write(tmp_path / "n.json", document(bench(times, statements=[n_plus_1])))
    assert main(["compare", str(b), str(n), "--drift", "off"]) == 1
    assert "SELECT 40→80 (+40)" in capsys.readouterr().out


def test_fewer_statements_are_reported_and_pass() -> None:
    fewer = dict(SELECT_40, SELECT=1, BEGIN=0, COMMIT=0)
    cmp = by_instructions(counted(statements=SELECT_40), counted(statements=fewer))
    (change,) = cmp.statement_changes
    assert change.describe() == "SELECT 40→1 (-39), BEGIN 1→0 (-1), COMMIT 1→0 (-1)"
    assert change.verdict == "fewer statements" and cmp.exit_code == 0
    assert "(1 cells); 1 cell sends fewer statements" in render_text(cmp)
    # the same total in other kinds (an UPDATE became a SELECT) is reported, and passes too
    moved = by_instructions(counted(statements=SELECT_40), counted(statements=dict(SELECT_40, SELECT=39, UPDATE=1)))
    assert moved.statement_changes[0].verdict == "same total" and moved.exit_code == 0
    assert "1 cell the same number in other kinds" in render_text(moved)
    assert not by_instructions(counted(statements=SELECT_40), counted(statements=SELECT_40)).statement_changes


def test_statements_counted_on_one_side_only_are_one_warning() -> None:
    cmp = by_instructions(counted(), counted(statements=SELECT_40))
    assert not cmp.statement_changes
    (warning,) = [w for w in cmp.warnings if "statements" in w]
    assert warning.startswith("statements were not compared for 1 cell(s) that only one run counted: the baseline "
                              "has no counts for 1 (e.g. peewee-simple-insert_single-warm-default)")


def test_markdown_and_text_name_the_measure_judged() -> None:
    cmp = by_instructions(counted(), counted(factor=1.05))
    md = render_markdown(cmp)
    assert md.startswith("### pytest-ormbench: comparison with the baseline (instructions)\n")
    assert "| cell | baseline instr/row | new instr/row | change | threshold | floor |" in md
    assert "| peewee-simple-insert_single-warm-default | 20,002 | 21,002 | ×1.050 | 2% | 0.2% |" in md
    assert "| instructions | counted (callgrind) | counted (callgrind) |" in md
    assert "drift floor" not in " ".join(cmp.warnings)  # the probe floor says nothing about counts
    text = render_text(cmp)
    assert text.startswith("pytest-ormbench comparison by instructions:") and "baseline instr/row" in text
    assert "thresholds: 2% by default" in text and "no significance test" in text
    wall = render_markdown(compare(*_mixed(), Thresholds()))
    assert wall.startswith("### pytest-ormbench: comparison with the baseline (wall time)\n")


def test_the_command_takes_the_measure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = write(tmp_path / "b.json", document(counted()))
    n = write(tmp_path / "n.json", document(counted(factor=1.05)))
    assert main(["compare", str(b), str(n), "--measure", "instructions"]) == 1
    assert "1 regression (1 cells)" in capsys.readouterr().out
    assert main(["compare", str(b), str(n), "--measure", "instructions", "--threshold", "*=8"]) == 0
    capsys.readouterr()
    assert main(["compare", str(b), str(n)]) == 2  # by time: its times are valgrind's
    err = capsys.readouterr().err
    assert "its times are not speeds" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", str(b), str(n), "--measure", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("ormbench: error: measure must be one of wall_seconds, instructions, got 'cpu'")


def test_thresholds_take_the_measures_default() -> None:
    parsed = Thresholds.parse(["peewee=5"])
    moved = parsed.with_default_pct(2.0)
    assert moved.entries == parsed.entries and moved.default == pytest.approx(0.02)
    assert moved.describe() == "2% by default, then peewee=5% (last match wins)"


# -- the database axis ----------------------------------------------------------------------------

def _two_databases(seed: int, sqlite_machine: float, pg_machine: float, pg_controls: bool = True,
                   slow: dict[tuple[str, str], float] | None = None) -> tuple[Side, Side]:
    """sqlite3 and peewee on SQLite, psycopg, asyncpg, peewee and sqlalchemy_async on PostgreSQL, 11 ops, 15 rounds;
    the new run's SQLite cells ``sqlite_machine`` times slower, its PostgreSQL cells ``pg_machine`` times (the
    server moved apart from the Python process), the (arm, db) in ``slow`` slower still."""
    rng = random.Random(seed)
    arms = [("sqlite3", "sqlite"), ("peewee", "sqlite"), ("peewee", "postgresql"),
            ("sqlalchemy_async", "postgresql")]
    if pg_controls:
        arms += [("psycopg", "postgresql"), ("asyncpg", "postgresql")]
    base, new = [], []
    for arm, db in arms:
        extra = {} if db == "sqlite" else {"db": db, "is_async": arm in ("asyncpg", "sqlalchemy_async")}
        for op in "ABCDEFGHIJK":
            base.append(bench(rounds(rng, 0.1, spread=0.05, n=15), arm=arm, op=op, op_name=f"op_{op}", **extra))
            factor = (sqlite_machine if db == "sqlite" else pg_machine) * (slow or {}).get((arm, db), 1.0)
            new.append(bench(rounds(rng, 0.1 * factor, spread=0.05, n=15), arm=arm, op=op, op_name=f"op_{op}",
                             **extra))
    return side(*base, floor=0.5), side(*new, floor=0.5)


def test_sqlite_and_postgresql_cells_of_one_arm_never_collide() -> None:
    base, _ = _two_databases(21, 1.0, 1.0)
    assert PEEWEE_A in base.cells and replace(PEEWEE_A, db="postgresql") in base.cells
    assert len(base.cells) == 6 * 11
    assert base.cells[PEEWEE_A].record.id == "peewee-simple-insert_single-warm-default"
    assert base.cells[replace(PEEWEE_A, db="postgresql")].record.id == "peewee-simple-insert_single-warm-default-postgresql"
    cmp = compare(*_two_databases(21, 1.0, 1.0), Thresholds())
    assert len(cmp.cells) == 66 and len({c.id for c in cmp.cells}) == 66


def test_a_sweep_cell_and_its_direct_cell_are_two_cells_of_their_own_places() -> None:
    """Keys with and without an RTT sit side by side (one key type, CellKey: its place names the RTT)."""
    rng = random.Random(25)
    pg = {"db": "postgresql"}
    cells = [bench(rounds(rng, 0.1), **pg), bench(rounds(rng, 0.1), rtt_ms=5.0, **pg)]
    cmp = compare(side(*cells), side(*cells), Thresholds())
    assert sorted(c.id for c in cmp.cells) == ["peewee-simple-insert_single-warm-default-postgresql",
                                               "peewee-simple-insert_single-warm-default-postgresql-rtt5"]
    assert {c.key.place for c in cmp.cells} == {"postgresql", "postgresql@5ms"}


def test_drift_is_corrected_per_database_by_its_own_control_arms() -> None:
    """The SQLite cells ran 30 % slower, the PostgreSQL ones 20 % faster: each corrected by its own controls."""
    cmp = compare(*_two_databases(22, 1.3, 0.8), Thresholds())
    assert set(cmp.drifts) == {("warm", "default", "sqlite"), ("warm", "default", "postgresql")}
    lite, pg = cmp.drifts[("warm", "default", "sqlite")], cmp.drifts[("warm", "default", "postgresql")]
    assert lite.controls == ("sqlite3",) and lite.cells == 11 and lite.shift == pytest.approx(1.3, rel=0.03)
    assert pg.controls == ("psycopg", "asyncpg") and pg.cells == 22 and pg.shift == pytest.approx(0.8, rel=0.03)
    assert not cmp.regressions and not cmp.improvements  # one sqlite3 correction would make every PG cell "faster"
    text = render_text(cmp)
    assert "drift correction: warm/default: the control arm ran ×1.3" in text  # SQLite's line, as it was
    assert "warm/default on postgresql: the control arms psycopg, asyncpg ran ×0.8" in text
    assert "the control arm's floor is used instead" in text
    # a real slowdown of peewee on PostgreSQL shows through, and only there
    cmp = compare(*_two_databases(23, 1.3, 0.8, slow={("peewee", "postgresql"): 1.3}), Thresholds())
    assert {(c.key.arm, c.key.db) for c in cmp.regressions} == {("peewee", "postgresql")}


def test_a_database_without_control_cells_takes_the_sqlite3_correction() -> None:
    cmp = compare(*_two_databases(24, 1.3, 1.3, pg_controls=False), Thresholds())
    assert set(cmp.drifts) == {("warm", "default", "sqlite")}
    assert not cmp.regressions and not cmp.improvements
    pg_cells = [c for c in cmp.cells if c.key.db != "sqlite"]
    assert pg_cells and all(c.floor == cmp.drifts[("warm", "default", "sqlite")].floor for c in pg_cells)
    (warning,) = [w for w in cmp.warnings if "on postgresql" in w]
    assert warning.startswith("warm/default cells on postgresql: the control arms psycopg, asyncpg have 0 cell(s)")
    assert "the sqlite3 control's correction of warm/default is used instead" in warning
    assert "no control cells of their own there, so the sqlite3 control's correction" in render_text(cmp)
    assert "the control arm's floor is used instead" in render_text(cmp)  # every cell corrected one way or another
