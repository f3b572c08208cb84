"""complete(request, cancel) = gate -> prompt -> caches -> decode -> post-process.

The engine owns the models (target, optional draft) and everything that outlives one request:
per-document draft policies and the running totals reported by `stats()`.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine import postprocess
from spec_lsp.engine import profile as cost_profile
from spec_lsp.engine.auto_drafter import AutoDrafter
from spec_lsp.engine.backends.base import ModelBackend, check_model_file, detokenize
from spec_lsp.engine.cache import StatePool, SuggestionCache
from spec_lsp.engine.crossvocab import model_drafter
from spec_lsp.engine.drafting import Drafter, NgramDrafter
from spec_lsp.engine.policy import PolicyBook, make_policy
from spec_lsp.engine.speculative import DecodeJob, generate
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.types import (
    CancelToken,
    Completion,
    CompletionRequest,
    DecodeStats,
    EngineError,
)
from spec_lsp.engine.workspace_index import WorkspaceDrafter, WorkspaceIndex
from spec_lsp.prompts import fim, window

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
PROFILE_TEXT = (
    "import json\nfrom pathlib import Path\n\n\ndef load_settings(path: Path) -> dict:\n"
    "    with path.open() as handle:\n        data = json.load(handle)\n"
    "    return {key.lower(): value for key, value in data.items()}\n\n\n"
) * 8
SPLIT_LINES = 8
MAX_INDEXED_CHARS = 1_000_000  # documents larger than this are not indexed for lookup
MODEL_KEYS = ("model", "context_size", "threads", "gpu_layers", "fim_template")


@dataclass
class Loaded:
    target: ModelBackend
    draft: ModelBackend | None
    template: fim.FimTemplate | None
    stop_ids: frozenset[int]

    def close(self) -> None:
        self.target.close()
        if self.draft is not None:
            self.draft.close()


class Engine:
    def __init__(self, settings: Settings, *, backend: str = "llama") -> None:
        self.settings = settings
        self.backend = backend
        self.totals = EngineTotals()
        self._loaded: Loaded | None = None
        self.book = PolicyBook()
        self.suggestions = SuggestionCache()
        self.pool = StatePool()
        self._continuations: OrderedDict[str, list[int]] = OrderedDict()
        self._in_flight: tuple[CompletionRequest, str] | None = None
        self._vocab_index: VocabIndex | None = None
        self.profile: cost_profile.CostProfile | None = None
        self.workspace = WorkspaceIndex()  # open documents + accepted completions (didChange)
        self._drafter_obj: Drafter | None = None  # built per load / settings: it learns
        self._shown: dict[str, tuple[str, str]] = {}  # per document: (prefix, suggestion)
        self._to_index: dict[str, str | None] = {}  # latest text per changed document (None: drop)
        self._index_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._loaded is not None

    def load(self, progress: Progress | None = None) -> None:
        """Load (or reload) the models named by the settings. Raises EngineError with the fix."""
        report = progress or (lambda _msg: None)
        self.close()
        from spec_lsp.engine import loading

        target = loading.open_target(self.settings, self.backend, report)
        try:
            draft = loading.open_draft(self.settings, self.backend, target, report)
            template = _template(self.settings, target)
        except Exception:
            target.close()
            raise
        stop_ids = target.info.stop_ids | _end_token_ids(target, template)
        self._loaded = Loaded(target, draft, template, stop_ids)
        self._vocab_index = VocabIndex(target)  # for token healing; built now, not on a keystroke
        self.book.clear()
        self._forget()
        self.profile = cost_profile.load_cached(self.profile_key())
        self._drafter_obj = self._make_drafter(self._loaded)
        self.totals.model_names = [m.info.name for m in (target, draft) if m is not None]
        report("ready")

    def update_settings(self, settings: Settings) -> None:
        """Apply new settings; reload models only when the ones in use change."""
        old = self.settings
        reload = any(getattr(settings, k) != getattr(old, k) for k in MODEL_KEYS) or (
            (settings.drafter == "model" or old.drafter == "model")
            and (settings.drafter, settings.draft_model) != (old.drafter, old.draft_model)
        )
        self.settings = settings
        self.book.clear()
        self._forget()
        if reload or not self.ready:
            self.load()
        else:
            self.profile = cost_profile.load_cached(self.profile_key())
            assert self._loaded is not None
            self._drafter_obj = self._make_drafter(self._loaded)

    # -- documents (the editor's thread; the index locks) ---------------------------------------
    def document_changed(self, document_id: str, text: str) -> None:
        """A document's text after an edit (or at open). Instant: the workspace index takes it
        on the engine's thread before the next completion (re-indexing only the lines that
        differ, once for any number of keystrokes). Documents over MAX_INDEXED_CHARS are left out."""
        with self._index_lock:
            self._to_index[document_id] = text if len(text) <= MAX_INDEXED_CHARS else None

    def document_closed(self, document_id: str) -> None:
        with self._index_lock:
            self._to_index[document_id] = None
        self._shown.pop(document_id, None)

    def _catch_up_index(self) -> None:
        with self._index_lock:
            pending, self._to_index = self._to_index, {}
        for document_id, text in pending.items():
            if text is None:
                self.workspace.remove(document_id)
            else:
                self.workspace.update(document_id, text)

    def _forget(self) -> None:
        """Drop every cached answer and state (settings or models changed)."""
        self.suggestions.clear()
        self.pool.clear()
        self._continuations.clear()
        self._shown.clear()

    def close(self) -> None:
        if self._loaded is not None:
            self._loaded.close()
            self._loaded = None
            self._drafter_obj = None

    # -- completions -----------------------------------------------------------------------------
    def peek(self, request: CompletionRequest) -> Completion | None:
        """An answer that needs no model call (typed through a suggestion), else None.

        Thread-safe and instant: the server calls it before queueing a request."""
        if not self.settings.cache:
            return None
        hit = self.suggestions.lookup(request)
        if hit is None:
            return None
        typed, rest = hit
        stats = DecodeStats(drafter=self.settings.drafter, cache="typed_through")
        self.totals.record(stats)
        return Completion(text=rest, stats=stats, typed=typed)

    def extends_in_flight(self, request: CompletionRequest) -> bool:
        """True when the running generation already produced what this request typed: the
        server lets it finish (its result answers this request) instead of cancelling it."""
        running = self._in_flight
        if running is None or not self.settings.cache:
            return False
        old, produced = running
        if (old.document_id, old.suffix) != (request.document_id, request.suffix):
            return False
        if not request.prefix.startswith(old.prefix):
            return False
        return produced.startswith(request.prefix[len(old.prefix) :])

    def complete(
        self, request: CompletionRequest, cancel: CancelToken, *, kind: str = ""
    ) -> Completion:
        cached = self.peek(request)
        if cached is not None:
            return cached
        loaded = self._loaded
        if loaded is None:
            raise EngineError("the model is not loaded yet")
        multiline = (
            request.multiline
            if request.multiline is not None
            else postprocess.decide_multiline(
                request.prefix, request.suffix, self.settings.multiline
            )
        )
        prompt, last = self._prompt(loaded, request)
        healed = ""
        allowed = None
        if last and prompt[-1:] == last:  # token healing: let the model re-choose the last token
            piece = loaded.target.token_bytes(last[0])
            if piece.strip():
                prompt, healed = prompt[:-1], piece.decode("utf-8", "replace")
                allowed = self.vocab_index(loaded.target).starting_with(piece)
        stats = DecodeStats(drafter=self.settings.drafter)
        drafter = self._drafter_for(loaded, request)
        reused = self._prepare_caches(loaded, request.document_id, prompt)
        job = DecodeJob(
            prompt,
            request.max_tokens,
            request.sampling,
            loaded.stop_ids,
            self._stop_check(loaded.target, request, multiline, healed),
            continuation=self._continuations.get(request.document_id, ())
            if self.settings.cache
            else (),
            on_round=lambda out: self._track(request, loaded.target, out, healed),
            first_allowed=allowed,
        )
        temperature = request.sampling.temperature
        estimate = self.book.estimate(request.document_id, request.language, temperature)
        policy = make_policy(self.settings, self.profile, estimate)
        rng = np.random.default_rng(request.sampling.seed)
        try:
            tokens = generate(
                loaded.target,
                drafter,
                policy,
                job,
                cancel=cancel,
                rng=rng,
                stats=stats,
            )
        finally:
            self._in_flight = None
            stats.cache = kind or reused or _reuse_kind(stats)
            self.totals.record(stats, cancelled=cancel.cancelled)
            self.book.remember_language(request.language, temperature, estimate)
        self._remember_continuation(request.document_id, [*prompt, *tokens])
        raw = _cut_at_stop_strings(
            heal(detokenize(loaded.target, tokens), request.prefix, healed), request.stop
        )
        text = postprocess.postprocess(
            raw, prefix=request.prefix, suffix=request.suffix, multiline=multiline
        )
        if self.settings.cache:
            self.suggestions.put(request, text, raw)
        self._shown[request.document_id] = (request.prefix, text)
        return Completion(text=text, stats=stats, raw_text=raw)

    def precompute(
        self, request: CompletionRequest, shown: Completion, cancel: CancelToken
    ) -> None:
        """Idle time: compute the suggestion that follows `shown` as if the user accepted it."""
        if not (self.settings.cache and self.settings.precompute and shown.text):
            return
        after = replace(request, prefix=request.prefix + shown.typed + shown.text)
        if self.suggestions.lookup(after) is None:
            self.complete(after, cancel, kind="precompute")

    def stats(self) -> dict[str, Any]:
        data = self.totals.snapshot()
        data["cost_profile"] = self.profile.relative() if self.profile else None
        if isinstance(self._drafter_obj, AutoDrafter):
            data["draft_sources"] = self._drafter_obj.report()
        data["workspace_documents"] = len(self.workspace.documents())
        return data

    def vocab_index(self, target: ModelBackend) -> VocabIndex:
        if self._vocab_index is None or self._vocab_index.model is not target:
            self._vocab_index = VocabIndex(target)
        return self._vocab_index

    # -- the cost profile --------------------------------------------------------------------------
    def profile_key(self) -> str:
        loaded = self._loaded
        path = loaded.target.info.path if loaded else str(self.settings.model)
        return cost_profile.profile_key(
            path, threads=self.settings.threads, backend=self.backend, drafter=self.settings.drafter
        )

    def ensure_profile(self, *, remeasure: bool = False) -> cost_profile.CostProfile:
        """Measure this machine's costs unless a cached profile exists (seconds; worker thread)."""
        loaded = self._loaded
        if loaded is None:
            raise EngineError("the model is not loaded yet")
        if self.profile is not None and not remeasure:
            return self.profile
        context = loaded.target.tokenize(PROFILE_TEXT)[:256]
        drafter = self._drafter(loaded)
        if isinstance(drafter, AutoDrafter):  # lookups are free: its draft model, if any
            drafter = next((s.drafter for s in drafter.sources if not s.free), None)
        if isinstance(drafter, WorkspaceDrafter):
            drafter = None
        self.profile = cost_profile.measure(
            loaded.target, drafter, context=context, key=self.profile_key()
        )
        cost_profile.save(self.profile)
        return self.profile

    # -- steps -----------------------------------------------------------------------------------
    def prompt_tokens(self, request: CompletionRequest) -> list[int]:
        if self._loaded is None:
            raise EngineError("the model is not loaded yet")
        return self._prompt(self._loaded, request)[0]

    def _prepare_caches(self, loaded: Loaded, document: str, prompt: list[int]) -> str:
        if not self.settings.cache:
            loaded.target.truncate(0)
            if loaded.draft is not None:
                loaded.draft.truncate(0)
            return "off"
        return self.pool.switch(document, prompt, loaded.target, loaded.draft)

    def _track(
        self, request: CompletionRequest, target: ModelBackend, out: list[int], healed: str
    ) -> None:
        self._in_flight = (request, heal(detokenize(target, out), request.prefix, healed))

    def _remember_continuation(self, document: str, tokens: list[int]) -> None:
        self._continuations[document] = tokens
        self._continuations.move_to_end(document)
        while len(self._continuations) > 16:
            self._continuations.popitem(last=False)

    def _prompt(self, loaded: Loaded, request: CompletionRequest) -> tuple[list[int], list[int]]:
        """The prompt's tokens, and the last token if it is the user's text (for healing)."""
        target, s = loaded.target, self.settings
        prefix_budget, suffix_budget = s.prefix_tokens, s.suffix_tokens
        room = target.n_ctx - request.max_tokens - 8
        for _attempt in range(16):  # halve the budgets until the prompt fits
            prefix, suffix = window.window(
                request.prefix.rstrip(" \t"),  # trailing blanks: the model writes them (see heal)
                request.suffix,
                count_tokens=lambda text: len(target.tokenize(text)),
                prefix_budget=prefix_budget,
                suffix_budget=suffix_budget,
            )
            head, middle = split_for_typing(prefix, lines_before=request.prefix.count("\n"))
            segments = fim.build_prompt(
                loaded.template,
                prefix=head,
                suffix=suffix,
                file_name=request.file_name,
                language=request.language,
            ) + [fim.Segment(middle, special=False)]
            tokens = [t for seg in segments for t in target.tokenize(seg.text, special=seg.special)]
            if target.info.add_bos and "bos" in target.info.special:
                tokens.insert(0, target.info.special["bos"])
            if len(tokens) <= room:
                return tokens, (target.tokenize(middle)[-1:] if middle.strip() else [])
            prefix_budget, suffix_budget = prefix_budget // 2, suffix_budget // 2
        raise EngineError(
            f"the prompt needs {len(tokens)} tokens but the context holds {target.n_ctx}: "
            "raise `contextSize` or lower `prefixTokens`/`suffixTokens`."
        )

    def _stop_check(
        self, target: ModelBackend, request: CompletionRequest, multiline: bool, healed: str
    ) -> Callable[[list[int]], bool]:
        def should_stop(tokens: list[int]) -> bool:
            text = heal(detokenize(target, tokens), request.prefix, healed)
            if any(stop in text for stop in request.stop):
                return True
            return postprocess.stop_reached(
                text, prefix=request.prefix, suffix=request.suffix, multiline=multiline
            )

        return should_stop

    def _drafter(self, loaded: Loaded) -> Drafter | None:
        if self._drafter_obj is None:
            self._drafter_obj = self._make_drafter(loaded)
        return self._drafter_obj

    def _drafter_for(self, loaded: Loaded, request: CompletionRequest) -> Drafter | None:
        """The drafter, told about this request (its document, cursor, the costs known now)."""
        drafter = self._drafter(loaded)
        self._catch_up_index()
        shown = self._shown.get(request.document_id)
        if shown is not None and shown[1] and request.prefix == shown[0] + shown[1]:
            self.workspace.add_accepted(shown[1])  # the last suggestion was accepted whole
        lookups = drafter.sources if isinstance(drafter, AutoDrafter) else []
        for source in [drafter, *(s.drafter for s in lookups)]:
            if isinstance(source, WorkspaceDrafter):
                source.document_id, source.cursor = request.document_id, len(request.prefix)
        if isinstance(drafter, AutoDrafter):
            drafter.set_profile(self.profile)
            drafter.set_document(request.document_id, request.language)
        return drafter

    def _make_drafter(self, loaded: Loaded) -> Drafter | None:
        kind = self.settings.drafter
        model: Drafter | None = None
        if loaded.draft is not None and kind in ("model", "auto"):
            model = model_drafter(loaded.draft, loaded.target)
        if kind == "ngram":
            return NgramDrafter()
        if kind == "workspace":
            return WorkspaceDrafter(self.workspace, loaded.target)
        if kind == "model":
            return model
        if kind == "auto":
            lookups: list[Drafter] = [
                NgramDrafter(),
                WorkspaceDrafter(self.workspace, loaded.target),
            ]
            return AutoDrafter(lookups, model=model, profile=self.profile)
        return None


