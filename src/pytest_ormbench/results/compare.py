"""Comparing two runs cell by cell: did a change make anything slower than the noise allows?

A cell regresses only when three guards agree:

- the rounds differ *significantly*: a two-sided Mann–Whitney U test on the round times, exact for
  small samples without ties, otherwise the normal approximation with tie and continuity correction;
- the median round time grew by at least the cell's *threshold* (default 10 %);
- the change is larger than the *floor*: what the machine itself moved by between the two runs.

Drift correction: whole runs on a shared machine differ in speed (here by up to ×1.45 between two
runs of the same code), and fifteen rounds per side make such a shift "significant" in every cell.
The raw sqlite3 control arm runs in the same rounds as the ORMs and its code does not change, so
its cells tell how much the machine moved: the geometric mean of its cells' median ratios (per mode,
table and place) is divided out of the new run's times before anything else, and the largest deviation
of a control cell from that shift is the comparison's floor (how unevenly the machine moved). Each
database has its own control arms (``registry.CONTROL_ARMS``: sqlite3 on SQLite; psycopg and asyncpg
together on PostgreSQL, each latency-sweep RTT a place of its own), so a server's cells are corrected
by what the server's controls saw. A place without enough control cells of its own takes the sqlite3
control's correction of the same mode and table (what every cell had before the database axis); when
that is missing too, nothing is corrected and the floor is the larger of the two runs' recorded probe
floors.

Why Mann–Whitney and not a t-test or a bootstrap: it works on ranks, so one round disturbed by a
cron job moves it by one rank instead of dragging a mean; it assumes no normality (round times are
skewed to the right); and for the five rounds a cell usually has, its null distribution is counted
exactly (252 equally likely arrangements). A bootstrap of the median of five values can only ever
return one of those five values, so its intervals are coarse and their coverage poor.

Many cells, one family: a comparison tests every cell of the matrix at once, and at alpha 0.05 about
one cell in twenty is "significant" by chance. A pull request's check fails on any flagged cell, so
what must stay below alpha is the chance of *any* false alarm in the whole comparison: the p-values
are adjusted by Holm's step-down method (family-wise error at most alpha, under any dependence
between cells, and never less powerful than plain Bonferroni). ``correction="none"`` tests each
cell at alpha instead.

The price of exactness: with few rounds the smallest attainable p-value is large (2/20 = 0.1 for 3
against 3 rounds; 2/252 = 0.0079 for 5 against 5, which Holm over 44 cells needs below 0.0011), so
such cells can never be flagged; a warning says so and names the rounds that would do.

Judging by instructions (``measure="instructions"``, runs made with ``--ormbench-instructions``): an
instruction count does not depend on how busy the machine is, and the same code on the same data
repeats it to within a tenth of a per cent. So there is nothing to test for significance and no drift
to divide out: the verdict is the ratio of the median counts against the cell's threshold (2 % by
default, not 10 %), with the counts' own repeatability as the floor.

Statements per op are counted exactly, and the same code on the same data sends the same statements:
whichever measure is judged, any difference in a cell's counts is reported, kind by kind, and more
statements in total fail the comparison like a regression (an N+1 query shows at once).

Imports no ORM and no pytest: the plugin and the ``ormbench compare`` command both call it.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pytest_ormbench.workload.statements import KINDS
from pytest_ormbench.workload.measures import COMPARABLE, INSTRUCTIONS, WALL
from pytest_ormbench.workload.cells import DEFAULT_DB, format_rtt
from pytest_ormbench.results.record import CellRecord
from pytest_ormbench.arms.registry import CONTROL_ARM, CONTROL_ARMS  # their cells measure the machine's drift between two runs
from pytest_ormbench.results.report.load import Cell, ReportError, _read_json, cells_from_document, require_cells
from pytest_ormbench.results.report.render import markdown_table, text_table
from pytest_ormbench.results.report.tables import Table, _machine, db_title, fmt_rate
from pytest_ormbench.results.stats import median

#: ``CellKey.astuple()``: (arm, model, op, mode, table), then the database (and RTT) of a cell not on SQLite, so
#: that an arm's SQLite and PostgreSQL cells never share a key
Key = tuple[Any, ...]

DEFAULT_THRESHOLD_PCT = 10.0
#: instruction counts hardly move between runs, so a much smaller change is already worth a look
DEFAULT_INSTRUCTIONS_THRESHOLD_PCT = 2.0
#: the floor of an instructions comparison: the same code on the same data repeated its counts between
#: runs to within 0.1 %; doubled for margin (a cell whose own rounds spread wider gets that spread)
INSTRUCTIONS_FLOOR = 0.002
DEFAULT_ALPHA = 0.05
#: rounds per side below which the usual 3-against-3 comparison cannot reach p < 0.05
MIN_ROUNDS = 4
#: largest n*m for which the exact null distribution of U is counted (no ties)
EXACT_LIMIT = 400

REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
NOISE = "within noise"
NEW = "new"
GONE = "gone"
#: the order of the tables and of the headline
CATEGORIES = (REGRESSION, IMPROVEMENT, UNCHANGED, NOISE, NEW, GONE)
_PLURAL = {REGRESSION: "regressions", IMPROVEMENT: "improvements"}


class CompareError(Exception):
    """Bad input for a comparison; its message is the one line the user sees."""


def check_measure(measure: str) -> str:
    """The measure, or CompareError: only a measure with one value per round, lower is better, can be judged."""
    if measure not in COMPARABLE:
        raise CompareError(f"measure must be one of {', '.join(COMPARABLE)}, got {measure!r}")
    return measure


def default_threshold_pct(measure: str) -> float:
    """The threshold of a cell no pattern matches: 10 % of time, 2 % of instructions."""
    return DEFAULT_INSTRUCTIONS_THRESHOLD_PCT if check_measure(measure) == INSTRUCTIONS else DEFAULT_THRESHOLD_PCT


# -- statistics -----------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) equally likely arrangements give U = 0, 1, ..., n*m (no ties).

    These are the coefficients of the Gaussian binomial [n+m choose n]_q, built as the product of
    (1 - q^(m+i)) / (1 - q^i) for i = 1..n; every partial product is itself a polynomial, so the
    arithmetic stays in exact integers.
    """
    size = n * m + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n + 1):
        for k in range(size - 1, m + i - 1, -1):  # multiply by (1 - q^(m+i))
            poly[k] -= poly[k - m - i]
        for k in range(i, size):  # divide by (1 - q^i)
            poly[k] += poly[k - i]
    return tuple(poly)


