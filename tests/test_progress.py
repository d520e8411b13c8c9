"""Progress lines and the estimate of the time left, on a clock the test moves."""

from __future__ import annotations

from pytest_ormbench.scheduling.progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (0.4, 45, 60, 130, 3600, 3900)] == ["0 s", "45 s", "1 min", "2 min 10 s",
                                                                     "1 h 0 min", "1 h 5 min"]


def test_the_estimate_waits_for_every_arm_then_weighs_each_by_its_own_pace() -> None:
    clock, lines = Clock(), []
    p = Progress.of("timed rounds", ["fast"] * 4 + ["slow"] * 4, lines.append, interval=30, clock=clock)
    clock.now += 1
    p.finish("fast", 1.0)
    assert p.left() is None and "known once every arm has run one" in p.line()
    clock.now += 10
    p.finish("slow", 10.0)
    assert p.left() == 3 * 1.0 + 3 * 10.0
    assert "2 of 8 done (25%), 11 s elapsed, about 33 s left" in p.line()
    p.drop("failed", {"slow": 3})  # a cell that failed leaves the schedule, and the count says so
    assert p.left() == 3.0 and p.total == 8 and p.to_go == 3
    assert "2 of 8 done, 3 dropped (1 cell failed), 3 to go (62%)" in p.line()


def test_a_line_at_most_every_interval() -> None:
    clock, lines = Clock(), []
    p = Progress.of("cells", ["a"] * 10, lines.append, interval=30, clock=clock)
    for _ in range(10):
        clock.now += 10
        p.finish("a", 10.0)
    assert len(lines) == 3  # at 30, 60 and 90 s
    assert lines[-1].startswith("pytest-ormbench: cells: 9 of 10 done (90%), 1 min 30 s elapsed, about 10 s left")


def test_uncounted_work_is_in_the_estimate_not_in_the_count() -> None:
    """A drift probe or a counting repetition takes time, but the lines count the plan's rounds only."""
    clock = Clock()
    p = Progress.of("timed rounds", ["a"] * 3, clock=clock, extra=["probe"] * 2)
    assert p.total == 3
    p.finish("probe", 5.0)
    p.finish("a", 1.0)
    assert p.total == 3 and p.done == 1 and p.to_go == 2
    assert p.left() == 2 * 1.0 + 1 * 5.0
    p.drop("failed", {"a": 2, "probe": 1})
    assert p.left() == 0.0 and p.dropped == {"failed": 2}


def test_a_line_with_drops_adds_up_to_the_plan() -> None:
    clock, lines = Clock(), []
    p = Progress.of("timed rounds", ["a"] * 6 + ["b"] * 6, lines.append, interval=30, clock=clock)
    p.drop("unsupported", {"b": 3})
    p.drop("unsupported", {"b": 3})
    p.drop("skipped: package missing", {"a": 3})
    p.finish("a", 1.0)
    assert p.done + sum(p.dropped.values()) + p.to_go == p.total == 12
    assert p.line().startswith("pytest-ormbench: timed rounds: 1 of 12 done, 9 dropped (2 cells unsupported, "
                               "1 cell skipped: package missing), 2 to go (83%)")
    assert p.dropped_note() == ("pytest-ormbench: 9 of the 12 planned timed rounds dropped: 2 cells unsupported (6), "
                                "1 cell skipped: package missing (3); 3 run or to run")
