"""Command-line options and ini keys, parsed into one validated :class:`RunConfig`.

Every option is also an ini key (``ormbench_arms`` for ``--ormbench-arms``); the command line wins. A bad
value is a :class:`pytest.UsageError` naming the valid ones, so pytest prints one line and exits with its
usage-error status.

One style, for every option:

- an option that takes a comma-separated list of values has a plural name: ``--ormbench-arms``,
  ``--ormbench-models``, ``--ormbench-ops``, ``--ormbench-modes``, ``--ormbench-tables``, ``--ormbench-dbs``,
  ``--ormbench-rtts``, ``--ormbench-postgresql-settings``; one that takes one value (a number, a name, a path)
  or is repeated once per value (``--ormbench-register``, ``--ormbench-compare-threshold``) a singular one;
- a yes/no setting is a flag without a value, with its negation ``--ormbench-no-…``: ``--ormbench-probe`` /
  ``--ormbench-no-probe``, ``--ormbench-control`` / ``--ormbench-no-control``, ``--ormbench-verify-only``,
  ``--ormbench-memory``, ``--ormbench-instructions``, ``--ormbench-benchmark-table`` (the ini keys take
  ``true``/``false``, and ``on``/``off`` as before);
- the comparison with a baseline is ``--ormbench-compare=BASELINE``, and its settings are
  ``ormbench compare``'s options behind ``--ormbench-compare-``: ``--measure`` is ``--ormbench-compare-measure``,
  ``--threshold`` ``--ormbench-compare-threshold``, and so on (``--ormbench-compare-markdown`` is the
  command's ``--format markdown --markdown-out``).

The spellings from before keep working and say once, as a pytest deprecation warning, what they are now
(``option_table.RENAMED``, and ``--ormbench-control=on|off`` / ``--ormbench-probe=on|off``, also with a space).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_ormbench.scheduling.config import DEFAULT_PRESET, PRESETS, SCHEDULES, RunConfig
from pytest_ormbench.workload.spec import (ALL_MODELS, JOURNAL_MODES, MODES, OPS, OPS_BY_LETTER, OPS_BY_NAME,
    RELATIONAL, SYNCHRONOUS, TABLES, Settings)
from pytest_ormbench.workload.relational import SHAPES
from pytest_ormbench.workload.plan import Sizes
from pytest_ormbench.workload.cells import DATABASE_AXIS
from pytest_ormbench.workload.measures import COMPARABLE
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.plugin.option_table import NEGATION, OPTIONS, PREFIX, Option, ini_key

#: the database axis's values: the one list, in the ground (``workload.cells`` imports no backend and no driver)
DB_AXIS = DATABASE_AXIS
DB_ALIASES = {"postgres": "postgresql", "pg": "postgresql", "sqlite3": "sqlite", "mariadb": "mysql"}

MODEL_ALIASES = {"1": "simple", "2": "fk", "3": "wide", "4": "relational", "test1": "simple", "test2": "fk",
                 "test3": "wide", "test4": "relational"}

#: the values ``--ormbench-control`` and ``--ormbench-probe`` took before they became flags
ON_OFF = {"on": True, "off": False}
#: pytest's stash key for the old spellings a run used, said once as a deprecation warning each
DEPRECATED_KEY = pytest.StashKey[dict]()


class _Switch(argparse.Action):
    """``--ormbench-X`` sets True, ``--ormbench-no-X`` False; neither takes a value."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, not (option_string or "").startswith(NEGATION))


