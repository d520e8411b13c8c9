"""The django arm passes the self-check (every model x op, verified) at tiny sizes."""

import pytest

pytest.importorskip("django")

from pytest_ormbench import selfcheck  # noqa: E402

ARM = ["django", "--register", "bench_suites.django_arm:DjangoArm", "--iterations", "5", "--batch", "50"]


def test_django_arm_selfcheck():
    assert selfcheck.main(ARM) == 0


def test_django_arm_selfcheck_wal():
    # reopening on new files with other pragmas in the same process (Django is configured once)
    assert selfcheck.main(ARM + ["--journal", "wal", "--synchronous", "normal", "--models", "fk", "--ops", "ACK"]) == 0
