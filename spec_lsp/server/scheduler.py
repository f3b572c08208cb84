"""One worker thread runs the engine; the newest request per document wins.

Every request gets exactly one answer:
- a completion (possibly empty), computed on the worker or taken from the typed-through cache;
- an empty answer when the model is not ready, or when a newer request for the same document
  supersedes it (it is the editor's keystroke, not a cancellation: the editor did not ask). A
  request the person asked for (Invoked) while the model loads waits for the load, at most
  INVOKED_LOAD_WAIT_S, and so does one the editor sent as they typed (Automatic: the editor
  does not ask again when the load ends; Neovim asks once per pause), the newest per document
  only (an older one is answered empty);
- pygls' RequestCancelled error after `$/cancelRequest`, which cancels the handler's task. A
  decode already running goes on for CANCEL_GRACE_S, in case the next keystroke's request typed
  into what it writes (VS Code cancels each key's request as it sends the next) and takes it
  over; otherwise its CancelToken fires then and it stops at its next round. (pygls also
  cancels every pending request at `shutdown`.)

At most one request per document waits for the worker: a newer one answers the waiting one
empty at once, without running it. The event loop never waits on the engine, so initialize,
didChange and shutdown are handled while a generation runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
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
Outcome = tuple[Completion | None, str]  # the answer and what happened: served, empty, ...
INVOKED_LOAD_WAIT_S = 30.0
PREWARM_DELAY_S = 0.3  # idle this long after an edit before evaluating its place's prompt
IN_FLIGHT_POLL_S = 0.05  # how often a request waiting on a running generation looks at its text
# a generation whose request the editor cancelled goes on this long for a newer request that
# typed into it (VS Code cancels each keystroke's request as it sends the next), then stops
CANCEL_GRACE_S = 0.5
Job = tuple["asyncio.Future[Completion | None]", CancelToken]  # a generation on the worker


class Scheduler:
    def __init__(self, engine: Engine, *, debounce_s: float = 0.0) -> None:
        self.engine = engine
        self.debounce_s = debounce_s
        self.closed = False
        self.counts: Counter[str] = Counter()
        self.follow_on: Counter[str] = Counter()  # precomputes started, rests stopped
        self.latencies: deque[float] = deque(maxlen=1000)
        self.queue_waits: deque[float] = deque(maxlen=1000)  # from queued to the worker starting
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spec-lsp-engine")
        self._live: dict[str, list[CancelToken]] = {}  # per document: requests not yet answered
        self._jobs: dict[str, Job] = {}  # per document: its generation on the worker
        self._graces: dict[str, asyncio.TimerHandle] = {}  # per document: a cancelled job's grace
        self._background = CancelToken()
        self._idle = CancelToken()  # idle work (the file prefix growing); any request stops it
        self._idle_timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queued = 0  # jobs given to the worker and not yet finished or cancelled
        self._queued_lock = threading.Lock()
        self.loading = 0  # model loads queued or running
        self.first_load = True  # the load `initialized` starts has not ended yet
        self.held = False  # hold(): no background or idle work starts
        self._pending_prewarm: tuple[CompletionRequest, CancelToken] | None = None
        self._waiting: dict[str, int] = {}  # per document: the newest request waiting for a load
        self._growing = False  # the idle work (engine.idle_step) is running
        engine.on_idle_work = self._wake

    def _wake(self) -> None:
        """(Any thread.) The engine has idle work nothing here asked for: start it once idle."""
        loop = self._loop
        if loop is not None and not self.closed:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._idle_soon)

    async def run(self, job: Callable[[], T]) -> T:
        """Run any other engine call (load, settings) on the worker thread, in order."""
        return await asyncio.wrap_future(self._submit(job))

    async def load(self, job: Callable[[], T]) -> T:
        """A model load (or settings that may reload) on the worker: Invoked requests wait."""
        self.loading += 1
        try:
            return await self.run(job)
        finally:
            self.loading -= 1
            self.first_load = False
            self._idle_soon()  # (a model loaded: its cost profile may be to measure)

    def _submit(self, job: Callable[..., T], *args: Any) -> Future[T]:
        """executor.submit, counting the job as queued until it finishes or is cancelled."""
        future = self._executor.submit(job, *args)
        with self._queued_lock:
            self._queued += 1
        future.add_done_callback(self._unqueue)
        return future

    def _unqueue(self, _future: Future[Any]) -> None:
        with self._queued_lock:  # on the worker, or on the event loop for a cancelled job
            self._queued -= 1

    async def complete(
        self, request: CompletionRequest, *, invoked: bool = False
    ) -> Completion | None:
        """The answer to a request; `invoked`: the person asked (waits for a model loading,
        and its first line is never answered partial: CompletionRequest.invoked)."""
        if invoked and not request.invoked:
            request = replace(request, invoked=True)
        invoked = request.invoked
        started = time.perf_counter()
        self.counts["requests"] += 1
        self._background.cancel("keystroke")
        try:
            result, outcome = await self._complete(request, invoked)
        except asyncio.CancelledError:
            self.counts["cancelled"] += 1
            raise
        self.counts[outcome] += 1
        if outcome not in ("not_ready", "superseded"):  # latency of the answers that count
            self.latencies.append(time.perf_counter() - started)
        return result

    async def _complete(self, request: CompletionRequest, invoked: bool) -> Outcome:
        if self.closed:
            return None, "not_ready"
        if not self.engine.ready:
            if not (self.loading or self.first_load):  # (no load to wait for: it failed)
                return None, "not_ready"
            waited = await self._loaded(request.document_id)
            if waited != "ready":
                return None, waited
        cached = self.engine.peek(request)  # typed through a suggestion: answered at once
        if cached is not None:
            return cached, "typed_through"
        document = request.document_id
        running = self._jobs.get(document)
        if running is not None and (
            running[0].done() or not self.engine.extends_in_flight(request)
        ):
            running = None  # nothing to keep: the running generation is no use to this request
        if running is not None:
            self._end_grace(document)  # its cancelled request's generation is this one's now
        self._supersede(document, keep=running)
        token = CancelToken()
        live = self._live.setdefault(document, [])
        live.append(token)
        try:
            return await self._answer(request, token, running)
        finally:
            live.remove(token)
            if not live and self._live.get(document) is live:
                del self._live[document]

    async def _answer(
        self, request: CompletionRequest, token: CancelToken, running: Job | None
    ) -> Outcome:
        if running is not None:  # the running generation may write what this one typed
            try:
                line = await self._follow_in_flight(request, running[0])
            except asyncio.CancelledError:  # $/cancelRequest: as for a request of its own
                self._grace(request.document_id, running[1])
                raise
            if line is not None:  # a complete line of it, before the generation ends
                return line, "typed_through"
            cached = self.engine.peek(request)
            if cached is not None:
                return cached, "typed_through"
            if not running[0].done():  # it wrote something else: stop it, start this one
                running[1].cancel("it wrote something other than what was typed")
        if self.debounce_s:
            await asyncio.sleep(self.debounce_s)
        if token.cancelled:
            return None, "superseded"
        document = request.document_id
        loop = asyncio.get_running_loop()
        early: asyncio.Future[Completion] = loop.create_future()

        def reply(completion: Completion) -> None:  # on the worker: the first answer is ready
            loop.call_soon_threadsafe(_settle, early, completion)

        queued = time.perf_counter()
        # (only a request that needs the model stops the idle work: one the caches answer, as
        # each key typed into a suggestion is, leaves it running)
        self._stop_idle("a request")
        job = asyncio.wrap_future(self._submit(self._work, request, token, reply, queued))
        self._jobs[document] = (job, token)
        try:
            await asyncio.wait((job, early), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # (wait cancels neither: the job goes on until told)
            if job.cancelled():  # a newer request took its place
                return None, "superseded"
            self._grace(document, token)  # stopped soon, unless a newer request follows it
            raise
        finally:
            early.cancel()  # (a no-op once set)
            if not job.done():  # answered early: the rest goes on into the cache
                job.add_done_callback(lambda _job: self._forget_job(document, job))
            else:
                self._forget_job(document, job)
        if early.done() and not early.cancelled() and not job.done():
            self.counts["answered_early"] += 1
            return early.result(), "served"
        result = None if job.cancelled() else job.result()
        if result is None and token.cancelled:
            return None, "superseded"
        return result, "served" if result is not None and result.text else "empty"

    async def _follow_in_flight(
        self, request: CompletionRequest, job: asyncio.Future[Any]
    ) -> Completion | None:
        """Wait for the running generation this request typed into; an answer from its text
        as soon as that holds a complete line beyond what was typed, else None when it ends or
        writes something other than what was typed."""
        while True:
            answer = self.engine.from_in_flight(request)
            if answer is not None:
                return answer
            if not self.engine.extends_in_flight(request):
                return None
            try:
                await asyncio.wait_for(asyncio.shield(job), IN_FLIGHT_POLL_S)
            except TimeoutError:
                continue
            except asyncio.CancelledError:
                if not job.cancelled():
                    raise  # this request's own task was cancelled ($/cancelRequest)
            return None

    def _forget_job(self, document: str, job: asyncio.Future[Any]) -> None:
        if self._jobs.get(document, (None,))[0] is job:
            del self._jobs[document]
            self._end_grace(document)
        self._idle_soon()

    def _grace(self, document: str, token: CancelToken) -> None:
        """$/cancelRequest: the generation goes on for CANCEL_GRACE_S, for a newer request that
        typed into it to take over; nobody did then, it stops."""
        self._end_grace(document)
        loop = asyncio.get_running_loop()
        self._graces[document] = loop.call_later(CANCEL_GRACE_S, token.cancel, "$/cancelRequest")

    def _end_grace(self, document: str) -> None:
        timer = self._graces.pop(document, None)
        if timer is not None:
            timer.cancel()

    def _idle_soon(self) -> None:
        """On the event loop, after any work: once nothing has happened for PREWARM_DELAY_S
        (no request, no edit, the worker idle), the engine's idle work runs (the file prefix
        grows), until done or until a request or an edit stops it (within ~50 ms:
        the chunk being computed is dropped)."""
        self._loop = asyncio.get_running_loop()
        if self.closed or self._idle_timer is not None:
            return
        self._idle_timer = self._loop.call_later(PREWARM_DELAY_S, self._start_idle)

    @property
    def quiet(self) -> bool:
        """Nothing to do: no request, no prewarm, no idle work left (benchmarks read until)."""
        busy = self._queued or self._live or self._growing or self._pending_prewarm is not None
        return not busy and self._idle_timer is None and not self.engine.idle_work

    def _stop_idle(self, reason: str) -> None:
        self._idle.cancel(reason)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _start_idle(self) -> None:
        self._idle_timer = None
        if self.closed or self.held or self._queued or self._live:
            return  # busy: the work that keeps it busy calls _idle_soon when it ends
        pending, self._pending_prewarm = self._pending_prewarm, None
        if pending is not None and not pending[1].cancelled:
            self._start_prewarm(*pending)  # an edit's prewarm the worker was too busy for
            return
        if not self.engine.idle_work:
            return
        token = self._idle = CancelToken()

        def job() -> None:
            if token.cancelled:
                return
            self._growing = True
            try:
                self.engine.idle_step(token)
            except (Cancelled, EngineError):
                pass
            except Exception:
                log.exception("growing the file prefix crashed")
            finally:
                self._growing = False

        # (not a queued job: any request cancels it at once; when it ends, the next step once
        # nothing has happened for a moment: the block is a step of its own, the text the next)
        self._executor.submit(job).add_done_callback(self._idle_after)

    def _idle_after(self, future: Future[Any]) -> None:
        """A background job (precompute, prewarm) ended: idle work may follow."""
        loop = self._loop
        if loop is not None and not self.closed:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._idle_soon)

    async def _loaded(self, document: str) -> str:
        """Wait while a model loads (bounded): "ready" if the engine is ready then,
        "superseded" if a newer request for the document came meanwhile, else "not_ready"."""
        number = self._waiting[document] = self._waiting.get(document, 0) + 1
        deadline = time.monotonic() + INVOKED_LOAD_WAIT_S
        try:
            while (
                (self.loading or self.first_load)
                and not self.engine.ready
                and time.monotonic() < deadline
                and self._waiting[document] == number
            ):
                await asyncio.sleep(0.05)
            if self._waiting[document] != number:
                return "superseded"
            return "ready" if self.engine.ready and not self.closed else "not_ready"
        finally:
            if self._waiting.get(document) == number:
                del self._waiting[document]

    def _supersede(self, document: str, *, keep: Job | None) -> None:
        """Older requests for the document answer empty now; their generation stops at its next
        round, or never starts. `keep` is a running job whose output the new request can use."""
        for older in self._live.get(document, ()):
            if keep is None or older is not keep[1]:
                older.cancel("superseded by a newer request")
        job = self._jobs.get(document)
        if job is not None and job is not keep:
            job[1].cancel("superseded by a newer request")
            job[0].cancel()

    def _work(
        self,
        request: CompletionRequest,
        token: CancelToken,
        reply: Callable[[Completion], None] | None = None,
        queued: float | None = None,
    ) -> Completion | None:
        """On the worker thread."""
        if token.cancelled:
            return None
        waited = time.perf_counter() - queued if queued is not None else 0.0
        self.queue_waits.append(waited)
        try:
            completion = self.engine.complete(request, token, reply=reply, peeked=True)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "%s v%d: queue %.0f ms, %s",
                    request.document_id,
                    request.version,
                    waited * 1000,
                    _timing(completion),
                )
            return completion
        except Cancelled:
            return None
        except EngineError as exc:
            log.warning("completion failed: %s", exc)
            return None
        except Exception:  # a bug: log it, answer empty, keep serving
            log.exception("completion crashed for %s", request.document_id)
            self.counts["errors"] += 1
            return None

    def precompute(self, request: CompletionRequest, shown: Completion) -> None:
        """Idle time: compute the suggestion that follows the one shown (any request cancels)."""
        if self.closed or not shown.text:
            return
        self._background.cancel("a newer suggestion")
        self._stop_idle("a newer suggestion")
        token = self._background = CancelToken()
        self.follow_on["precomputes"] += 1

        def job() -> None:
            if token.cancelled:
                return
            try:
                self.engine.precompute(request, shown, token)
            except (Cancelled, EngineError):
                pass
            except Exception:
                log.exception("precompute crashed")

        self._submit(job).add_done_callback(self._idle_after)

    def stop_rest(self, document: str) -> None:
        """The answer to the document's last request was hidden: the rest of its generation,
        going on in the background (answered early), stops, unless a newer request waits on
        it (typed into it). Its end lets the idle work run again."""
        job = self._jobs.get(document)
        if job is not None and not job[0].done() and not self._live.get(document):
            job[1].cancel("its suggestion was hidden")
            self.follow_on["rests_stopped"] += 1

    def prewarm(self, request: CompletionRequest) -> None:
        """After an edit: once nothing has happened for PREWARM_DELAY_S (no newer edit, no
        request), evaluate the prompt for the edited place; with the worker busy (the last
        suggestion's generation going on behind it), once the worker is free. Any request or
        edit cancels it."""
        if self.closed or not self.engine.ready:
            return
        self._background.cancel("an edit")
        if not self.engine.block_pending:  # (typing on: the block still gets in between keys)
            self._stop_idle("an edit")
        token = self._background = CancelToken()
        self._loop = asyncio.get_running_loop()
        self._loop.call_later(PREWARM_DELAY_S, self._start_prewarm, request, token)

    def opened(self, request: CompletionRequest) -> None:
        """didOpen: the document takes the file prefix (engine.document_opened), its block and
        text grown as idle work once nothing else is going on; the idle work under way (the
        last document's) stops for it."""
        if self.closed or not self.engine.ready:
            return
        self._loop = asyncio.get_running_loop()
        self._stop_idle("a document opened")  # (the last one's file prefix: moot now)

        def job() -> None:
            try:
                self.engine.document_opened(request)
            except EngineError:
                pass

        self._executor.submit(job).add_done_callback(self._idle_after)

    def _start_prewarm(self, request: CompletionRequest, token: CancelToken) -> None:
        if token.cancelled or self.closed or self.held:
            return  # something newer
        if self._queued or self._live:  # the worker is busy: once it is free (idle work)
            self._pending_prewarm = (request, token)
            return
        # the person paused at a place: its prompt before any idle work, the context block's
        # too (typing does not stop the block, a pause does: the block resumes after it)
        self._stop_idle("a prewarm")

        def job() -> None:
            if token.cancelled:
                return
            try:
                self.engine.prewarm(request, token)
            except (Cancelled, EngineError):
                pass
            except Exception:
                log.exception("prewarm crashed")

        self._submit(job).add_done_callback(self._idle_after)

    async def hold(self) -> None:
        """Stop all work on the worker (generations, background and idle work) and start none
        until release(): the cores are another program's (a benchmark's other engine)."""
        self.held = True
        self._background.cancel("held")
        self._stop_idle("held")
        for _, token in self._jobs.values():
            token.cancel("held")
        await self.run(lambda: None)  # the worker has stopped what it was doing

    def release(self) -> None:
        self.held = False
        self._idle_soon()

    def stats(self) -> dict[str, Any]:
        """Request counts by outcome (requests = served + empty + typed_through + superseded +
        not_ready + cancelled; errors counts engine crashes, answered empty), the latency
        of the answers that count (not the not-ready or superseded ones), and the work pending:
        requests not yet answered, generations running, jobs queued for the worker (all 0 when
        idle); the work that followed shown suggestions (showing.py decides); whether the idle
        work (evaluating while the person reads) runs now, and whether nothing at all is left
        to do (`quiet`: no request, prewarm or idle work)."""
        latencies = sorted(self.latencies)
        return {
            "server_requests": dict(self.counts),
            "follow_on": {"precomputes": 0, "rests_stopped": 0, **self.follow_on},
            "idle_work_running": self._growing,
            "quiet": self.quiet,
            "pending": {
                "requests": sum(len(live) for live in self._live.values()),
                "generations": len(self._jobs),
                "worker_jobs": self._queued,
            },
            "latency_ms_p50": percentile_ms(latencies, 0.50),
            "latency_ms_p95": percentile_ms(latencies, 0.95),
            "queue_ms": {
                "p50": percentile_ms(sorted(self.queue_waits), 0.50),
                "p95": percentile_ms(sorted(self.queue_waits), 0.95),
            },
        }

    def close(self) -> None:
        """Cancel everything; the worker finishes its current round, then closes the engine."""
        if self.closed:
            return
        self.closed = True
        self._background.cancel("shutdown")
        self._idle.cancel("shutdown")
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        for live in self._live.values():
            for token in live:
                token.cancel("shutdown")
        for _, token in self._jobs.values():
            token.cancel("shutdown")
        self._executor.submit(self.engine.shutdown)
        self._executor.shutdown(wait=False)

    def join(self) -> None:
        """Wait until the worker has stopped and the engine is closed."""
        self.close()
        self._executor.shutdown(wait=True)


def percentile_ms(sorted_seconds: list[float], q: float) -> float | None:
    """Nearest-rank percentile in milliseconds (None without data)."""
    if not sorted_seconds:
        return None
    rank = min(len(sorted_seconds), max(1, math.ceil(q * len(sorted_seconds)))) - 1
    return round(sorted_seconds[rank] * 1000, 1)


def _timing(completion: Completion) -> str:
    """One request's phases, for the debug log."""
    stats = completion.stats
    first = stats.first_answer_seconds
    cut = (
        f" cut by the budget ({stats.first_answer_chars} chars shown, "
        f"{stats.first_answer_dropped_chars} held back)"
        if stats.first_answer_cut
        else ""
    )
    context = (
        f"context {len(stats.context_chunks)} parts, {stats.context_tokens} tokens "
        f"({stats.context_cached_tokens} from the cache), "
        if stats.context_chunks
        else ""
    )
    return (
        f"{context}prompt {stats.prompt_tokens} tokens ({stats.prompt_tokens_evaluated} evaluated) "
        f"{stats.prompt_seconds * 1000:.0f} ms, first answer "
        f"{'-' if first is None else f'{first * 1000:.0f} ms'}{cut}, decode {stats.tokens} tokens "
        f"{stats.decode_seconds * 1000:.0f} ms ({stats.cache})"
    )


def _settle(future: asyncio.Future[Completion], completion: Completion) -> None:
    if not future.done():
        future.set_result(completion)