def _old_dest(opt: Option) -> str:
    return f"{opt.dest}__old"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ormbench", "pytest-ormbench: honest ORM benchmarks")
    for opt in OPTIONS:
        old = PREFIX + opt.old if opt.old else ""
        if opt.kind == "flag":
            group.addoption(opt.flag, opt.negation, action=_Switch, default=None, dest=opt.dest, help=opt.help)
            parser.addini(opt.ini, opt.help, type="bool", default=None)
            if opt.was_on_off:  # the old =on|off spellings, matched whole (a flag takes no value)
                for word in ON_OFF:
                    for spelled in {word, word.upper(), word.capitalize()}:
                        group.addoption(f"{opt.flag}={spelled}", action="store_const", const=word, default=None,
                                        dest=_old_dest(opt), help=argparse.SUPPRESS)
        elif opt.kind == "linelist":
            group.addoption(opt.flag, action="append", default=None, dest=opt.dest, metavar=opt.metavar,
                            help=opt.help)
            parser.addini(opt.ini, opt.help, type="linelist", default=None)
            if old:
                group.addoption(old, action="append", default=None, dest=_old_dest(opt), help=argparse.SUPPRESS)
                parser.addini(ini_key(opt.old), f"deprecated: {opt.ini}", type="linelist", default=None)
        else:
            group.addoption(opt.flag, action="store", default=None, dest=opt.dest, metavar=opt.metavar,
                            help=f"{opt.help} (default: {opt.default})" if opt.default else opt.help)
            parser.addini(opt.ini, opt.help, default=None)
            if old:
                group.addoption(old, action="store", default=None, dest=_old_dest(opt), help=argparse.SUPPRESS)
                parser.addini(ini_key(opt.old), f"deprecated: {opt.ini}", default=None)


def rewrite_old_args(args: list[str]) -> None:
    """``--ormbench-probe off`` (the old valued flags, with a space) as ``--ormbench-probe=off``, in place.

    Run before pytest parses the command line for good: a flag takes no value, so the ``off`` would
    otherwise be taken for a file to collect."""
    valued = {opt.flag for opt in OPTIONS if opt.was_on_off}
    i = 0
    while i < len(args) - 1:
        if str(args[i]) in valued and str(args[i + 1]).lower() in ON_OFF:
            args[i:i + 2] = [f"{args[i]}={str(args[i + 1]).lower()}"]
        i += 1


def _deprecated(config: pytest.Config, old: str, new: str) -> None:
    """Say once per spelling that it is an old one, and what it is now."""
    said = config.stash.setdefault(DEPRECATED_KEY, {})
    if old in said:
        return
    said[old] = new
    if hasattr(config, "workerinput"):  # an xdist worker: the controller says it
        return
    config.issue_config_time_warning(
        pytest.PytestDeprecationWarning(f"pytest-ormbench: {old} is deprecated, use {new}"), stacklevel=2)


def _raw(config: pytest.Config, opt: Option) -> Any:
    """The command line's value, else the ini file's, else None (not set: the preset or the default decides).

    The old spellings count too, each with a deprecation warning."""
    value = config.getoption(opt.dest)
    if value is None and (opt.old or opt.was_on_off):
        value = config.getoption(_old_dest(opt), None)
        if value is not None and opt.was_on_off:
            value = ON_OFF[value]
            _deprecated(config, f"{opt.flag}={'on' if value else 'off'}", opt.flag if value else opt.negation)
        elif value is not None:
            _deprecated(config, PREFIX + opt.old, opt.flag)
    if value is None:
        value = config.getini(opt.ini)
    if value is None and opt.old:
        value = config.getini(ini_key(opt.old))
        if value is not None:
            _deprecated(config, f"the ini key {ini_key(opt.old)}", opt.ini)
    return value


def _spelled(config: pytest.Config, opt: Option) -> str:
    """The option as the user spelled it (an error names what they typed, an old spelling included)."""
    if opt.old and config.getoption(opt.dest) is None and config.getoption(_old_dest(opt), None) is not None:
        return PREFIX + opt.old
    return opt.flag


def spelled(config: pytest.Config, name: str) -> str:
    """``--ormbench-<name>`` as the user spelled it (its old name, if they used that)."""
    return _spelled(config, next(opt for opt in OPTIONS if opt.name == name))


