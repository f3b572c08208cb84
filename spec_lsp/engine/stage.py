"""The interface of the stage that completes a request (`CompletingStage`): in process
(local/stage.py) or a server's (remote/stage.py); `NotLoaded` stands in before a load."""

from __future__ import annotations

from typing import Any, Protocol

from spec_lsp.config import Settings
from spec_lsp.engine.answer import Answer
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.types import (
    CancelToken,
    CompletionRequest,
    EngineError,
)


class CompletingStage(Protocol):
    """The stage that completes a request, and what it does while the person reads."""

    @property
    def needs_profile(self) -> bool:
        """Whether the adaptive policy still waits for this machine's cost profile."""

    def configure(self, settings: Settings) -> None:
        """New settings for the same model."""

    def complete(self, answer: Answer) -> str | None:
        """The generated text, before post-processing (None: answered empty); calls
        `answer.settled()` once it has generated (or failed to)."""

    def opened(self, request: CompletionRequest) -> None:
        """A document opened (the request: its start, no cursor yet)."""

    @property
    def focus(self) -> str:
        """The document it keeps in view ("" none): the context block is chosen for it."""

    def document_changed(self, document_id: str, text: str) -> None:
        """A document's text after an edit (or at open); instant (the editor's thread)."""

    def document_closed(self, document_id: str) -> None:
        """It releases what it held for the document (the engine's thread)."""

    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        """The prompt of the place edited evaluated ahead; the tokens evaluated."""

    @property
    def idle_work(self) -> bool:
        """Whether it has work for idle time."""

    @property
    def block_pending(self) -> bool:
        """Whether the document in view has a context block not in the KV yet (an edit then
        leaves the idle work running)."""

    def idle_step(self, cancel: CancelToken) -> int:
        """Its next piece of idle work, until done or cancelled; the tokens evaluated."""

    def ensure_profile(self, *, remeasure: bool = False) -> CostProfile:
        """This machine's cost profile, measured unless cached."""

    def report(self) -> dict[str, Any]:
        """What `stats()` shows of it."""

    def memory(self) -> dict[str, Any]:
        """What it keeps beside the shared stores, and its bound (any thread: sizes only)."""

    def close(self) -> None:
        """Release the model (or the connection)."""

    @property
    def gate(self) -> GateModel | None:
        """The confidence gate's weights for its model (gate_weights.py); None: the gate off."""


class NotLoaded:
    """The stage before a load, or after one failed: nothing to complete, nothing to do idle."""

    needs_profile = False
    idle_work = False
    block_pending = False
    focus = ""
    gate: GateModel | None = None

    def configure(self, settings: Settings) -> None:
        pass

    def complete(self, answer: Answer) -> str | None:
        raise EngineError("the model is not loaded yet")

    def opened(self, request: CompletionRequest) -> None:
        pass

    def document_changed(self, document_id: str, text: str) -> None:
        pass

    def document_closed(self, document_id: str) -> None:
        pass

    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        return 0

    def idle_step(self, cancel: CancelToken) -> int:
        return 0

    def ensure_profile(self, *, remeasure: bool = False) -> CostProfile:
        raise EngineError("the model is not loaded yet")

    def report(self) -> dict[str, Any]:
        return {"cost_profile": None}

    def memory(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass
