"""The ``publish`` subcommand: freeze the tree, plan the pieces, run them one by one, then finalize."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from pytest_ormbench.commands.publish.errors import PublishError
from pytest_ormbench.commands.publish.plan import make_plan, pieces_for
from pytest_ormbench.commands.publish.runner import (USAGE_ERROR, Outcome, Runner, Stop, is_done, last_end_line, locked,
                                                     manifest, minsec, stamp, usage_line)
from pytest_ormbench.commands.publish.tables import finalize
from pytest_ormbench.commands.publish.tree import freeze


def publish(a: argparse.Namespace, extra: list[str], say: IO[str]) -> int:
    if a.finalize_only:
        if a.out is None:
            raise PublishError("--out DIR is required")
        if extra:
            raise PublishError(f"--finalize-only runs nothing: {extra[0]} does not apply")
        if not a.out.is_dir():
            raise PublishError(f"--out {a.out}: no such directory")
        with locked(a.out.resolve()):
            finalize(a.out, not a.no_charts, say)
        return 0
    plan = make_plan(a, extra)
    repo = (a.repo or Path.cwd()).resolve()
    with locked(plan.out) as lock_fd, contextlib.ExitStack() as stack:
        if a.tree is None:
            tree = Path(tempfile.mkdtemp(prefix="ormbench-tree-"))
            stack.callback(shutil.rmtree, tree, True)
        else:
            tree = a.tree.resolve()
        sha, dirty = freeze(repo, a.commit, tree)
        print(f"ormbench publish: tree {sha[:12]} ({a.commit}) frozen in {tree}; python {plan.python}", file=say)
        if dirty:
            print("ormbench publish: note: the checkout has uncommitted changes; the pieces run the commit without "
                  "them", file=say)
        pieces, notes = pieces_for(plan, tree)
        for n in notes:
            print(f"ormbench publish: {n}", file=say)
        print(f"ormbench publish: preset {plan.preset}, {len(pieces)} piece(s) into {plan.out}: "
              + ", ".join(p.stem for p in pieces), file=say, flush=True)
        manifest(plan.out, {"event": "publish", "started": stamp(time.time()), "commit": sha, "rev": a.commit,
                             "repo": str(repo), "tree": str(tree), "python": plan.python, "preset": plan.preset,
                             "template": plan.template, "name": plan.name, "dbs": plan.dbs, "arms": plan.arms,
                             "options": plan.passthrough, "pieces": [p.stem for p in pieces]})
        runner = Runner(plan, tree, sha, lock_fd, say)
        outcomes: list[Outcome] = []
        with runner.signals():
            for i, piece in enumerate(pieces, 1):
                tag = f"[{i}/{len(pieces)}] {piece.stem}"
                done = is_done(plan.out, piece)
                if done:
                    print(f"{tag}: done before (exit=0, {minsec(done[1])}, started {done[2]}): skipped", file=say,
                          flush=True)
                    outcomes.append(Outcome(piece.stem, "skipped", 0, done[1]))
                    continue
                print(f"{tag}: running (log: {plan.out / (piece.stem + '.log')})", file=say, flush=True)
                try:
                    result = runner.run(piece)
                except Stop as stop:
                    end = last_end_line(plan.out / f"{piece.stem}.log")
                    manifest(plan.out, {"event": "piece", "piece": piece.stem, "commit": sha, "status": "stopped",
                                         "exit": end[0] if end else None, "wall_seconds": end[1] if end else None,
                                         "arm": piece.arm, "db": piece.db})
                    print(f"{tag}: stopped by {stop} after {minsec(end[1]) if end else '?'}; its JSON is not kept. "
                          "Run the same command again to resume.", file=say, flush=True)
                    return 128 + stop.signum
                outcomes.append(result)
                manifest(plan.out, {"event": "piece", "piece": piece.stem, "commit": sha, "status": result.status,
                                     "exit": result.code, "wall_seconds": result.seconds, "arm": piece.arm,
                                     "db": piece.db})
                print(f"{tag}: exit={result.code} in {minsec(result.seconds or 0)}", file=say, flush=True)
                if result.code == USAGE_ERROR:
                    raise PublishError(f"pytest refused the options: {usage_line(plan.out / (piece.stem + '.log'))}")
        failed = [o for o in outcomes if o.status == "failed"]
        ran = [o for o in outcomes if o.status == "ok"]
        print(f"ormbench publish: {len(ran)} piece(s) ran, {len(outcomes) - len(ran) - len(failed)} skipped as done, "
              f"{len(failed)} failed" + (f" ({', '.join(o.stem for o in failed)}: see their logs)" if failed else ""),
              file=say, flush=True)
        if a.no_finalize:
            pass
        elif any(plan.out.glob("*.json")):
            finalize(plan.out, not a.no_charts, say)
        else:
            print("ormbench publish: no piece JSON yet: no report written", file=say)
        return 1 if failed else 0


def run(a: argparse.Namespace, extra: list[str]) -> int:
    """The ``publish`` subcommand (its PublishError, like every bad input, is one line from ``main``)."""
    return publish(a, extra, sys.stderr)
