"""complete(request, cancel) = gate -> prompt -> caches -> decode -> post-process.

The engine owns the models (target, optional draft) and everything that outlives one request:
per-document draft policies and the running totals reported by `stats()`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine import postprocess
from spec_lsp.engine.backends.base import ModelBackend, check_model_file, detokenize
from spec_lsp.engine.drafting import Drafter, ModelDrafter, NgramDrafter
from spec_lsp.engine import profile as cost_profile
from spec_lsp.engine.policy import PolicyBook, make_policy
from spec_lsp.engine.speculative import DecodeJob, generate
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.types import CancelToken, Completion, CompletionRequest, DecodeStats, EngineError
from spec_lsp.prompts import fim, window

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
PROFILE_TEXT = (
    "import json\nfrom pathlib import Path\n\n\ndef load_settings(path: Path) -> dict:\n"
    "    with path.open() as handle:\n        data = json.load(handle)\n"
    "    return {key.lower(): value for key, value in data.items()}\n\n\n"
) * 8
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
        self.profile: cost_profile.CostProfile | None = None
        self._lock = threading.Lock()

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
        self.book.clear()
        self.profile = cost_profile.load_cached(self.profile_key())
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
        if reload or not self.ready:
            self.load()
        else:
            self.profile = cost_profile.load_cached(self.profile_key())

    def close(self) -> None:
        if self._loaded is not None:
            self._loaded.close()
            self._loaded = None

    # -- completions -----------------------------------------------------------------------------
    def peek(self, request: CompletionRequest) -> Completion | None:
        """An answer that needs no model call (typed-through cache), else None. Thread-safe."""
        return None

    def complete(self, request: CompletionRequest, cancel: CancelToken) -> Completion:
        loaded = self._loaded
        if loaded is None:
            raise EngineError("the model is not loaded yet")
        multiline = (
            request.multiline
            if request.multiline is not None
            else postprocess.decide_multiline(request.prefix, request.suffix, self.settings.multiline)
        )
        prompt = self._prompt(loaded, request)
        stats = DecodeStats(drafter=self.settings.drafter)
        should_stop = self._stop_check(loaded.target, request, multiline)
        job = DecodeJob(prompt, request.max_tokens, request.sampling, loaded.stop_ids, should_stop)
        drafter = self._drafter(loaded)
        temperature = request.sampling.temperature
        estimate = self.book.estimate(request.document_id, request.language, temperature)
        policy = make_policy(self.settings, self.profile, estimate)
        rng = np.random.default_rng(request.sampling.seed)
        try:
            tokens = generate(loaded.target, drafter, policy, job, cancel=cancel, rng=rng, stats=stats)
        finally:
            self.totals.record(stats, cancelled=cancel.cancelled)
            self.book.remember_language(request.language, temperature, estimate)
        raw = _cut_at_stop_strings(detokenize(loaded.target, tokens), request.stop)
        text = postprocess.postprocess(raw, prefix=request.prefix, suffix=request.suffix, multiline=multiline)
        return Completion(text=text, stats=stats, raw_text=raw)

    def stats(self) -> dict[str, Any]:
        data = self.totals.snapshot()
        data["cost_profile"] = self.profile.relative() if self.profile else None
        return data

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
        self.profile = cost_profile.measure(loaded.target, drafter, context=context, key=self.profile_key())
        cost_profile.save(self.profile)
        return self.profile

    # -- steps -----------------------------------------------------------------------------------
    def _prompt(self, loaded: Loaded, request: CompletionRequest) -> list[int]:
        target, s = loaded.target, self.settings
        prefix_budget, suffix_budget = s.prefix_tokens, s.suffix_tokens
        room = target.n_ctx - request.max_tokens - 8
        for _attempt in range(4):
            prefix, suffix = window.window(
                request.prefix, request.suffix,
                count_tokens=lambda text: len(target.tokenize(text)),
                prefix_budget=prefix_budget, suffix_budget=suffix_budget,
            )
            segments = fim.build_prompt(
                loaded.template, prefix=prefix, suffix=suffix,
                file_name=request.file_name, language=request.language,
            )
            tokens = [t for seg in segments for t in target.tokenize(seg.text, special=seg.special)]
            if target.info.add_bos and "bos" in target.info.special:
                tokens.insert(0, target.info.special["bos"])
            if len(tokens) <= room:
                return tokens
            prefix_budget, suffix_budget = prefix_budget // 2, suffix_budget // 2
        raise EngineError(
            f"the prompt needs {len(tokens)} tokens but the context holds {target.n_ctx}: "
            "raise `contextSize` or lower `prefixTokens`/`suffixTokens`."
        )

    def _stop_check(self, target: ModelBackend, request: CompletionRequest, multiline: bool) -> Callable[[list[int]], bool]:
        def should_stop(tokens: list[int]) -> bool:
            text = detokenize(target, tokens)
            if any(stop in text for stop in request.stop):
                return True
            return postprocess.stop_reached(text, prefix=request.prefix, suffix=request.suffix, multiline=multiline)

        return should_stop

    def _drafter(self, loaded: Loaded) -> Drafter | None:
        if self.settings.drafter == "ngram":
            return NgramDrafter()
        if self.settings.drafter == "model" and loaded.draft is not None:
            return ModelDrafter(loaded.draft, target=loaded.target)
        return None


def build_engine(settings: Settings, *, backend: str = "llama") -> Engine:
    if backend not in ("llama", "fake"):
        raise EngineError(f"unknown backend {backend!r}: use 'llama' or 'fake'")
    return Engine(settings, backend=backend)


def _template(settings: Settings, target: ModelBackend) -> fim.FimTemplate | None:
    def has_token(text: str) -> bool:
        return len(target.tokenize(text, special=True)) == 1 and len(target.tokenize(text)) > 1

    try:
        return fim.resolve(settings.fim_template, has_token, target.info.architecture, target.info.name)
    except ValueError as exc:
        raise EngineError(f"setting 'fimTemplate': {exc}") from exc


def _end_token_ids(target: ModelBackend, template: fim.FimTemplate | None) -> frozenset[int]:
    ids: set[int] = set()
    for text in template.end_tokens if template else ():
        tokens = target.tokenize(text, special=True)
        if len(tokens) == 1:
            ids.add(tokens[0])
    return frozenset(ids)


def _cut_at_stop_strings(text: str, stops: tuple[str, ...]) -> str:
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


__all__ = ["Engine", "build_engine", "check_model_file"]
