"""The two sides of a comparison: one run's cells (``Side``), read from a file, from a run saved with
``--benchmark-save`` (found as ``--benchmark-compare`` finds it), or from the live session."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.results.report.load import LoadedCell, ReportError, cells_from_document, read_json, require_cells
from pytest_ormbench.results.compare.model import CompareError


@dataclass
class Side:
    """One run's cells and the run-level facts a comparison needs."""

    cells: dict[CellKey, LoadedCell]
    machine: dict[str, Any]
    floor: float | None
    schedule: str | None
    source: str
    datetime: str
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], source: str) -> Side:
        """A parsed pytest-benchmark document; CompareError for one that is not a pytest-ormbench run."""
        try:
            cells, foreign, unverified = cells_from_document(doc, source)
            require_cells(cells, unverified, source)
        except ReportError as exc:
            raise CompareError(str(exc)) from None
        notes = [f"{source}: {foreign} benchmark(s) that are not pytest-ormbench cells were ignored"] if foreign else []
        if unverified:
            notes.append(f"{source}: {unverified} cell(s) not marked verified were left out")
        facts = doc.get("ormbench")
        floor, schedule = None, None
        if isinstance(facts, dict):
            raw = facts.get("drift_floor")
            if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) and raw >= 0:
                floor = float(raw)
            elif raw is not None:
                notes.append(f"{source}: its drift floor {raw!r} is not a fraction; treated as not recorded")
            schedule = facts.get("schedule") if isinstance(facts.get("schedule"), str) else None
        by_key: dict[CellKey, LoadedCell] = {}
        for cell in cells:
            by_key[cell.key] = cell  # one run has each cell once; should it repeat, the last one stands
        return cls(by_key, dict(doc.get("machine_info") or {}), floor, schedule, source,
                   str(doc.get("datetime") or ""), notes)

    @classmethod
    def from_records(cls, records: Iterable[CellRecord], machine: Mapping[str, Any], floor: float | None,
                     source: str = "this run", schedule: str | None = None, when: str | None = None) -> Side:
        """The live session's cells (the plugin's ``--ormbench-compare``)."""
        when = when or _dt.datetime.now(_dt.timezone.utc).isoformat()
        cells = {}
        for rec in records:
            cell = LoadedCell(rec, source, when, dict(machine))
            cells[cell.key] = cell
        return cls(cells, dict(machine), floor, schedule, source, when)


_SAVED = re.compile(r"^(\d{4})_(.+)\.json$")


def _saved_runs(storage: Path) -> list[Path]:
    """Files written by ``--benchmark-save``: ``storage/<machine id>/NNNN_name.json``."""
    if not storage.is_dir():
        return []
    found = [*storage.glob("*/*.json"), *storage.glob("*.json")]
    return sorted(p for p in found if p.is_file() and _SAVED.match(p.name))


def _spec_matches(spec: str, path: Path) -> bool:
    """As ``--benchmark-compare`` reads it: the run number, the whole name, or a prefix of it; or the name alone."""
    number, name = _SAVED.match(path.name).groups()  # type: ignore[union-attr]
    if spec.isdigit():
        return int(spec) == int(number)
    return path.stem.startswith(spec) or name == spec


def _run_date(path: Path) -> str:
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("datetime") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def resolve_spec(spec: str, storage: Path = Path(".benchmarks")) -> Path:
    """The JSON file a BASELINE/NEW argument names: a path, or a run saved with ``--benchmark-save``.

    pytest-benchmark's own lookup (its ``FileStorage``) comes with pytest-benchmark, which the comparison does
    not import (it runs without pytest): this follows the same rules on the files it writes."""
    path = Path(spec)
    if path.exists() or path.suffix.lower() == ".json" or not spec.strip():
        return path
    parts = path.parts
    if len(parts) > 2:
        return path  # clearly a path: let the reader say it is missing
    platform, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    saved = _saved_runs(storage)
    hits = [p for p in saved if _spec_matches(name, p) and (platform is None or p.parent.name == platform)]
    if hits:
        # the newest run: its recorded date, then the run number, then the file's age
        return max(hits, key=lambda p: (_run_date(p), int(p.name[:4]), p.stat().st_mtime))
    if not storage.is_dir():
        where = f"there is no {storage} directory"
    elif not saved:
        where = f"{storage} holds no saved runs"
    else:
        shown = [str(p.relative_to(storage)) for p in saved[:8]]
        more = f" and {len(saved) - len(shown)} more" if len(saved) > len(shown) else ""
        where = f"saved runs in {storage}: {', '.join(shown)}{more}"
    raise CompareError(f"{spec}: no such file, and no run saved with --benchmark-save by that number or name "
                       f"({where})")


def load_side(spec: str, storage: Path = Path(".benchmarks")) -> Side:
    """One side of a comparison from a JSON file or a saved run (see :func:`resolve_spec`)."""
    path = resolve_spec(str(spec), Path(storage))
    try:
        return Side.from_document(read_json(path), str(path))
    except ReportError as exc:
        raise CompareError(str(exc)) from None