CORRECTIONS = ("holm", "none")
DRIFT_MODES = ("control", "off")
#: fewer common control cells than this in a (mode, table, place) group: no correction of its own there
MIN_CONTROL_CELLS = 3


def place_of(key: Key) -> str:
    """``CellKey.place`` of a key tuple: ``sqlite``, ``postgresql``, ``postgresql@5ms``."""
    if len(key) <= 5:
        return DEFAULT_DB
    return str(key[5]) if len(key) == 6 or key[6] is None else f"{key[5]}@{format_rtt(float(key[6]))}ms"


def controls_of(place: str) -> list[str]:
    """The control arms whose cells measure the drift at a place: those of its database."""
    db = place.partition("@")[0]
    return [arm for arm, on in CONTROL_ARMS.items() if on == db]


def _group(key: Key) -> tuple[str, str, str]:
    """(mode, table, place): where one drift correction applies."""
    return (key[3], key[4], place_of(key))


def holm(ps: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input's order.

    The k-th smallest of m p-values is multiplied by (m - k + 1) and the results are made
    non-decreasing; rejecting every adjusted p below alpha keeps the family-wise error at alpha.
    """
    m = len(ps)
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: ps[i])):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def rounds_needed(level: float) -> int:
    """The fewest rounds per side (at least 5) at which rounds that overlap a little can still reach
    ``level``: complete separation then gives a p-value five times smaller than the level."""
    n = 5
    while smallest_p(n, n) >= level / 5:
        n += 1
    return n


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value the exact test can give for n against m rounds."""
    return min(1.0, 2 / math.comb(n + m, n))


def _midranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Ranks 1..N with ties sharing their mean rank, and the sizes of the tied groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """U of ``x`` (pairs with x > y, ties counting one half) and the two-sided p-value.

    Exact when there are no ties and n*m <= EXACT_LIMIT; otherwise the normal approximation with
    the tie-corrected variance and a continuity correction of 1/2.
    """
    n, m = len(x), len(y)
    if not n or not m:
        raise ValueError("Mann-Whitney needs at least one value on each side")
    ranks, ties = _midranks([*x, *y])
    u = sum(ranks[:n]) - n * (n + 1) / 2
    if not ties and n * m <= EXACT_LIMIT:
        counts = _u_counts(n, m)
        tail = min(int(round(u)), n * m - int(round(u)))  # the distribution is symmetric
        return u, min(1.0, 2 * sum(counts[:tail + 1]) / math.comb(n + m, n))
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1))
    variance = n * m / 12 * ((total + 1) - tie_term)
    if variance <= 0:  # every round of both sides took the same time
        return u, 1.0
    z = (abs(u - n * m / 2) - 0.5) / math.sqrt(variance)
    return u, 1.0 if z <= 0 else min(1.0, math.erfc(z / math.sqrt(2)))


# -- thresholds -----------------------------------------------------------------------------------

def _matches(pattern: str, record: CellRecord) -> bool:
    key = record.key
    names = (key.arm, key.model, key.op, key.operation.name)
    return pattern in names or fnmatch.fnmatchcase(key.id, pattern)


@dataclass(frozen=True)
class Thresholds:
    """Per-cell regression thresholds as fractions (0.1 = the median time may grow by 10 %).

    Entries are checked in order and the last one that matches wins, so a broad entry goes
    first and exceptions after it; ``*=12`` at the end overrides everything before it.
    """

    entries: tuple[tuple[str, float], ...] = ()
    default: float = DEFAULT_THRESHOLD_PCT / 100

    @classmethod
    def parse(cls, specs: Iterable[str], default_pct: float = DEFAULT_THRESHOLD_PCT) -> Thresholds:
        """``PATTERN=PCT`` entries (several may share one string, separated by commas)."""
        entries = []
        for spec in specs:
            for item in str(spec).split(","):
                item = item.strip()
                if not item:
                    continue
                pattern, sep, pct = item.rpartition("=")
                pattern = pattern.strip()
                if not sep or not pattern:
                    raise CompareError(f"threshold {item!r}: expected PATTERN=PERCENT, e.g. peewee=15 or *-fk-*=20")
                try:
                    value = float(pct.strip().rstrip("%").strip())
                except ValueError:
                    raise CompareError(f"threshold {item!r}: {pct.strip()!r} is not a number of percent") from None
                if not math.isfinite(value) or value < 0:
                    raise CompareError(f"threshold {item!r}: the percentage must be 0 or more")
                entries.append((pattern, value / 100))
        return cls(tuple(entries), default_pct / 100)

    def with_default_pct(self, pct: float) -> Thresholds:
        """The same entries over another default (the measure's), for thresholds parsed before it was known."""
        return Thresholds(self.entries, pct / 100)

    def for_cell(self, record: CellRecord) -> float:
        value = self.default
        for pattern, fraction in self.entries:
            if _matches(pattern, record):
                value = fraction
        return value

    def unused(self, records: Iterable[CellRecord]) -> list[str]:
        """Patterns that match no cell: most likely a typo."""
        records = list(records)
        return [p for p, _ in self.entries if not any(_matches(p, r) for r in records)]

    def describe(self) -> str:
        extra = ", ".join(f"{p}={_pct(f)}" for p, f in self.entries)
        return f"{_pct(self.default)} by default" + (f", then {extra} (last match wins)" if extra else "")


# -- the two sides --------------------------------------------------------------------------------

