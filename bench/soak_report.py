"""The soak's measurements and their report: RSS of a process tree, percentiles, the per-period
rows (Sampler; a markdown table), and excerpts of the server's stderr around errors.

Pure but for reading /proc; `soak` drives it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.soak_client import Ledger
from bench.soak_typist import Typist


def children(pid: int) -> list[int]:
    """The direct children of `pid` (empty when it is gone): from /proc/<pid>/task/*/children,
    or where the kernel has no such files, from every process's parent."""
    listed = children_listed(pid)
    return children_scanned(pid) if listed is None else listed


def children_listed(pid: int) -> list[int] | None:
    """From /proc/<pid>/task/*/children; None when none of those files can be read."""
    found: list[int] | None = None
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    for task in tasks:
        try:
            found = (found or []) + [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def children_scanned(pid: int) -> list[int]:
    """From the parent field of every /proc/<n>/stat."""
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants, parents first."""
    tree: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop(0)
        if current not in tree:
            tree.append(current)
            todo += children(current)
    return tree


def rss_kb(pid: int) -> int | None:
    """VmRSS of one process in KiB; None when it is gone (or a zombie, which has none)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE)
    return int(match.group(1)) if match else None


def tree_rss_mb(pid: int) -> tuple[float, int]:
    """RSS of `pid` and all its descendants summed, in MiB, and how many processes that was
    (shared pages count once per process: a sum over-counts them, the same way each sample)."""
    sizes = [kb for kb in map(rss_kb, process_tree(pid)) if kb is not None]
    return (sum(sizes) / 1024 if sizes else math.nan), len(sizes)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Period:
    """One sample period: what happened in it, and the state at its end."""

    t: float  # end of the period, seconds since the typing started
    rss_mb: float  # the server and its children
    procs: int
    keys: int
    requests: int  # inline completions sent
    items: int  # answers with a suggestion
    empty: int
    cancelled: int  # RequestCancelled answers to requests the client cancelled
    errors: int
    p50_ms: float  # answer latency (items and empty answers)
    p95_ms: float
    backlog: int  # requests open at the end of the period
    baseline: bool = False  # the end of the warm-up: RSS growth is measured from here
    held: dict[str, Any] | None = None  # specLsp/stats memory at its end (read just after)
    steady: bool = False  # the server's saved KV states at their steady state (pool full)

    @property
    def states_mb(self) -> float:
        """MB of saved KV states the server held (nan when not read)."""
        states = (self.held or {}).get("saved_states") or {}
        return states["bytes"] / 2**20 if "bytes" in states else math.nan


class Sampler:
    """Turns the ledger's and typist's running totals into one Period per sample."""

    def __init__(self, ledger: Ledger, typist: Typist, pid: int) -> None:
        self.ledger, self.typist, self.pid = ledger, typist, pid
        self.keys = self.sent = self.answers = 0
        self.outcomes: Counter[str] = Counter()

    def sample(self, t: float) -> Period:
        ledger = self.ledger
        keys = sum(self.typist.keys.values())
        answers = [s for _, s in ledger.latencies[self.answers :]]
        out = ledger.outcomes - self.outcomes
        rss, procs = tree_rss_mb(self.pid)
        period = Period(
            t=t,
            rss_mb=rss,
            procs=procs,
            keys=keys - self.keys,
            requests=ledger.sent_inline - self.sent,
            items=out["items"],
            empty=out["empty"],
            cancelled=out["cancelled"],
            errors=out["error"],
            p50_ms=percentile(answers, 0.5) * 1000,
            p95_ms=percentile(answers, 0.95) * 1000,
            backlog=len(ledger.open),
        )
        self.keys, self.sent, self.answers = keys, ledger.sent_inline, len(ledger.latencies)
        self.outcomes = Counter(ledger.outcomes)
        return period


COLUMNS = (
    "t (s)",
    "RSS MB",
    "procs",
    "keys",
    "requests",
    "items",
    "empty",
    "cancelled",
    "errors",
    "p50 ms",
    "p95 ms",
    "open",
    "saved KV",
)


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"


def _states(p: Period) -> str:
    """Saved KV states: how many, their MB ("-" when the server was not asked)."""
    count = ((p.held or {}).get("saved_states") or {}).get("count")
    return "-" if count is None else f"{count}: {p.states_mb:.1f} MB"


def row(p: Period) -> str:
    """One period as a markdown table row."""
    cells = [
        f"{p.t:.0f}" + (" *" if p.baseline else ""),
        f"{p.rss_mb:.1f}",
        str(p.procs),
        str(p.keys),
        str(p.requests),
        str(p.items),
        str(p.empty),
        str(p.cancelled),
        str(p.errors),
        _ms(p.p50_ms),
        _ms(p.p95_ms),
        str(p.backlog),
        _states(p),
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = "| " + " | ".join(COLUMNS) + " |\n|" + "---:|" * len(COLUMNS)


def table(periods: list[Period]) -> str:
    """The periods as a markdown table; the warm-up's last row is marked with *."""
    return "\n".join([HEADER, *map(row, periods)])


def baseline_index(periods: list[Period], warmup_s: float) -> int:
    """The first period ending at or after the warm-up (the first one if the run was shorter)."""
    return next((i for i, p in enumerate(periods) if p.t >= warmup_s), 0)


def warmup_end(periods: list[Period], warmup_s: float) -> tuple[int, bool]:
    """The period that ends the warm-up, and whether the server's caches were steady there.

    Its bounded caches fill as the user visits documents: each saved KV state is ~10-15 MB with
    a model, a few of them together more than the growth allowed, so growth is measured from
    the first period, at least `warmup_s` in and in the run's first half, whose saved KV states
    fill their pool; without one, from the first period at or after `warmup_s`."""
    first = baseline_index(periods, warmup_s)
    half = periods[-1].t / 2 if periods else 0.0
    for i in range(first, len(periods)):
        if periods[i].t > max(half, periods[first].t):
            break
        if periods[i].steady:
            return i, True
    return first, False


def growth_mb(periods: list[Period], warmup_s: float, base: int | None = None) -> float:
    """RSS at the last sample that has one (a dead server has none) minus RSS at the end of the
    warm-up (the period `base`, else the first at or after `warmup_s`); nan without samples."""
    if base is None:
        base = baseline_index(periods, warmup_s)
    start = periods[base].rss_mb if periods else math.nan
    last = next((p.rss_mb for p in reversed(periods) if not math.isnan(p.rss_mb)), math.nan)
    return last - start


ERROR_LINE = re.compile(r"Traceback|ERROR|CRITICAL|Exception|Error:|Fatal Python error")


def stderr_excerpts(path: Path, *, context: int = 5, limit: int = 120) -> list[str]:
    """The lines of a log that look like errors, with `context` lines either side (all that
    follow a fatal error: the stacks), at most `limit` lines ('...' between stretches)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    keep: list[int] = []
    for i, line in enumerate(lines):
        if ERROR_LINE.search(line):
            fatal = line.startswith("Fatal Python error")  # then the threads' stacks: all of it
            for j in range(
                max(0, i - context), len(lines) if fatal else min(len(lines), i + context + 1)
            ):
                if not keep or j > keep[-1]:
                    keep.append(j)
    out: list[str] = []
    for k, j in enumerate(keep):
        if k and j != keep[k - 1] + 1:
            out.append("...")
        out.append(f"{j + 1}: {lines[j]}")
        if len(out) >= limit:
            out.append(f"... (more in {path})")
            break
    return out


def tail(path: Path, n: int = 20) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []
