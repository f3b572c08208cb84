"""The remote stage: a server's model (`engine: remote`), behind the same small interface as the
in-process stage (`stage.CompletingStage`).

A request: the server's health (`health`: backoff, one notice per problem; asking it again what
it serves after it was down) in place of the KV caches, then one request to the server (`ask`:
the prompt for its endpoint, the stream) in place of the speculative loop. A fault answers
empty. While idle: the context block of the last place asked, chosen again only when the cursor
moves to another stretch of lines (the server reuses its cache of a prompt's head only while
the head stays the same); after an edit, the server's prompt cache filled for the place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine.answer import Answer
from spec_lsp.engine.finishing import gate_weights
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.engine.finishing.postprocess import Shaping
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.remote import ask
from spec_lsp.engine.remote.client import RemoteFault
from spec_lsp.engine.remote.connect import RemoteLoaded, connect_remote, open_remote
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.stores import Stores
from spec_lsp.engine.types import CancelToken, CompletionRequest, EngineError

log = logging.getLogger(__name__)

# faults after which the server is asked again what it serves (it may have restarted)
RECONNECT_AFTER = frozenset({"down", "tls", "dropped", "model"})
# the block is chosen again when the cursor moves to another stretch of this many lines
REMOTE_BLOCK_LINES = 40


class RemoteStage:
    needs_profile = False  # the server decodes: no cost profile of this machine
    focus = ""  # (no file prefix: the server keeps its own prompt cache)

    def __init__(
        self, remote: RemoteLoaded, *, settings: Settings, stores: Stores, totals: EngineTotals
    ) -> None:
        self.remote, self.settings, self.stores, self.totals = remote, settings, stores, totals
        self._place: CompletionRequest | None = None  # the last place asked
        self._gate: tuple[tuple[str, str], GateModel | None] | None = None  # (for the model)

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        report: Callable[[str], None],
        notify: Callable[[str], None],
        stores: Stores,
        totals: EngineTotals,
    ) -> RemoteStage:
        """The client for `remoteUrl`, connected if the server answers (connect.py)."""
        remote = open_remote(settings, report, notify)
        return cls(remote, settings=settings, stores=stores, totals=totals)

    def configure(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def gate(self) -> GateModel | None:
        """Weights fitted on this server's model here, if any: else the gate is off (the
        server's model is not known to be the one the shipped weights were fitted on)."""
        key = (self.remote.client.url, self.remote.model)  # (the model: named once connected)
        if self._gate is None or self._gate[0] != key:
            self._gate = (key, gate_weights.for_remote(*key))
        return self._gate[1]

    def close(self) -> None:
        self.remote.close()

    def opened(self, request: CompletionRequest) -> None:
        """(No file prefix: the server keeps its own prompt cache.)"""

    def document_changed(self, document_id: str, text: str) -> None:
        """(Nothing kept per document beside the shared stores.)"""

    def document_closed(self, document_id: str) -> None:
        """(Nothing kept per document beside the shared stores.)"""

    # -- a request ---------------------------------------------------------------------------
    def complete(self, answer: Answer) -> str | None:
        """The server's text (None: a fault, told once by `health`, or inside its backoff).
        The stream fills the statistics: a first answer copies them."""
        remote, request, stats = self.remote, answer.request, answer.stats
        stats.cache, stats.engine, stats.drafter = answer.kind or "remote", "remote", "none"
        stats.stop_reason = "fault"
        if not self._ready():  # inside a backoff, or the server still down
            return None
        self._place = request
        block = self.stores.context.block_for(request.document_id)  # (chosen while idle)
        try:
            prompt, generated = ask.ask(
                remote, answer, self.settings, block=block, logprobs=self.gate is not None
            )
        except RemoteFault as fault:  # (the answer settled: ask.ask)
            remote.health.failed(fault.kind, str(fault))
            remote.connected = remote.connected and fault.kind not in RECONNECT_AFTER
            stats.stop_reason = "fault"
            return None
        remote.health.succeeded()
        if block is not None and prompt.block_tokens:
            stats.context_chunks = block.describe()
            stats.context_tokens = prompt.block_tokens
            self.stores.context.record(prompt.block_tokens, 0)
        if stats.prompt_tokens:  # the server said how many tokens the prompt was
            remote.tokens.learn(prompt.text, stats.prompt_tokens)
        return prompt.generated(generated)

    def _ready(self) -> bool:
        """Outside a backoff, and connected (asking the server what it serves if it was down)."""
        remote = self.remote
        if not remote.health.available():
            return False
        if not remote.connected:
            try:
                connect_remote(remote, self.settings)
            except RemoteFault as fault:
                remote.health.failed(fault.kind, str(fault))
                return False
        return True

    # -- idle time ---------------------------------------------------------------------------
    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        """The server's prompt cache filled for the place edited (llama-server); its faults
        are left to the next request to tell."""
        remote = self.remote
        if not self.settings.cache or not remote.connected or not remote.health.available():
            return 0
        self._place = request  # (its block is chosen while idle)
        try:
            evaluated = ask.prewarm(
                remote,
                request,
                self.settings,
                multiline=Shaping(request, self.settings.multiline).multiline,
                block=self.stores.context.block_for(request.document_id),
                cancel=cancel,
            )
        except RemoteFault as fault:
            log.debug("prewarm at %s: %s", remote.client.url, fault)
            return 0
        self.totals.count_prewarm(evaluated)
        return evaluated

    block_pending = False  # (the block goes with each request: no KV here to hold it)

    @property
    def idle_work(self) -> bool:
        """The block of the last place asked to choose again."""
        return self._place is not None and self.stores.context.stale(self._focus())

    def idle_step(self, cancel: CancelToken) -> int:
        focus = self._focus()
        if self.stores.context.stale(focus):
            self._choose_block(focus)
        return 0

    def _focus(self) -> tuple[Any, ...]:
        """What the block is chosen for: the last place's document and stretch of lines."""
        place = self._place
        region = place.prefix.count("\n") // REMOTE_BLOCK_LINES if place is not None else -1
        document = place.document_id if place is not None else None
        return (document, region, self.settings.context_tokens)

    def _choose_block(self, focus: tuple[Any, ...]) -> None:
        """The block of the last place asked, chosen again when the cursor moved to another
        stretch of REMOTE_BLOCK_LINES lines or what it is chosen from changed (so the server's
        prompt cache keeps its head meanwhile). It takes half the prefix's budget at most: the
        prompt is no longer than without it."""
        place, settings, tokens = self._place, self.settings, self.remote.tokens
        first = 0  # (the window's first line: the prefix's budget in the server's tokens)
        if place is not None:
            prefix_chars = int(settings.prefix_tokens * tokens.chars_per_token)
            cursor_line = place.prefix.count("\n")
            first = max(0, cursor_line - place.prefix[-prefix_chars:].count("\n"))
        self.stores.context.choose_at(
            place,
            focus,
            first_line=first,
            budget=min(settings.context_tokens, settings.prefix_tokens // 2),
            count_tokens=tokens.count,
        )

    # -- what it reports ---------------------------------------------------------------------
    def ensure_profile(self, *, remeasure: bool = False) -> CostProfile:
        raise EngineError(
            "the cost profile measures the in-process model; with engine 'remote' the "
            "server decodes: set engine to 'local' to profile this machine"
        )

    def report(self) -> dict[str, Any]:
        """The server in use and its health (never the API key)."""
        remote = self.remote
        return {
            "models": [remote.model] if remote.model else [],
            "remote": {
                "url": remote.client.url,
                "model": remote.model or None,
                "fim_template": remote.template.name if remote.template else None,
                "server": remote.server or None,
                "endpoint": remote.endpoint,
                "tokens": remote.tokens.snapshot(),
                "connected": remote.connected,
                **remote.health.report(),
            },
            "cost_profile": None,
        }

    def memory(self) -> dict[str, Any]:
        return {}
