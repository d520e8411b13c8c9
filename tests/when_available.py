"""Run a command only where the system package it needs is on the machine: ``python tests/when_available.py
postgresql -- pytest …``. Where it is missing, one line says what was left out and how to get it, and the
exit status is 0, so that tox passes on a machine with only python3; under ``ORMBENCH_REQUIRE_ALL=1`` (CI,
which installs everything) a missing package fails instead, so that nothing is left out there unseen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def _postgresql() -> bool:
    from pytest_ormbench.provision.postgresql import find_binaries

    return find_binaries() is not None


def _mysql() -> bool:
    from pytest_ormbench.provision.mysql import find_binaries

    return find_binaries() is not None


def _valgrind() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("cc") is not None


#: what a command may need -> (is it here, what it is, how to get it)
NEEDS = {
    "postgresql": (_postgresql, "the PostgreSQL server", "apt-get install postgresql"),
    "mysql": (_mysql, "the MariaDB server", "apt-get install mariadb-server"),
    "valgrind": (_valgrind, "valgrind and a C compiler", "apt-get install valgrind gcc"),
}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in NEEDS or argv[1] != "--":
        print(f"usage: when_available.py {{{','.join(NEEDS)}}} -- COMMAND...", file=sys.stderr)
        return 2
    present, what, how = NEEDS[argv[0]]
    if present():
        return subprocess.call(argv[2:])
    line = f"left out for want of {what} ({how}): {' '.join(argv[2:])[:120]}"
    if os.environ.get("ORMBENCH_REQUIRE_ALL") == "1":
        print(f"ERROR: ORMBENCH_REQUIRE_ALL=1, but {line}", file=sys.stderr)
        return 1
    print(f"pytest-ormbench: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
