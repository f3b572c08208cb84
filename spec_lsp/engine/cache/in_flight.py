"""The generation running now and the text it has produced so far: a request that only typed
what that generation wrote (or may still write: it has not got that far) is answered by it (the
server lets it go on) instead of cancelling it and starting again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from spec_lsp.engine.types import CompletionRequest


class Ahead(NamedTuple):
    typed: str  # what the request typed since the running generation's request
    ahead: str  # what that generation wrote beyond it
    produced: str  # all it wrote so far
    logprobs: list[float]  # the target's, of those tokens (what the gate reads)


class InFlight:
    def __init__(self) -> None:
        # one attribute, replaced whole: a reader on another thread sees one generation's state
        self._running: tuple[CompletionRequest, str, Sequence[float]] | None = None

    def track(
        self, request: CompletionRequest, produced: str, logprobs: Sequence[float] = ()
    ) -> None:
        """After each decode round: the text committed so far for `request`, and the target's
        log probabilities of its tokens (the generation's own list, growing)."""
        self._running = (request, produced, logprobs)

    def clear(self) -> None:
        self._running = None

    @property
    def running(self) -> int:
        """1 while a generation is tracked, else 0 (for the memory figures)."""
        return int(self._running is not None)

    def extended_by(self, request: CompletionRequest) -> bool:
        """Whether `request` typed nothing the running generation did not write or may still
        write (from the start of its prompt's evaluation on)."""
        found = self._typed(request, self._running)
        if found is None:
            return False
        typed, produced = found
        return produced.startswith(typed) or typed.startswith(produced)

    def ahead_of(self, request: CompletionRequest) -> Ahead | None:
        """What the running generation wrote beyond what `request` typed since its request, if
        `request` only typed what it wrote; else None."""
        running = self._running
        found = self._typed(request, running)
        if running is None or found is None:
            return None
        typed, produced = found
        if not produced.startswith(typed):
            return None
        return Ahead(typed, produced[len(typed) :], produced, list(running[2]))

    def _typed(
        self,
        request: CompletionRequest,
        running: tuple[CompletionRequest, str, Sequence[float]] | None,
    ) -> tuple[str, str] | None:
        """(what `request` typed since the running generation's request, what that generation
        wrote), if `request` is at the same place with more typed."""
        if running is None:
            return None
        old, produced, _logprobs = running
        if (old.document_id, old.suffix) != (request.document_id, request.suffix):
            return None
        if not request.prefix.startswith(old.prefix):
            return None
        return request.prefix[len(old.prefix) :], produced
