"""Moved: `ormbench scaffold` (this path, `python -m pytest_ormbench.scaffold`, is deprecated)."""

import sys

if __name__ == "__main__":
    print("pytest-ormbench: `python -m pytest_ormbench.scaffold` is deprecated; use `ormbench scaffold`", file=sys.stderr)
    from pytest_ormbench.commands.scaffold import main

    sys.exit(main())
