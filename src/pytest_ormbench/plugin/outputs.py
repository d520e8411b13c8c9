"""The end of a run: the outputs asked for, or the run's JSON kept elsewhere, and where each ORM came from.

Output paths are checked before anything is measured (``plugin/options.py``); a write that still fails at the end
keeps the run's JSON in a fallback file and says where, in one line, instead of a traceback that loses the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_ormbench.plugin.session import SESSION_KEY
from pytest_ormbench.arms.registry import describe_origin


#: lines for the end of the run: outputs that could not be written, and where the run's JSON went instead
ENDING_KEY = pytest.StashKey[list]()


#: --benchmark-json's folder was tried once at the end (and, if it failed, pointed at a fallback file)
JSON_TRIED_KEY = pytest.StashKey[bool]()


def ending(config: pytest.Config) -> list[str]:
    return config.stash.setdefault(ENDING_KEY, [])


def fallback_file(config: pytest.Config) -> Path:
    """A new file for the run's JSON: in the directory pytest was started from, else in the temporary directory."""
    import tempfile
    import time

    name = f"ormbench-run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    for folder in (Path(str(config.invocation_params.dir)), Path(tempfile.gettempdir())):
        try:
            with open(folder / name, "x", encoding="utf-8"):
                return folder / name
        except OSError:
            continue
    raise OSError(f"neither {config.invocation_params.dir} nor {tempfile.gettempdir()} takes a new file")


def output_failed(config: pytest.Config, flag: str, path: object, exc: OSError) -> None:
    """An output asked for could not be written at the end: say so, and where the run's figures are kept."""
    why = exc.strerror or str(exc)
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None and bs.json and config.stash.get(JSON_TRIED_KEY, False):
        kept = f"the run's JSON is in {bs.json}"
    elif bs is not None and bs.json:
        kept = f"the run's JSON goes to {bs.json} (--benchmark-json)"
    else:
        kept = keep_run_json(config)
    ending(config).append(f"pytest-ormbench: could not write {flag}={path}: {why}; {kept}")


def keep_run_json(config: pytest.Config) -> str:
    """The run's JSON as pytest-benchmark would write it with --benchmark-json, in a fallback file."""
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or not bs.benchmarks:
        return "no cell was timed, so there is no JSON to keep"
    try:
        target = fallback_file(config)
        commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
        output = config.hook.pytest_benchmark_generate_json(config=config, benchmarks=bs.benchmarks, include_data=True,
                                                             machine_info=bs.get_machine_info(),
                                                             commit_info=commit_info)
        config.hook.pytest_benchmark_update_json(config=config, benchmarks=bs.benchmarks, output_json=output)
        target.write_text(json.dumps(output, indent=4, default=str), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - the last resort failed too: say so, do not lose the summary
        return f"and the run's JSON could not be kept either ({type(exc).__name__}: {exc})"
    return f"the run's JSON is kept in {target}"


def try_benchmark_json(config: pytest.Config) -> None:
    """Just before pytest-benchmark writes --benchmark-json: if its file cannot be opened, point it at a fallback
    file (pytest-benchmark then writes there, and the run is not lost to a traceback)."""
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or not bs.json or config.stash.get(JSON_TRIED_KEY, False):
        return
    config.stash[JSON_TRIED_KEY] = True
    wanted = bs.json
    try:
        with open(wanted, "ab"):
            pass
    except OSError as exc:
        try:
            bs.json = fallback_file(config)
        except OSError as last:
            ending(config).append(f"pytest-ormbench: could not write --benchmark-json={wanted}: "
                                   f"{exc.strerror or exc}; nor a fallback file: {last}")
            return
        ending(config).append(f"pytest-ormbench: could not write --benchmark-json={wanted}: {exc.strerror or exc}; "
                               f"the run's JSON is kept in {bs.json}")


def where_from(config: pytest.Config) -> list[str]:
    """Per arm: a package version outside the range it was tested with, and a package installed from a local
    checkout, a VCS or an archive (path, commit), as the measuring processes recorded them."""
    ob = config.stash.get(SESSION_KEY, None)
    if ob is None or ob.scheduler is None:
        return []
    lines: list[str] = []
    for record in ob.scheduler.records:
        info, arm = record.env.arm_info, record.key.arm
        for dist, where in sorted((info.get("origins") or {}).items()):
            lines.append(f"pytest-ormbench: {arm} measured "
                         f"{describe_origin(dist, record.env.versions.get(dist, '?'), where)}")
        lines.extend(f"pytest-ormbench: {arm}: {line}" for line in info.get("untested_versions") or ())
    return list(dict.fromkeys(lines))
