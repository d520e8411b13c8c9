"""Charts (optional extra ``pytest-ormbench[plot]``): per test a grouped bar chart of arms x operations,
and one summary chart of geometric means, for each database, each bar with its rounds' range as an error
bar and a busy run named in the title; and for a latency sweep, rows/s against the round-trip time, one
line per arm and one panel per operation."""

from __future__ import annotations

from pathlib import Path

from pytest_ormbench.workload.spec import MODELS, OPS_BY_LETTER
from pytest_ormbench.workload.cells import DEFAULT_DB, format_rtt
from pytest_ormbench.arms.registry import CONTROL_ARMS
from pytest_ormbench.results.report import tables as T
from pytest_ormbench.results.report.load import Runs

MISSING_MATPLOTLIB = "charts need matplotlib: pip install 'pytest-ormbench[plot]' (the tables were still written)"


class ChartsUnavailable(Exception):
    pass


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartsUnavailable(MISSING_MATPLOTLIB) from None
    # fixed SVG ids: the same JSON gives byte-identical charts, so regenerated results diff cleanly
    plt.rcParams["svg.hashsalt"] = "pytest-ormbench"
    return plt


#: name suffixes that mark a variant of another arm: drawn in its family's colour, hatched
VARIANT_SUFFIXES = ("_async", "_nocodegen")
CONTROL_COLOUR = "#555555"


def arm_styles(arms: list[str], plt) -> dict[str, dict[str, object]]:  # noqa: ANN001
    """Bar styles: one colour per family (an arm and its async or no-codegen variant), the variant hatched,
    the raw control arms in grey (an async one hatched); so that 13 arms stay tellable apart without a legend
    lookup per bar."""
    palette = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7]  # tab10's grey is the control's
    families: dict[str, int] = {}
    styles: dict[str, dict[str, object]] = {}
    for arm in arms:
        base = next((arm[: -len(sfx)] for sfx in VARIANT_SUFFIXES if arm.endswith(sfx)), arm)
        variant = base != arm
        if arm in CONTROL_ARMS:
            styles[arm] = ({"color": CONTROL_COLOUR, "hatch": "////", "edgecolor": "white", "linewidth": 0}
                           if T.ASYNC_CONTROLS.get(arm) else {"color": CONTROL_COLOUR})
            continue
        index = families.setdefault(base, len(families))
        colour = palette[index % len(palette)]
        styles[arm] = ({"color": colour, "hatch": "////", "edgecolor": "white", "linewidth": 0} if variant
                       else {"color": colour})
    return styles


def _value_axis(ax, values: list[float], label: str) -> None:  # noqa: ANN001
    """An axis that shows ratios truthfully: linear from 0 when the figures span less than ×10, otherwise a
    log axis over whole decades (so that a bar twice as tall on the page is not read as a tenth)."""
    import math

    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not vals or max(vals) / min(vals) < 10:
        ax.set_ylim(0, (max(vals) if vals else 1) * 1.18)
        ax.set_ylabel(f"{label}, linear scale")
        return
    ax.set_yscale("log")
    low, high = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    ax.set_ylim(10 ** low, 10 ** (high + (0.35 if max(vals) > 10 ** (high - 0.35) else 0)))
    ax.set_yticks([10 ** d for d in range(low, high + 1)])
    ax.set_ylabel(f"{label}, log scale (whole decades)")


