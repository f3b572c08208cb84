"""complete(request, cancel) = the caches -> the stage that completes -> finishing.

The caches answer first where they can, with no model call: a suggestion typed through
(`peek`), the running generation's text (`from_in_flight`, `extends_in_flight`). Otherwise one
stage completes the request, behind one small interface (`stage.CompletingStage`): in process
(`local/stage.py`: the prompt priced against the KV caches, the speculative loop) or on a server
(`remote/`: its health, one streamed request). Finishing post-processes the text with the
request's own rules (`postprocess.Shaping`, made once in `answer.begin`, read through the
answer) and remembers it.

Each stage owns its state: the stores kept per document whatever stage completes (`stores.py`,
where the editor's document events fan out to them), the context (`context/`), the models and
the file prefix (the in-process stage's). Idle work is one step (`idle_step`): the stores' own
(`stores.idle`: parsing, a first guide table), then the completing stage's next piece (the file
prefix, a block to choose, a place to prewarm).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine.answer import Answer, begin
from spec_lsp.engine.context.provider import ContextProvider
from spec_lsp.engine.finishing import confidence, gate_weights
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.engine.finishing.postprocess import Shaping
from spec_lsp.engine.local.stage import LocalStage
from spec_lsp.engine.parts import Parts
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.remote.stage import RemoteStage
from spec_lsp.engine.stage import CompletingStage, NotLoaded
from spec_lsp.engine.startup.loading import models_change
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.stores import Stores
from spec_lsp.engine.types import (
    CancelToken,
    Completion,
    CompletionRequest,
    DecodeStats,
    EngineError,
)

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class Engine:
    def __init__(self, settings: Settings, *, backend: str = "llama") -> None:
        self.settings = settings
        self.backend = backend
        self.totals = EngineTotals()
        self.stage: CompletingStage = NotLoaded()  # in process or a server's, once loaded
        # how the user is told about a remote server's faults (the server sets it; any thread)
        self.notify: Callable[[str], None] = lambda message: log.warning("%s", message)
        self.workspace_folders: list[str] = []
        # called from another thread when idle work appears unasked (a workspace read): the
        # server's scheduler sets it to start its idle work
        self.on_idle_work: Callable[[], None] = lambda: None
        context = ContextProvider(
            notify=lambda message: self.notify(message), changed=lambda: self.on_idle_work()
        )
        self.stores = Stores(context)
        self.stores.analyses.set_enabled(settings.guide and settings.engine == "local")
        self.parts = Parts(lambda: self.stage, self.stores)  # the in-process parts, for tools

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return not isinstance(self.stage, NotLoaded)

    @property
    def needs_profile(self) -> bool:
        """Whether the adaptive policy still needs this machine's cost profile (in-process)."""
        return self.stage.needs_profile

    @property
    def gate(self) -> GateModel | None:
        """The confidence gate's weights for the model in use: fitted on it, or shipped for
        the default model; None: none fitted for it, the gate is off (gate_weights.py)."""
        return self.stage.gate

    @property
    def gate_threshold(self) -> float:
        """The threshold in force: the setting's, or the weights' own; 0 with no weights."""
        return confidence.threshold_in_force(self.settings.gate_threshold, self.stage.gate)

    def load(self, progress: Progress | None = None) -> None:
        """Load (or reload) the models named by the settings. Raises EngineError with the fix."""
        report = progress or (lambda _msg: None)
        self.close()
        self.totals.engine = self.settings.engine
        stores, totals = self.stores, self.totals
        stores.ledger.clear()  # what drafting yields is the models' (and the machine's)
        if self.settings.engine == "remote":
            self.stage = RemoteStage.open(
                self.settings,
                report=report,
                notify=lambda message: self.notify(message),  # (the server sets it later)
                stores=stores,
                totals=totals,
            )
        else:
            self.stage = LocalStage.open(
                self.settings,
                backend=self.backend,
                report=report,
                stores=stores,
                totals=totals,
                notify=lambda message: self.notify(message),  # (a machine too slow for it)
            )
        stores.clear()
        stores.analyses.warm_up()  # (Jedi's cold start, now: behind any document, if on)
        report("ready")

    def update_settings(self, settings: Settings) -> None:
        """Apply new settings; reload models only when the ones in use change."""
        old = self.settings
        reload = models_change(old, settings)
        bounds = ("workspace_max_files", "workspace_max_mb")
        rescan = any(getattr(settings, k) != getattr(old, k) for k in bounds)
        self.settings = settings
        self.stores.analyses.set_enabled(settings.guide and settings.engine == "local")
        if rescan and self.workspace_folders:
            self.set_workspace_folders(self.workspace_folders)
        self.stores.clear()
        if reload or not self.ready:
            self.load()
        else:
            self.stage.configure(settings)

    def close(self) -> None:
        self.stage.close()
        self.stage = NotLoaded()

    def shutdown(self) -> None:
        """The server stops: the models closed and the analysis thread stopped (a jedi run cut
        short by the process's exit says nothing)."""
        self.close()
        self.stores.analyses.close()

    # -- documents and folders (fanned out to the stores) --------------------------------------
    def set_workspace_folders(self, folders: Sequence[str]) -> None:
        """The folders the editor names (rootUri, workspaceFolders), as local paths: context
        beyond the open documents may come from their files, and nothing outside them is read.
        (Instant: the files are read in the background.)"""
        self.workspace_folders = list(folders)
        self.stores.analyses.folders = self.workspace_folders
        self.stores.context.set_folders(
            self.workspace_folders,
            max_files=self.settings.workspace_max_files,
            max_mb=self.settings.workspace_max_mb,
        )

    def files_changed(self, changed: Sequence[str], deleted: Sequence[str]) -> None:
        """Files of the workspace folders created, changed or deleted on disk (instant); the
        block is chosen again while idle, not at the next request."""
        self.stores.context.files_changed(changed, deleted)
        self.on_idle_work()

    def document_changed(self, document_id: str, text: str) -> None:
        """A document's text after an edit (or at open); instant (the editor's thread)."""
        stage = self.stage
        stage.document_changed(document_id, text)  # (the file prefix follows its text)
        self.stores.document_changed(document_id, text, focus=stage.focus)

    def document_opened(self, request: CompletionRequest) -> None:
        """A document opened (the request: its start, no cursor yet). If no document holds the
        file prefix, this one's grows while idle (file_prefix.adopt). On the engine's thread."""
        self.stage.opened(request)

    def document_closed(self, document_id: str) -> None:
        """A closed document: every store releases what it held for it (the engine's thread:
        the server queues it behind the running generation)."""
        self.stage.document_closed(document_id)
        self.stores.document_closed(document_id)
        if self.stage.focus:  # another tab: its parts leave the block while idle
            self.on_idle_work()

    # -- completions -----------------------------------------------------------------------------
    def peek(self, request: CompletionRequest) -> Completion | None:
        """An answer that needs no model call (typed through a suggestion), else None.

        Thread-safe and instant: the server calls it before queueing a request."""
        hit = self.stores.suggestions.lookup(request) if self.settings.cache else None
        if hit is None:
            return None
        found, text = hit.found, hit.rest  # (the gate reads the suggestion's probabilities)
        if hit.beyond:  # the raw text's next line, past a line break: shaped for the new place
            text = Shaping(request, self.settings.multiline).shown(hit.rest)[1]
            if not text.strip():
                return None
        return self._cached(request, text, hit.typed, "typed_through", found.raw, found.logprobs)

    def from_in_flight(self, request: CompletionRequest) -> Completion | None:
        """An answer from the running generation's text so far, once it holds a complete line
        beyond what `request` typed (any thread; the generation goes on into the cache)."""
        if not self.settings.cache:
            return None
        found = self.stores.in_flight.ahead_of(request)
        if found is None or "\n" not in found.ahead[1:]:
            return None
        shaping = Shaping(request, self.settings.multiline)
        _raw, text = shaping.shown(found.ahead[: found.ahead.rfind("\n")])
        if not text.strip():
            return None
        return self._cached(request, text, found.typed, "in_flight", found.produced, found.logprobs)

    def _cached(
        self,
        request: CompletionRequest,
        text: str,
        typed: str,
        how: str,
        raw: str = "",
        logprobs: Sequence[float] = (),
    ) -> Completion:
        """An answer no model call made: `text` of the suggestion (its model text `raw`, the
        target's log probabilities of raw's tokens: what the gate reads) after `typed`."""
        stats = DecodeStats(drafter=self.settings.drafter, cache=how, engine=self.settings.engine)
        stats.token_logprobs = list(logprobs)
        self.totals.record(stats)
        self.stores.drafting.shown(request, text)
        return Completion(text=text, stats=stats, raw_text=raw, typed=typed)

    def extends_in_flight(self, request: CompletionRequest) -> bool:
        """True when the running generation already produced what this request typed: the
        server lets it finish (its result answers this request) instead of cancelling it."""
        return self.settings.cache and self.stores.in_flight.extended_by(request)

    def complete(
        self,
        request: CompletionRequest,
        cancel: CancelToken,
        *,
        kind: str = "",
        reply: Callable[[Completion], None] | None = None,
        peeked: bool = False,
    ) -> Completion:
        """The whole suggestion. `reply`, if given, is called once, earlier, with what can be
        shown (the first complete line, or what is ready up to a word boundary when the answer
        budget runs out; an Invoked request's first line whole) while the generation goes on
        (first_answer). `peeked`: the caller looked in the caches just before (the server's
        scheduler does, before queueing)."""
        cached = None if peeked else self.peek(request)  # typed through a suggestion
        if cached is not None:
            return cached
        answer = begin(
            request,
            cancel,
            kind=kind,
            settings=self.settings,
            reply=reply,
            in_flight=self.stores.in_flight,
            totals=self.totals,
        )
        generated = self.stage.complete(answer)  # in process or on the server
        if generated is None:  # nothing to ask (an empty prompt), or the server's fault
            return Completion(text="", stats=answer.stats)
        return self._finish(answer, generated)

    def _finish(self, answer: Answer, generated: str) -> Completion:
        """Post-process the model's text; remember it (typed-through answers, shown drafts)."""
        request = answer.request
        raw, text = answer.shown(generated)
        if self.settings.cache:
            self.stores.suggestions.put(request, text, raw, answer.stats.token_logprobs)
        if answer.kind != "precompute":  # shown to the person (a precomputed one when asked)
            sent = answer.first.sent
            self.stores.drafting.shown(request, sent if sent is not None else text)
        return Completion(text=text, stats=answer.stats, raw_text=raw)

    # -- idle time -------------------------------------------------------------------------------
    def precompute(
        self, request: CompletionRequest, shown: Completion, cancel: CancelToken
    ) -> None:
        """Idle time: compute the suggestion that follows `shown` as if the user accepted it."""
        if not (self.settings.cache and self.settings.precompute and shown.text):
            return
        after = replace(request, prefix=request.prefix + shown.typed + shown.text)
        if self.stores.suggestions.lookup(after) is None:
            self.complete(after, cancel, kind="precompute")

    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        """Idle time after an edit: evaluate the prompt for the place edited, so that a request
        there (or after more typing on the line) finds it in the KV cache. Returns the tokens
        evaluated; a cancel (any request) stops it between chunks, keeping what was done."""
        return self.stage.prewarm(request, cancel)

    @property
    def idle_work(self) -> bool:
        """Whether there is work for idle time: other files' definitions to parse, or the
        stage's (the file prefix to evaluate further, a context block to choose)."""
        return self.stores.context.parsing or self.stage.idle_work

    @property
    def block_pending(self) -> bool:
        """The document in view has a context block not in the KV yet: an edit leaves the idle
        work that evaluates it running (a request that needs the model still stops it)."""
        return self.stage.block_pending

    def idle_step(self, cancel: CancelToken) -> int:
        """Idle time: the stores' work (stores.idle), then the completing stage takes its next
        piece, until done or cancelled (any request). Returns the tokens evaluated."""
        if not self.idle_work:
            return 0
        self.stores.idle(lambda: cancel.cancelled)
        if cancel.cancelled or not self.idle_work:
            return 0
        return self.stage.idle_step(cancel)

    # -- what it reports -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        data = self.totals.snapshot()
        data.update(self.stage.report())
        sources = self.stores.drafting.report()
        if sources is not None:
            data["draft_sources"] = sources
        data["workspace_documents"] = len(self.stores.drafting.open_documents.documents())
        # what drafting really yielded over plain rounds, per source and strength bucket
        data["realized_yield"] = self.stores.ledger.report()
        for source, saved in self.stores.ledger.saved_by_source().items():
            data["drafts_by_source"].setdefault(source, {})["plain_rounds_saved"] = saved
        data["context"] = self.stores.context.report()
        data["gate"] = gate_weights.describe(self.gate, self.gate_threshold)
        data["guide"] = {**data.get("guide", {}), **self.stores.analyses.report()}
        data["memory"] = self.memory()
        return data

    def memory(self) -> dict[str, Any]:
        """What each store holds and its bound (read on any thread: sizes only)."""
        return {**self.stores.memory(), **self.stage.memory()}

    # -- for tools (the in-process parts: parts.py) ---------------------------------------------
    def ensure_profile(self, *, remeasure: bool = False) -> CostProfile:
        """Measure this machine's costs unless a cached profile exists (seconds; worker thread)."""
        return self.stage.ensure_profile(remeasure=remeasure)


def build_engine(settings: Settings, *, backend: str = "llama") -> Engine:
    if backend not in ("llama", "fake"):
        raise EngineError(f"unknown backend {backend!r}: use 'llama' or 'fake'")
    return Engine(settings, backend=backend)


__all__ = ["Engine", "build_engine"]