def build_engine(settings: Settings, *, backend: str = "llama") -> Engine:
    if backend not in ("llama", "fake"):
        raise EngineError(f"unknown backend {backend!r}: use 'llama' or 'fake'")
    return Engine(settings, backend=backend)


def _template(settings: Settings, target: ModelBackend) -> fim.FimTemplate | None:
    def has_token(text: str) -> bool:
        return len(target.tokenize(text, special=True)) == 1 and len(target.tokenize(text)) > 1

    try:
        return fim.resolve(
            settings.fim_template, has_token, target.info.architecture, target.info.name
        )
    except ValueError as exc:
        raise EngineError(f"setting 'fimTemplate': {exc}") from exc


def _end_token_ids(target: ModelBackend, template: fim.FimTemplate | None) -> frozenset[int]:
    ids: set[int] = set()
    for text in template.end_tokens if template else ():
        tokens = target.tokenize(text, special=True)
        if len(tokens) == 1:
            ids.add(tokens[0])
    return frozenset(ids)


class VocabIndex:
    """Token ids by the text they start with (for token healing), built once per model."""

    def __init__(self, model: ModelBackend) -> None:
        self.model = model
        self._pieces = [model.token_bytes(i) for i in range(model.info.n_vocab)]
        self._cache: OrderedDict[bytes, list[int]] = OrderedDict()

    def starting_with(self, prefix: bytes) -> list[int]:
        found = self._cache.get(prefix)
        if found is None:
            found = [i for i, piece in enumerate(self._pieces) if piece.startswith(prefix)]
            self._cache[prefix] = found
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        return found


