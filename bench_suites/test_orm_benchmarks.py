"""The benchmark matrix: one test, parametrized by pytest-ormbench over
arm x model x operation x mode x table (see ``--ormbench-*`` options)."""


def test_orm(ormbench_cell):
    """Each cell ran its rounds in worker processes and verified every one."""
    assert ormbench_cell["verified"]
