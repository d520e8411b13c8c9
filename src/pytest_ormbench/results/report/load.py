"""Reading pytest-benchmark JSON files into cells, with one clear message per bad input.

Rules (documented in docs/reports.md and tested):
- a file that is missing, not JSON, or not pytest-benchmark's format is an error naming the file;
- a pytest-benchmark file with no pytest-ormbench cells (written without this plugin) is an error;
- benchmarks in a file that are not ormbench cells are ignored and counted in a note;
- the same cell (arm, model, op, mode, table, and its database and RTT when not SQLite) in two files: the
  one from the later run (the file's ``datetime``) is used, and a note per pair of files names the replaced
  cells (up to three; beyond, their number and arms); an arm's
  SQLite and PostgreSQL cells are two cells, never one replacing the other;
- except that a latency sweep's own direct cell (a cell reached without the proxy, in a file that also ran it
  through the proxy) does not replace another file's record of that cell: the report's tables keep the other
  file's figure (its own schedule, usually more rounds), the latency tables' "direct" column the sweep's own,
  so that each table compares figures of one run; a note counts these cells per pair of files;
- and a timed record and an instrumented one (``--ormbench-instructions``, run under callgrind) of
  the same cell are folded, not replaced: the cell's rows/s come from the timed record, its instructions
  from the instrumented one (the later run of each kind, by the rule above), and a note counts the folded
  cells per pair of files. An instrumented record never gives a rows/s figure: valgrind's wall times are
  not the op's speed;
- cells missing from a file are simply absent: tables show "—" there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_ormbench.workload.cells import DEFAULT_DB, SERVER_DBS, CellKey, RecordError
from pytest_ormbench.results.record import CellRecord, unfold_environment

REQUIRED = ("arm", "model", "op", "mode", "table", "rows", "verified")


class ReportError(Exception):
    """Bad input for the reporter; its message is the one line the user sees."""


@dataclass
class LoadedCell:
    """One cell as read from a file: its record and where it came from (which cell it is: ``key``, a
    :class:`CellKey`).

    ``record`` is the cell's timed record when it has one (its environment, facts and rows/s are the
    report's); ``instructions_cell`` is the same cell from an instructions run, folded in beside it.
    A cell from an instructions run alone has that record as ``record`` and no rows/s.
    """

    record: CellRecord
    source: str
    run_datetime: str
    machine: dict[str, Any]
    #: the same cell from an instrumented (callgrind) run, when ``record`` is a timed one
    instructions_cell: LoadedCell | None = None
    #: a direct cell of a file that also ran it through the latency proxy (a latency sweep's own baseline)
    from_sweep: bool = False
    #: that sweep's record of this cell, when another file's record is the report's (the "direct" column)
    sweep_direct_cell: LoadedCell | None = None

    @property
    def key(self) -> CellKey:
        """Which cell: the record's key (an arm's SQLite and PostgreSQL cells are two keys, never one)."""
        return self.record.key

    @property
    def place(self) -> str:
        """``sqlite``, ``postgresql``, ``postgresql@5ms``: where the arm stored (the report's sections)."""
        return self.record.key.place

    @property
    def seconds(self) -> list[float]:
        return self.record.seconds

    @property
    def timed(self) -> bool:
        return self.record.timed

    @property
    def rows_per_s(self) -> float | None:
        """From a timed record only (None otherwise): an instrumented round's wall time is valgrind's."""
        return self.record.rows_per_s if self.record.timed else None

    @property
    def parts(self) -> list[LoadedCell]:
        """The cell as read from each file that supplies it: the timed one first."""
        return [self, *([self.instructions_cell] if self.instructions_cell else [])]

    @property
    def instructions_record(self) -> CellRecord | None:
        """The record the cell's instructions come from: the instrumented one folded in, else its own."""
        for part in reversed(self.parts):
            if part.record.instructions:
                return part.record
        return None

    @property
    def instructions_per_row(self) -> float | None:
        rec = self.instructions_record
        return rec.instructions_per_row if rec else None

    @property
    def statements_per_op(self) -> dict[str, int] | None:
        """Statements by kind, from the timed record when it counted them (both runs count them untimed)."""
        return next((p.record.statements_per_op for p in self.parts if p.record.statements), None)

    @property
    def statements_note(self) -> str | None:
        """Why statements were not counted (an engine without SQL), if a record says so."""
        return next((p.record.statements_note for p in self.parts if p.record.statements_note), None)


def place_order(place: str) -> tuple[int, str, float]:
    """The report's order of places: SQLite, then each server database directly, then its latency sweep by RTT."""
    db, _, rtt = place.partition("@")
    dbs = [DEFAULT_DB, *SERVER_DBS]
    return (dbs.index(db) if db in dbs else len(dbs), db, float(rtt[:-2]) if rtt else -1.0)


@dataclass
class Runs:
    cells: dict[CellKey, LoadedCell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    #: source -> the run-level facts the plugin wrote (schedule, drift probe, floor), when present
    run_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: source -> when pytest-benchmark wrote it (its "datetime": the end of the run)
    written: dict[str, str] = field(default_factory=dict)
    #: the database the cells are scoped to (:meth:`at`): ``sqlite``, ``postgresql``, ``postgresql@rtt`` (its
    #: latency sweep); None: every cell read
    scope: str | None = None
    #: records that a later run's record of the same cell replaced (their notes: :meth:`replaced_notes`)
    superseded: list[LoadedCell] = field(default_factory=list, repr=False, compare=False)
    #: the runs a scoped one was cut from (labels and footnotes speak for every database)
    whole: Runs | None = field(default=None, repr=False, compare=False)
    #: the shards' wall times were normalised by each shard's control arms (``report.shards``): tables say so
    normalised: bool = False
    #: lines for the report's header: the shards merged and the machines they ran on
    header: list[str] = field(default_factory=list)
    #: source -> the machine it ran on, as the report names one (``shards.machine_name``)
    machines: dict[str, str] = field(default_factory=dict)

    def machine_labels(self) -> dict[str, str]:
        """Machine -> a short label (M1, M2, … in the order of the files), when the files come from more than
        one machine; {} when from one (nothing to tell apart)."""
        whole = self.whole or self
        order = list(dict.fromkeys(whole.machines[s] for s in sorted(whole.machines)))
        return {m: f"M{i}" for i, m in enumerate(order, 1)} if len(order) > 1 else {}

    def across_machines(self, sources: Iterable[str]) -> bool:
        """Whether these files ran on more than one machine, and their wall times are not comparable (shards
        normalised by their control arms are made comparable: then False)."""
        whole = self.whole or self
        return not whole.normalised and len({whole.machines.get(s) for s in sources} - {None}) > 1

    def places(self) -> list[str]:
        """The places the cells come from (``sqlite``, ``postgresql``, ``postgresql@5ms``), in report order."""
        return sorted({c.place for c in self.cells.values()}, key=place_order)

    def dbs(self) -> list[str]:
        """The databases the cells ran on, in report order (a latency sweep's cells count for their database)."""
        return list(dict.fromkeys(p.partition("@")[0] for p in self.places()))

    def at(self, db: str, *, sweep: bool = False) -> Runs:
        """The runs with the cells of one database only: reached directly, or (``sweep``) through the latency proxy.

        Sources, notes and run facts are shared with the whole: they describe the files, not the cells.
        """
        whole = self.whole or self
        cells = {k: c for k, c in whole.cells.items()
                 if c.record.key.db == db and (c.record.key.rtt_ms is not None) == sweep}
        return Runs(cells, self.notes, self.sources, self.run_facts, self.written,
                    scope=db + ("@rtt" if sweep else ""), whole=whole, normalised=whole.normalised,
                    header=whole.header, machines=whole.machines)

    def of_models(self, models: Iterable[str]) -> Runs:
        """The runs with the cells of these models only (Tests 1-3's tables never see Test 4's cells, nor the other
        way round); sources, notes and run facts are shared."""
        wanted = set(models)
        cells = {k: c for k, c in self.cells.items() if k.model in wanted}
        return Runs(cells, self.notes, self.sources, self.run_facts, self.written, scope=self.scope,
                    superseded=[c for c in self.superseded if c.key.model in wanted], normalised=self.normalised,
                    header=self.header, machines=self.machines,
                    whole=None if self.whole is None else self.whole.of_models(wanted))

    def add(self, cell: LoadedCell) -> None:
        """Fold a cell in: per key one timed and one instrumented record, each the later run's; a latency
        sweep's own direct record goes beside another file's timed one (the latency tables' "direct")."""
        old = self.cells.get(cell.key)
        if old is None:
            self.cells[cell.key] = cell
        elif cell.timed and old.timed and cell.from_sweep and not old.from_sweep:
            old.sweep_direct_cell = cell if old.sweep_direct_cell is None else self._later(old.sweep_direct_cell, cell)
        elif cell.timed and old.timed and old.from_sweep and not cell.from_sweep:
            cell.sweep_direct_cell, cell.instructions_cell = old, old.instructions_cell
            old.instructions_cell = None
            self.cells[cell.key] = cell
        elif cell.timed and old.timed:
            newer = self._later(old, cell)
            if newer is cell:
                cell.instructions_cell, cell.sweep_direct_cell = old.instructions_cell, old.sweep_direct_cell
            self.cells[cell.key] = newer
        elif cell.timed:  # the key so far had only an instructions run's record: it goes beside this one
            cell.instructions_cell = old
            self.cells[cell.key] = cell
        elif old.timed:
            old.instructions_cell = cell if old.instructions_cell is None else self._later(old.instructions_cell, cell)
        else:
            self.cells[cell.key] = self._later(old, cell)

    def _later(self, old: LoadedCell, new: LoadedCell) -> LoadedCell:
        """Of two records of one kind for a cell, the later run's (the other is kept for :meth:`replaced_notes`)."""
        newer, older = (new, old) if new.run_datetime >= old.run_datetime else (old, new)
        self.superseded.append(older)
        return newer

    def replaced_notes(self) -> list[str]:
        """One line per pair of files (superseded, used) that share cells, naming up to three of the cells.

        Worked out from the final cells, so the lines do not depend on the order the files were read in; a
        run that also ran the control arm beside its own (the default) supplies that arm's cells to every
        such pair, which a line per cell would list hundreds of times."""
        pairs: dict[tuple[str, str], list[LoadedCell]] = defaultdict(list)
        for lost in self.superseded:
            final = self.cells[lost.key]
            if lost.from_sweep and not final.from_sweep:
                used = final.sweep_direct_cell or final
            elif lost.timed or final.instructions_cell is None:
                used = final
            else:
                used = final.instructions_cell
            pairs[(lost.source, used.source)].append(lost)
        notes = []
        for (older, newer), lost in sorted(pairs.items()):
            keys = sorted(c.key.id for c in lost)
            if len(keys) <= 3:
                which = f"cell{'s' if len(keys) > 1 else ''} {', '.join(keys)}"
            else:
                arms = sorted({c.record.key.arm for c in lost})
                which = f"{len(keys)} cells (arm{'s' if len(arms) > 1 else ''} {', '.join(arms)})"
            notes.append(f"{which} {'are' if len(keys) > 1 else 'is'} in {older} and {newer}; "
                         f"the later run ({newer}) is used")
        return notes

    def fold_notes(self) -> list[str]:
        """One line per pair of files folded (instructions beside rows/s), and per file of cells without rows/s.

        None at all for files without instrumented records, whose reports stay as they were.
        """
        folded: dict[tuple[str, str], int] = defaultdict(int)
        untimed: dict[str, int] = defaultdict(int)
        beside: dict[tuple[str, str], int] = defaultdict(int)
        for cell in self.cells.values():
            if cell.sweep_direct_cell is not None:
                beside[(cell.sweep_direct_cell.source, cell.source)] += 1
            if cell.instructions_cell is not None:
                folded[(cell.instructions_cell.source, cell.source)] += 1
            elif not cell.timed:
                untimed[cell.source] += 1
        notes = [f"{counted}: the instructions of {n} cell(s) whose rows/s come from the timed run {timed}"
                 for (counted, timed), n in sorted(folded.items())]
        notes += [f"{sweep}: its {n} direct cell(s) (without the proxy) are the latency tables' \"direct\" column; "
                  f"the other tables keep {main}'s figures of those cells"
                  for (sweep, main), n in sorted(beside.items())]
        if any(c.timed for c in self.cells.values()):
            notes += [f"{source}: {n} cell(s) ran only under callgrind (--ormbench-instructions), with no timed "
                      "run beside them: they have instructions and statements, no rows/s"
                      for source, n in sorted(untimed.items())]
        return notes


def read_json(path: Path) -> Any:
    """A JSON file's document, or ReportError naming the file and what is wrong with it."""
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a directory, not a JSON file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a text file (expected pytest-benchmark JSON)") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def cells_from_document(doc: Any, source: str) -> tuple[list[LoadedCell], int, int]:
    """The ormbench cells of one pytest-benchmark document, how many other benchmarks it had, and how many
    cells were not marked verified (left out: a figure counts only if its operation was checked)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportError(f"{source}: not pytest-benchmark JSON (no 'benchmarks' list)")
    cells, foreign, unverified = [], 0, 0
    environments = (doc.get("ormbench") or {}).get("environments") or {}
    for bench in doc["benchmarks"]:
        info = bench.get("extra_info") if isinstance(bench, dict) else None
        if not isinstance(info, dict) or any(k not in info for k in REQUIRED):
            foreign += 1
            continue
        try:
            info = unfold_environment(info, environments)
        except RecordError as exc:
            raise ReportError(f"{source}: cell {bench.get('name')}: {exc}") from None
        if info.get("verified") is not True:
            unverified += 1
            continue
        data = (bench.get("stats") or {}).get("data") or info.get("round_seconds")
        if not data:
            raise ReportError(f"{source}: cell {bench.get('name')} has no round times "
                              "(save with --benchmark-json or --benchmark-save, which keep them)")
        try:
            record = CellRecord.from_json(info, [float(x) for x in data])
        except (RecordError, TypeError, ValueError) as exc:
            raise ReportError(f"{source}: cell {bench.get('name')}: {exc}") from None
        cells.append(LoadedCell(record, source, str(doc.get("datetime", "")), doc.get("machine_info") or {}))
    return cells, foreign, unverified


def require_cells(cells: list[LoadedCell], unverified: int, source: str) -> None:
    """A file must give at least one verified cell; say which way it fails."""
    if not cells and unverified:
        raise ReportError(f"{source}: none of its {unverified} pytest-ormbench cells is marked verified")
    if not cells:
        raise ReportError(f"{source}: no pytest-ormbench cells in it (was it written without the plugin?)")


def load(paths: Iterable[str | Path], shards: str = "refuse") -> Runs:
    """The cells of the files, folded into one set (a later run's cell replaces an earlier one's).

    ``shards``: what to do with the shards of a matrix (``--ormbench-shard`` runs) from several machines:
    ``refuse`` them (a :class:`ReportError`), or ``normalise`` each by its own control arms (``report.shards``).
    """
    from pytest_ormbench.results.report.shards import ShardMixError, check_machines, machine_name, normalise

    runs = Runs()
    paths = list(paths)
    if not paths:
        raise ReportError("no JSON files given")
    per_file: dict[str, list[LoadedCell]] = {}
    machine_of: dict[str, Mapping[str, Any]] = {}
    for p in paths:
        path = Path(p)
        doc = read_json(path)
        cells, foreign, unverified = cells_from_document(doc, str(path))
        require_cells(cells, unverified, str(path))
        if foreign:
            runs.notes.append(f"{path}: {foreign} benchmark(s) that are not pytest-ormbench cells were ignored")
        if unverified:
            runs.notes.append(f"{path}: {unverified} cell(s) not marked verified were left out")
        per_file[str(path)] = cells
        machine_of[str(path)] = doc.get("machine_info") or {}
        runs.machines[str(path)] = machine_name(machine_of[str(path)])
        runs.sources.append(str(path))
        runs.written[str(path)] = str(doc.get("datetime", ""))
        if isinstance(doc.get("ormbench"), dict):
            runs.run_facts[str(path)] = doc["ormbench"]
    try:
        scale, notes = check_machines(machine_of, runs.run_facts, shards)
    except ShardMixError as exc:
        raise ReportError(str(exc)) from None
    runs.header.extend(notes)
    if scale:
        per_file = normalise(per_file, list(per_file), runs.run_facts)
        runs.notes.extend(per_file.pop("", []))  # type: ignore[arg-type]
        runs.normalised = True
    for source, cells in per_file.items():
        swept = {replace(c.record.key, rtt_ms=None) for c in cells if c.record.key.rtt_ms is not None}  # direct keys
        for cell in cells:
            cell.from_sweep = cell.record.key.rtt_ms is None and cell.record.key in swept
            runs.add(cell)
    runs.sources.sort()  # the shell's glob order follows the locale; the report must not
    runs.notes.extend([*runs.replaced_notes(), *runs.fold_notes()])
    return runs


def runs_from_records(records: Iterable[CellRecord], machine: Mapping[str, Any], when: str,
                      run_facts: Mapping[str, Any] | None = None) -> Runs:
    """Cells straight from a live session (the terminal summary, --ormbench-report)."""
    runs = Runs(sources=["this run"], run_facts={"this run": dict(run_facts)} if run_facts else {},
                written={"this run": when})
    for rec in records:
        runs.add(LoadedCell(rec, "this run", when, dict(machine)))
    return runs
