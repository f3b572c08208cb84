"""The generation running now and the text it has produced so far: a request that only typed
what that generation wrote (or may still write: it has not got that far) is answered by it (the
server lets it go on) instead of cancelling it and starting again."""

from __future__ import annotations

from collections.abc import Sequence

from spec_lsp.engine.types import CompletionRequest


class InFlight:
    def __init__(self) -> None:
        self._running: tuple[CompletionRequest, str] | None = None
        self._logprobs: Sequence[float] = ()

    def track(
        self, request: CompletionRequest, produced: str, logprobs: Sequence[float] = ()
    ) -> None:
        """After each decode round: the text committed so far for `request`, and the target's
        log probabilities of its tokens (the generation's own list, growing: the gate's)."""
        self._running, self._logprobs = (request, produced), logprobs

    def clear(self) -> None:
        self._running, self._logprobs = None, ()

    def generated(self) -> tuple[str, list[float]]:
        """The running generation's text so far and its tokens' log probabilities (a copy)."""
        running = self._running
        return (running[1] if running else ""), list(self._logprobs)

    @property
    def running(self) -> int:
        """1 while a generation is tracked, else 0 (for the memory figures)."""
        return int(self._running is not None)

    def extended_by(self, request: CompletionRequest) -> bool:
        """Whether `request` typed nothing the running generation did not write or may still
        write (from the start of its prompt's evaluation on)."""
        found = self._typed(request)
        if found is None:
            return False
        typed, produced = found
        return produced.startswith(typed) or typed.startswith(produced)

    def ahead_of(self, request: CompletionRequest) -> tuple[str, str] | None:
        """(what `request` typed since the running generation's request, what that generation
        wrote beyond it) if `request` only typed what it wrote; else None."""
        found = self._typed(request)
        if found is None:
            return None
        typed, produced = found
        return (typed, produced[len(typed) :]) if produced.startswith(typed) else None

    def _typed(self, request: CompletionRequest) -> tuple[str, str] | None:
        """(what `request` typed since the running generation's request, what that generation
        wrote), if `request` is at the same place with more typed."""
        running = self._running
        if running is None:
            return None
        old, produced = running
        if (old.document_id, old.suffix) != (request.document_id, request.suffix):
            return None
        if not request.prefix.startswith(old.prefix):
            return None
        return request.prefix[len(old.prefix) :], produced