def _split(value: str) -> list[str]:
    return [v.strip() for v in str(value).replace(";", ",").split(",") if v.strip()]


def _choices(flag: str, value: str, valid: dict[str, str], allow_all: bool, order: list[str],
             described: str = "") -> tuple[str, ...]:
    """The values named, in ``order``; ``described``: how an error states the valid ones (else ``order``)."""
    items = _split(value)
    listed = described or ", ".join(order)
    if not items:
        raise pytest.UsageError(f"{flag}: empty value; valid: {listed}")
    if allow_all and [i.lower() for i in items] == ["all"]:
        return tuple(order)
    picked: list[str] = []
    for item in items:
        key = valid.get(item) or valid.get(item.lower())
        if key is None:
            raise pytest.UsageError(f"{flag}: unknown value {item!r}; valid: {listed}"
                                    + (" or 'all'" if allow_all else ""))
        if key not in picked:
            picked.append(key)
    return tuple(sorted(picked, key=order.index))


def _shard(value: str, durations: str, cwd: str) -> tuple[tuple[int, int] | None, str]:
    """``--ormbench-shard`` as (K, N), and ``--ormbench-shard-durations`` as an absolute path checked now."""
    from pytest_ormbench.scheduling.shards import Shard, ShardError, recorded_durations
    if not value:
        if durations:
            raise pytest.UsageError("--ormbench-shard-durations balances --ormbench-shard: give --ormbench-shard=K/N")
        return None, ""
    try:
        shard = Shard.parse(value)
        path = ""
        if durations:
            path = str(Path(cwd, durations).resolve())
            recorded_durations(Path(path))
    except ShardError as exc:
        raise pytest.UsageError(str(exc)) from None
    return (shard.index, shard.count), path


def _strategies(value: str) -> tuple[str, ...]:
    """``--ormbench-strategies``: strategy names as the arms call them (``selectin``, ``prefetch_related``) or
    kinds (``lazy``, ``join``, ``batched``; the dashboard's ``sequential``, ``pipelined``); empty: all. Names are
    checked against what the arms declare when the cells are planned."""
    items = tuple(dict.fromkeys(i.strip() for i in _split(value)))
    if not items:
        raise pytest.UsageError("--ormbench-strategies: empty value; give strategy names or kinds, or 'all'")
    if [i.lower() for i in items] == ["all"]:
        return ()
    known = known_strategy_names()
    unknown = [i for i in items if i not in known]
    if unknown:
        raise pytest.UsageError(f"--ormbench-strategies: unknown value {unknown[0]!r}; valid: "
                                f"{', '.join(sorted(known))} or 'all'")
    return items


def known_strategy_names() -> set[str]:
    """Every strategy name a built-in arm declares, and every kind."""
    from pytest_ormbench.arms.registry import BUILTIN_ARMS
    from pytest_ormbench.workload.relational import DASHBOARD_STRATEGIES, STRATEGY_KINDS
    names = set(STRATEGY_KINDS) | set(DASHBOARD_STRATEGIES)
    for entry in BUILTIN_ARMS:
        for strategies in entry.relational_declarations().strategies.values():
            names.update(strategies)
    return names


def _rtts(value: str, flag: str = "--ormbench-rtts") -> tuple[float | None, ...]:
    """``--ormbench-rtts``: round-trip times in ms, each a finite number >= 0, in the order given; ``direct``
    (None) is the cell without the proxy, in the same run: what the proxy itself costs at 0 ms."""
    out: list[float | None] = []
    for item in _split(value):
        if item.lower() == "direct":
            if None not in out:
                out.append(None)
            continue
        try:
            ms = float(item)
        except ValueError:
            ms = -1.0
        ms = round(ms, 3)  # ids show it with :g: three decimals round-trip
        if not (ms >= 0 and ms < 10_000):
            raise pytest.UsageError(f"{flag}: expected round-trip times in ms (0 or more) or 'direct', "
                                    f"got {item!r}")
        if ms not in out:
            out.append(ms)
    return tuple(out)


