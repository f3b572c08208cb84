"""complete(request, cancel) = gate -> prompt -> caches -> decode -> post-process.

Each stage owns its state: the loaded models (`loading`), the prompt and token healing
(`prompt`), the caches (`cache/`), the draft sources and the workspace index (`drafters/`), the
acceptance per document (`policy/`). The engine wires them and keeps the running totals that
`stats()` reports.

With `engine: remote` the model is a server's (`loading.open_remote`): the same gate and
post-processing, the suggestion cache, in-flight reuse and precompute; the server's health
(`health`: backoff, one notice per problem) in place of the KV caches, and one request to the
server (`remote_ask`: the prompt for its endpoint, the stream) in place of the speculative loop.

Longer than the ~300 lines a module aims at (about 800): it wires two decode paths (in-process
and remote), the early answer (`first_answer`), answers from a running generation, precompute,
prewarm, the file prefix (the choice between the window and the prompt laid out from it) and
the context block. Each of them is a short method here and its mechanism lives in its own
module; the remote path's remaining wiring (~100 lines: health, the block chosen while idle,
its report) is the next to move out (a stage object beside `loading.RemoteLoaded`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine import calibrate, loading, postprocess, remote_ask
from spec_lsp.engine.backends.base import SHIFT_MIN_TOKENS, common_prefix_len, sync
from spec_lsp.engine.backends.remote import RemoteFault
from spec_lsp.engine.cache.continuations import Continuations
from spec_lsp.engine.cache.in_flight import InFlight
from spec_lsp.engine.cache.states import StatePool
from spec_lsp.engine.cache.suggestions import SuggestionCache
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.context.stage import ContextStage
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.choose import DraftSources
from spec_lsp.engine.drafters.workspace_index import WorkspaceIndex
from spec_lsp.engine.file_prefix import FilePrefix
from spec_lsp.engine.first_answer import FirstAnswer
from spec_lsp.engine.loading import Loaded, RemoteLoaded
from spec_lsp.engine.policy import profile as cost_profile
from spec_lsp.engine.policy.adaptive import make_policy
from spec_lsp.engine.policy.estimate import PolicyBook
from spec_lsp.engine.prompt import Prompt, PromptBuilder
from spec_lsp.engine.stats import EngineTotals, reuse_kind
from spec_lsp.engine.types import (
    Cancelled,
    CancelToken,
    Completion,
    CompletionRequest,
    DecodeStats,
    EngineError,
)

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
MODEL_KEYS = ("model", "context_size", "threads", "gpu_layers", "fim_template")
REMOTE_KEYS = (
    "remote_url",
    "remote_model",
    "remote_api_key_env",
    "remote_connect_timeout_ms",
    "remote_timeout_ms",
    "remote_allow_http",
    "remote_ca_file",
    "remote_api",
    "fim_template",
)
# faults after which the server is asked again what it serves (it may have restarted)
RECONNECT_AFTER = frozenset({"down", "tls", "dropped", "model"})
# a prompt with the context block is used when it evaluates at most this many tokens more than
# the prompt without it (the block's KV is evaluated while idle, never on a request's time)
CONTEXT_SLACK = 16
# remote: the block is chosen again when the cursor moves to another stretch of this many lines
# (the server reuses its cache of a prompt's head only while the head stays the same)
REMOTE_BLOCK_LINES = 40


class Engine:
    def __init__(self, settings: Settings, *, backend: str = "llama") -> None:
        self.settings = settings
        self.backend = backend
        self.totals = EngineTotals()
        self.loaded: Loaded | None = None
        self.prompts: PromptBuilder | None = None
        self.sources = DraftSources()  # the drafter and the workspace index it reads
        self.book = PolicyBook()  # acceptance per document, for the adaptive policy
        self.suggestions = SuggestionCache()  # typed-through answers
        self.states = StatePool()  # saved KV caches per document
        self.file_prefix = FilePrefix()  # the open file's text evaluated while idle
        self.continuations = Continuations()  # the last generation per document
        self.in_flight = InFlight()  # the running generation's text so far
        self.profile: cost_profile.CostProfile | None = None
        self.remote: RemoteLoaded | None = None  # engine remote: the server in use
        # how the user is told about a remote server's faults (the server sets it; any thread)
        self.notify: Callable[[str], None] = lambda message: log.warning("%s", message)
        self.workspace_folders: list[str] = []
        # called from another thread when idle work appears unasked (a workspace read): the
        # server's scheduler sets it to start its idle work
        self.on_idle_work: Callable[[], None] = lambda: None
        self.context = ContextStage(
            notify=lambda message: self.notify(message), changed=lambda: self.on_idle_work()
        )
        self._block_for: tuple[Any, ...] = ()  # what the file prefix's block was chosen for
        self._warmed: Block | None = None  # the block the last place was prewarmed with
        self._remote_place: CompletionRequest | None = None  # remote: the last place asked
        self._remote_block: Block | None = None  # remote: its block, chosen while idle

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.loaded is not None or self.remote is not None

    @property
    def needs_profile(self) -> bool:
        """Whether the adaptive policy still needs this machine's cost profile (in-process)."""
        s = self.settings
        return (
            self.remote is None
            and s.draft_policy == "adaptive"
            and s.drafter != "none"
            and self.profile is None
        )

    @property
    def workspace(self) -> WorkspaceIndex:
        return self.sources.workspace

    def load(self, progress: Progress | None = None) -> None:
        """Load (or reload) the models named by the settings. Raises EngineError with the fix."""
        report = progress or (lambda _msg: None)
        self.close()
        self.totals.engine = self.settings.engine
        if self.settings.engine == "remote":
            self.book.clear()
            self._forget()
            self.remote = loading.open_remote(self.settings, report, lambda m: self.notify(m))
            report("ready")
            return
        loaded = loading.open_models(self.settings, self.backend, report)
        self.loaded, self.prompts = loaded, PromptBuilder(loaded.target, loaded.template)
        self.book.clear()
        self._forget()
        self.profile = cost_profile.load_cached(self.profile_key())
        self.sources.build(self.settings.drafter, loaded.target, loaded.draft, self.profile)
        self._set_kv_shift()
        self.totals.model_names = [m.info.name for m in (loaded.target, loaded.draft) if m]
        report("ready")

    def update_settings(self, settings: Settings) -> None:
        """Apply new settings; reload models only when the ones in use change."""
        old = self.settings
        keys = REMOTE_KEYS if settings.engine == "remote" else MODEL_KEYS
        reload = (
            settings.engine != old.engine
            or any(getattr(settings, k) != getattr(old, k) for k in keys)
            or (
                settings.engine == "local"
                and (settings.drafter == "model" or old.drafter == "model")
                and (settings.drafter, settings.draft_model) != (old.drafter, old.draft_model)
            )
        )
        bounds = ("workspace_max_files", "workspace_max_mb")
        rescan = any(getattr(settings, k) != getattr(old, k) for k in bounds)
        self.settings = settings
        if rescan and self.workspace_folders:
            self.set_workspace_folders(self.workspace_folders)
        self.book.clear()
        self._forget()
        if reload or not self.ready:
            self.load()
        elif self.loaded is not None:
            self._set_kv_shift()
            self.profile = cost_profile.load_cached(self.profile_key())
            self.sources.build(
                settings.drafter, self.loaded.target, self.loaded.draft, self.profile
            )

    def _set_kv_shift(self) -> None:
        assert self.loaded is not None
        on = self.settings.kv_shift and self.settings.cache
        for model in (self.loaded.target, self.loaded.draft):
            if model is not None:
                model.shift_min = SHIFT_MIN_TOKENS if on else 0

    def set_workspace_folders(self, folders: Sequence[str]) -> None:
        """The folders the editor names (rootUri, workspaceFolders), as local paths: context
        beyond the open documents may come from their files, and nothing outside them is read.
        (Instant: the files are read in the background.)"""
        self.workspace_folders = list(folders)
        self.context.set_folders(
            self.workspace_folders,
            max_files=self.settings.workspace_max_files,
            max_mb=self.settings.workspace_max_mb,
        )

    def files_changed(self, changed: Sequence[str], deleted: Sequence[str]) -> None:
        """Files of the workspace folders created, changed or deleted on disk (instant)."""
        self.context.files_changed(changed, deleted)

    def document_changed(self, document_id: str, text: str) -> None:
        """A document's text after an edit (or at open); instant (the editor's thread)."""
        self.sources.document_changed(document_id, text)
        self.file_prefix.document_changed(document_id, text)
        self.context.document_changed(document_id, text, focus=self.file_prefix.document)

    def document_opened(self, request: CompletionRequest) -> None:
        """A document opened (the request: its start, no cursor yet). If no document holds the
        file prefix, this one's grows while idle (file_prefix.adopt). On the engine's thread."""
        if self.remote is not None or not self.settings.cache or self.loaded is None:
            return
        _loaded, prompts = self._require_loaded()
        self.file_prefix.adopt(request, prompts, self.settings)

    def document_closed(self, document_id: str) -> None:
        """A closed document: every stage releases what it held for it (the engine's thread:
        the server queues it behind the running generation)."""
        self.sources.document_closed(document_id)  # its shown suggestion, auto's estimates
        self.sources.catch_up()  # its workspace index entry
        self.book.forget(document_id)
        self.suggestions.forget(document_id)
        self.states.forget(document_id)
        self.file_prefix.forget(document_id)
        self.continuations.forget(document_id)
        self.context.document_closed(document_id)
        if self.file_prefix.document:  # another tab: its parts leave the block while idle
            self.on_idle_work()

    def _forget(self) -> None:
        """Drop every cached answer and state (settings or models changed)."""
        self.suggestions.clear()
        self.states.clear()
        self.file_prefix.clear()
        self.continuations.clear()
        self.sources.forget()

    def close(self) -> None:
        if self.loaded is not None:
            self.loaded.close()
            self.loaded = self.prompts = None
            self.sources.drafter = None
        if self.remote is not None:
            self.remote.close()
            self.remote = None

    # -- completions -----------------------------------------------------------------------------
    def peek(self, request: CompletionRequest) -> Completion | None:
        """An answer that needs no model call (typed through a suggestion), else None.

        Thread-safe and instant: the server calls it before queueing a request."""
        hit = self.suggestions.lookup(request) if self.settings.cache else None
        if hit is None:
            return None
        typed, rest = hit
        stats = DecodeStats(
            drafter=self.settings.drafter, cache="typed_through", engine=self.settings.engine
        )
        self.totals.record(stats)
        self.sources.shown(request, rest)
        return Completion(text=rest, stats=stats, typed=typed)

    def from_in_flight(self, request: CompletionRequest) -> Completion | None:
        """An answer from the running generation's text so far, once it holds a complete line
        beyond what `request` typed (any thread; the generation goes on into the cache)."""
        if not self.settings.cache:
            return None
        found = self.in_flight.ahead_of(request)
        if found is None or "\n" not in found[1][1:]:
            return None
        typed, ahead = found
        _raw, text = _shown(request, ahead[: ahead.rfind("\n")], self._multiline(request))
        if not text.strip():
            return None
        stats = DecodeStats(
            drafter=self.settings.drafter, cache="in_flight", engine=self.settings.engine
        )
        self.totals.record(stats)
        self.sources.shown(request, text)
        return Completion(text=text, stats=stats, typed=typed)

    def extends_in_flight(self, request: CompletionRequest) -> bool:
        """True when the running generation already produced what this request typed: the
        server lets it finish (its result answers this request) instead of cancelling it."""
        return self.settings.cache and self.in_flight.extended_by(request)

    def complete(
        self,
        request: CompletionRequest,
        cancel: CancelToken,
        *,
        kind: str = "",
        reply: Callable[[Completion], None] | None = None,
    ) -> Completion:
        """The whole suggestion. `reply`, if given, is called once, earlier, with what can be
        shown (the first complete line, or what is ready up to a word boundary when the answer
        budget runs out; an Invoked request's first line whole) while the generation goes on
        (first_answer)."""
        cached = self.peek(request)  # gate: typed through a suggestion
        if cached is not None:
            return cached
        multiline = self._multiline(request)
        stats = DecodeStats(drafter=self.settings.drafter)
        first = self._first_answer(request, multiline, stats, reply)
        if self.remote is not None:  # (the stream fills `stats`: a first answer copies them)
            stats.cache, stats.engine, stats.drafter = kind or "remote", "remote", "none"
            return self._complete_remote(self.remote, request, cancel, kind, first, stats)
        loaded, prompts = self._require_loaded()
        prompt = self._prompt(loaded, prompts, request)  # prompt
        if not prompt.tokens:  # nothing before the cursor and no FIM template to hold the rest
            stats.stop_reason = "empty_prompt"
            return Completion(text="", stats=stats)
        self._context_stats(loaded, prompts, request, prompt, stats)
        reused = self._prepare_caches(loaded, request.document_id, prompt)  # caches
        stats.cache = kind or reused  # (a first answer tells it; completed at the end)
        self.in_flight.track(request, "")  # a key typed meanwhile may wait for what it writes
        try:
            tokens = self._decode(loaded, prompts, request, prompt, multiline, cancel, stats, first)
        finally:
            self.in_flight.clear()
            stats.cache = kind or reused or reuse_kind(stats)
            first.describe(stats)
            self.totals.record(stats, cancelled=cancel.cancelled)
            if self.settings.cache:  # where the file prefix grows next, while idle
                self.file_prefix.follow(request, prompt, prompts, self.settings)
        self.continuations.remember(request.document_id, [*prompt.tokens, *tokens])
        return self._finish(request, prompts.text(prompt, tokens), multiline, stats, kind, first)

    def _first_answer(
        self,
        request: CompletionRequest,
        multiline: bool,
        stats: DecodeStats,
        reply: Callable[[Completion], None] | None,
    ) -> FirstAnswer:
        def show(generated: str) -> str:
            return _shown(request, generated, multiline)[1]

        def early(text: str) -> None:
            assert reply is not None
            cache = stats.cache or reuse_kind(stats)  # (the prompt is evaluated by now)
            answered = first.seconds or 0.0  # (set before the reply)
            so_far = replace(
                stats,
                stop_reason="first_answer",
                cache=cache,
                # the decoding so far (and the prompt's layout, a few ms): the rest of the time
                # since the request began
                decode_seconds=max(0.0, answered - stats.prompt_seconds),
                k_trace=list(stats.k_trace),
                accepted_trace=list(stats.accepted_trace),
            )
            first.describe(so_far)
            reply(Completion(text=text, stats=so_far))

        budget_s = self.settings.answer_budget_ms / 1000
        first = FirstAnswer(
            early if reply and budget_s else None,
            budget_s=budget_s,
            show=show,
            partial=not request.invoked,  # an Invoked request's first line is answered whole
        )
        return first

    def _complete_remote(
        self,
        remote: RemoteLoaded,
        request: CompletionRequest,
        cancel: CancelToken,
        kind: str,
        first: FirstAnswer,
        stats: DecodeStats,
    ) -> Completion:
        """gate (the server's health) -> prompt (text) -> decode (a stream) -> post-process.
        A fault answers empty; the user hears of it once (health)."""
        stats.stop_reason = "fault"
        if not self._remote_ready(remote):  # inside a backoff, or the server still down
            return Completion(text="", stats=stats)
        multiline = self._multiline(request)
        self._remote_place = request
        block = self._remote_block_for(request)
        try:
            prompt, generated = remote_ask.ask(
                remote,
                request,
                self.settings,
                multiline=multiline,
                block=block,
                cancel=cancel,
                stats=stats,
                on_text=lambda text: self._progress(request, text, first),
            )
        except RemoteFault as fault:
            remote.health.failed(fault.kind, str(fault))
            remote.connected = remote.connected and fault.kind not in RECONNECT_AFTER
            stats.stop_reason = "fault"
            return Completion(text="", stats=stats)
        finally:
            self.in_flight.clear()
            stats.cache = kind or "remote"
            first.describe(stats)
            self.totals.record(stats, cancelled=cancel.cancelled)
        remote.health.succeeded()
        if block is not None and prompt.block_tokens:
            stats.context_chunks = block.describe()
            stats.context_tokens = prompt.block_tokens
            self.context.record(prompt.block_tokens, 0)
        if stats.prompt_tokens:  # the server said how many tokens the prompt was
            remote.tokens.learn(prompt.text, stats.prompt_tokens)
        return self._finish(request, prompt.generated(generated), multiline, stats, kind, first)

    def _remote_block_for(self, request: CompletionRequest) -> Block | None:
        """The block chosen while idle, if it was chosen for this request's document."""
        block = self._remote_block
        return block if block is not None and block.document == request.document_id else None

    def _remote_ready(self, remote: RemoteLoaded) -> bool:
        """Outside a backoff, and connected (asking the server what it serves if it was down)."""
        if not remote.health.available():
            return False
        if not remote.connected:
            try:
                loading.connect_remote(remote, self.settings)
            except RemoteFault as fault:
                remote.health.failed(fault.kind, str(fault))
                return False
        return True

    def _finish(
        self,
        request: CompletionRequest,
        generated: str,
        multiline: bool,
        stats: DecodeStats,
        kind: str,
        first: FirstAnswer,
    ) -> Completion:
        """Post-process the model's text; remember it (typed-through answers, shown drafts)."""
        raw, text = _shown(request, generated, multiline)
        if self.settings.cache:
            self.suggestions.put(request, text, raw)
        if kind != "precompute":  # shown to the person (a precomputed one only when asked for)
            self.sources.shown(request, first.sent if first.sent is not None else text)
        return Completion(text=text, stats=stats, raw_text=raw)

    def _progress(self, request: CompletionRequest, generated: str, first: FirstAnswer) -> None:
        """A generation's text so far: in-flight reuse sees it, the first answer may go."""
        self.in_flight.track(request, generated)
        first.progress(generated)

    def precompute(
        self, request: CompletionRequest, shown: Completion, cancel: CancelToken
    ) -> None:
        """Idle time: compute the suggestion that follows `shown` as if the user accepted it."""
        if not (self.settings.cache and self.settings.precompute and shown.text):
            return
        after = replace(request, prefix=request.prefix + shown.typed + shown.text)
        if self.suggestions.lookup(after) is None:
            self.complete(after, cancel, kind="precompute")

    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        """Idle time after an edit: evaluate the prompt for the place edited, so that a request
        there (or after more typing on the line) finds it in the KV cache. Returns the tokens
        evaluated; a cancel (any request) stops it between chunks, keeping what was done."""
        if self.remote is not None:
            return self._prewarm_remote(self.remote, request, cancel)
        if not self.settings.cache or self.loaded is None:
            return 0
        loaded, prompts = self._require_loaded()
        prompt = self._prompt(loaded, prompts, request, idle=True)
        if not prompt.tokens:
            return 0
        self._prepare_caches(loaded, request.document_id, prompt)
        self.file_prefix.follow(request, prompt, prompts, self.settings)
        _logits, evaluated = sync(loaded.target, prompt.tokens, check=cancel.raise_if_cancelled)
        self.totals.count_prewarm(evaluated)
        return evaluated

    def _prewarm_remote(
        self, remote: RemoteLoaded, request: CompletionRequest, cancel: CancelToken
    ) -> int:
        """The server's prompt cache filled for the place edited (llama-server); its faults are
        left to the next request to tell."""
        if not self.settings.cache or not remote.connected or not remote.health.available():
            return 0
        self._remote_place = request  # (its block is chosen while idle)
        block = self._remote_block_for(request)
        try:
            evaluated = remote_ask.prewarm(
                remote,
                request,
                self.settings,
                multiline=self._multiline(request),
                block=block,
                cancel=cancel,
            )
        except RemoteFault as fault:
            log.debug("prewarm at %s: %s", remote.client.url, fault)
            return 0
        self.totals.count_prewarm(evaluated)
        return evaluated

    @property
    def idle_work(self) -> bool:
        """Whether there is work for idle time (the file prefix to evaluate further, or its
        context block to choose, other files' definitions to parse)."""
        if self.context.parsing:
            return True
        if self.remote is not None:
            return self._remote_place is not None and self._remote_key() != self._block_for
        return (
            self.loaded is not None
            and self.settings.cache
            and (
                self.file_prefix.pending
                or (self.file_prefix.request is not None and self._block_key() != self._block_for)
                or self._unwarmed() is not None
            )
        )

    def _unwarmed(self) -> CompletionRequest | None:
        """The place last asked about, if its prompt with the file prefix's new context block
        is still to be evaluated (the text unchanged since: else an edit's prewarm does it)."""
        fp = self.file_prefix
        request = fp.request
        if fp.pending or fp.block is None or request is None or self._warmed is fp.block:
            return None
        text, prefix, suffix = fp.text, request.prefix, request.suffix
        same = len(prefix) + len(suffix) == len(text) and text.startswith(prefix)
        return request if same and text.endswith(suffix) else None  # (no copy: checked often)

    def _block_key(self) -> tuple[Any, ...]:
        fp = self.file_prefix
        return (fp.document, fp.reanchored, self.context.generation, self.settings.context_tokens)

    def _choose_block(self, prompts: PromptBuilder) -> None:
        """While idle: the context block of the file prefix's document, chosen again when the
        focus moved (a new anchor) or what it is chosen from changed (other documents, the
        workspace), once the file prefix is evaluated. A new block re-evaluates the file prefix
        from the block on."""
        key = self._block_key()
        if key == self._block_for:
            return
        fp = self.file_prefix
        if fp.request is None:
            self._block_for = key
            fp.set_block(None)
            return
        if fp.pending:  # the file's own text first: a new block re-evaluates it from the head
            return  # (idle time the places it serves need before any block can be used)
        self._block_for = key
        request = fp.request
        budget = FilePrefix.budget(self.settings, prompts.target.n_ctx) // 2
        cursor_line = request.prefix.count("\n")
        block = self.context.choose(
            request.document_id,
            request.prefix + request.suffix,
            len(request.prefix),
            (fp.anchor, cursor_line + 1),
            budget=min(self.settings.context_tokens, budget),
            count_tokens=prompts.count,
        )
        if fp.set_block(block):
            log.info(
                "context for %s: %s",
                request.file_name or request.document_id,
                "; ".join(
                    f"{c.path}:{c.start_line + 1}-{c.end_line} ({c.reason})" for c in block.chunks
                )
                if block
                else "none",
            )

    def _remote_key(self) -> tuple[Any, ...]:
        place = self._remote_place
        region = place.prefix.count("\n") // REMOTE_BLOCK_LINES if place is not None else -1
        return (
            place.document_id if place is not None else None,
            region,
            self.context.generation,
            self.settings.context_tokens,
        )

    def _choose_remote_block(self, remote: RemoteLoaded) -> None:
        """While idle, for a remote engine: the block of the last place asked, chosen again when
        the cursor moved to another stretch of REMOTE_BLOCK_LINES lines or what it is chosen
        from changed (so the server's prompt cache keeps its head meanwhile). It takes half
        the prefix's budget at most: the prompt is no longer than without it."""
        self._block_for = self._remote_key()
        request = self._remote_place
        if request is None:
            return
        prefix_chars = int(self.settings.prefix_tokens * remote.tokens.chars_per_token)
        cursor_line = request.prefix.count("\n")
        first = cursor_line - request.prefix[-prefix_chars:].count("\n")
        self._remote_block = self.context.choose(
            request.document_id,
            request.prefix + request.suffix,
            len(request.prefix),
            (max(0, first), cursor_line + 1),
            budget=min(self.settings.context_tokens, self.settings.prefix_tokens // 2),
            count_tokens=remote.tokens.count,
        )

    def grow_file_prefix(self, cancel: CancelToken) -> int:
        """Idle time: evaluate more of the file prefix (file_prefix.py) until done or cancelled
        (any request: the chunk being computed is dropped). Returns the tokens evaluated."""
        if not self.idle_work:
            return 0
        self.context.parse(lambda: cancel.cancelled)
        if cancel.cancelled or not self.idle_work:
            return 0
        if self.remote is not None:
            if self._remote_key() != self._block_for:
                self._choose_remote_block(self.remote)
            return 0
        loaded, prompts = self._require_loaded()
        owner = self.states.owner
        grown = 0
        for _pass in range(2):  # (a block is chosen once the file's own text is evaluated)
            self._choose_block(prompts)
            grown += self.file_prefix.grow(
                loaded.target,
                prompts,
                self.settings,
                cancel,
                park=lambda: self.states.park(owner, loaded.target),
            )
            if cancel.cancelled:
                break
        place = self._unwarmed()
        if place is None or cancel.cancelled:
            return grown
        self._warmed = self.file_prefix.block  # (tried once: a cancel leaves it to the request)
        with contextlib.suppress(Cancelled):
            grown += self.prewarm(place, cancel)
        return grown

    def stats(self) -> dict[str, Any]:
        data = self.totals.snapshot()
        if self.remote is not None:
            data["models"] = [self.remote.model] if self.remote.model else []
            data["remote"] = self.remote_report(self.remote)
        data["cost_profile"] = self.profile.relative() if self.profile else None
        sources = self.sources.report()
        if sources is not None:
            data["draft_sources"] = sources
        data["workspace_documents"] = len(self.workspace.documents())
        data["file_prefix"] = self.file_prefix.report()
        data["context"] = self.context.report()
        data["memory"] = self.memory()
        return data

    def memory(self) -> dict[str, Any]:
        """What each stage holds and its bound (read on any thread: sizes only)."""
        sources = self.sources.memory()
        return {
            "saved_states": self.states.memory(),
            "file_prefix": self.file_prefix.memory(),
            "suggestions": self.suggestions.memory(),
            "continuations": self.continuations.memory(),
            "in_flight": self.in_flight.running,
            "workspace": sources["workspace"],
            "estimates": {
                "documents": len(self.book.documents()),
                "auto_documents": sources["auto_estimates"],
                "max_documents": self.book.size,
            },
            "shown": sources["shown"],
            "context": self.context.memory(),
        }

    @staticmethod
    def remote_report(remote: RemoteLoaded) -> dict[str, Any]:
        """The server in use and its health (never the API key)."""
        return {
            "url": remote.client.url,
            "model": remote.model or None,
            "fim_template": remote.template.name if remote.template else None,
            "server": remote.server or None,
            "endpoint": remote.endpoint,
            "tokens": remote.tokens.snapshot(),
            "connected": remote.connected,
            **remote.health.report(),
        }

    def prompt_tokens(self, request: CompletionRequest) -> list[int]:
        return self._require_loaded()[1].tokens(request, self.settings)[0]

    # -- the cost profile --------------------------------------------------------------------------
    def profile_key(self) -> str:
        path = self.loaded.target.info.path if self.loaded else str(self.settings.model)
        return cost_profile.profile_key(
            path, threads=self.settings.threads, backend=self.backend, drafter=self.settings.drafter
        )

    def ensure_profile(self, *, remeasure: bool = False) -> cost_profile.CostProfile:
        """Measure this machine's costs unless a cached profile exists (seconds; worker thread)."""
        if self.remote is not None:
            raise EngineError(
                "the cost profile measures the in-process model; with engine 'remote' the "
                "server decodes: set engine to 'local' to profile this machine"
            )
        loaded, prompts = self._require_loaded()
        if self.profile is None or remeasure:
            context = loaded.target.tokenize(calibrate.PROFILE_TEXT)[:256]
            self.profile = calibrate.measure(
                loaded.target, self.sources.to_measure(), context=context, key=self.profile_key()
            )
            cost_profile.save(self.profile)
        return self.profile

    # -- stages ----------------------------------------------------------------------------------
    def _require_loaded(self) -> tuple[Loaded, PromptBuilder]:
        if self.remote is not None:
            raise EngineError("the model is on the server (engine 'remote'): no local tokens")
        if self.loaded is None or self.prompts is None:
            raise EngineError("the model is not loaded yet")
        return self.loaded, self.prompts

    def _multiline(self, request: CompletionRequest) -> bool:
        if request.multiline is not None:
            return request.multiline
        return postprocess.decide_multiline(request.prefix, request.suffix, self.settings.multiline)

    def _prompt(
        self,
        loaded: Loaded,
        prompts: PromptBuilder,
        request: CompletionRequest,
        *,
        idle: bool = False,
    ) -> Prompt:
        """The window around the cursor, or the prompt laid out from the file prefix's line
        when that evaluates fewer tokens (and shows the model no less of the file); opening
        with the document's context block when that evaluates no more than without it (its KV
        is evaluated while idle: a request never waits for context). `idle` (a prewarm):
        with the block once the file prefix holds it, whatever it costs."""
        prompt = prompts.build(request, self.settings)
        if not self.settings.cache or not prompt.tokens:
            return prompt
        fp = self.file_prefix
        block = fp.block if fp.document == request.document_id else None
        candidates = [prompt]
        if block is not None:
            candidates.append(prompts.build(request, self.settings, block))
        anchored = fp.prompt(request, prompts, self.settings)  # (with the block, if any)
        if anchored is not None and anchored.first_line <= prompt.first_line:
            candidates.append(anchored)
        costs = [self._to_evaluate(loaded, request, p) for p in candidates]

        def cheapest(with_block: bool) -> int | None:  # (a tie goes to the anchored prompt)
            found = [i for i, p in enumerate(candidates) if (p.block is not None) == with_block]
            return min(found, key=lambda i: (costs[i], not candidates[i].anchored), default=None)

        best, context = cheapest(False), cheapest(True)
        assert best is not None  # (the window without the block is always there)
        ready = idle and not fp.pending  # (the file prefix holds the block)
        if context is not None and (ready or costs[context] <= costs[best] + CONTEXT_SLACK):
            best = context
        if candidates[best].anchored:
            fp.used += 1
        return candidates[best]

    def _context_stats(
        self,
        loaded: Loaded,
        prompts: PromptBuilder,
        request: CompletionRequest,
        prompt: Prompt,
        stats: DecodeStats,
    ) -> None:
        """Which context parts the prompt opens with, and how many of their tokens the KV
        cache held."""
        if prompt.block is None:
            return
        tokens = prompts.block_tokens(prompt.block)
        held = len(prompt.tokens) - self._to_evaluate(loaded, request, prompt)
        stats.context_chunks = prompt.block.describe()
        stats.context_tokens, stats.context_cached_tokens = tokens, min(tokens, held)
        self.context.record(tokens, stats.context_cached_tokens)

    def _to_evaluate(self, loaded: Loaded, request: CompletionRequest, prompt: Prompt) -> int:
        """Tokens of the prompt that no cache holds."""
        live = common_prefix_len(loaded.target.tokens, prompt.tokens)
        saved = self.states.held(request.document_id, prompt.tokens)
        return len(prompt.tokens) - max(live, saved, self.file_prefix.held(prompt.tokens))

    def _prepare_caches(self, loaded: Loaded, document: str, prompt: Prompt) -> str:
        """The live KV cache made to hold as much of the prompt as any cache does; how."""
        if not self.settings.cache:
            loaded.target.truncate(0)
            if loaded.draft is not None:
                loaded.draft.truncate(0)
            return "off"
        target, tokens = loaded.target, prompt.tokens
        keep_live = not self.file_prefix.holds_all(target.tokens)  # else it is the snapshot
        reused = self.states.switch(document, tokens, target, loaded.draft, keep_live=keep_live)
        if self.file_prefix.restore(target, tokens) or (prompt.anchored and not reused):
            return "file_prefix"
        return reused

    def _decode(
        self,
        loaded: Loaded,
        prompts: PromptBuilder,
        request: CompletionRequest,
        prompt: Prompt,
        multiline: bool,
        cancel: CancelToken,
        stats: DecodeStats,
        first: FirstAnswer,
    ) -> list[int]:
        """The speculative loop with this request's drafter, policy and stop rules."""

        def should_stop(tokens: list[int]) -> bool:
            text = prompts.text(prompt, tokens)
            return any(stop in text for stop in request.stop) or postprocess.stop_reached(
                text, prefix=request.prefix, suffix=request.suffix, multiline=multiline
            )

        drafter = self.sources.for_request(request, self.profile)
        job = DecodeJob(
            prompt.tokens,
            request.max_tokens,
            request.sampling,
            loaded.stop_ids,
            should_stop,
            continuation=self.continuations.get(request.document_id) if self.settings.cache else (),
            on_round=lambda out: self._progress(request, prompts.text(prompt, out), first),
            first_allowed=prompt.first_allowed,
        )
        temperature = request.sampling.temperature
        estimate = self.book.estimate(request.document_id, request.language, temperature)
        policy = make_policy(self.settings, self.profile, estimate)
        rng = np.random.default_rng(request.sampling.seed)
        try:
            return generate(
                loaded.target, drafter, policy, job, cancel=cancel, rng=rng, stats=stats
            )
        finally:
            self.book.remember_language(request.language, temperature, estimate)


def _shown(request: CompletionRequest, generated: str, multiline: bool) -> tuple[str, str]:
    """(raw, shown): the model's text cut at the request's stop strings, and post-processed."""
    raw = postprocess.cut_at_stop_strings(generated, request.stop)
    text = postprocess.postprocess(
        raw, prefix=request.prefix, suffix=request.suffix, multiline=multiline
    )
    return raw, text


def build_engine(settings: Settings, *, backend: str = "llama") -> Engine:
    if backend not in ("llama", "fake"):
        raise EngineError(f"unknown backend {backend!r}: use 'llama' or 'fake'")
    return Engine(settings, backend=backend)


__all__ = ["Engine", "build_engine"]
