"""One worker thread runs the engine; the newest request per document wins.

Every request gets exactly one answer: a completion, None (superseded, not ready, cancelled),
or the cancellation of its asyncio task (`$/cancelRequest`), which fires its CancelToken so the
decode loop stops at the next round. The event loop never waits on the engine: initialize,
didChange and shutdown are handled while a generation runs.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from spec_lsp.engine import (
    Cancelled,
    CancelToken,
    Completion,
    CompletionRequest,
    Engine,
    EngineError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


class Scheduler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spec-lsp-engine")
        self._latest: dict[str, CancelToken] = {}
        self._running: dict[str, asyncio.Future[Completion | None]] = {}
        self._background = CancelToken()
        self.latencies: deque[float] = deque(maxlen=1000)
        self.counts: Counter[str] = Counter()
        self.debounce_s = 0.0
        self.closed = False

    async def run(self, job: Callable[[], T]) -> T:
        """Run any engine call (load, settings) on the worker thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, job)

    async def complete(self, request: CompletionRequest) -> Completion | None:
        started = time.perf_counter()
        self.counts["requests"] += 1
        self._background.cancel("keystroke")
        try:
            result = await self._complete(request)
        except asyncio.CancelledError:
            self.counts["cancelled"] += 1
            raise
        self.counts["served" if result and result.text else "empty"] += 1
        self.latencies.append(time.perf_counter() - started)
        return result

    async def _complete(self, request: CompletionRequest) -> Completion | None:
        if not self.engine.ready or self.closed:
            return None
        cached = self.engine.peek(request)  # typed-through: answered on the event loop, at once
        if cached is not None:
            return cached
        document = request.document_id
        running = self._running.get(document)
        if running is not None and not running.done() and self.engine.extends_in_flight(request):
            await asyncio.shield(running)  # let it finish: its result answers this request
            cached = self.engine.peek(request)
            if cached is not None:
                return cached
        previous = self._latest.get(document)
        if previous is not None:
            previous.cancel("superseded by a newer request")
        token = self._latest[document] = CancelToken()
        if self.debounce_s:
            await asyncio.sleep(self.debounce_s)
        if token.cancelled:
            return None
        future = asyncio.get_running_loop().run_in_executor(
            self._executor, self._work, request, token
        )
        self._running[document] = future
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            token.cancel("$/cancelRequest")
            raise

    def _work(self, request: CompletionRequest, token: CancelToken) -> Completion | None:
        if token.cancelled:
            return None
        try:
            return self.engine.complete(request, token)
        except Cancelled:
            return None
        except EngineError as exc:
            log.warning("completion failed: %s", exc)
            return None

    def precompute(self, request: CompletionRequest, shown: Completion) -> None:
        """After answering, spend idle time on the suggestion that follows (any keystroke cancels)."""
        if self.closed or not shown.text:
            return
        token = self._background = CancelToken()

        def job() -> None:
            if token.cancelled:
                return
            try:
                self.engine.precompute(request, shown, token)
            except (Cancelled, EngineError):
                pass

        self._executor.submit(job)

    def stats(self) -> dict[str, Any]:
        latencies = sorted(self.latencies)
        p = (
            (lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 1))
            if latencies
            else (lambda q: None)
        )
        return {
            "server_requests": dict(self.counts),
            "latency_ms_p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "latency_ms_p95": p(0.95),
        }

    def close(self) -> None:
        """Cancel everything and let the worker finish its current round."""
        self.closed = True
        self._background.cancel("shutdown")
        for token in self._latest.values():
            token.cancel("shutdown")
        self._executor.shutdown(wait=False, cancel_futures=True)