def heal(generated: str, prefix: str, healed: str = "") -> str:
    """Undo the prompt's omissions: the last token (token healing) and the blanks before the cursor.

    Token healing: a prompt ending in a partial word ("i" of "if") tokenizes it as a whole token
    (" i") the model then continues as if complete. The prompt leaves that token out and the
    first generated token must start with its text (`first_allowed`); the text is removed here.

    Tokenizers merge runs of spaces with the next word (" if", 8 spaces as one token): a prompt
    that ends in the user's indentation makes the model emit one space too many. The prompt
    leaves the cursor line's trailing blanks out; the model writes them, and they are removed
    here. If it chose other indentation, its own leading blanks are dropped instead."""
    if healed and generated.startswith(healed):
        generated = generated[len(healed) :]
    blanks = prefix[len(prefix.rstrip(" \t")) :]
    if not blanks:
        return generated
    if generated.startswith(blanks):
        return generated[len(blanks) :]
    return generated.lstrip(" \t") if generated[:1] in (" ", "\t") else generated


def split_for_typing(
    prefix: str, *, lines_before: int, every: int = SPLIT_LINES
) -> tuple[str, str]:
    """Split the prefix window so that typing is an append to the prompt.

    The FIM prompt is prefix-block, suffix, then the middle. The last few lines before the cursor
    (the cursor's line and up to `every - 1` lines above, counted from absolute line numbers so
    the split stays put while typing) go after the middle token, as if the model had written
    them. A keystroke then appends to the prompt instead of invalidating the suffix block; the
    block is re-evaluated once every `every` lines. (Suffix-first order would also make typing
    an append, but Qwen2.5-Coder does not understand it; see research/fim_layout.md.)
    """
    keep = lines_before % every  # whole lines after the split, before the cursor's line
    cut = len(prefix)
    for _ in range(keep + 1):
        cut = prefix.rfind("\n", 0, cut)
        if cut < 0:
            return "", prefix
    return prefix[: cut + 1], prefix[cut + 1 :]


def _reuse_kind(stats: DecodeStats) -> str:
    if stats.prompt_tokens and stats.prompt_tokens_evaluated * 2 <= stats.prompt_tokens:
        return "kv_prefix"
    return "cold"


def _cut_at_stop_strings(text: str, stops: tuple[str, ...]) -> str:
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


__all__ = ["Engine", "build_engine", "check_model_file"]
