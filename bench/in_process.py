"""The language server's scheduling, in process, for benchmarks of what a person waits for.

What handlers.py does, without the wire: an edit updates the engine's copy of the text and asks
for a prewarm of the edited place (evaluated once nothing has happened for a moment); a request
goes through the server's scheduler (typed-through cache, a running generation's text, the first
answer, idle work after it). `Server.paused()` stops all of it while another engine (plain
llama-cpp-python, in the same process) takes its turn on the same cores.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from spec_lsp.config import Settings
from spec_lsp.engine import Completion, CompletionRequest, Engine, SamplingParams
from spec_lsp.server.scheduler import Scheduler


class Server:
    def __init__(self, engine: Engine, settings: Settings, *, prewarm: bool = True) -> None:
        self.engine = engine
        self.settings = settings
        self.prewarm = prewarm
        self.scheduler = Scheduler(engine)
        self.opened: set[str] = set()

    def request(self, uri: str, name: str, prefix: str, suffix: str) -> CompletionRequest:
        return CompletionRequest(
            prefix,
            suffix,
            document_id=uri,
            file_name=name,
            language="python",
            max_tokens=self.settings.max_tokens,
            sampling=SamplingParams.from_settings(self.settings),
        )

    def open(self, request: CompletionRequest) -> None:
        """The engine follows the request's text (handlers.document_changed); the first time,
        as didOpen (no cursor yet: a document shown in a tab)."""
        text = request.prefix + request.suffix
        self.engine.document_changed(request.document_id, text)
        if request.document_id not in self.opened:
            self.opened.add(request.document_id)
            self.scheduler.opened(replace(request, prefix="", suffix=text))

    def focus(self, request: CompletionRequest) -> None:
        """specLsp/didFocus: an open document brought into view takes the file prefix."""
        text = request.prefix + request.suffix
        self.scheduler.opened(replace(request, prefix="", suffix=text))

    def edit(self, request: CompletionRequest) -> None:
        """didChange with the cursor left at the request's place (handlers.document_changed);
        a document's first edit is preceded by its didOpen."""
        self.open(request)
        if self.prewarm:
            self.scheduler.prewarm(request)

    async def close_document(self, uri: str) -> None:
        """didClose: the engine releases what it held for the document, on its worker
        (handlers.document_closed)."""
        self.opened.discard(uri)
        await self.scheduler.run(lambda: self.engine.document_closed(uri))

    async def ask(
        self, request: CompletionRequest, *, invoked: bool = True
    ) -> tuple[Completion | None, float]:
        """(the answer, seconds to it): what the editor shows and when."""
        started = time.perf_counter()
        completion = await self.scheduler.complete(request, invoked=invoked)
        return completion, time.perf_counter() - started

    @asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """No work of this server on the cores inside (generations, prewarm, idle work)."""
        await self.scheduler.hold()
        try:
            yield
        finally:
            self.scheduler.release()

    async def read(self, seconds: float) -> None:
        """The person reads: the server has the time to itself."""
        await asyncio.sleep(seconds)

    async def read_until_quiet(self, least_s: float, most_s: float) -> float:
        """The person reads at least `least_s`, and on until the server has nothing left to do
        while idle (at most `most_s`). Returns the seconds read."""
        started = time.perf_counter()
        await asyncio.sleep(least_s)
        while not self.scheduler.quiet and time.perf_counter() - started < most_s:
            await asyncio.sleep(0.1)
        return time.perf_counter() - started

    def close(self) -> None:
        self.scheduler.join()
