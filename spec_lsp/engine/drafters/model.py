"""A draft model with the target's vocabulary, drafting token by token."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from spec_lsp.engine import sampling
from spec_lsp.engine.backends.base import ModelBackend, kept_by_sync, sync
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.types import EngineError


class ModelDrafter(Drafter):
    """A small model with the target's vocabulary drafts token by token.

    Its KV cache follows the target's committed tokens by prefix matching (`sync`), which also
    catches it up after a fully accepted round (it never evaluated its own last draft token).
    At temperature > 0 it samples with the target's settings and reports q for each token.
    """

    name = "model"
    counts_catch_up = True

    def __init__(self, model: ModelBackend, *, target: ModelBackend) -> None:
        check_same_vocabulary(model, target)
        self.model = model
        self.last_catch_up = (0, 0.0)  # tokens evaluated before the last draft, and seconds

    def catch_up(self, context: Sequence[int]) -> int:
        """Tokens the draft model would evaluate before drafting after `context`."""
        return len(context) - kept_by_sync(self.model, context)

    def draft(self, request: DraftRequest) -> Draft:
        started = time.perf_counter()
        logits, evaluated = sync(self.model, request.context, check=request.check)
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
