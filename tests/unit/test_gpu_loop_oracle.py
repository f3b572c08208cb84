"""The GPU bench's oracle drafter: the target's greedy text, each token spoiled with
probability 1 - alpha by its position, ending the proposal; nothing once the text went
another way."""

from __future__ import annotations

import numpy as np

from bench.gpu_loop import Oracle
from spec_lsp.engine.drafters.base import DraftRequest
from spec_lsp.engine.types import SamplingParams


def _ask(oracle: Oracle, context: list[int], k: int):
    return oracle.draft(DraftRequest(context, k, SamplingParams(), np.random.default_rng(0)))


def test_the_oracle_proposes_the_reference_up_to_its_first_spoiled_token():
    prompt, reference = [1, 2, 3], list(range(100, 160))
    oracle = Oracle(prompt, reference, 0.7)
    spoiled = [oracle.spoiled(i) for i in range(len(reference))]
    assert 0 < sum(spoiled) < len(reference)  # (some of each at 0.7)
    for at in range(0, 50, 3):
        draft = _ask(oracle, prompt + reference[:at], 8).tokens
        expected = []
        for i, token in enumerate(reference[at : at + 8]):
            if spoiled[at + i]:
                expected.append(token ^ 1)
                break
            expected.append(token)
        assert draft == expected


def test_the_oracle_proposes_nothing_off_the_reference():
    prompt, reference = [1, 2, 3], list(range(100, 140))
    oracle = Oracle(prompt, reference, 0.9)
    assert _ask(oracle, prompt + [100, 7], 4).tokens == []
    assert _ask(oracle, prompt + reference + [5], 4).tokens == []
    assert oracle.diverged == 2