@dataclass
class Side:
    """One run's cells and the run-level facts a comparison needs."""

    cells: dict[Key, Cell]
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
        by_key: dict[Key, Cell] = {}
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
            cell = Cell(rec, source, when, dict(machine))
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
    """The JSON file a BASELINE/NEW argument names: a path, or a run saved with ``--benchmark-save``."""
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
        return Side.from_document(_read_json(path), str(path))
    except ReportError as exc:
        raise CompareError(str(exc)) from None


# -- the comparison -------------------------------------------------------------------------------

@dataclass
class CellResult:
    """One cell's verdict. ``ratio`` is the new median over the baseline's, of the measure judged
    (> 1: slower, or more instructions); ``p`` stays None when no test was made (instructions)."""

    key: Key
    id: str
    category: str
    base: Cell | None
    new: Cell | None
    ratio: float | None = None
    #: the p-value the verdict used: Holm-adjusted over the comparison's cells unless correction is "none"
    p: float | None = None
    threshold: float | None = None
    #: the cell's own Mann-Whitney p-value, before any adjustment
    p_raw: float | None = None
    #: the floor this cell was judged against
    floor: float | None = None

    @property
    def change(self) -> float | None:
        """Relative change in rows/s (positive: faster), after drift correction."""
        if self.ratio is None or self.ratio <= 0 or math.isinf(self.ratio):
            return None
        return 1 / self.ratio - 1


@dataclass
class Drift:
    """How far the machine moved between the runs, seen by the control arm(s) in one (mode, table, place) group."""

    mode: str
    table: str
    #: geometric mean of the control cells' median-time ratios, new / baseline (> 1: the machine was slower)
    shift: float
    #: the largest relative deviation of one control cell's ratio from ``shift``
    floor: float
    cells: int
    #: where the control cells ran (``sqlite``, ``postgresql``, ``postgresql@5ms``)
    place: str = DEFAULT_DB
    #: the control arms whose cells these are
    controls: tuple[str, ...] = (CONTROL_ARM,)


@dataclass(frozen=True)
class StatementChange:
    """One cell whose statements per op differ between the runs. The counts are exact and repeat
    run after run, so any difference is the code's, and more statements in total is a regression."""

    key: Key
    id: str
    base: dict[str, int]
    new: dict[str, int]

    @property
    def moved(self) -> list[tuple[str, int, int]]:
        """(kind, baseline count, new count) for every kind that moved, in the order of KINDS."""
        kinds = [*KINDS, *sorted((self.base.keys() | self.new.keys()) - set(KINDS))]
        return [(k, self.base.get(k, 0), self.new.get(k, 0)) for k in kinds
                if self.base.get(k, 0) != self.new.get(k, 0)]

    @property
    def total_base(self) -> int:
        return sum(self.base.values())

    @property
    def total_new(self) -> int:
        return sum(self.new.values())

    @property
    def more(self) -> bool:
        """More statements in total: a regression, whatever the measure judged."""
        return self.total_new > self.total_base

    @property
    def verdict(self) -> str:
        if self.more:
            return "more statements"
        return "fewer statements" if self.total_new < self.total_base else "same total"

    def describe(self) -> str:
        """e.g. ``SELECT 40→80 (+40)``, one entry per kind that moved."""
        return ", ".join(f"{k} {b}→{n} ({n - b:+d})" for k, b, n in self.moved)


@dataclass
class Comparison:
    base: Side
    new: Side
    thresholds: Thresholds
    alpha: float
    floor: float
    cells: list[CellResult]
    warnings: list[str]
    correction: str = "holm"
    #: per (mode, table, place): the control arms' view of the drift there; empty when nothing was corrected
    drifts: dict[tuple[str, str, str], Drift] = field(default_factory=dict)
    #: what the verdicts judged: ``wall_seconds`` or ``instructions``
    measure: str = WALL
    #: cells whose statements per op differ, more statements first
    statement_changes: list[StatementChange] = field(default_factory=list)

    def of(self, category: str) -> list[CellResult]:
        return [c for c in self.cells if c.category == category]

    @property
    def regressions(self) -> list[CellResult]:
        return self.of(REGRESSION)

    @property
    def improvements(self) -> list[CellResult]:
        return self.of(IMPROVEMENT)

    @property
    def counts(self) -> dict[str, int]:
        return {cat: len(self.of(cat)) for cat in CATEGORIES}

    @property
    def statement_regressions(self) -> list[StatementChange]:
        return [c for c in self.statement_changes if c.more]

    @property
    def exit_code(self) -> int:
        """What a CI step should exit with: 1 when any cell regressed, or sends more statements."""
        return 1 if self.regressions or self.statement_regressions else 0

    def statement_headline(self, bold: bool = False) -> str:
        """e.g. "1 cell sends more statements, 2 fewer"; empty when no cell's statements moved."""
        more = len(self.statement_regressions)
        fewer = sum(c.total_new < c.total_base for c in self.statement_changes)
        same = len(self.statement_changes) - more - fewer
        parts = []
        if more:
            first = f"{more} cell{' sends' if more == 1 else 's send'} more statements"
            parts.append(f"**{first}**" if bold else first)
        if fewer:
            parts.append(f"{fewer} fewer" if more else
                         f"{fewer} cell{' sends' if fewer == 1 else 's send'} fewer statements")
        if same:
            parts.append(f"{same} cell{'' if same == 1 else 's'} the same number in other kinds")
        return ", ".join(parts)

    def headline(self, bold: bool = False) -> str:
        counts = self.counts
        n = counts[REGRESSION]
        first = f"{n} {'regression' if n == 1 else 'regressions'}" if n else "No regressions"
        if bold and n:
            first = f"**{first}**"
        rest = [f"{counts[c]} {c if counts[c] == 1 else _PLURAL.get(c, c)}"
                for c in CATEGORIES[1:] if counts[c]]
        return ", ".join([first, *rest])


