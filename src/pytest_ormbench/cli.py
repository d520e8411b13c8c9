"""The ``ormbench`` command: ``ormbench report FILE... [-o OUT]``.

Bad input gets one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .report.load import ReportError, load
from .report.render import render


def write_report(runs, out: Path | None, fmt: str, charts_dir: Path | None, *, err=None) -> str:  # noqa: ANN001
    """Render (and write) a report; charts are skipped with one line when matplotlib is missing."""
    err = err or sys.stderr
    chart_links: list[str] = []
    if charts_dir is not None:
        from .report.charts import ChartsUnavailable, write_charts

        try:
            written = write_charts(runs, charts_dir)
        except ChartsUnavailable as exc:
            print(f"ormbench: {exc}", file=err)
        else:
            base = out.parent if out else Path.cwd()
            chart_links = [os.path.relpath(p, base) for p in written if p.suffix == ".png"]
    text = render(runs, fmt, chart_links)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ormbench", description="pytest-ormbench tools")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="fold pytest-benchmark JSON files into tables and charts")
    rep.add_argument("files", nargs="+", metavar="FILE", help="pytest-benchmark JSON written with pytest-ormbench")
    rep.add_argument("-o", "--output", type=Path, help="write the report here (default: standard output)")
    rep.add_argument("--format", choices=("markdown", "text"), default=None,
                     help="markdown (default; text when printing to a terminal)")
    rep.add_argument("--charts", type=Path, default=None,
                     help="directory for PNG and SVG charts (default with -o: OUT's directory/charts)")
    rep.add_argument("--no-charts", action="store_true", help="write no charts")
    args = parser.parse_args(argv)
    fmt = args.format or ("text" if args.output is None and sys.stdout.isatty() else "markdown")
    charts = None
    if not args.no_charts and fmt == "markdown":
        charts = args.charts or (args.output.parent / "charts" if args.output else None)
    try:
        runs = load(args.files)
        text = write_report(runs, args.output, fmt, charts)
    except ReportError as exc:
        print(f"ormbench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ormbench: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 2
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(f"ormbench: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
