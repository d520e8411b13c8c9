"""``ormbench publish``: a preset's whole matrix as resumable pieces, then the published tables.

    ormbench publish --out DIR [--preset full] [--python PATH] [--commit REV] [PYTEST/PLUGIN OPTIONS...]
    ormbench publish --out DIR --finalize-only

The matrix is split into pieces, one pytest process each: one arm on one database
(``--ormbench-arms=ARM --ormbench-db=DB``; the plugin runs the control arms beside every piece, as it
always does). Every piece runs from a frozen copy of the tree (``git archive`` of one commit: edits made
during a multi-hour run do not reach it) with a named interpreter, and writes ``DIR/STEM.json`` and
``DIR/STEM.log``; the log starts with the commit it ran from and ends with the line
``exit=N wall_seconds=S started=YYYY-MM-DDTHH:MM:SSZ``. A piece whose JSON exists and whose log ends
with ``exit=0`` is skipped when the same command runs again, so a stopped publish resumes where it
stopped: a piece writes its JSON to ``STEM.json.partial`` and renames it only once pytest has finished.
``DIR/publish-manifest.jsonl`` gets a line per invocation and per piece (tree, interpreter, options,
exit, wall time). At the end it writes what the published folder holds beside the JSON:
``report.md`` and ``charts/`` (``ormbench report``), ``ratios-vs-reference.md`` and ``wall-times.md``
(from every log's last line). One publish at a time per folder (a lock file, held by the running piece
too). Bad options: one line on stderr and exit status 2.
"""

from __future__ import annotations

from pytest_ormbench.commands.publish.command import publish, run  # noqa: F401
from pytest_ormbench.commands.publish.errors import PublishError
from pytest_ormbench.commands.publish.plan import (DEFAULT_TEMPLATE, OWNED, PLACEHOLDERS, PLAN_SCRIPT,  # noqa: F401
                                                   Piece, Plan, add_parser, make_plan, pieces_for,
                                                   split_passthrough, stem)
from pytest_ormbench.commands.publish.runner import (END_LINE, LOCK, MANIFEST, USAGE_ERROR, Outcome,  # noqa: F401
                                                     Runner, Stop, is_done, last_end_line, locked)
from pytest_ormbench.commands.publish.tables import finalize, wall_times
from pytest_ormbench.commands.publish.tree import COMMIT_INFO, TREE_MARK, TREE_PATHS, freeze  # noqa: F401

__all__ = ["END_LINE", "PublishError", "add_parser", "finalize", "last_end_line", "run", "split_passthrough",
           "wall_times"]