def classify(ratio: float, p: float | None, alpha: float, threshold: float, floor: float) -> str:
    """The verdict for a cell present on both sides (see the module docstring); ``p`` None: no test
    was made (instruction counts), the floor alone separates noise from change."""
    # the floor on a log scale: x10 slower and x10 faster are the same distance from "unchanged"
    distance = math.inf if ratio <= 0 or math.isinf(ratio) else abs(math.log(ratio))
    if (p is not None and p >= alpha) or distance <= math.log1p(floor):
        return NOISE
    if ratio >= 1 + threshold:
        return REGRESSION
    if ratio <= 1 / (1 + threshold):
        return IMPROVEMENT
    return UNCHANGED


def control_drift(base: Side, new: Side, common: Iterable[Key]) -> dict[tuple[str, str, str], Drift]:
    """The control arms' shift and unevenness per (mode, table, place), where they have enough cells in both
    runs: sqlite3's on SQLite, psycopg's and asyncpg's together on PostgreSQL (each RTT of a sweep apart)."""
    ratios: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    arms: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for key in common:
        group = _group(key)
        if key[0] not in controls_of(group[2]):
            continue
        mb, mn = median(base.cells[key].seconds), median(new.cells[key].seconds)
        if mb > 0 and mn > 0:
            ratios[group].append(mn / mb)
            arms[group].add(key[0])
    out = {}
    for (mode, table, place), rs in ratios.items():
        if len(rs) < MIN_CONTROL_CELLS:
            continue
        shift = math.exp(sum(math.log(r) for r in rs) / len(rs))
        controls = tuple(a for a in controls_of(place) if a in arms[(mode, table, place)])
        out[(mode, table, place)] = Drift(mode, table, shift, max(max(r / shift, shift / r) - 1 for r in rs),
                                          len(rs), place, controls)
    return out


def drift_for(drifts: Mapping[tuple[str, str, str], Drift], key: Key) -> Drift | None:
    """The correction a cell takes: its place's own, else the sqlite3 control's of its mode and table, else none."""
    return _group_drift(drifts, _group(key))


def _group_drift(drifts: Mapping[tuple[str, str, str], Drift], group: tuple[str, str, str]) -> Drift | None:
    mode, table, _ = group
    return drifts.get(group) or drifts.get((mode, table, DEFAULT_DB))


def compare(base: Side, new: Side, thresholds: Thresholds | None = None, alpha: float = DEFAULT_ALPHA,
            correction: str = "holm", drift: str = "control", measure: str = WALL) -> Comparison:
    """Every cell of either side with its verdict on ``measure``, the cells whose statements changed, plus
    warnings about what may distort the verdicts."""
    check_measure(measure)
    thresholds = thresholds or Thresholds(default=default_threshold_pct(measure) / 100)
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise CompareError(f"alpha must be between 0 and 1, got {alpha!r}")
    if correction not in CORRECTIONS:
        raise CompareError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    if drift not in DRIFT_MODES:
        raise CompareError(f"drift correction must be one of {', '.join(DRIFT_MODES)}, got {drift!r}")
    if measure == WALL:
        _require_timed(base, "the baseline was run")
        _require_timed(new, "the new run was made")
    both = sorted(base.cells.keys() & new.cells.keys())
    if not both:
        raise CompareError(f"no cell in common: the runs measured different matrices ({_matrix_diff(base, new)})")
    _check_comparable(base, new, both)
    # a cell that ran under callgrind on either side has no time to judge
    untimed = ({k for s in (base, new) for k, c in s.cells.items() if c.record.instrumented} if measure == WALL
               else set())
    common = [k for k in both if k not in untimed]
    if not common:
        raise CompareError("every cell in common ran under --ormbench-instructions in one of the runs: their times "
                           "are not speeds; compare with --ormbench-compare-measure=instructions")
    keys = sorted((base.cells.keys() | new.cells.keys()) - untimed)
    floor = max(base.floor or 0.0, new.floor or 0.0)
    drifts: dict[tuple[str, str, str], Drift] = {}
    if measure == INSTRUCTIONS:
        _require_instructions(base, "baseline", common)
        _require_instructions(new, "new run", common)
        floor = INSTRUCTIONS_FLOOR
        results = [_instructions_result(key, base, new, thresholds) for key in keys]
    else:
        drifts = control_drift(base, new, common) if drift == "control" else {}
        results = [_wall_result(key, base, new, thresholds, drifts, floor) for key in keys]
    tested = [r for r in results if r.p_raw is not None]
    if correction == "holm":
        for r, adjusted in zip(tested, holm([r.p_raw for r in tested])):  # type: ignore[misc]
            r.p = adjusted
    for r in tested:
        r.category = classify(r.ratio, r.p, alpha, r.threshold, r.floor)  # type: ignore[arg-type]
    results.sort(key=lambda r: (CATEGORIES.index(r.category), r.id))
    warnings = _warnings(base, new, common, thresholds, alpha, len(tested) if correction == "holm" else 1, measure)
    if drift == "control" and measure == WALL:
        warnings += _drift_warnings(common, drifts)
    if untimed:
        warnings.append(f"{len(untimed)} cell(s) ran under --ormbench-instructions in one of the runs: their times "
                        "are not speeds, so they are left out; compare them with "
                        "--ormbench-compare-measure=instructions")
    changes, not_compared = statement_changes(base, new, both)
    if not_compared:
        warnings.append(not_compared)
    return Comparison(base, new, thresholds, alpha, floor, results, warnings, correction, drifts, measure, changes)


def _require_timed(side: Side, what: str) -> None:
    """A run made under callgrind has no speeds in it: judging its times would judge valgrind."""
    if side.cells and all(c.record.instrumented for c in side.cells.values()):
        raise CompareError(f"{what} with --ormbench-instructions: its times are not speeds; compare with "
                           "--ormbench-compare-measure=instructions (ormbench compare: --measure instructions)")


def _require_instructions(side: Side, label: str, common: list[Key]) -> None:
    """Both runs must have counted every common cell's instructions: a cell left out would pass unseen."""
    lacking = [k for k in common if not side.cells[k].record.instructions]
    if not lacking:
        return
    if len(lacking) == len(common):
        raise CompareError(f"the {label} ({side.source}) has no instruction counts: it was not run with "
                           "--ormbench-instructions; run it with --ormbench-instructions to compare by instructions, "
                           "or compare by wall_seconds")
    raise CompareError(f"the {label} ({side.source}) has no instruction counts for {len(lacking)} of the "
                       f"{len(common)} cells in common (e.g. {side.cells[lacking[0]].record.id}): run it with "
                       "--ormbench-instructions")


