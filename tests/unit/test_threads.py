"""The thread count follows the cores other programs leave free."""

from __future__ import annotations

import pytest

from spec_lsp.engine.backends.threads import CLOCK_TICKS, ThreadChooser, busy_seconds


class Machine:
    """A clock, the system's busy CPU seconds and this process's own, moved by hand."""

    def __init__(self) -> None:
        self.now = self.busy = self.own = 0.0

    def run(self, seconds: float, *, others: float, own: float = 0.0) -> None:
        self.now += seconds
        self.busy += seconds * (others + own)
        self.own += seconds * own

    def chooser(self, cores: int, every_s: float = 0.5) -> ThreadChooser:
        return ThreadChooser(
            cores,
            every_s=every_s,
            system_busy_s=lambda: self.busy,
            own_cpu_s=lambda: self.own,
            clock=lambda: self.now,
        )


@pytest.mark.parametrize(
    ("cores", "others", "own", "expected"),
    [
        (2, 0.0, 0.0, 2),  # idle: all cores
        (2, 0.05, 1.9, 2),  # our own llama.cpp threads busy: not someone else's load
        (2, 1.0, 0.0, 1),  # a build beside us: one thread, not two spinning for each other
        (2, 2.0, 0.0, 1),  # never fewer than one
        (8, 2.5, 3.0, 5),
        (1, 0.0, 0.0, 1),
    ],
)
def test_threads_are_the_cores_others_leave_free(cores, others, own, expected):
    machine = Machine()
    chooser = machine.chooser(cores)
    assert chooser.choose() == cores  # no interval seen yet: all cores
    machine.run(1.0, others=others, own=own)
    assert chooser.choose() == expected
    assert chooser.others == pytest.approx(others)


def test_it_looks_at_most_every_interval_and_follows_the_load_back():
    machine = Machine()
    chooser = machine.chooser(2, every_s=0.5)
    chooser.choose()
    machine.run(1.0, others=1.0)
    assert chooser.choose() == 1
    machine.run(0.1, others=0.0)
    assert chooser.choose() == 1  # too soon to look again
    machine.run(1.0, others=0.0)
    assert chooser.choose() == 2  # the other program stopped


def test_the_real_machine_reading_is_a_thread_count():
    chooser = ThreadChooser(every_s=0.0)
    for _ in range(3):
        assert 1 <= chooser.choose() <= chooser.cores


def test_programs_at_a_lower_priority_are_not_load():
    """/proc/stat's columns: user nice system idle iowait irq softirq steal. A niced program
    (the guide's Jedi process at nice 19) takes the cores only when our threads leave them."""
    line = "cpu  1000 500 200 9000 300 10 20 0 0 0\n"
    assert busy_seconds(line, own_nice=0) == pytest.approx((1000 + 200 + 10 + 20) / CLOCK_TICKS)
    assert busy_seconds(line, own_nice=10) == pytest.approx(1730 / CLOCK_TICKS)  # ours in it
    assert busy_seconds("intr 1 2 3", own_nice=0) is None