def write_charts(runs: Runs, out_dir: Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Write every chart in each format; return the paths written.

    SQLite's charts keep their names; a server database's end in its name (``summary-default-postgresql``),
    and its latency sweep has one chart per group (``latency-postgresql-simple-warm-default``)."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    dbs = runs.dbs()
    if dbs == [DEFAULT_DB] or not dbs:
        return _database_charts(runs, out_dir, formats, plt)
    written: list[Path] = []
    for db in dbs:
        direct = runs.at(db)
        if direct.cells:
            suffix = "" if db == DEFAULT_DB else db
            written += _database_charts(direct, out_dir, formats, plt, suffix)
        written += _latency_charts(runs, db, out_dir, formats, plt)
        written += _strategy_charts(runs, db, out_dir, formats, plt)
    return written


def _database_charts(runs: Runs, out_dir: Path, formats: tuple[str, ...], plt,  # noqa: ANN001
                     db: str = "") -> list[Path]:
    """The detail and summary charts of one database's cells (``db``: a server's name, for titles and files)."""
    written: list[Path] = []
    names = T.labels(runs)
    stem_end = f"-{db}" if db else ""
    title_end = f" — {T.db_title(db)}" if db else ""
    busy = dict(T.busy_runs(runs))
    for model, mode, table in T.timed_groups(runs):  # rows/s charts: an instructions-only group has none
        per_arm = T.figure_grid(runs, model, mode, table)
        arms = [a for a in T.arm_order(runs) if a in per_arm]
        letters = [lt for lt in T.OBJECT_OPS if any(lt in per_arm[a] for a in arms)]
        fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(letters) + 3), 5.2))
        width = 0.8 / max(1, len(arms))
        styles = arm_styles(arms, plt)
        mixed = T.whole(runs).across_machines(s for ops in per_arm.values() for f in ops.values() for s in f.sources)
        for i, arm in enumerate(arms):
            xs = [j + (i - (len(arms) - 1) / 2) * width for j in range(len(letters))]
            figs = [per_arm[arm].get(lt) for lt in letters]
            ax.bar(xs, [f.value if f else 0 for f in figs], width, label=_label(runs, names[arm], figs, mixed),
                   yerr=_error_bars(figs), error_kw=ERROR_BARS, **styles[arm])
        _value_axis(ax, [v for a in arms for f in per_arm[a].values() for v in (min(f.rounds), max(f.rounds))],
                    "rows/s")
        ax.set_xticks(range(len(letters)))
        ax.set_xticklabels([lt + "\n" + OPS_BY_LETTER[lt].title.replace(": ", ":\n") for lt in letters], fontsize=8)
        ax.set_title(_title(f"{MODELS[model].title} — {mode}, {table} table{title_end}", busy,
                            {s for ops in per_arm.values() for f in ops.values() for s in f.sources}, runs))
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        stem = f"detail-{model}-{mode}-{table}{stem_end}"
        written += _save(fig, out_dir, stem, formats)
        plt.close(fig)
    for table in ("default", "large"):
        cols = [(m, md) for (m, md, t) in T.timed_groups(runs) if t == table]
        if not cols:
            continue
        gms = {c: T.object_means(T.figure_grid(runs, c[0], c[1], table)) for c in cols}
        arms = [a for a in T.arm_order(runs) if any(a in g for g in gms.values())]
        # room for a readable figure on every bar: about 0.17 inch a bar
        fig, ax = plt.subplots(figsize=(max(8.0, 0.17 * len(arms) * len(cols) + 3.5), 5.6))
        width = 0.8 / max(1, len(arms))
        styles = arm_styles(arms, plt)
        every: list[float] = []
        mixed = T.whole(runs).across_machines(s for g in gms.values() for f in g.values() for s in f.sources)
        for i, arm in enumerate(arms):
            xs = [j + (i - (len(arms) - 1) / 2) * width for j in range(len(cols))]
            figs = [gms[c].get(arm) for c in cols]
            ys = [f.value if f else 0 for f in figs]
            bars = ax.bar(xs, ys, width, label=_label(runs, names[arm], figs, mixed), yerr=_error_bars(figs),
                          error_kw=ERROR_BARS, **styles[arm])
            # the figure on every bar: the chart is read for ratios, and a reader should not need the axis
            ax.bar_label(bars, labels=[T.fmt_rate(y) if y else "" for y in ys], rotation=90, padding=2,
                         fontsize=6 if len(arms) > 6 else 8)
            every += [v for f in figs if f for v in (min(f.rounds), max(f.rounds))]
        _value_axis(ax, every, "geometric mean, rows/s")
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels([f"Test {MODELS[m].test}\n{md}" for m, md in cols])
        ax.set_title(_title(f"Geometric means over the object operations — {table} table{title_end}", busy,
                            {s for g in gms.values() for f in g.values() for s in f.sources}, runs))
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        written += _save(fig, out_dir, f"summary-{table}{stem_end}", formats)
        plt.close(fig)
    return written


#: the error bars: the rounds' range (a geometric mean's: the means of the rounds' lows and highs)
ERROR_BARS = {"elinewidth": 0.8, "capsize": 1.5, "ecolor": "#222222"}


def _error_bars(figs: list) -> list[list[float]]:  # noqa: ANN001
    """[below, above] each bar: from the lowest round to the highest (0 for a missing figure or one round)."""
    return [[f.value - min(f.rounds) if f else 0 for f in figs], [max(f.rounds) - f.value if f else 0 for f in figs]]


def _title(title: str, busy: dict[str, float], sources: set[str], runs: Runs) -> str:
    """A chart's title, with a second line when a busy run (``noise.busy_runs``) is behind its bars, or when its
    bars come from more than one machine (the legend then names each arm's)."""
    floors = [busy[s] for s in sources if s in busy]
    if T.whole(runs).across_machines(sources):
        return f"{title}\nbars from several machines [M…, the legend]: compare bars of one machine only"
    if not floors:
        return title
    return f"{title}\nbusy run: drift floor {max(floors):.0%}, so leads smaller than that are noise"


def _label(runs: Runs, name: str, figs: list, mixed: bool) -> str:  # noqa: ANN001
    """An arm's legend entry; with its machine's label (Runs table) when the chart's bars come from more than
    one machine (``mixed``)."""
    short = T.whole(runs).machine_labels()
    if not mixed or not short:
        return name
    where = sorted({short.get(T.whole(runs).machines.get(s, ""), "?") for f in figs if f for s in f.sources})
    return f"{name} [{', '.join(where)}]" if where else name


