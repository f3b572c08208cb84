"""The soak's JSON-RPC client over the server's stdio, and its ledger: every request sent, when,
whether the client cancelled it, and what its answer was.

The ledger is the accounting the soak's verdict rests on (pure: times are passed in):
- an error answer is a failure, except RequestCancelled (-32800) for a request the client
  cancelled, which counts as `cancelled`;
- a second answer to the same id, or an answer to an id never sent, is a failure;
- a request still open when the soak stops waiting is a failure, listed with its age.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

REQUEST_CANCELLED = -32800
INLINE = "textDocument/inlineCompletion"


def clock(wall: float) -> str:
    """Local wall-clock time as the server's log writes it (HH:MM:SS,mmm)."""
    return time.strftime("%H:%M:%S", time.localtime(wall)) + f",{int(wall % 1 * 1000):03d}"


@dataclass
class Request:
    id: int
    method: str
    uri: str | None
    position: tuple[int, int] | None  # (line, character)
    sent: float  # seconds since the soak started
    wall: float  # time.time() when sent
    cancelled: float | None = None  # when the client sent $/cancelRequest for it
    answered: float | None = None
    outcome: str | None = None  # items, empty, cancelled, error; result for other methods
    error: Any = None
    late: float | None = None  # its age when the soak stopped waiting, if it was open then

    def describe(self, now: float | None = None) -> str:
        where = ""
        if self.uri is not None:
            where = f" {self.uri}"
            if self.position is not None:
                where += f" {self.position[0]}:{self.position[1]}"
        text = f"#{self.id} {self.method}{where}, sent at t={self.sent:.3f}s ({clock(self.wall)})"
        if self.cancelled is not None:
            text += f", cancelled by the client at t={self.cancelled:.3f}s"
        if self.late is not None:
            text += f", still open after {self.late:.1f}s"
        elif self.answered is not None:
            text += f", answered after {self.answered - self.sent:.3f}s"
        elif now is not None:
            text += f", open for {now - self.sent:.1f}s"
        return text


def _summary(method: str, params: Any) -> tuple[str | None, tuple[int, int] | None]:
    if not isinstance(params, dict):
        return None, None
    document = params.get("textDocument")
    uri = document.get("uri") if isinstance(document, dict) else params.get("uri")
    position = params.get("position")
    where = (position["line"], position["character"]) if isinstance(position, dict) else None
    return uri, where


def items_of(result: Any) -> list[Any]:
    """An inline completion's items: the answer is a list, {items: [...]} or null."""
    if isinstance(result, dict):
        return list(result.get("items") or [])
    return list(result) if isinstance(result, list) else []


class Ledger:
    """What became of every request (times in seconds since the soak started)."""

    def __init__(self) -> None:
        self.requests: dict[int, Request] = {}
        self.open: dict[int, Request] = {}
        self.outcomes: Counter[str] = Counter()  # inline completions' answers
        self.errors: list[Request] = []
        self.duplicates: list[Request] = []
        self.unknown: list[dict[str, Any]] = []  # answers to ids never sent
        self.latencies: list[tuple[float, float]] = []  # (answered at, seconds): items, empty
        self.sent_inline = 0

    def sent(
        self, id: int, method: str, params: Any, now: float, wall: float | None = None
    ) -> Request:
        uri, position = _summary(method, params)
        request = Request(id, method, uri, position, now, time.time() if wall is None else wall)
        self.requests[id] = self.open[id] = request
        self.sent_inline += method == INLINE
        return request

    def cancel(self, id: int, now: float) -> bool:
        """The client sent $/cancelRequest; False if the request was no longer open."""
        request = self.open.get(id)
        if request is None or request.cancelled is not None:
            return False
        request.cancelled = now
        return True

    def answer(self, msg: dict[str, Any], now: float) -> Request | None:
        """Record an answer; the request when this was its first answer, else None."""
        request = self.requests.get(msg.get("id"))  # type: ignore[arg-type]
        if request is None:
            self.unknown.append(msg)
            return None
        if request.answered is not None:
            self.duplicates.append(request)
            return None
        del self.open[request.id]
        request.answered = now
        if "error" in msg:
            request.error = msg["error"]
            code = msg["error"].get("code") if isinstance(msg["error"], dict) else None
            if code == REQUEST_CANCELLED and request.late is not None:
                request.outcome = "late"  # cancelled by the server's shutdown
            elif code == REQUEST_CANCELLED and request.cancelled is not None:
                request.outcome = "cancelled"
            else:
                request.outcome = "error"
                self.errors.append(request)
        elif request.late is not None:
            request.outcome = "late"
        elif request.method == INLINE:
            request.outcome = "items" if items_of(msg.get("result")) else "empty"
            self.latencies.append((now, now - request.sent))
        else:
            request.outcome = "result"
        if request.method == INLINE:
            self.outcomes[request.outcome] += 1
        return request

    def still_open(self) -> list[Request]:
        return sorted(self.open.values(), key=lambda r: r.sent)

    def close(self, now: float) -> list[Request]:
        """The soak stops waiting: what is open now is left open (a failure); the
        RequestCancelled answers the server gives them at shutdown are not errors."""
        left = self.still_open()
        for request in left:
            request.late = now - request.sent
        return left

    def failures(self) -> list[str]:
        """One line per failure: error answers, answers twice or to unknown ids, open requests."""
        lines = [f"error answer {r.error} to {r.describe()}" for r in self.errors]
        lines += [f"answered twice: {r.describe()}" for r in self.duplicates]
        lines += [f"answer to an id never sent: {json.dumps(m)[:300]}" for m in self.unknown]
        lines += [
            f"not answered in time: {r.describe()}"
            for r in self.requests.values()
            if r.late is not None
        ]
        return lines


