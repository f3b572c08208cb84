"""The per-round work of the free lookups and the policy, made cheap without changing a
decision: the loop's context array, the lookup in a fixed run of tokens, the policy's costs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.backends.fake import FakeModel, hashed_noise
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.base import Draft, DraftRequest
from spec_lsp.engine.drafters.ngram import NgramDrafter, TokensLookup
from spec_lsp.engine.policy.adaptive import AdaptivePolicy, FixedPolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams


def _in_tokens_by_hand(tokens: list[int], context: list[int], k: int, min_ngram: int):
    """TokensLookup's rule in plain loops: the context's tail (its last 64 tokens) is put after
    `tokens`; of the positions of `tokens` that have a next token and hold the tail's last
    token, the one whose run of tokens before it equals the run before the tail's end longest
    (at most 64 compared), the latest among equals; what followed it, and that length."""
    joined = tokens + context[-64:]
    last = len(joined) - 1
    best, best_length = None, 0
    for end in range(len(tokens) - 1):
        length = 0
        while length < 64 and end - length >= 0 and joined[end - length] == joined[last - length]:
            length += 1
        if length and length >= best_length:
            best, best_length = end, length
    if best is None or best_length < min_ngram:
        return [], None
    return tokens[best + 1 : best + 1 + k], best_length


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=0, max_size=40),
    st.lists(st.integers(0, 4), min_size=1, max_size=90),
    st.integers(1, 6),
    st.integers(1, 3),
    st.booleans(),
)
def test_a_lookup_in_fixed_tokens_follows_its_rule(tokens, context, k, min_ngram, as_array):
    array = np.asarray(context, dtype=np.int64) if as_array else None
    request = DraftRequest(context, k, SamplingParams(), np.random.default_rng(0), array=array)
    draft = TokensLookup(tokens, min_ngram=min_ngram).draft(request)
    expected, strength = _in_tokens_by_hand(tokens, context, k, min_ngram)
    assert draft.tokens == expected
    if expected:
        assert draft.strength == strength


class Recording(NgramDrafter):
    """An n-gram lookup that keeps what each round's request held."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[list[int], list[int] | None]] = []

    def draft(self, request: DraftRequest) -> Draft:
        array = None if request.array is None else request.array.tolist()
        self.seen.append((list(request.context), array))
        return super().draft(request)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 23), min_size=1, max_size=30), st.integers(2, 40), st.integers(1, 6))
def test_the_loop_hands_free_lookups_its_context_as_an_array(prompt, max_tokens, k):
    drafter = Recording()
    job = DecodeJob(prompt, max_tokens, SamplingParams(), frozenset())
    out = generate(
        FakeModel(lambda c: hashed_noise(c, 24, window=2, salt="target"), n_vocab=24),
        drafter,
        FixedPolicy(k),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=DecodeStats(),
    )
    assert drafter.seen
    for context, array in drafter.seen:
        assert array == context
    assert drafter.seen[-1][0] == prompt + out[: len(drafter.seen[-1][0]) - len(prompt)]


def test_the_policys_costs_follow_the_curve_when_it_is_measured_again():
    profile = CostProfile({1: 0.01, 2: 0.0105, 4: 0.012, 8: 0.016})
    policy = AdaptivePolicy(profile, estimate=AcceptanceEstimate(0.8), draft_max=8)
    assert policy.best_k() > 0  # batches nearly free: drafting pays
    first = profile.round_costs(8, free=False)
    assert profile.round_costs(8, free=False) is first  # (kept while nothing moved)
    for _ in range(16):  # batches measured again, far dearer: the curve is interpolated anew
        for n in (2, 3, 4, 5, 6, 7, 8, 9):
            profile.observe_verify(n, 0.01 * n * 1.2)
    assert profile.round_costs(8, free=False) is not first
    assert policy.best_k() == 0
