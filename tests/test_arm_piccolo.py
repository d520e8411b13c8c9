"""The Piccolo arm passes selfcheck (every model x op x table, verified) at tiny sizes."""

import pytest

pytest.importorskip("piccolo")
pytest.importorskip("aiosqlite")

from pytest_ormbench import selfcheck  # noqa: E402


def test_piccolo_arm_selfcheck() -> None:
    argv = ["piccolo", "--register", "bench_suites.piccolo_arm:PiccoloArm", "--iterations", "5", "--batch", "50"]
    assert selfcheck.main(argv) == 0