def _wall_result(key: Key, base: Side, new: Side, thresholds: Thresholds,
                 drifts: Mapping[tuple[str, str, str], Drift], floor: float) -> CellResult:
    """One cell judged by time: drift-corrected ratio and Mann-Whitney p (the verdict waits for Holm)."""
    b, n = base.cells.get(key), new.cells.get(key)
    record = (b or n).record  # type: ignore[union-attr]
    if b is None or n is None:
        return CellResult(key, record.id, NEW if b is None else GONE, b, n)
    d = drift_for(drifts, key)
    new_seconds = [t / d.shift for t in n.seconds] if d else n.seconds
    mb, mn = median(b.seconds), median(new_seconds)
    ratio = mn / mb if mb > 0 else (math.inf if mn > 0 else 1.0)
    _, p = mann_whitney(new_seconds, b.seconds)
    return CellResult(key, record.id, "", b, n, ratio, p, thresholds.for_cell(record), p, d.floor if d else floor)


def spread(values: Sequence[float]) -> float:
    """max / min - 1 of one side's rounds: how far this cell's counts moved within one run."""
    if not values:
        return 0.0
    low, high = min(values), max(values)
    if low <= 0:
        return 0.0 if high <= 0 else math.inf
    return high / low - 1


def _instructions_result(key: Key, base: Side, new: Side, thresholds: Thresholds) -> CellResult:
    """One cell judged by instructions: no test and no drift, the counts' repeatability as the floor."""
    b, n = base.cells.get(key), new.cells.get(key)
    record = (b or n).record  # type: ignore[union-attr]
    if b is None or n is None:
        return CellResult(key, record.id, NEW if b is None else GONE, b, n)
    bi, ni = b.record.instructions, n.record.instructions
    mb, mn = median(bi), median(ni)
    ratio = mn / mb if mb > 0 else (math.inf if mn > 0 else 1.0)
    floor = max(INSTRUCTIONS_FLOOR, spread(bi), spread(ni))
    threshold = thresholds.for_cell(record)
    return CellResult(key, record.id, classify(ratio, None, 1.0, threshold, floor), b, n, ratio, None, threshold,
                      None, floor)


def statement_changes(base: Side, new: Side, common: Iterable[Key]) -> tuple[list[StatementChange], str]:
    """The cells whose statements per op differ, more statements first, and a warning (or "") for the
    cells only one side counted statements for."""
    changes, lacking = [], {"baseline": [], "new run": []}  # type: ignore[var-annotated]
    notes: set[str] = set()
    for key in common:
        b, n = base.cells[key].record, new.cells[key].record
        sb, sn = b.statements_per_op, n.statements_per_op
        if sb is None or sn is None:
            if sb is not None or sn is not None:
                missing = b if sb is None else n
                lacking["baseline" if sb is None else "new run"].append(missing.id)
                if missing.statements_note:
                    notes.add(missing.statements_note)
            continue
        change = StatementChange(key, b.id, sb, sn)
        if change.moved:
            changes.append(change)
    changes.sort(key=lambda c: (not c.more, c.id))
    count = sum(len(v) for v in lacking.values())
    if not count:
        return changes, ""
    which = "; ".join(f"the {label} has no counts for {len(ids)} (e.g. {ids[0]})" for label, ids in lacking.items()
                      if ids)
    why = ("; ".join(sorted(notes)) if notes else
           "that run was written before pytest-ormbench counted statements")
    return changes, f"statements were not compared for {count} cell(s) that only one run counted: {which}: {why}"


def _drift_warnings(common: list[Key], drifts: dict[tuple[str, str, str], Drift]) -> list[str]:
    groups = sorted({_group(k) for k in common}, key=lambda g: (g[2] != DEFAULT_DB, g))
    out = []
    for mode, table, place in groups:
        if (mode, table, place) in drifts:
            continue
        controls = controls_of(place)
        n = sum(1 for k in common if k[0] in controls and _group(k) == (mode, table, place))
        keep = f"keep --ormbench-arms={','.join(controls)} in the matrix" if controls else ""
        if place == DEFAULT_DB:
            out.append(f"{mode}/{table} cells: the control arm {CONTROL_ARM} has {n} cell(s) in both runs, fewer "
                       f"than {MIN_CONTROL_CELLS}: the machine's drift between the runs is not corrected there and the "
                       f"runs' probe floors are used; {keep}")
            continue
        who = (f"the control arm{'s' if len(controls) > 1 else ''} {', '.join(controls)} "
               f"{'have' if len(controls) > 1 else 'has'} {n} cell(s) in both runs, fewer than {MIN_CONTROL_CELLS}"
               if controls else "no control arm runs there")
        then = (f"the {CONTROL_ARM} control's correction of {mode}/{table} is used instead"
                if (mode, table, DEFAULT_DB) in drifts else
                "the machine's drift between the runs is not corrected there and the runs' probe floors are used")
        out.append(f"{mode}/{table} cells on {place}: {who}: {then}" + (f"; {keep}" if keep else ""))
    return out


