"""The generation running now and the text it has produced so far: a request that only typed
what that generation already wrote is answered by it (the server lets it finish) instead of
cancelling it and starting again."""

from __future__ import annotations

from spec_lsp.engine.types import CompletionRequest


class InFlight:
    def __init__(self) -> None:
        self._running: tuple[CompletionRequest, str] | None = None

    def track(self, request: CompletionRequest, produced: str) -> None:
        """After each decode round: the text committed so far for `request`."""
        self._running = (request, produced)

    def clear(self) -> None:
        self._running = None

    @property
    def running(self) -> int:
        """1 while a generation is tracked, else 0 (for the memory figures)."""
        return int(self._running is not None)

    def extended_by(self, request: CompletionRequest) -> bool:
        return self.ahead_of(request) is not None

    def ahead_of(self, request: CompletionRequest) -> tuple[str, str] | None:
        """(what `request` typed since the running generation's request, what that generation
        wrote beyond it) if `request` only typed what it wrote; else None."""
        running = self._running
        if running is None:
            return None
        old, produced = running
        if (old.document_id, old.suffix) != (request.document_id, request.suffix):
            return None
        if not request.prefix.startswith(old.prefix):
            return None
        typed = request.prefix[len(old.prefix) :]
        return (typed, produced[len(typed) :]) if produced.startswith(typed) else None
