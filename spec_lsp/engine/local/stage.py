"""The in-process stage: GGUF models on this machine, behind the same small interface as the
remote stage (`stage.CompletingStage`).

A request: its prompt (the window around the cursor, or laid out from the file prefix's line
when that evaluates fewer tokens, opening with the context block when that costs no more) ->
the KV caches made to hold as much of it as any cache does -> the speculative loop with the
request's drafter, policy and stop rule. While idle: the file prefix grown, its context block
chosen, and the last place prewarmed with a new block. And the machine's cost profile, which
the adaptive policy prices drafts with.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine.answer import Answer
from spec_lsp.engine.backends import threads as cpu_threads
from spec_lsp.engine.backends.base import SHIFT_MIN_TOKENS, Snapshot, common_prefix_len, sync
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.finishing import confidence, gate_weights
from spec_lsp.engine.guide.monitor import Monitor
from spec_lsp.engine.guide.vocabulary import NameTokens
from spec_lsp.engine.local import pace
from spec_lsp.engine.local.file_prefix import FilePrefix
from spec_lsp.engine.local.prompt_tokens import Prompt, PromptBuilder
from spec_lsp.engine.policy import profile as cost_profile
from spec_lsp.engine.policy.adaptive import make_policy
from spec_lsp.engine.startup import calibrate, loading
from spec_lsp.engine.startup.loading import Loaded
from spec_lsp.engine.stats import EngineTotals, reuse_kind
from spec_lsp.engine.stores import Stores
from spec_lsp.engine.types import Cancelled, CancelToken, CompletionRequest, DecodeStats
from spec_lsp.prompts.fim import after_cursor

log = logging.getLogger(__name__)

# a prompt with the context block is used when it evaluates at most this many tokens more than
# the prompt without it (the block's KV is evaluated while idle, never on a request's time)
CONTEXT_SLACK = 16


class LocalStage:
    def __init__(
        self,
        loaded: Loaded,
        *,
        settings: Settings,
        backend: str,
        stores: Stores,
        totals: EngineTotals,
        notify: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self.loaded, self.prompts = loaded, PromptBuilder(loaded.target, loaded.template)
        self.notify = notify  # (the person told, once, that the machine is slow for the model)
        self._told_pace = False
        self.backend, self.stores, self.totals = backend, stores, totals
        # the document in focus's prefix, evaluated while idle; one the focus leaves is kept in
        # the state pool
        self.file_prefix = FilePrefix(kept=stores.states)
        self.profile: cost_profile.CostProfile | None = None
        self._measured_at: float | None = None  # (monotonic) when this session last measured it
        self._names: NameTokens | None = None  # the vocabulary by identifier runs (the guide)
        self._profile_samples: dict[int, list[float]] = {}  # measured in idle time so far
        self._profile_kv: Snapshot | None = None  # the measurement's context, once evaluated
        self.configure(settings)

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        backend: str,
        report: Callable[[str], None],
        stores: Stores,
        totals: EngineTotals,
        notify: Callable[[str], None] = lambda _message: None,
    ) -> LocalStage:
        """Load the models the settings name. Raises EngineError with the fix."""
        loaded = loading.open_models(settings, backend, report)
        totals.model_names = [m.info.name for m in (loaded.target, loaded.draft) if m]
        return cls(
            loaded, settings=settings, backend=backend, stores=stores, totals=totals, notify=notify
        )

    def configure(self, settings: Settings) -> None:
        """New settings for the same models: KV shift, the cost profile, the drafter; the file
        prefix evaluated anew."""
        self.settings = settings
        self.file_prefix.clear()
        on = settings.kv_shift and settings.cache
        for model in (self.loaded.target, self.loaded.draft):
            if model is not None:
                model.shift_min = SHIFT_MIN_TOKENS if on else 0
        key = self.profile_key()
        cached = cost_profile.load_cached(key)
        if cached is not None or self.profile is None or self.profile.key != key:
            self.profile = cached  # (else the one measured here, not cached: kept)
            self._measured_at = None
        self.gate = gate_weights.for_model(self.loaded.target.info.path)  # (None: off)
        if settings.guide and self._names is None:  # (once per model, at load: ~1 s)
            self._names = NameTokens(self.prompts.vocab.pieces)
        self._profile_samples = {}  # (another key's passes are no part of this one's)
        self._profile_kv = None
        self.stores.drafting.build(
            settings.drafter, self.loaded.target, self.loaded.draft, self.profile
        )
        self._tell_pace()

    def close(self) -> None:
        self.loaded.close()
        self.stores.drafting.drafter = None

    def opened(self, request: CompletionRequest) -> None:
        """A document opened: the file prefix is its own, its block chosen and evaluated first,
        then its text, while idle (file_prefix.focus)."""
        if self.settings.cache:
            self.file_prefix.focus(request, self.prompts, self.settings)

    @property
    def focus(self) -> str:
        """The document whose file prefix it keeps ("" none)."""
        return self.file_prefix.document

    def document_changed(self, document_id: str, text: str) -> None:
        self.file_prefix.document_changed(document_id, text)

    def document_closed(self, document_id: str) -> None:
        self.file_prefix.forget(document_id)

    # -- a request ---------------------------------------------------------------------------
    def complete(self, answer: Answer) -> str | None:
        """The generated text (None: nothing to ask, the prompt is empty). While a person
        waits for it, the guide's analysis waits (a precomputed answer is idle work)."""
        if answer.kind == "precompute":
            return self._complete(answer)
        with self.stores.analyses.serving():
            return self._complete(answer)

    def _complete(self, answer: Answer) -> str | None:
        request, stats, stores = answer.request, answer.stats, self.stores
        prompt = self.prompt(request)
        if not prompt.tokens:  # nothing before the cursor and no FIM template to hold the rest
            stats.stop_reason = "empty_prompt"
            return None
        self._context_stats(request, prompt, stats)
        reused = self.prepare_caches(request.document_id, prompt)
        stats.cache = answer.kind or reused  # (a first answer tells it; completed at the end)
        stores.in_flight.track(request, "")  # a key typed meanwhile may wait for what it writes
        try:
            tokens, text = self._decode(answer, prompt)
        finally:
            stats.cache = answer.kind or reused or reuse_kind(stats)
            answer.settled()
            if self.settings.cache:  # where the file prefix grows next, while idle
                self.file_prefix.follow(request, prompt, self.prompts, self.settings)
        stores.continuations.remember(request.document_id, [*prompt.tokens, *tokens])
        return text

    def prompt(self, request: CompletionRequest, *, idle: bool = False) -> Prompt:
        """The window around the cursor, or the prompt laid out from the file prefix's line
        when that evaluates fewer tokens (and shows the model no less of the file); opening
        with the document's context block when that evaluates no more than without it (its KV
        is evaluated while idle: a request never waits for context). `idle` (a prewarm):
        with the block once the file prefix holds it, whatever it costs. (An Invoked request
        taking the rest of the block on its own time, up to 1.5x its prompt, made later places
        4.5x slower on the places bench and added no exact line on the cross-file one.)"""
        prompts, settings, fp = self.prompts, self.settings, self.file_prefix
        mine = settings.cache and fp.document == request.document_id
        candidates = prompts.candidates(
            request,
            settings,
            block=fp.block if mine else None,
            anchor=fp.anchor_for(request, settings, prompts.target.n_ctx) if mine else None,
        )
        if len(candidates) == 1:  # (nothing cached to price it against)
            return candidates[0]
        costs = [self._to_evaluate(request, p) for p in candidates]

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

    def prompt_tokens(self, request: CompletionRequest) -> list[int]:
        return self.prompts.tokens(request, self.settings)[0]

    def _context_stats(
        self, request: CompletionRequest, prompt: Prompt, stats: DecodeStats
    ) -> None:
        """Which context parts the prompt opens with, and how many of their tokens the KV
        cache held."""
        if prompt.block is None:
            return
        tokens = prompt.block.tokens  # (counted when the prompt was built)
        held = len(prompt.tokens) - self._to_evaluate(request, prompt)
        stats.context_chunks = prompt.block.describe()
        stats.context_tokens, stats.context_cached_tokens = tokens, min(tokens, held)
        self.stores.context.record(tokens, stats.context_cached_tokens)

    def _to_evaluate(self, request: CompletionRequest, prompt: Prompt) -> int:
        """Tokens of the prompt that no cache holds."""
        live = common_prefix_len(self.loaded.target.tokens, prompt.tokens)
        saved = self.stores.states.held(request.document_id, prompt.tokens)
        return len(prompt.tokens) - max(live, saved, self.file_prefix.held(prompt.tokens))

    def prepare_caches(self, document: str, prompt: Prompt) -> str:
        """The live KV cache made to hold as much of the prompt as any cache does; how."""
        loaded, fp = self.loaded, self.file_prefix
        if not self.settings.cache:
            loaded.target.truncate(0)
            if loaded.draft is not None:
                loaded.draft.truncate(0)
            return "off"
        target, tokens = loaded.target, prompt.tokens
        keep_live = not fp.holds_all(target.tokens)  # else it is the snapshot
        reused = self.stores.states.switch(
            document, tokens, target, loaded.draft, keep_live=keep_live
        )
        if fp.restore(target, tokens) or (prompt.anchored and not reused):
            return "file_prefix"
        return reused

    def _decode(self, answer: Answer, prompt: Prompt) -> tuple[list[int], str]:
        """The speculative loop with this request's drafter, policy and stop rule: the tokens
        generated and their text (one reader of the tokens, for the stop rule, the first answer
        and the end)."""
        request, stores, prompts = answer.request, self.stores, self.prompts
        drafter = stores.drafting.for_request(request, self.profile)
        read = prompts.reader(prompt)
        job = DecodeJob(
            prompt.tokens,
            request.max_tokens,
            request.sampling,
            self.loaded.stop_ids,
            lambda tokens: answer.stop_reached(read(tokens)),
            continuation=stores.continuations.get(request.document_id)
            if self.settings.cache
            else (),
            on_round=lambda out: answer.progress(read(out)),
            first_allowed=prompt.first_allowed,
            # (the gate off, or no weights for this model: no cost at all)
            logprobs=confidence.threshold_in_force(self.settings.gate_threshold, self.gate) > 0,
            guide=self._guide(request, prompt, answer.stats),
            suffix=after_cursor(prompt.tokens, self.loaded.target.info.special),
        )
        temperature = request.sampling.temperature
        estimate = stores.book.estimate(request.document_id, request.language, temperature)
        policy = make_policy(self.settings, self.profile, estimate, stores.ledger)
        rng = np.random.default_rng(request.sampling.seed)
        try:
            tokens = generate(
                self.loaded.target,
                drafter,
                policy,
                job,
                cancel=answer.cancel,
                rng=rng,
                stats=answer.stats,
            )
            return tokens, read(tokens)
        finally:
            stores.book.remember_language(request.language, temperature, estimate)
            if isinstance(job.guide, Monitor):
                for name, count in job.guide.counts(answer.stats.tokens).items():
                    setattr(answer.stats, name, count)

    def _guide(
        self, request: CompletionRequest, prompt: Prompt, stats: DecodeStats
    ) -> Monitor | None:
        """The monitor for this request: the newest analysis of its document, less what the
        edits since its text may have changed (analyses.table_for), and the text the model
        continues. None yet, or a partial one without this place's receivers: a table that
        this machine makes in under a second is waited for (at most WAIT_S, the analysis going
        on meanwhile, nearest the cursor first); else the request is decoded unguided."""
        analyses, document = self.stores.analyses, request.document_id
        if not (self.settings.guide and analyses.enabled and analyses.watches(document)):
            return None
        line = request.prefix.count("\n") + 1
        analyses.asked_at(document, line)
        table = analyses.table_for(document, request.prefix, request.suffix)
        if table is None or table.partial:  # (a first table, or one begun far from here)
            waited = analyses.wait_for_table(document, line)
            stats.guide_waited_ms = waited * 1000
            if waited:
                table = analyses.table_for(document, request.prefix, request.suffix)
        if table is None:
            stats.guide_unprepared = 1
            return None
        if self._names is None:  # (the guide turned on after the load)
            self._names = NameTokens(self.prompts.vocab.pieces)
        text = request.prefix.rstrip(" \t")
        if prompt.healed and text.endswith(prompt.healed):
            text = text[: -len(prompt.healed)]
        return Monitor(
            self._names,
            table,
            text=text,
            scope=table.scope_at(text),
            bias=table.incomplete_bias
            if self.settings.guide_bias is None
            else self.settings.guide_bias,
            syntax=table.syntax,
        )

    # -- idle time ---------------------------------------------------------------------------
    def prewarm(self, request: CompletionRequest, cancel: CancelToken) -> int:
        """Evaluate the prompt for the place edited, so that a request there (or after more
        typing on the line) finds it in the KV cache. Returns the tokens evaluated; a cancel
        stops it between chunks, keeping what was done. A Python document's analysis turns to
        the place too, and the receivers near it are waited for as the idle work waits for a
        first table (both cores are the model's once this begins: Jedi's process runs at the
        lowest priority); the rest of the table comes after."""
        if not self.settings.cache:
            return 0
        analyses, line, waited = self.stores.analyses, request.prefix.count("\n") + 1, 0.0
        if self.settings.guide and analyses.enabled and analyses.watches(request.document_id):
            analyses.asked_at(request.document_id, line)
            place = (request.document_id, line)  # (its receivers: the rest comes after)
            waited = analyses.yield_to_first(lambda: cancel.cancelled, place=place)
        prompt = self.prompt(request, idle=True)
        if not prompt.tokens:
            return 0
        self.prepare_caches(request.document_id, prompt)
        self.file_prefix.follow(request, prompt, self.prompts, self.settings)
        target, started = self.loaded.target, time.monotonic()
        try:
            _logits, evaluated = sync(target, prompt.tokens, check=cancel.raise_if_cancelled)
        finally:  # (cut by a request or an edit: what it evaluated is kept, the rest is theirs)
            if log.isEnabledFor(logging.DEBUG):
                held = common_prefix_len(target.tokens, prompt.tokens)
                log.debug(
                    "prewarm at line %d: %.2f s waited for the guide's table there, then %d of "
                    "%d tokens in the KV after %.2f s",
                    *(line, waited, held, len(prompt.tokens), time.monotonic() - started),
                )
        self.totals.count_prewarm(evaluated)
        return evaluated

    @property
    def idle_work(self) -> bool:
        """This machine's cost profile to measure, the file prefix to evaluate further, its
        context block to choose, or the last place to prewarm with a new block."""
        if self.needs_profile:
            return True
        fp = self.file_prefix
        return self.settings.cache and (
            fp.pending
            or (fp.request is not None and self.stores.context.stale(self._focus()))
            or fp.unwarmed() is not None
        )

    @property
    def block_pending(self) -> bool:
        """The file prefix's context block is to be chosen, or chosen and not in the KV yet."""
        fp, settings = self.file_prefix, self.settings
        if not (settings.cache and fp.document) or fp.ready:
            return False
        return fp.block is not None or (
            settings.context_tokens > 0 and self.stores.context.stale(self._focus())
        )

    def idle_step(self, cancel: CancelToken) -> int:
        """The work a person waits for first: the block chosen if it is to be, then more of the
        file prefix evaluated (the block, then the text: file_prefix.py) until done or
        cancelled (any request: the chunk being computed is dropped, the rest resumed at the
        next idle step), then the last place with a new block. Once none of that is left, this
        machine's cost profile measured if it is still to be (once per model and machine; a
        request stops it, the next idle step goes on; requests meanwhile use the prior
        profile's costs). Measured first, it took every pause of a person writing in a new file
        (it never ended in ones of 1.5 s, and it put its own context into the KV each time).
        Returns the tokens evaluated."""
        target, states = self.loaded.target, self.stores.states
        owner = states.owner
        grown = 0
        if self.settings.cache:
            self._choose_block()  # (before the text: block and text are evaluated in one pass)
            grown = self.file_prefix.grow(
                target, self.prompts, self.settings, cancel, park=lambda: states.park(owner, target)
            )
            fp = self.file_prefix
            place = fp.unwarmed()
            if cancel.cancelled or fp.pending:
                return grown
            if place is not None:
                fp.warmed = fp.block  # (tried once: a cancel leaves it to the request)
                with contextlib.suppress(Cancelled):
                    grown += self.prewarm(place, cancel)
                return grown
        if self.needs_profile:  # (the measurement takes the live cache: saved first, unless
            if not self.file_prefix.holds_all(target.tokens):  # the snapshot holds it)
                states.park(owner, target)
            self._measure_profile(cancel)
        return grown

    def _focus(self) -> tuple[Any, ...]:
        """What the file prefix's block is chosen for: its document and the budget. Not the
        place: typing and moving in a file never change its block (each change costs
        evaluation); what it is chosen from does (other documents, the workspace)."""
        fp = self.file_prefix
        return (fp.document, self.settings.context_tokens)

    def _choose_block(self) -> None:
        """The context block of the file prefix's document, chosen when the document takes the
        file prefix (opened, or asked about), before its text is evaluated (each token once),
        and again when what it is chosen from changed (file_prefix: only the block's new
        tokens are evaluated then, with kvShift)."""
        fp, context, focus = self.file_prefix, self.stores.context, self._focus()
        if fp.came_back:  # the focus came back: the block its text was evaluated after
            fp.came_back = False
            context.adopt(fp.document, focus, fp.block)
            return
        if not context.stale(focus):
            return
        budget = FilePrefix.budget(self.settings, self.prompts.target.n_ctx) // 2
        block = context.choose_at(
            fp.request,
            focus,
            first_line=fp.anchor,
            budget=min(self.settings.context_tokens, budget),
            count_tokens=self.prompts.texts.count,
        )
        self.prompts.block_tokens(block)  # (counted once, here: the file prefix's budget)
        if fp.set_block(block) and fp.request is not None:
            log.info(
                "context for %s: %s",
                fp.request.file_name or fp.request.document_id,
                "; ".join(
                    f"{c.path}:{c.start_line + 1}-{c.end_line} ({c.reason})" for c in block.chunks
                )
                if block
                else "none",
            )

    # -- the cost profile --------------------------------------------------------------------
    @property
    def needs_profile(self) -> bool:
        """Whether the adaptive policy still needs this machine's cost profile: none yet, or
        one to measure again (`cost_profile.due_again`: figures that cannot be right, or taken
        under load while the machine is quiet now)."""
        s = self.settings
        if not (s.draft_policy == "adaptive" and s.drafter != "none"):
            return False
        if self.profile is None:
            return True
        since = None if self._measured_at is None else time.monotonic() - self._measured_at
        machine = cpu_threads.SHARED
        machine.choose()  # (the machine's load, looked at now and then; unknown: not quiet)
        others = machine.others if machine.measured else cost_profile.LOADED
        reason = cost_profile.due_again(self.profile, since_measured=since, others=others)
        if reason is not None and not self._profile_samples:
            log.info("measuring this machine's costs again: the profile was %s", reason)
        return reason is not None

    def profile_key(self) -> str:
        return cost_profile.profile_key(
            self.loaded.target.info.path,
            threads=self.settings.threads,
            backend=self.backend,
            drafter=self.settings.drafter,
        )

    def ensure_profile(self, *, remeasure: bool = False) -> cost_profile.CostProfile:
        """Measure this machine's costs unless a cached profile holds (seconds): one that
        cannot be right, or was measured under load while the machine is quiet now
        (`needs_profile`), is measured again."""
        if self.profile is None or remeasure or self.profile.suspect() or self.needs_profile:
            self._profile_samples = {}
            self._measure_profile(None)
        assert self.profile is not None
        return self.profile

    def _measure_profile(self, abort: CancelToken | None) -> None:
        """Measure (or go on measuring) this machine's costs: the profile, once done, is kept
        and saved; a cancel leaves the passes timed so far for the next idle step."""
        target = self.loaded.target
        context = target.tokenize(calibrate.PROFILE_TEXT)[:256]
        kept = self._profile_kv
        if kept is not None and common_prefix_len(target.tokens, context) < len(context):
            target.load_state(kept)  # (its context is evaluated once, not at every idle step)
        profile = calibrate.measure(
            target,
            self.stores.drafting.to_measure(),
            context=context,
            key=self.profile_key(),
            samples=self._profile_samples,
            abort=abort,
        )
        if profile is None:  # (stopped by a request: its context kept for the next step)
            if kept is None and common_prefix_len(target.tokens, context) == len(context):
                self._profile_kv = target.save_state()
        else:
            self._profile_kv = None
            self.profile, self._profile_samples = profile, {}
            self._measured_at = time.monotonic()
            if profile.suspect() is None:  # (figures that cannot be right are not kept)
                cost_profile.save(profile)
            self._tell_pace()

    @property
    def measured_pace(self) -> pace.Pace | None:
        """The target's measured pace on this machine (None: not measured yet)."""
        return pace.of_profile(self.profile)

    def _tell_pace(self) -> None:
        """Once per load: the person told when this machine is too slow for the target."""
        said = (
            None
            if self._told_pace
            else pace.advice(self.measured_pace, self.loaded.target.info.path)
        )
        if said is not None:
            self._told_pace = True
            self.notify(said)

    def report(self) -> dict[str, Any]:
        measured = self.measured_pace
        return {
            "cost_profile": self.profile.relative() if self.profile else None,
            "file_prefix": self.file_prefix.report(),
            "pace": None
            if measured is None
            else {
                "decode_tok_s": round(measured.decode_tok_s, 1),
                "prompt_tok_s": round(measured.prompt_tok_s, 1),
                "slow": measured.slow,
                "advice": pace.advice(measured, self.loaded.target.info.path),
            },
        }

    def memory(self) -> dict[str, Any]:
        return {"file_prefix": self.file_prefix.memory()}