def _mysql_settings(value: str) -> tuple[tuple[str, str], ...]:
    """``--ormbench-mysql-settings``: NAME=VALUE pairs of the durability settings, checked by name."""
    from pytest_ormbench.backends.mysql import DURABILITY

    pairs: dict[str, str] = {}
    for item in _split(value):
        name, sep, setting = item.partition("=")
        name, setting = name.strip().lower(), setting.strip()
        if not sep or not setting:
            raise pytest.UsageError(f"--ormbench-mysql-settings: expected NAME=VALUE, got {item!r}")
        if name not in DURABILITY:
            raise pytest.UsageError(f"--ormbench-mysql-settings: unknown setting {name!r}; valid: "
                                    + ", ".join(DURABILITY))
        if name in ("log_bin", "innodb_doublewrite"):
            setting = {"true": "ON", "1": "ON", "on": "ON", "false": "OFF", "0": "OFF", "off": "OFF"}.get(
                setting.lower(), "")
            if not setting:
                raise pytest.UsageError(f"--ormbench-mysql-settings: {name} is ON or OFF, got {item!r}")
        elif not setting.isdigit():
            raise pytest.UsageError(f"--ormbench-mysql-settings: {name} takes a number, got {item!r}")
        pairs[name] = setting
    return tuple(sorted(pairs.items()))


def _pg_settings(value: str) -> tuple[tuple[str, str], ...]:
    """``--ormbench-postgresql-settings``: NAME=VALUE pairs of the durability settings, checked by name."""
    from pytest_ormbench.backends.postgresql import DURABILITY

    pairs: dict[str, str] = {}
    for item in _split(value):
        name, sep, setting = item.partition("=")
        name, setting = name.strip().lower(), setting.strip().lower()
        if not sep or not setting:
            raise pytest.UsageError(f"--ormbench-postgresql-settings: expected NAME=VALUE, got {item!r}")
        if name not in DURABILITY:
            raise pytest.UsageError(f"--ormbench-postgresql-settings: unknown setting {name!r}; valid: "
                                    + ", ".join(DURABILITY))
        # PostgreSQL reports booleans as on/off: say them so, or the read-back would never match
        pairs[name] = {"true": "on", "yes": "on", "1": "on", "false": "off", "no": "off", "0": "off"}.get(setting, setting)
    return tuple(sorted(pairs.items()))


def _positive_int(flag: str, value: Any) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{flag}: expected a positive whole number, got {value!r}") from None
    if n < 1:
        raise pytest.UsageError(f"{flag}: expected a positive whole number, got {value!r}")
    return n