def _matrix_diff(base: Side, new: Side) -> str:
    """The dimensions (arms, models, ...) in which two matrices differ, with both sides' values."""
    parts = []
    for i, name in enumerate(("arms", "models", "ops", "modes", "tables")):
        b, n = sorted({k[i] for k in base.cells}), sorted({k[i] for k in new.cells})
        parts.append((b != n, f"{name}: baseline {', '.join(b)}, new {', '.join(n)}"))
    places = [sorted({place_of(k) for k in side.cells}) for side in (base, new)]
    if places != [[DEFAULT_DB], [DEFAULT_DB]]:  # the database axis: named when a side has a server's cells
        parts.append((places[0] != places[1],
                      f"databases: baseline {', '.join(places[0])}, new {', '.join(places[1])}"))
    differing = [text for differs, text in parts if differs]
    return "; ".join(differing or [text for _, text in parts])


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _check_comparable(base: Side, new: Side, common: list[Key]) -> None:
    """Same cell, different work: no statistics can make those two numbers comparable."""
    bad = []
    for key in common:
        b, n = base.cells[key].record, new.cells[key].record
        sizes = {"iterations": (b.iterations, n.iterations), "batch": (b.batch, n.batch), "rows": (b.rows, n.rows)}
        diffs = [f"{f} {x} vs {y}" for f, (x, y) in sizes.items() if x != y]
        # an empty settings mapping is what an old file without them reads back as: not a difference
        for f, (x, y) in {"settings": (b.settings or None, n.settings or None),
                          "pragmas": (b.facts.pragmas, n.facts.pragmas)}.items():
            if x is not None and y is not None and _canon(x) != _canon(y):
                diffs.append(f"{db_title(b.key.db)} {f} {_canon(x)} vs {_canon(y)}")
                break
        if diffs:
            bad.append(f"{b.id} ({', '.join(diffs)})")
    if bad:
        more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
        settings = "SQLite" if all(place_of(k) == DEFAULT_DB for k in common) else "database"
        raise CompareError(f"not comparable: {len(bad)} cell(s) ran with different sizes or {settings} settings "
                           f"in the two runs: {'; '.join(bad[:3])}{more}")


def _host(machine: Mapping[str, Any]) -> tuple[str, str, str]:
    cpu = machine.get("cpu") or {}
    return (str(machine.get("node") or "?"), str(cpu.get("brand_raw") or machine.get("processor") or "?"),
            str(machine.get("machine") or cpu.get("arch_string_raw") or "?"))


def _versions(side: Side, keys: Iterable[Key]) -> dict[str, set[str]]:
    """package -> versions, over the given cells, plus Python, SQLite, and a server cell's server and driver."""
    out: dict[str, set[str]] = defaultdict(set)
    for key in keys:
        rec = side.cells[key].record
        for dist, ver in rec.env.versions.items():
            out[dist].add(str(ver))
        python = rec.env.python or side.machine.get("python_version")
        if python:
            out["Python"].add(str(python))
        if rec.env.sqlite_version and rec.key.db == "sqlite":
            out["SQLite"].add(str(rec.env.sqlite_version))
        # a server cell: the server's version and the driver the arm used there
        info = rec.env.arm_info
        if rec.key.db != "sqlite":
            title = db_title(rec.key.db)
            if info.get(f"{rec.key.db}_version"):
                out[title].add(str(info[f"{rec.key.db}_version"]))
            if info.get(f"{rec.key.db}_driver"):
                out[f"{title} driver"].add(str(info[f"{rec.key.db}_driver"]))
    return out


def _joined(values: set[str] | None) -> str:
    return "/".join(sorted(values)) if values else "none"


def _warnings(base: Side, new: Side, common: list[Key], thresholds: Thresholds, alpha: float,
              family: int = 1, measure: str = WALL) -> list[str]:
    """Everything that may make the verdicts misleading, one line each; none of it stops the comparison.

    Instruction counts do not depend on the machine's speed, so the floors, schedules and rounds that
    matter to time say nothing about them."""
    out = [*base.notes, *new.notes]
    if not base.machine or not new.machine:
        which = "baseline" if not base.machine else "new run"
        out.append(f"the {which} records no machine information: cannot check that both ran on the same machine")
    else:
        hb, hn = _host(base.machine), _host(new.machine)
        if hb[1:] != hn[1:]:
            out.append(f"different machines (baseline: {', '.join(hb)}; new: {', '.join(hn)}): part of every "
                       "difference may be the hardware's; compare runs from one machine type")
        elif hb[0] != hn[0]:
            out.append(f"different hosts ({hb[0]}, {hn[0]}) with the same CPU ({hb[1]}, {hb[2]}): hosts of one "
                       "type still differ by a few per cent, so small differences may be the host's")
    vb, vn = _versions(base, common), _versions(new, common)
    changed = [f"{d} {_joined(vb.get(d))} → {_joined(vn.get(d))}" for d in sorted(vb.keys() | vn.keys(),
               key=lambda d: (d not in ("Python", "SQLite"), d.lower())) if vb.get(d) != vn.get(d)]
    if changed:
        out.append(f"versions differ: {'; '.join(changed)}: a difference in these cells may come from them")
    timed = measure == WALL
    for label, side in (("baseline", base), ("new run", new)):
        if timed and side.floor is None:
            out.append(f"the {label} ({side.source}) records no drift floor (written before pytest-ormbench "
                       "measured one, or too few probes): taken as 0, so only the p-value and the thresholds "
                       "separate noise from change")
    if timed and base.schedule and new.schedule and base.schedule != new.schedule:
        out.append(f"the runs used different schedules (baseline {base.schedule}, new {new.schedule}): "
                   "drift lands on the arms differently")
    if timed:
        out.extend(_rounds_warnings(base, new, common, alpha, family))
    for pattern in thresholds.unused(c.record for c in [*base.cells.values(), *new.cells.values()]):
        out.append(f"threshold pattern {pattern!r} matches no cell (a typo?)")
    return out


def _rounds_warnings(base: Side, new: Side, common: list[Key], alpha: float, family: int = 1) -> list[str]:
    """Cells whose rounds are too few for the test to ever reach the level it needs.

    With Holm over ``family`` cells, the most significant cell must reach alpha / family.
    """
    groups: dict[tuple[int, int], int] = defaultdict(int)
    for key in common:
        groups[(len(base.cells[key].seconds), len(new.cells[key].seconds))] += 1
    need = alpha / max(1, family)
    level = f"alpha {alpha:g}" if family <= 1 else f"alpha {alpha:g} over {family} cells (Holm: {need:.2g} at best)"
    out = []
    for (nb, nn), count in sorted(groups.items()):
        floor_p = smallest_p(nb, nn)
        one_overlap = min(1.0, 2 * floor_p)  # U = 1: one baseline round slower than one new round
        if min(nb, nn) >= MIN_ROUNDS and one_overlap < need:
            continue
        what = (f"so at {level} none of them can ever be flagged" if floor_p >= need else
                "so only rounds that do not overlap at all can be flagged")
        n = rounds_needed(need)
        out.append(f"{count} cell(s) have {nb} round(s) in the baseline and {nn} in the new run: the smallest "
                   f"two-sided p-value Mann–Whitney can give for {nb} against {nn} is {floor_p:.3g}, {what}; "
                   f"use at least {n} rounds per side (--ormbench-rounds={n})")
    return out


