"""The scheduler against a scripted engine: newest wins, one waiting request per document,
cancellation reaches the decode loop, exactly one answer each, the engine closes on its thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from spec_lsp.engine import CancelToken, Completion, CompletionRequest, DecodeStats
from spec_lsp.server.scheduler import (
    CANCEL_GRACE_S,
    PREWARM_DELAY_S,
    Scheduler,
    percentile_ms,
)


class ScriptedEngine:
    """complete() blocks until `release` is set, polling its cancel token like a decode loop;
    for a prefix starting with "early" it first gives a first answer (the latency budget)."""

    def __init__(self) -> None:
        self.ready = True
        self.release = threading.Event()
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.cached: dict[str, Completion] = {}
        self.in_flight: str | None = None
        self.closed_on: str | None = None
        self.prewarmed: list[str] = []

    def peek(self, request: CompletionRequest) -> Completion | None:
        return self.cached.get(request.prefix)

    idle_work = False  # (nothing for idle time)
    block_pending = False
    in_flight_line: Completion | None = None  # what the running generation already wrote

    def extends_in_flight(self, request: CompletionRequest) -> bool:
        return self.in_flight is not None and request.prefix.startswith(self.in_flight)

    def from_in_flight(self, request: CompletionRequest) -> Completion | None:
        return self.in_flight_line if self.extends_in_flight(request) else None

    def complete(
        self, request: CompletionRequest, cancel: CancelToken, reply=None, peeked=False
    ) -> Completion:
        self.started.append(request.prefix)
        if request.prefix == "crash":
            raise RuntimeError("a bug")
        if request.prefix.startswith("early") and reply is not None:
            reply(Completion(text="<first line>", stats=DecodeStats()))  # then goes on
        try:
            while not self.release.wait(0.002):
                cancel.raise_if_cancelled()  # between "decode rounds"
        except Exception:
            self.cancelled.append(request.prefix)
            raise
        return Completion(text=f"<{request.prefix}>", stats=DecodeStats())

    def precompute(self, request, shown, cancel) -> None:
        pass

    def prewarm(self, request, cancel) -> int:
        self.prewarmed.append(request.prefix)
        return 0

    def shutdown(self) -> None:
        self.closed_on = threading.current_thread().name

    def stats(self) -> dict:
        return {}


def req(prefix: str, document: str = "file:///a.py") -> CompletionRequest:
    return CompletionRequest(prefix=prefix, document_id=document)


async def until(condition, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.002)


@pytest.fixture
def engine():
    engine = ScriptedEngine()
    yield engine
    engine.release.set()


@pytest.fixture
def scheduler(engine):
    scheduler = Scheduler(engine)  # type: ignore[arg-type]
    yield scheduler
    scheduler.join()


async def test_not_ready_is_answered_at_once(engine, scheduler):
    engine.ready, scheduler.first_load = False, False  # (no load to wait for: it failed)
    assert await scheduler.complete(req("a")) is None
    assert scheduler.counts["not_ready"] == 1 and engine.started == []


async def test_typed_through_is_answered_without_the_worker(engine, scheduler):
    engine.cached["ab"] = Completion(text="c", stats=DecodeStats(), typed="b")
    assert (await scheduler.complete(req("ab"))).text == "c"
    assert scheduler.counts["typed_through"] == 1 and engine.started == []


async def test_a_newer_request_supersedes_the_running_one(engine, scheduler):
    older = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    newer = asyncio.ensure_future(scheduler.complete(req("ab")))
    assert await asyncio.wait_for(older, 1) is None  # answered before the newer one finishes
    assert not newer.done()
    await until(lambda: engine.cancelled == ["a"])  # the decode loop saw its token
    engine.release.set()
    assert (await newer).text == "<ab>"
    assert scheduler.counts["superseded"] == 1 and scheduler.counts["served"] == 1


async def test_a_first_answer_is_sent_while_the_generation_goes_on(engine, scheduler):
    first = await asyncio.wait_for(scheduler.complete(req("early")), 1)
    assert first.text == "<first line>" and scheduler.counts["answered_early"] == 1
    assert engine.started == ["early"] and engine.cancelled == []  # still generating
    assert scheduler.stats()["pending"]["generations"] == 1
    engine.release.set()
    await until(lambda: scheduler.stats()["pending"]["generations"] == 0)
    assert engine.cancelled == []


async def test_a_keystroke_after_a_first_answer_stops_the_generation_behind_it(engine, scheduler):
    assert (await asyncio.wait_for(scheduler.complete(req("early")), 1)).text == "<first line>"
    newer = asyncio.ensure_future(scheduler.complete(req("earlyX")))  # not what it produced
    await until(lambda: engine.cancelled == ["early"])
    assert (await asyncio.wait_for(newer, 1)).text == "<first line>"
    engine.release.set()


async def test_at_most_one_request_per_document_waits_and_it_never_runs(engine, scheduler):
    busy = asyncio.ensure_future(scheduler.complete(req("x", "file:///other.py")))
    await until(lambda: engine.started == ["x"])
    waiting = asyncio.ensure_future(scheduler.complete(req("b")))
    await asyncio.sleep(0.01)
    newest = asyncio.ensure_future(scheduler.complete(req("bc")))
    assert await asyncio.wait_for(waiting, 1) is None  # answered now, not after "x"
    engine.release.set()
    assert (await newest).text == "<bc>" and (await busy).text == "<x>"
    assert engine.started == ["x", "bc"]  # "b" never ran


async def test_task_cancellation_reaches_the_decode_loop(engine, scheduler):
    task = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    task.cancel()  # what pygls does on $/cancelRequest
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: engine.cancelled == ["a"])
    assert scheduler.counts["cancelled"] == 1
    engine.release.set()
    assert (await scheduler.complete(req("z"))).text == "<z>"  # the worker is free


async def test_a_request_the_running_generation_already_covers_waits_for_it(engine, scheduler):
    engine.in_flight = "a"
    running = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    typed = asyncio.ensure_future(scheduler.complete(req("ab")))
    await asyncio.sleep(0.02)
    assert engine.cancelled == [] and not typed.done()  # the running one is kept
    engine.cached["ab"] = Completion(text="c", stats=DecodeStats(), typed="b")
    engine.release.set()
    assert (await running).text == "<a>"
    assert (await typed).text == "c"
    assert engine.started == ["a"]


async def test_a_line_the_running_generation_wrote_answers_before_it_ends(engine, scheduler):
    engine.in_flight = "a"
    running = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    typed = asyncio.ensure_future(scheduler.complete(req("ab")))
    await asyncio.sleep(0.02)
    assert not typed.done()  # no complete line beyond what was typed yet
    engine.in_flight_line = Completion(text="c = 1", stats=DecodeStats())
    assert (await asyncio.wait_for(typed, 1.0)).text == "c = 1"
    assert not running.done() and engine.cancelled == []  # the generation goes on
    engine.release.set()
    assert (await running).text == "<a>"


async def test_a_cancelled_requests_generation_stops_after_the_grace(engine, scheduler):
    task = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    started = asyncio.get_running_loop().time()
    task.cancel()  # $/cancelRequest, and nothing follows (the person pressed Escape)
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: engine.cancelled == ["a"])
    waited = asyncio.get_running_loop().time() - started
    assert CANCEL_GRACE_S - 0.05 <= waited < CANCEL_GRACE_S + 1.0


async def test_the_next_keys_request_takes_over_a_cancelled_requests_generation(engine, scheduler):
    """VS Code cancels each key's request as it sends the next: when the next key is what the
    generation writes, the generation goes on and answers it."""
    engine.in_flight = "a"
    first = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    first.cancel()  # $/cancelRequest for the previous key
    with pytest.raises(asyncio.CancelledError):
        await first
    typed = asyncio.ensure_future(scheduler.complete(req("ab")))  # the next key
    await asyncio.sleep(CANCEL_GRACE_S + 0.2)
    assert engine.cancelled == [] and engine.started == ["a"]  # kept past the grace
    engine.in_flight_line = Completion(text="c = 1", stats=DecodeStats())
    assert (await asyncio.wait_for(typed, 1.0)).text == "c = 1"
    engine.release.set()


async def test_a_generation_whose_followers_are_all_cancelled_stops_after_the_grace(
    engine, scheduler
):
    engine.in_flight = "a"
    first = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    first.cancel()
    typed = asyncio.ensure_future(scheduler.complete(req("ab")))  # takes the generation over
    await asyncio.sleep(0.05)
    typed.cancel()  # and is cancelled too (Escape): nobody waits for the generation now
    with pytest.raises(asyncio.CancelledError):
        await typed
    await until(lambda: engine.cancelled == ["a"], timeout=CANCEL_GRACE_S + 1.0)


async def test_a_generation_that_writes_something_else_is_stopped_for_the_new_key(
    engine, scheduler
):
    engine.in_flight = "a"  # nothing written yet: "ab" may be what it writes
    running = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    typed = asyncio.ensure_future(scheduler.complete(req("ab")))
    await asyncio.sleep(0.02)
    assert engine.cancelled == [] and not typed.done()
    engine.in_flight = "ax"  # it wrote "x": not what was typed
    await until(lambda: engine.cancelled == ["a"])
    engine.release.set()
    assert (await asyncio.wait_for(typed, 1.0)).text == "<ab>"
    assert await running is None
    assert engine.started == ["a", "ab"]


async def test_held_the_worker_stops_and_starts_nothing_until_released(engine, scheduler):
    """hold(): a benchmark's other engine gets the cores to itself."""
    running = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    await scheduler.hold()
    assert engine.cancelled == ["a"] and await running is None
    scheduler.prewarm(req("b"))
    await asyncio.sleep(PREWARM_DELAY_S + 0.1)
    assert engine.prewarmed == []
    scheduler.release()
    scheduler.prewarm(req("c"))
    await until(lambda: engine.prewarmed == ["c"])


