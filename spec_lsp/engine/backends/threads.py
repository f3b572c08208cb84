"""How many threads llama.cpp gets now: the cores other programs leave free.

llama.cpp's threads meet at a barrier after every operation and spin while they wait. On a small
machine where something else is busy (the editor, a build, a test run) one of them is regularly
descheduled and the others spin for it: measured on a 2-core machine beside one busy process,
2 threads decoded Qwen2.5-Coder-1.5B at 14 tok/s and 1 thread at 27 tok/s (prompt 68 vs 95
tok/s); on the idle machine 2 threads were faster (decode 40 vs 28, prompt 188 vs 98).

So with `threads` unset the count follows the machine: the CPU time the rest of the system used
since the last look (Linux /proc/stat, minus this process's own), in cores, is taken off the
core count. A look costs tens of microseconds and happens at most every `every_s`; elsewhere
(no /proc/stat) it is all cores.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _system_busy_s() -> float | None:
    """CPU seconds all processes spent busy since boot, or None where /proc/stat is missing;
    without the programs at a lower priority than this one where it runs at nice 0."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            line = stat.readline()
    except OSError:
        return None
    return busy_seconds(line, own_nice=os.getpriority(os.PRIO_PROCESS, 0))


def busy_seconds(line: str, *, own_nice: int) -> float | None:
    """The busy CPU seconds in /proc/stat's first line: all but idle and iowait, and, for a
    process at nice 0, all but the `nice` column too. The scheduler gives the cores to a nice-0
    thread before a niced program (at nice 19 it gets ~1.5% of a core beside one): such a
    program (an indexer, a backup) leaves our threads the cores, and counting it halved the
    threads while it ran (prompts at 98 tokens/s instead of 188 on 2 cores)."""
    fields = line.split()
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal ...
    values = [int(v) for v in fields[1:9]]
    busy = sum(values) - values[3] - values[4]
    if own_nice <= 0:  # (a niced server's own time is in that column: counted, then taken off)
        busy -= values[1]
    return busy / CLOCK_TICKS


class ThreadChooser:
    """Threads for the next llama_decode: all cores less those others keep busy (at least 1)."""

    def __init__(
        self,
        cores: int | None = None,
        *,
        every_s: float = 0.5,
        slack: float = 0.3,
        system_busy_s: Callable[[], float | None] = _system_busy_s,
        own_cpu_s: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cores = max(1, cores or os.cpu_count() or 1)
        self._system_busy_s, self._own_cpu_s, self._clock = system_busy_s, own_cpu_s, clock
        self.every_s = every_s
        self.slack = slack  # others' share of a core under which it still counts as free
        self._lock = threading.Lock()
        self._last: tuple[float, float, float] | None = None  # wall, system busy, own CPU
        self.threads = self.cores
        self.others = 0.0  # cores the rest of the system kept busy over the last interval
        self.measured = False  # whether `others` was measured yet (two looks, an interval)

    def choose(self) -> int:
        now = self._clock()
        with self._lock:
            if self._last is not None and now - self._last[0] < self.every_s:
                return self.threads
            busy = self._system_busy_s()
            if busy is None:
                return self.threads
            own = self._own_cpu_s()  # every thread of this process, llama.cpp's included
            if self._last is not None:
                self.others = others_busy(self._last, (now, busy, own))
                self.measured = True
                free = self.cores - self.others + self.slack
                self.threads = max(1, min(self.cores, int(free)))
            self._last = (now, busy, own)
            return self.threads


class OthersLoad:
    """The cores other programs kept busy from its start to each `cores()` (Linux /proc/stat
    less this process's own CPU time; None elsewhere): a measurement says how loaded the
    machine was while it ran."""

    def __init__(
        self,
        *,
        system_busy_s: Callable[[], float | None] = _system_busy_s,
        own_cpu_s: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._system_busy_s, self._own_cpu_s, self._clock = system_busy_s, own_cpu_s, clock
        self._start = (clock(), system_busy_s(), own_cpu_s())

    def cores(self) -> float | None:
        wall0, busy0, own0 = self._start
        now, busy = self._clock(), self._system_busy_s()
        if busy is None or busy0 is None or now <= wall0:
            return None
        return others_busy((wall0, busy0, own0), (now, busy, self._own_cpu_s()))


def others_busy(before: tuple[float, float, float], after: tuple[float, float, float]) -> float:
    """Cores other programs kept busy between two looks of (wall, system busy, own CPU)
    seconds: the system's busy time less this process's own, over the wall time."""
    wall = after[0] - before[0]
    return max(0.0, (after[1] - before[1] - (after[2] - before[2])) / wall)


SHARED = ThreadChooser()  # one view of the machine for every model in the process
