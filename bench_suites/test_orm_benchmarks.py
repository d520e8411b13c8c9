"""The benchmark matrix: one test, parametrized by pytest-ormbench over
arm x model x operation x mode x table (see the ``--ormbench-*`` options)."""


def test_orm(ormbench_cell):
    """Run the cell's rounds in worker processes; every round is verified."""
    assert ormbench_cell()["verified"]