async def test_an_edits_prewarm_waits_for_a_busy_worker_then_runs(engine, scheduler):
    """The last suggestion's generation going on behind its answer does not lose the prewarm
    of the place edited meanwhile."""
    running = asyncio.ensure_future(scheduler.complete(req("early")))
    assert (await asyncio.wait_for(running, 1)).text == "<first line>"  # answered, goes on
    scheduler.prewarm(req("b"))
    await asyncio.sleep(PREWARM_DELAY_S + 0.1)
    assert engine.prewarmed == []  # the worker is busy
    engine.release.set()
    await until(lambda: engine.prewarmed == ["b"])


async def test_an_engine_bug_is_an_empty_answer_and_the_server_goes_on(engine, scheduler):
    assert await scheduler.complete(req("crash")) is None
    assert scheduler.counts["errors"] == 1
    engine.release.set()
    assert (await scheduler.complete(req("fine"))).text == "<fine>"


async def test_debounce_skips_requests_typed_over(engine):
    scheduler = Scheduler(engine, debounce_s=0.05)  # type: ignore[arg-type]
    engine.release.set()
    first = asyncio.ensure_future(scheduler.complete(req("a")))
    await asyncio.sleep(0.01)
    second = asyncio.ensure_future(scheduler.complete(req("ab")))
    assert await first is None and (await second).text == "<ab>"
    assert engine.started == ["ab"]
    scheduler.join()


