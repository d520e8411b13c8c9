"""The ``ormbench`` command: ``report``, ``compare``, ``publish``, ``scaffold`` and ``selfcheck``.

``ormbench report FILE... [-o OUT]`` folds runs into tables; ``ormbench compare BASELINE NEW`` judges a run
against a baseline; ``ormbench publish --out DIR`` runs a preset's matrix as resumable pieces and writes the
published tables (commands/publish/); ``ormbench scaffold NAME`` and ``ormbench selfcheck ARM`` are
commands/scaffold.py and commands/selfcheck.py. Bad input gets one line on stderr and exit status 2, never a
traceback. ``compare`` exits 1 when a cell regressed or sends more statements, so a CI step can fail on it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_ormbench.results.report.load import ReportError, load
from pytest_ormbench.results.report.write import charts_dir_for, write_report


def _add_compare(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmp = sub.add_parser(
        "compare", help="compare two runs cell by cell; exit 1 on a regression, 2 on bad input",
        description="Compare two runs cell by cell. BASELINE and NEW are pytest-benchmark JSON files or runs "
                    "saved with --benchmark-save (by number, e.g. 0001, or by name, e.g. main). Exit status: "
                    "0 no regression, 1 at least one regression (or a cell that sends more statements), 2 bad input.")
    cmp.add_argument("baseline", metavar="BASELINE", help="the reference run: JSON file, saved run number or name")
    cmp.add_argument("new", metavar="NEW", help="the run to judge: JSON file, saved run number or name")
    # not argparse's choices: a bad value must be one line and exit 2 like every other bad input
    cmp.add_argument("--measure", default="wall_seconds", metavar="{wall_seconds,instructions}",
                     help="what the verdicts judge: wall_seconds (default; round times, Mann-Whitney, drift "
                          "correction) or instructions (both runs made with --ormbench-instructions; the median "
                          "counts against the threshold and their repeatability); statement counts are compared "
                          "exactly either way")
    cmp.add_argument("--threshold", action="append", default=[], metavar="PATTERN=PCT",
                     help="growth in percent a cell may show before it regresses (default 10 for wall_seconds, 2 "
                          "for instructions); PATTERN is an arm, model, op letter or op name, or a glob on the "
                          "cell id; repeatable, the last match wins")
    cmp.add_argument("--alpha", type=float, default=0.05, help="significance level of the Mann-Whitney U test "
                     "for the whole comparison (default 0.05)")
    cmp.add_argument("--drift", choices=("control", "off"), default="control",
                     help="control (default): divide out how much the raw sqlite3 control arm's cells moved between "
                          "the runs and use their unevenness as the floor; off: raw times, the runs' probe floors")
    cmp.add_argument("--correction", choices=("holm", "none"), default="holm",
                     help="holm (default): alpha bounds the chance of any false alarm among all cells; "
                          "none: each cell is tested at alpha")
    cmp.add_argument("--storage", type=Path, default=Path(".benchmarks"),
                     help="where --benchmark-save keeps runs (default .benchmarks)")
    cmp.add_argument("--format", choices=("text", "markdown"), default="text", help="output (default text)")
    cmp.add_argument("--markdown-out", type=Path, default=None, metavar="PATH",
                     help="also write the Markdown comparison (for a pull-request comment) here")


def _compare(args: argparse.Namespace) -> int:
    from pytest_ormbench.results.compare import (Thresholds, compare, default_threshold_pct, load_side,
        render_markdown, render_text)

    thresholds = Thresholds.parse(args.threshold, default_pct=default_threshold_pct(args.measure))
    result = compare(load_side(args.baseline, args.storage), load_side(args.new, args.storage),
                     thresholds, args.alpha, args.correction, args.drift, measure=args.measure)
    if args.markdown_out is not None:
        args.markdown_out.parent.mkdir(parents=True, exist_ok=True)
        args.markdown_out.write_text(render_markdown(result), encoding="utf-8")
    sys.stdout.write(render_markdown(result) if args.format == "markdown" else render_text(result))
    if args.markdown_out is not None:
        print(f"ormbench: wrote {args.markdown_out}", file=sys.stderr)
    return result.exit_code


def _report(args: argparse.Namespace) -> int:
    runs = load(args.files, shards=args.shards)
    if args.html is not None:
        from pytest_ormbench.results.report.html import write_html

        write_html(runs, args.html)
        print(f"ormbench: wrote {args.html}", file=sys.stderr)
        if args.output is None and args.format is None:  # --html alone writes the page only
            return 0
    fmt = args.format or ("text" if args.output is None and sys.stdout.isatty() else "markdown")
    charts = None
    if not args.no_charts and fmt == "markdown":
        charts = args.charts or (charts_dir_for(args.output) if args.output else None)
    text = write_report(runs, args.output, fmt, charts)
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(f"ormbench: wrote {args.output}", file=sys.stderr)
    return 0


#: subcommands that are whole programs of their own: their arguments go to their main(argv) untouched
DELEGATED = {
    "scaffold": ("pytest_ormbench.commands.scaffold", "write a new arm module that already passes the selfcheck"),
    "selfcheck": ("pytest_ormbench.commands.selfcheck", "check an arm quickly, in this process: every model x op, "
                                                        "verified"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATED:
        import importlib

        return int(importlib.import_module(DELEGATED[argv[0]][0]).main(argv[1:]))
    from pytest_ormbench.commands import publish

    argv, after = publish.split_passthrough(argv) if argv[:1] == ["publish"] else (argv, [])
    parser = argparse.ArgumentParser(prog="ormbench", description="pytest-ormbench tools")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_module, about) in DELEGATED.items():
        sub.add_parser(name, help=f"{about} (ormbench {name} --help)", add_help=False)
    rep = sub.add_parser("report", help="fold pytest-benchmark JSON files into tables and charts")
    rep.add_argument("files", nargs="+", metavar="FILE", help="pytest-benchmark JSON written with pytest-ormbench")
    rep.add_argument("-o", "--output", type=Path, help="write the report here (default: standard output)")
    rep.add_argument("--format", choices=("markdown", "text"), default=None,
                     help="markdown (default; text when printing to a terminal)")
    rep.add_argument("--charts", type=Path, default=None,
                     help="directory for PNG and SVG charts (default with -o OUT.md: OUT-charts/ beside it, so that "
                          "two reports in one folder keep their own charts)")
    rep.add_argument("--no-charts", action="store_true", help="write no charts")
    rep.add_argument("--shards", choices=("refuse", "normalise"), default="refuse",
                     help="shards of one matrix (--ormbench-shard runs) from several machines: refuse them (default), "
                          "or scale each shard's wall times by its own control arms and say so in every table")
    rep.add_argument("--html", type=Path, default=None, metavar="OUT.html",
                     help="also write the report as one self-contained HTML page (sortable, filterable tables and "
                          "charts; no network needed to read it); alone, without -o or --format, only the page")
    _add_compare(sub)
    publish.add_parser(sub)
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "publish":  # publish hands the options it does not know to pytest
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from pytest_ormbench.results.compare import CompareError

    prog = "ormbench publish" if args.command == "publish" else "ormbench"
    try:
        if args.command == "publish":
            return publish.run(args, extra + after)
        return _compare(args) if args.command == "compare" else _report(args)
    except (ReportError, CompareError, publish.PublishError) as exc:  # bad input: one line, never a traceback
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