def _latency_charts(runs: Runs, db: str, out_dir: Path, formats: tuple[str, ...], plt) -> list[Path]:  # noqa: ANN001
    """Per group of a latency sweep: rows/s against RTT, one line per arm, one panel per op, log-scale y.

    The RTTs sit evenly on the x axis (0, 1, 5 and 25 ms would crowd the left of a linear one, and a log
    axis has no 0)."""
    import math

    written: list[Path] = []
    names = T.labels(runs)
    styles = arm_styles(T.all_arm_order(runs), plt)
    for model, mode, table in T.sweep_groups(runs, db):
        per_op = T.sweep_figures(runs, db, model, mode, table)
        letters = [lt for lt in OPS_BY_LETTER if lt in per_op]
        rtts = sorted({r for arms in per_op.values() for rs in arms.values() for r in rs})
        cols = min(3, len(letters))
        rows = math.ceil(len(letters) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols + 2.2, 3.6 * rows), squeeze=False)
        shown: dict[str, object] = {}
        for i, letter in enumerate(letters):
            ax = axes[i // cols][i % cols]
            for arm in [a for a in T.all_arm_order(runs) if a in per_op[letter]]:
                vals = per_op[letter][arm]
                xs = [j for j, r in enumerate(rtts) if r in vals]
                style = styles[arm]
                (line,) = ax.plot(xs, [vals[rtts[j]] for j in xs], marker="o", markersize=3.5,
                                  color=style["color"], linestyle="--" if "hatch" in style else "-")
                shown.setdefault(names[arm], line)
            ax.set_yscale("log")
            ax.set_xticks(range(len(rtts)))
            ax.set_xticklabels([format_rtt(r) for r in rtts])
            ax.set_xlabel("RTT, ms")
            ax.set_ylabel("rows/s, log scale")
            ax.set_title(f"{letter} {OPS_BY_LETTER[letter].title}", fontsize=10)
            ax.grid(which="both", alpha=0.3)
        for j in range(len(letters), rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        fig.legend(list(shown.values()), list(shown), fontsize=7, loc="upper left", bbox_to_anchor=(0.865, 0.93))
        fig.suptitle(f"Rows/s against RTT — {MODELS[model].title}, {mode}, {table} table, {T.db_title(db)} "
                     "through the latency proxy")
        fig.tight_layout(rect=(0, 0, 0.86, 1))
        written += _save(fig, out_dir, f"latency-{db}-{model}-{mode}-{table}", formats)
        plt.close(fig)
    return written


def _strategy_charts(runs: Runs, db: str, out_dir: Path, formats: tuple[str, ...], plt) -> list[Path]:  # noqa: ANN001
    """Test 4's latency sweep on ``db``: per strategy shape, milliseconds per unit against RTT, one panel per arm,
    one line per strategy (log-scale y; RTTs evenly spaced, as in the Tests 1-3 sweep charts)."""
    import math

    from pytest_ormbench.results.report.tables.relational import strategy_sweep, sweep_columns

    written: list[Path] = []
    names = T.labels(runs)
    for (shape, mode), ms in strategy_sweep(runs, db).items():
        arms = [a for a in T.all_arm_order(runs) if any(k[0] == a for k in ms)]
        columns = [r for r in sweep_columns(ms) if r is not None]
        if not arms or not columns:
            continue
        cols = min(4, len(arms))
        rows = math.ceil(len(arms) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols + 0.6, 2.9 * rows), squeeze=False)
        for i, arm in enumerate(arms):
            ax = axes[i // cols][i % cols]
            for (a, strategy), vals in ms.items():
                if a != arm:
                    continue
                xs = [j for j, r in enumerate(columns) if r in vals]
                ax.plot(xs, [vals[columns[j]] for j in xs], marker="o", markersize=3.5, label=strategy or "—")
            ax.set_yscale("log")
            ax.set_xticks(range(len(columns)))
            ax.set_xticklabels([format_rtt(r) for r in columns])
            ax.set_xlabel("RTT, ms")
            ax.set_ylabel("ms per unit, log")
            ax.set_title(names.get(arm, arm), fontsize=9)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=6)
        for j in range(len(arms), rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        fig.suptitle(f"{shape.code} {shape.title}: ms per {shape.unit} against RTT by strategy — {mode}, "
                     f"{T.db_title(db)} through the latency proxy (lower is better)", fontsize=10)
        fig.tight_layout()
        written += _save(fig, out_dir, f"latency-{db}-relational-{shape.name}-{mode}", formats)
        plt.close(fig)
    return written


def _save(fig, out_dir: Path, stem: str, formats: tuple[str, ...]) -> list[Path]:  # noqa: ANN001
    paths = []
    for ext in formats:
        p = out_dir / f"{stem}.{ext}"
        fig.savefig(p, dpi=110, metadata={"Date": None} if ext == "svg" else None)
        paths.append(p)
    return paths
