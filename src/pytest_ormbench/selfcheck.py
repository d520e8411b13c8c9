"""Moved: `ormbench selfcheck` (this path, `python -m pytest_ormbench.selfcheck`, is deprecated)."""

import sys

if __name__ == "__main__":
    print("pytest-ormbench: `python -m pytest_ormbench.selfcheck` is deprecated; use `ormbench selfcheck`", file=sys.stderr)
    from pytest_ormbench.commands.selfcheck import main

    sys.exit(main())
