"""Where draft tokens come from. A drafter has one method: `draft(request) -> Draft`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from spec_lsp.engine import sampling
from spec_lsp.engine.backends.base import ModelBackend, kept_by_sync, sync
from spec_lsp.engine.types import EngineError, SamplingParams


@dataclass
class Draft:
    tokens: list[int]
    probs: list[np.ndarray] | None = None  # q per token (full distribution); None: deterministic
    # a lookup's match strength: tokens of context shared with the occurrence it copies
    strength: int | None = None
    # a costly drafter stopped before the length it was asked for (its confidence fell under the
    # policy's p-min, or it ended): the position after its last token counts as rejected, so a
    # drafter that keeps declining is learned as one that does not pay (its call still costs)
    short: bool = False


@dataclass
class DraftRequest:
    context: Sequence[int]  # everything the target has committed: prompt + generated
    max_tokens: int
    sampling: SamplingParams
    rng: np.random.Generator
    min_confidence: float = 0.0  # stop drafting when the draft's top probability falls below
    shadow: bool = False  # an unverified proposal, only scored: costly sources need not run


class Drafter(Protocol):
    """`name`; optional class attributes: `proposes_first` (a free lookup: asked for a full
    draft every round, the policy then sizes it from its match strength) and `sizes_itself`
    (the draft's length is already the drafter's choice: `auto`); optional method
    `catch_up(context) -> int`: tokens a draft model must evaluate before it can draft (the
    policy weighs it when deciding to probe a costly drafter); optional attribute
    `last_catch_up: (tokens, seconds)`: what the last call evaluated before drafting, and its
    time (`auto` learns the model's catch-up rate from it)."""

    name: str

    def draft(self, request: DraftRequest) -> Draft: ...


CATCH_UP_MIN = 16  # tokens a model evaluates before drafting that count as a catch-up (fewer:
# the round's own re-sync after a partial acceptance, part of a draft's cost)


def catch_up_of(drafter: object) -> tuple[int, float] | None:
    """The last draft call's catch-up on context its model had not seen, (tokens, seconds),
    when it was one: that is priced apart from a draft's own cost (None: it was not)."""
    tokens, seconds = getattr(drafter, "last_catch_up", (0, 0.0))
    return (tokens, seconds) if tokens >= CATCH_UP_MIN else None


class NgramDrafter:
    """Prompt lookup: find the earlier occurrence of the context's last n tokens that shares the
    most context before them (the latest among equals) and propose what followed it. Free to
    compute; strong when code repeats its context."""

    name = "ngram"
    proposes_first = True

    def __init__(self, *, max_ngram: int = 4, min_ngram: int = 1, max_candidates: int = 32) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.max_candidates = max_candidates  # latest occurrences compared by context length

    def draft(self, request: DraftRequest) -> Draft:
        context = np.asarray(request.context, dtype=np.int64)
        ends, lengths = _suffix_matches(context, self.max_ngram + REACH)
        n = min(self.max_ngram, int(lengths.max()) if lengths.size else 0)
        if n < max(self.min_ngram, 1):
            return Draft([])
        # the latest occurrences of the tail n-gram; of those, the one sharing the most context
        # before it (the same code, not just the same few tokens), the latest among equals
        hits = np.flatnonzero(lengths >= n)[-self.max_candidates :]
        pick = hits[len(hits) - 1 - int(np.argmax(lengths[hits][::-1]))]
        start = int(ends[pick]) + 1
        return Draft(
            context[start : start + request.max_tokens].tolist(), strength=int(lengths[pick])
        )


REACH = 64  # context compared before a matched n-gram to rank its occurrences


def _suffix_matches(context: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Every earlier position whose token is the context's last one, and how many tokens the
    context up to there shares with the context's tail (at most `cap`). One pass per matched
    length over the surviving candidates. It runs every round: 0.07 ms a round on the sources
    bench, where a window scan per n-gram size and a loop over the occurrences took 0.2 ms."""
    last = len(context) - 1
    if last < 1:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ends = np.flatnonzero(context[:last] == context[last])
    lengths = np.ones(len(ends), dtype=np.int64)
    live = np.arange(len(ends))
    length = 1
    while live.size and length < cap:
        before = ends[live] - length
        inside = before >= 0
        live = live[inside][context[before[inside]] == context[last - length]]
        length += 1
        lengths[live] = length
    return ends, lengths


class ModelDrafter:
    """A small model with the target's vocabulary drafts token by token.

    Its KV cache follows the target's committed tokens by prefix matching (`sync`), which also
    catches it up after a fully accepted round (it never evaluated its own last draft token).
    At temperature > 0 it samples with the target's settings and reports q for each token.
    """

    name = "model"

    def __init__(self, model: ModelBackend, *, target: ModelBackend) -> None:
        check_same_vocabulary(model, target)
        self.model = model
        self.last_catch_up = (0, 0.0)  # tokens evaluated before the last draft, and seconds

    def catch_up(self, context: Sequence[int]) -> int:
        """Tokens the draft model would evaluate before drafting after `context`."""
        return len(context) - kept_by_sync(self.model, context)

    def draft(self, request: DraftRequest) -> Draft:
        started = time.perf_counter()
        logits, evaluated = sync(self.model, request.context)
        self.last_catch_up = (evaluated, time.perf_counter() - started)
        tokens: list[int] = []
        probs: list[np.ndarray] = []
        while True:
            if request.sampling.greedy:
                token, confidence = int(np.argmax(logits)), sampling.top_probability(logits)
            else:
                q = sampling.distribution(logits, request.sampling)
                token = sampling.draw(q, request.rng)
                confidence = float(q.max())
                probs.append(q)
            if confidence < request.min_confidence:
                if probs:
                    probs.pop()
                break
            tokens.append(token)
            if len(tokens) >= request.max_tokens:
                break
            logits = self.model.evaluate([token], logits_from=0)[0]
        return Draft(tokens, None if request.sampling.greedy else probs)


def check_same_vocabulary(draft: ModelBackend, target: ModelBackend) -> None:
    if draft.info.vocab_fingerprint != target.info.vocab_fingerprint:
        raise EngineError(
            f"draft model {draft.info.path} does not share the target's vocabulary "
            f"({draft.info.n_vocab} vs {target.info.n_vocab} tokens, different token texts). "
            "Use a draft model from the target's family (e.g. Qwen2.5-Coder-0.5B for a Qwen2.5-Coder "
            "target), or set `drafter` to 'ngram'."
        )
