"""Token counts by a remote server's own tokenizer, for the remote prompt's window budget.

The window (prompts/window.py) counts its text a block of lines at a time, blocks whose edges sit
at fixed line numbers: from one keystroke to the next they are the same texts, except the one
being typed in. So each text is counted once by the server (its tokenize endpoint: llama-server,
vLLM, llama_cpp.server), on a thread of its own, never on the request's path: a text not counted
yet is estimated from the characters per token measured so far, and queued until the request
has been answered. After the first
request at a place, the budget is the server's count; the text being typed in stays estimated,
by the characters per token of what was counted.

A server with no tokenize endpoint is estimated throughout (`countable` False); the estimate
learns from the prompt token counts the server reports with its answers (`learn`).

Counting happens after a request has streamed, and waits while another streams (`asking`):
llama_cpp.server interrupts a streaming completion when another request comes in.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cachetools import LRUCache

CHARS_PER_TOKEN = 3.0  # code in BPE vocabularies runs 3-4 characters a token: err on the short side
KNOWN = 2048  # texts whose count is kept (window blocks: 16 lines each)
WAITING = 256  # texts queued for counting at most (older ones are dropped)


class ServerTokens:
    """`count(text)`: the server's count when known, else an estimate (and the text queued)."""

    def __init__(
        self,
        counter: Callable[[str], int | None] | None = None,
        chars_per_token: float = CHARS_PER_TOKEN,
    ) -> None:
        self.counter = counter  # the server's tokenizer; None: it has none
        self.chars_per_token = chars_per_token
        self.counted = 0  # texts (blocks, prompts) whose server count was learnt from
        self.hits = 0  # counts answered by the server's figure
        self.estimates = 0  # counts answered by an estimate
        self._known: LRUCache[str, int] = LRUCache(maxsize=KNOWN)
        self._waiting: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._asking = 0  # requests streaming now
        self._quiet = threading.Event()  # set while none is
        self._quiet.set()
        self._gate = threading.Lock()  # held by a count in flight: a request starts after it

    @property
    def countable(self) -> bool:
        return self.counter is not None

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            known = self._known.get(text)
            if known is not None:
                self.hits += 1
                return known
            self.estimates += 1
            if self.counter is not None and not self._closed:
                self._waiting[text] = None
                while len(self._waiting) > WAITING:
                    self._waiting.popitem(last=False)
        return self.estimate(text)

    def estimate(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def learn(self, text: str, tokens: int) -> None:
        """Characters per token of a prompt really sent (the server's count): a running mean,
        the latest weighing at least a fifth, so the estimate follows the code edited."""
        if tokens <= 0 or not text:
            return
        self.counted += 1
        weight = max(1 / self.counted, 0.2)
        self.chars_per_token += weight * (len(text) / tokens - self.chars_per_token)

    @contextmanager
    def asking(self) -> Iterator[None]:
        """While a request streams from the server: no counting meanwhile (one in flight
        ends first: a few milliseconds)."""
        with self._gate, self._lock:
            self._asking += 1
            self._quiet.clear()
        try:
            yield
        finally:
            with self._lock:
                self._asking -= 1
                if not self._asking:
                    self._quiet.set()
                    if self._waiting and not self._closed:
                        self._start()  # what this request's prompt left to count

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._waiting.clear()
        self._quiet.set()

    def snapshot(self) -> dict[str, float | int]:
        with self._lock:
            return {
                "known": len(self._known),
                "hits": self.hits,
                "estimates": self.estimates,
                "chars_per_token": round(self.chars_per_token, 3),
            }

    def _start(self) -> None:  # (under the lock)
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(
                target=self._drain, name="spec-lsp-remote-tokens", daemon=True
            )
            self._worker.start()

    def _drain(self) -> None:
        counter = self.counter
        assert counter is not None
        while True:
            self._quiet.wait()  # (not while a request streams)
            with self._gate:
                with self._lock:
                    if self._asking:
                        continue
                    if self._closed or not self._waiting:
                        self._worker = None
                        return
                    text, _ = self._waiting.popitem(last=False)
                try:
                    tokens = counter(text)
                except Exception:  # the server went away or closed meanwhile: estimates go on
                    tokens = None
            if tokens is None:
                with self._lock:
                    self._waiting.clear()
                    self._worker = None
                return
            with self._lock:
                self._known[text] = tokens
            self.learn(text, tokens)  # the estimate of what is not counted yet follows