# -- rendering ------------------------------------------------------------------------------------

def _pct(fraction: float | None, signed: bool = False) -> str:
    if fraction is None:
        return "—"
    if math.isinf(fraction):
        return "+∞" if fraction > 0 else "−∞"
    return f"{fraction * 100:+.1f}%" if signed else f"{fraction * 100:.3g}%"


def _p(p: float | None) -> str:
    return "—" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _row(r: CellResult, verdict: bool = True) -> list[str]:
    row = [r.id, fmt_rate(r.base.rows_per_s) if r.base else "—", fmt_rate(r.new.rows_per_s) if r.new else "—",
           _pct(r.change, signed=True), "—" if r.ratio is None else f"×{r.ratio:.2f}", _p(r.p), _pct(r.threshold),
           _pct(r.floor)]
    return row + [r.category] if verdict else row


#: "median time" is new / baseline after drift correction, the figure the threshold and the floor apply to
#: (×1.10 is 10 % slower); "rows/s change" is the same figure as a change in rows/s
HEADER = ["cell", "baseline rows/s", "new rows/s", "rows/s change", "median time", "p", "threshold", "floor"]
#: by instructions: "change" is new / baseline median instructions (×1.020 is 2 % more work); no p, no test made
INSTRUCTIONS_HEADER = ["cell", "baseline instr/row", "new instr/row", "change", "threshold", "floor"]


def _instr(cell: Cell | None) -> str:
    value = cell.record.instructions_per_row if cell else None
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _instructions_row(r: CellResult, verdict: bool = True) -> list[str]:
    ratio = "—" if r.ratio is None else ("×∞" if math.isinf(r.ratio) else f"×{r.ratio:.3f}")
    row = [r.id, _instr(r.base), _instr(r.new), ratio, _pct(r.threshold), _pct(r.floor)]
    return row + [r.category] if verdict else row


def _table(title: str, rows: list[CellResult], verdict: bool = True, measure: str = WALL) -> Table:
    header, make = (INSTRUCTIONS_HEADER, _instructions_row) if measure == INSTRUCTIONS else (HEADER, _row)
    return Table(title, header + (["verdict"] if verdict else []), [make(r, verdict) for r in rows],
                 text_columns=(len(header),) if verdict else ())


STATEMENTS_HEADER = ["cell", "kinds that moved (per op)", "total", "verdict"]


def _statements_table(title: str, changes: list[StatementChange]) -> Table:
    rows = [[c.id, c.describe(), f"{c.total_base}→{c.total_new} ({c.total_new - c.total_base:+d})", c.verdict]
            for c in changes]
    return Table(title, STATEMENTS_HEADER, rows, text_columns=(1, 3))


def _drift_line(d: Drift) -> str:
    if d.place == DEFAULT_DB and d.controls == (CONTROL_ARM,):
        return (f"{d.mode}/{d.table}: the control arm ran ×{d.shift:.2f} the baseline's time ({d.cells} cells), "
                f"divided out of the new run; floor {_pct(d.floor)} (its cells' largest deviation from that)")
    arms = f"the control arm{'s' if len(d.controls) > 1 else ''} {', '.join(d.controls)}"
    return (f"{d.mode}/{d.table} on {d.place}: {arms} ran ×{d.shift:.2f} the baseline's time ({d.cells} cells), "
            f"divided out of the new run's cells there; floor {_pct(d.floor)} (their largest deviation from that)")


def _floor_line(cmp: Comparison) -> str:
    if cmp.measure == INSTRUCTIONS:
        return (f"floor: {_pct(INSTRUCTIONS_FLOOR)} (instruction counts repeat between runs to within 0.1 %, doubled "
                "for margin) or the wider spread of a cell's own rounds (max/min − 1) on either side, whichever "
                "is larger; no drift correction: counts do not depend on the machine's speed")

    def one(side: Side) -> str:
        return "not recorded" if side.floor is None else _pct(side.floor)
    runs = f"baseline {one(cmp.base)}, new {one(cmp.new)}"
    groups = {_group(c.key) for c in cmp.cells if c.p_raw is not None}
    corrected = [cmp.drifts[g] for g in sorted(cmp.drifts, key=lambda g: (g[2] != DEFAULT_DB, g))]
    lines = [f"drift correction: {_drift_line(d)}" for d in corrected]
    borrowed = sorted(g for g in groups if g not in cmp.drifts and (g[0], g[1], DEFAULT_DB) in cmp.drifts)
    if borrowed:
        lines.append("drift correction of " + ", ".join(f"{m}/{t} on {p}" for m, t, p in borrowed)
                     + f": no control cells of their own there, so the {CONTROL_ARM} control's correction of the same "
                     "mode and table")
    if corrected and all(_group_drift(cmp.drifts, g) for g in groups):
        lines.append(f"runs' own probe floors ({runs}) recorded; the control arm's floor is used instead")
        return "; ".join(lines)
    if cmp.base.floor is None and cmp.new.floor is None:
        lines.append("drift floor" + (" of the uncorrected cells" if corrected else "")
                     + ": recorded by neither run, taken as 0")
    else:
        lines.append(f"drift floor{' of the uncorrected cells' if corrected else ''} {_pct(cmp.floor)} "
                     f"(the larger of the runs' probe floors: {runs}): smaller differences are within noise")
    return "; ".join(lines)