class Client:
    """JSON-RPC over a server's stdin/stdout; every request goes through the ledger."""

    def __init__(self, proc: asyncio.subprocess.Process, ledger: Ledger, started: float) -> None:
        self.proc, self.ledger, self.started = proc, ledger, started
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.on_answer: list[Any] = []  # callbacks (request, msg)
        self.on_error: list[Any] = []  # callbacks (request): an error answer, as it comes
        self.broken: str | None = None  # why the connection ended
        self.reader = asyncio.ensure_future(self._read())

    def now(self) -> float:
        return time.monotonic() - self.started

    def _write(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def flush(self, timeout: float) -> None:
        """Wait until the server has read what was written (TimeoutError if it stops reading)."""
        assert self.proc.stdin is not None
        await asyncio.wait_for(self.proc.stdin.drain(), timeout)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> int:
        """Send a request; its answer goes to the ledger and the on_answer callbacks."""
        self.next_id += 1
        self.ledger.sent(self.next_id, method, params, self.now())
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    async def call(self, method: str, params: Any, timeout: float = 60.0) -> Any:
        """A request whose result the soak needs; raises on an error answer or no answer."""
        if self.broken:
            raise ConnectionError(self.broken)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id + 1] = future
        self.request(method, params)
        msg = await asyncio.wait_for(future, timeout)
        if "error" in msg:
            raise RuntimeError(f"{method} answered {msg['error']}")
        return msg.get("result")

    async def initialize(self, options: dict[str, Any], timeout: float) -> float:
        """initialize, initialized, then specLsp/stats until ready; the seconds that took."""
        loaded = time.monotonic()
        params = {"capabilities": {}, "initializationOptions": options}
        await self.call("initialize", params, timeout)
        self.notify("initialized", {})
        while not (stats := await self.call("specLsp/stats", None, timeout))["ready"]:
            if stats.get("load_error"):
                raise RuntimeError(f"the model did not load: {stats['load_error']}")
            if time.monotonic() - loaded > timeout:
                raise TimeoutError(f"not ready after {timeout:.0f}s")
            await asyncio.sleep(0.2)
        return time.monotonic() - loaded

    def cancel(self, id: int) -> None:
        if self.ledger.cancel(id, self.now()):
            self.notify("$/cancelRequest", {"id": id})

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                length = 0
                while (line := (await stdout.readline()).strip()) != b"":
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if not length:
                    self.broken = "the server closed its stdout"
                    break
                msg = json.loads(await stdout.readexactly(length))
                if "method" in msg:
                    if "id" in msg:  # a request from the server: answer it (nothing to configure)
                        self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                    continue
                request = self.ledger.answer(msg, self.now())
                future = self.waiting.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
                if request is not None:
                    if request.outcome == "error":
                        for callback in self.on_error:
                            callback(request)
                    for callback in self.on_answer:
                        callback(request, msg)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.broken = f"reading the server's stdout: {exc!r}"
        except Exception as exc:  # a malformed message: the soak must say so, not hang
            self.broken = f"reading the server's stdout: {exc!r}"
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError(self.broken))
        self.waiting.clear()