def _fraction(flag: str, value: Any) -> float:
    try:
        x = float(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{flag}: expected a number between 0 and 1, got {value!r}") from None
    if not 0 < x < 1:
        raise pytest.UsageError(f"{flag}: expected a number between 0 and 1, got {value!r}")
    return x


def _one(flag: str, value: str, valid: tuple[str, ...]) -> str:
    v = str(value).strip().lower()
    if v not in valid:
        raise pytest.UsageError(f"{flag}: unknown value {value!r}; valid: {', '.join(valid)}")
    return v


def parse(config: pytest.Config, known_arms: Callable[[tuple[str, ...]], list[str]]) -> RunConfig:
    """Validate every option; raise pytest.UsageError on the first bad one."""
    o = {opt.name: opt for opt in OPTIONS}
    preset_name = _raw(config, o["preset"])
    preset_name = DEFAULT_PRESET if preset_name is None else str(preset_name).strip().lower()
    if preset_name not in PRESETS:
        raise pytest.UsageError(f"--ormbench-preset: unknown value {preset_name!r}; valid: {', '.join(PRESETS)}")
    preset = PRESETS[preset_name].values

    def get(name: str) -> Any:
        opt = o[name]
        value = _raw(config, opt)
        if value is None or (opt.kind == "linelist" and not value):
            value = preset.get(opt.preset_key, opt.default) if opt.preset_key else opt.default
            if opt.kind == "flag":
                value = value in (True, "true")
            elif opt.kind == "linelist":
                value = []
        return value

    register = tuple(get("register") or ())
    for target in register:
        if ":" not in target:
            raise pytest.UsageError(f"--ormbench-register: expected module:Class, got {target!r}")
    try:
        arm_names = known_arms(register)
    except Exception as exc:  # an extra arm that does not import
        raise pytest.UsageError(f"--ormbench-register: cannot load arm: {exc}") from None
    dbs = _choices(_spelled(config, o["dbs"]), get("dbs"), {d: d for d in DB_AXIS} | DB_ALIASES, False, list(DB_AXIS),
                   f"{', '.join(DB_AXIS)} (or {', '.join(DB_ALIASES)})")
    everything = [a for a in arm_names if CONTROL_ARMS.get(a, dbs[0]) in dbs]
    if [i.lower() for i in _split(get("arms"))] == ["all"]:
        arms = tuple(everything)  # every arm, but the control arms of databases not in the run
    else:
        arms = _choices("--ormbench-arms", get("arms"), {a: a for a in arm_names}, False, arm_names)
    control = bool(get("control"))
    if control:
        # the yardsticks run beside any selection, like the drift probe: one per database in the run
        wanted = [a for a, db in CONTROL_ARMS.items() if db in dbs and a in arm_names]
        arms = tuple(a for a in arm_names if a in arms or a in wanted)
    rtts_flag = _spelled(config, o["rtts"])
    rtts = _rtts(str(get("rtts") or ""), rtts_flag)
    shard, shard_durations = _shard(str(get("shard") or "").strip(), str(get("shard-durations") or "").strip(),
                                    str(config.invocation_params.dir))
    cwd = str(config.invocation_params.dir)
    estimate_from = tuple(str(Path(cwd, part.strip()).resolve())
                          for part in str(get("estimate-from") or "").split(",") if part.strip())
    missing = [p for p in estimate_from if not Path(p).exists()]
    if missing:
        raise pytest.UsageError(f"--ormbench-estimate-from: {missing[0]} does not exist")
    # a forked child makes its parent's pages its own before timing (worker._own_the_heap), which brought SA ORM's
    # forked cold rounds from 4 % slower than fresh ones to within the drift floor: fork is a timed run's default.
    # Under callgrind a forked child's heap is laid out unlike a fresh interpreter's and counts move by up to 2.3 %:
    # an instructions run starts fresh processes unless asked, so that its counts stay those of fresh processes
    cold_start = str(get("cold-start") or ("fresh" if get("instructions") else "fork")).strip().lower()
    if cold_start not in ("fork", "fresh"):
        raise pytest.UsageError(f"--ormbench-cold-start: unknown value {cold_start!r}; valid: fork, fresh")
    warm_start = str(get("warm-start") or "kept").strip().lower()
    if warm_start not in ("kept", "fresh"):
        raise pytest.UsageError(f"--ormbench-warm-start: unknown value {warm_start!r}; valid: kept, fresh")
    if rtts and not any(db != "sqlite" for db in dbs):
        dbs_flag = PREFIX + o["dbs"].old if rtts_flag != o["rtts"].flag else o["dbs"].flag  # in the user's words
        raise pytest.UsageError(f"{rtts_flag} sweeps a server's round trip: it needs {dbs_flag}=postgresql or mysql")
    pg_url = str(get("postgresql-url") or "").strip()
    pg_settings = _pg_settings(str(get("postgresql-settings") or ""))
    if (pg_url or pg_settings) and "postgresql" not in dbs:
        raise pytest.UsageError("--ormbench-postgresql-url and --ormbench-postgresql-settings need "
                                "--ormbench-dbs=postgresql (or sqlite,postgresql)")
    if pg_url:
        from pytest_ormbench.provision.postgresql import ServerUnavailable, connect_url
        try:
            connect_url(pg_url)  # an unreachable server is a usage error now, not a run of skipped cells
        except ServerUnavailable as exc:
            raise pytest.UsageError(f"--ormbench-postgresql-url: {exc}") from None
    my_url = str(get("mysql-url") or "").strip()
    my_settings = _mysql_settings(str(get("mysql-settings") or ""))
    if (my_url or my_settings) and "mysql" not in dbs:
        raise pytest.UsageError("--ormbench-mysql-url and --ormbench-mysql-settings need --ormbench-dbs=mysql")
    if my_url:
        from pytest_ormbench.provision.mysql import ServerUnavailable as MysqlUnavailable
        from pytest_ormbench.provision.mysql import connect_url as mysql_connect_url
        try:
            mysql_connect_url(my_url)
        except MysqlUnavailable as exc:
            raise pytest.UsageError(f"--ormbench-mysql-url: {exc}") from None

    model_order = list(ALL_MODELS)
    model_valid = {m: m for m in model_order} | MODEL_ALIASES
    models = _choices("--ormbench-models", get("models"), model_valid, True, model_order,
                      f"{', '.join(model_order)} (or 1, 2, 3, 4)")
    shape_order = [shape.name for shape in SHAPES]
    shape_valid = {shape.name: shape.name for shape in SHAPES} | {shape.code: shape.name for shape in SHAPES}
    shape_valid |= {shape.code.lower(): shape.name for shape in SHAPES}
    shapes = _choices("--ormbench-shapes", get("shapes"), shape_valid, True, shape_order,
                      f"names {', '.join(shape_order)} or codes R1-R{len(SHAPES)},")
    strategies = _strategies(str(get("strategies") or "all"))
    if (get("shapes") not in (None, "", "all") or strategies) and RELATIONAL.name not in models:
        raise pytest.UsageError("--ormbench-shapes and --ormbench-strategies select Test 4's cells: they need "
                                "--ormbench-models=relational (or 4, or all)")

    letters = [op.letter for op in OPS]
    op_valid = {op.letter: op.letter for op in OPS} | {op.letter.lower(): op.letter for op in OPS}
    op_valid |= {name: op.letter for name, op in OPS_BY_NAME.items()}
    ops = _choices("--ormbench-ops", get("ops"), op_valid, True, letters,
                   f"letters {letters[0]}-{letters[-1]} or names {', '.join(op.name for op in OPS)},")
    assert all(letter in OPS_BY_LETTER for letter in ops)

    modes = _choices(_spelled(config, o["modes"]), get("modes"), {m: m for m in MODES}, True, list(MODES))
    tables = _choices(_spelled(config, o["tables"]), get("tables"), {t: t for t in TABLES}, True, list(TABLES))
    rounds = _positive_int("--ormbench-rounds", get("rounds"))
    iterations = _positive_int("--ormbench-iterations", get("iterations"))
    batch = _positive_int("--ormbench-batch", get("batch"))
    journal = _one("--ormbench-sqlite-journal", get("sqlite-journal"), JOURNAL_MODES)
    sync = _one("--ormbench-sqlite-synchronous", get("sqlite-synchronous"), tuple(SYNCHRONOUS))
    schedule = _one("--ormbench-schedule", get("schedule"), SCHEDULES)
    alpha = _fraction(_spelled(config, o["compare-alpha"]), get("compare-alpha"))
    probe = bool(get("probe"))
    correction = _one(_spelled(config, o["compare-correction"]), get("compare-correction"), ("holm", "none"))
    drift = _one(_spelled(config, o["compare-drift"]), get("compare-drift"), ("control", "off"))
    instructions = bool(get("instructions"))
    # pytest-benchmark's own switch: what its users expect, every cell verified once and nothing timed
    benchmark_disabled = bool(config.getoption("benchmark_disable", False))
    verify_only = bool(get("verify-only")) or benchmark_disabled
    if instructions:
        from pytest_ormbench.measuring.callgrind import InstructionsUnavailable, check_available
        try:
            check_available()
        except InstructionsUnavailable as exc:
            raise pytest.UsageError(str(exc)) from None
        if verify_only:
            raise pytest.UsageError("--ormbench-instructions counts timed rounds; it cannot be combined with "
                                    + ("--benchmark-disable" if benchmark_disabled else "--ormbench-verify-only"))
    compare_measure = _one("--ormbench-compare-measure", get("compare-measure"), COMPARABLE)
    if instructions and _raw(config, o["schedule"]) is None:
        schedule = "back-to-back"  # counts do not drift: interleaving would only start more processes
    return RunConfig(
        arms=arms, models=models, ops=ops, shapes=shapes, strategies=strategies, modes=modes, tables=tables,
        rounds=rounds,
        sizes=Sizes(iterations, batch), settings=Settings(journal, sync, postgresql=pg_settings, mysql=my_settings),
        dbs=dbs, postgresql_url=pg_url, mysql_url=my_url, rtts=rtts, shard=shard, shard_durations=shard_durations,
        estimate_from=estimate_from, cold_start=cold_start, warm_start=warm_start,
        verify_only=verify_only, benchmark_disabled=benchmark_disabled, register=register,
        memory=bool(get("memory")), report=str(get("report") or "").strip(), schedule=schedule,
        compare=str(get("compare") or "").strip(), compare_markdown=str(get("compare-markdown") or "").strip(),
        thresholds=tuple(t.strip() for t in (get("compare-threshold") or ()) if t.strip()), alpha=alpha, probe=probe,
        correction=correction, drift=drift, preset=preset_name, control=control,
        benchmark_table=bool(get("benchmark-table")), instructions=instructions,
        compare_measure=compare_measure,
    )


def explicit_arms(config: pytest.Config, run: RunConfig) -> tuple[str, ...]:
    """The arms the user named: ``--ormbench-arms`` on the command line or in the ini file, not ``all``. One of
    them that cannot run fails the run; an arm selected by default (``all``, a control arm beside the selection)
    is skipped instead, as are the cells ``-k`` picks."""
    value = _raw(config, next(opt for opt in OPTIONS if opt.name == "arms"))
    named = {item.lower() for item in _split(value or "")}
    if not named or named == {"all"}:
        return ()
    return tuple(arm for arm in run.arms if arm.lower() in named)


def output_paths(config: pytest.Config, run: RunConfig) -> list[tuple[str, Path]]:
    """The files the run writes at its end, as absolute paths: ``--benchmark-json`` (pytest-benchmark's),
    ``--ormbench-report``, ``--ormbench-compare-markdown`` (relative ones from where pytest was started)."""
    base = Path(str(config.invocation_params.dir))
    asked = [("--benchmark-json", config.getoption("benchmark_json", None)), ("--ormbench-report", run.report),
             ("--ormbench-compare-markdown", run.compare_markdown if run.compare else "")]
    return [(flag, path if path.is_absolute() else base / path)
            for flag, value in asked if value and str(value).strip() for path in [Path(str(value))]]


def check_output_path(flag: str, path: Path) -> None:
    """Before anything is measured: the file's folder exists (it is made now if it does not) and takes a new file,
    and the file itself, if there, is not a folder; else one line and pytest's usage-error status."""
    if path.is_dir():
        raise pytest.UsageError(f"{flag}={path}: is a folder; give a file name")
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(f"{flag}={path}: its folder cannot be made: {exc.strerror or exc}") from None
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".ormbench-write-test-"):
            pass
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise pytest.UsageError(f"{flag}={path}: cannot write there: {exc.strerror or exc}") from None