def _settings_line(cmp: Comparison) -> str:
    if cmp.measure == INSTRUCTIONS:
        judged = sum(c.ratio is not None for c in cmp.cells)
        return (f"judged by instructions: median of each cell's rounds, new over baseline, {judged} cells, no "
                f"significance test; thresholds: {cmp.thresholds.describe()}")
    tested = sum(c.p_raw is not None for c in cmp.cells)
    level = (f"alpha {cmp.alpha:g} for the whole comparison (Holm over {tested} cells)" if cmp.correction == "holm"
             else f"alpha {cmp.alpha:g} per cell (no correction for the {tested} cells tested)")
    return f"{level}; thresholds: {cmp.thresholds.describe()}"


def _counts_line(cmp: Comparison, bold: bool = False) -> str:
    """The headline, the cells it covers, and the statement changes when there are any."""
    statements = cmp.statement_headline(bold)
    return f"{cmp.headline(bold)} ({len(cmp.cells)} cells)" + (f"; {statements}" if statements else "")


def render_text(cmp: Comparison) -> str:
    """The comparison as a terminal table, sorted by verdict then cell id; statement changes after it."""
    if cmp.measure == INSTRUCTIONS:
        title = ("instructions per row per cell (change: new/baseline median instructions, above 1 is more work; "
                 "counted by callgrind)")
        what = "comparison by instructions"
    else:
        title = ("rows/s per cell (change: positive is faster; median time: new/baseline, drift-corrected; "
                 "p: Mann-Whitney U, two-sided, Holm-adjusted unless stated)")
        what = "comparison"
    lines = [f"pytest-ormbench {what}: baseline {cmp.base.source} ({cmp.base.datetime or 'date unknown'}) "
             f"vs new {cmp.new.source} ({cmp.new.datetime or 'date unknown'})",
             text_table(_table(title, cmp.cells, measure=cmp.measure))]
    if cmp.statement_changes:
        lines += ["", text_table(_statements_table("statement changes (statements per op, exact counts; more in "
                                                   "total is a regression)", cmp.statement_changes))]
    lines += ["",
              _counts_line(cmp),
              _settings_line(cmp),
              _floor_line(cmp)]
    lines += [f"warning: {w}" for w in cmp.warnings]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _side_facts(side: Side) -> dict[str, str]:
    recs = [c.record for c in side.cells.values()]
    versions = _versions(side, side.cells)
    rounds = sorted({len(c.seconds) for c in side.cells.values()})
    packages = sorted((d, v) for d, v in versions.items() if d not in ("Python", "SQLite"))
    return {
        "source": side.source,
        "date": side.datetime or "unknown",
        "node": str(side.machine.get("node") or "unknown"),
        "CPU": _machine(side.machine) if side.machine else "unknown",
        "Python": _joined(versions.get("Python")) if versions.get("Python") else "unknown",
        "SQLite": _joined(versions.get("SQLite")) if versions.get("SQLite") else "unknown",
        "packages": ", ".join(f"{d} {_joined(v)}" for d, v in packages) or "none recorded",
        "cells": str(len(recs)),
        "rounds per cell": "—" if not rounds else "–".join(dict.fromkeys(str(r) for r in (rounds[0], rounds[-1]))),
        "schedule": side.schedule or "not recorded",
        "drift floor": "not recorded" if side.floor is None else _pct(side.floor),
        "instructions": "counted (callgrind)" if any(r.instructions for r in recs) else "not counted",
        "statements": "counted" if any(r.statements for r in recs) else "not counted",
    }


def render_markdown(cmp: Comparison) -> str:
    """The comparison for a pull-request comment: the verdicts that matter first, the rest folded away.

    The heading names the measure judged, so that two comparisons of one run (instructions for the
    verdict, wall time as advice) can be posted one after the other."""
    if cmp.measure == INSTRUCTIONS:
        measure = "instructions"
        explain = ("Figures are instructions per row of the median round, counted by callgrind (lower is better); "
                   "change is new over baseline median instructions (the threshold and the floor apply to it); ")
    else:
        measure = "wall time"
        explain = ("Figures are rows/s as measured (higher is better); median time is new over baseline after drift "
                   "correction (the threshold and the floor apply to it, and the change is the same figure in rows/s); "
                   "p is the two-sided Mann–Whitney U test on the round times; ")
    parts = [f"### pytest-ormbench: comparison with the baseline ({measure})", "",
             f"{_counts_line(cmp, bold=True)}."
             + (f" {len(cmp.warnings)} warning(s) at the end." if cmp.warnings else ""), "",
             f"{explain}{_settings_line(cmp)}; {_floor_line(cmp)}.", ""]
    if cmp.statement_changes:
        parts += ["#### Statement changes", "",
                  "Statements per op, counted exactly (the same code on the same data sends the same statements); "
                  "more statements in total fail the comparison.", "",
                  markdown_table(_statements_table("", cmp.statement_changes), heading=""), ""]
    for category, title in ((REGRESSION, "Regressions"), (IMPROVEMENT, "Improvements")):
        rows = cmp.of(category)
        if rows:
            parts += [f"#### {title}", "", markdown_table(_table(title, rows, verdict=False, measure=cmp.measure),
                                                          heading=""), ""]
    rest = [c for c in cmp.cells if c.category not in (REGRESSION, IMPROVEMENT)]
    if rest:
        summary = ", ".join(f"{len(cmp.of(c))} {c}" for c in CATEGORIES[2:] if cmp.of(c))
        parts += [f"<details><summary>{len(rest)} other cell{'s' if len(rest) > 1 else ''}: {summary}</summary>", "",
                  markdown_table(_table("", rest, measure=cmp.measure), heading=""), "", "</details>", ""]
    base, new = _side_facts(cmp.base), _side_facts(cmp.new)
    parts += ["#### The two runs", "", "| | baseline | new |", "| --- | --- | --- |"]
    parts += [f"| {k} | {_md_escape(base[k])} | {_md_escape(new[k])} |" for k in base]
    if cmp.warnings:
        parts += ["", "#### Warnings", "", *(f"- {w}" for w in cmp.warnings)]
    return "\n".join(parts).rstrip() + "\n"