async def test_every_request_of_a_burst_gets_exactly_one_answer(engine, scheduler):
    tasks = [
        asyncio.ensure_future(scheduler.complete(req("p" * (i + 1), f"file:///{i % 3}.py")))
        for i in range(30)
    ]
    await asyncio.sleep(0.01)
    for task in tasks[:24:7]:
        task.cancel()
    engine.release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert len(results) == 30
    answered = sum(not isinstance(r, BaseException) for r in results)
    counts = scheduler.counts
    outcomes = counts["served"] + counts["empty"] + counts["superseded"] + counts["cancelled"]
    assert outcomes == counts["requests"] == 30 and answered == 30 - counts["cancelled"]
    assert [r.text for r in results[-3:]] == ["<" + "p" * n + ">" for n in (28, 29, 30)]


async def test_close_stops_the_generation_and_closes_the_engine_on_its_thread(engine):
    scheduler = Scheduler(engine)  # type: ignore[arg-type]
    running = asyncio.ensure_future(scheduler.complete(req("a")))
    await until(lambda: engine.started == ["a"])
    scheduler.close()
    assert await asyncio.wait_for(running, 1) is None
    await asyncio.get_running_loop().run_in_executor(None, scheduler.join)
    assert engine.cancelled == ["a"]
    assert engine.closed_on is not None and engine.closed_on.startswith("spec-lsp-engine")
    assert await scheduler.complete(req("b")) is None  # closed: empty answers


def test_percentiles():
    assert percentile_ms([], 0.5) is None
    assert percentile_ms([0.001], 0.95) == 1.0
    data = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile_ms(data, 0.5) == 50.0 and percentile_ms(data, 0.95) == 95.0
    assert percentile_ms([0.001, 0.002, 0.003, 0.004], 0.5) == 2.0
