"""A remote server's health: one notice per problem, bounded backoff, recovery by itself.

While the server fails, requests do not wait on it: they answer empty at once until the backoff
(0.5 s, doubling, at most MAX_BACKOFF_S) has passed; the next request then tries again. The
user is told once per kind of problem until a completion succeeds again: the server out of
reach (down, broke off mid-answer, too slow: one problem, as a server that dies mid-answer
then refuses connections), TLS, authentication, the model, HTTP errors, malformed answers.
Recovery is logged, not shown.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
PROBLEM = {"dropped": "unreachable", "down": "unreachable", "slow": "unreachable"}


class Health:
    def __init__(
        self,
        url: str,
        notify: Callable[[str], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        first_s: float = FIRST_BACKOFF_S,
        max_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.url = url
        self.notify = notify
        self.clock, self.first_s, self.max_s = clock, first_s, max_s
        self.failures = 0  # in a row
        self.retry_at = 0.0
        self.last_error: str | None = None
        self.last_kind: str | None = None
        self.outages = 0  # times it went from working (or not yet tried) to failing
        self._told: set[str] = set()  # kinds of problem the user was told about this outage
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        return "failing" if self.failures else "ok"

    def available(self) -> bool:
        """Whether a request may go to the server now (not inside a backoff)."""
        return self.clock() >= self.retry_at

    def failed(self, kind: str, message: str) -> None:
        with self._lock:
            self.outages += int(self.failures == 0)
            self.failures += 1
            delay = min(self.first_s * 2 ** (self.failures - 1), self.max_s)
            self.retry_at = self.clock() + delay
            self.last_error, self.last_kind = message, kind
            problem = PROBLEM.get(kind, kind)
            tell = problem not in self._told
            self._told.add(problem)
        log.warning("remote engine: %s (next try in %.1f s)", message, delay)
        if tell:
            self.notify(message)

    def succeeded(self) -> None:
        with self._lock:
            was_failing = self.failures > 0
            self.failures, self.retry_at = 0, 0.0
            self._told.clear()
        if was_failing:
            log.info("remote engine: %s answers again", self.url)

    def report(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "consecutive_failures": self.failures,
            "outages": self.outages,
            "last_error": self.last_error,
            "retry_in_s": round(max(0.0, self.retry_at - self.clock()), 2) if self.failures else 0,
        }
