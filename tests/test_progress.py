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
    p.skip("slow", 3)  # a cell that failed leaves the schedule
    assert p.left() == 3.0 and p.total == 5


def test_a_line_at_most_every_interval() -> None:
    clock, lines = Clock(), []
    p = Progress.of("cells", ["a"] * 10, lines.append, interval=30, clock=clock)
    for _ in range(10):
        clock.now += 10
        p.finish("a", 10.0)
    assert len(lines) == 3  # at 30, 60 and 90 s
    assert lines[-1].startswith("pytest-ormbench: cells: 9 of 10 done (90%), 1 min 30 s elapsed, about 10 s left")
