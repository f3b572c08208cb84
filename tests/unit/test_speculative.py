"""The engine's promises: greedy speculation is plain greedy decoding, token for token; speculative
sampling keeps the target's distribution exactly."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.backends.base import ABORTABLE_CHUNK, sync
from spec_lsp.engine.backends.fake import FakeModel, hashed_noise
from spec_lsp.engine.decode.speculative import DecodeJob, generate, verify
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.model import ModelDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import AdaptivePolicy, FixedPolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.types import Cancelled, CancelToken, DecodeStats, SamplingParams

VOCAB = 24
STOP = 0


def target_logits(context: Sequence[int]) -> np.ndarray:
    logits = hashed_noise(context, VOCAB, window=2, salt="target")
    logits[STOP] -= 3.0  # stop now and then, not always
    return logits


def fake_target() -> FakeModel:
    return FakeModel(target_logits, n_vocab=VOCAB, fingerprint="v24")


def plain_greedy(prompt: list[int], max_tokens: int) -> list[int]:
    model = fake_target()
    logits, _ = sync(model, prompt)
    out: list[int] = []
    while len(out) < max_tokens:
        token = int(np.argmax(logits))
        if token == STOP:
            break
        out.append(token)
        logits = model.evaluate([token], logits_from=0)[0]
    return out


class ScriptedDrafter(Drafter):
    """Adversarial drafters: proposals drawn by hypothesis, right or wrong."""

    name = "scripted"

    def __init__(self, data: st.DataObject, mode: str) -> None:
        self.data, self.mode = data, mode
        self.oracle = fake_target()

    def draft(self, request: DraftRequest) -> Draft:
        n = self.data.draw(st.integers(0, request.max_tokens))
        if self.mode == "random":
            return Draft(
                self.data.draw(st.lists(st.integers(0, VOCAB - 1), min_size=n, max_size=n))
            )
        # "mostly right": the true greedy continuation with one corrupted position
        tokens, logits = [], sync(self.oracle, request.context)[0]
        for _ in range(n):
            tokens.append(int(np.argmax(logits)))
            logits = self.oracle.evaluate([tokens[-1]], logits_from=0)[0]
        if tokens and self.mode == "one_wrong":
            at = self.data.draw(st.integers(0, len(tokens) - 1))
            tokens[at] = (tokens[at] + 1) % VOCAB
        return Draft(tokens)


def run(
    prompt: list[int],
    drafter,
    k: int,
    max_tokens: int,
    params=None,
    seed=0,
    continuation=(),
    guide=None,
):
    stats = DecodeStats()
    job = DecodeJob(
        prompt,
        max_tokens,
        params or SamplingParams(),
        frozenset({STOP}),
        continuation=continuation,
        guide=guide,
    )
    out = generate(
        fake_target(),
        drafter,
        FixedPolicy(k),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(seed),
        stats=stats,
    )
    return out, stats


@settings(max_examples=150, deadline=None)
@given(
    prompt=st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12),
    k=st.integers(0, 12),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["random", "exact", "one_wrong", "ngram", "self"]),
    cached=st.sampled_from(["none", "right", "wrong"]),
    data=st.data(),
)
def test_greedy_speculation_equals_plain_greedy(prompt, k, max_tokens, mode, cached, data):
    if mode == "ngram":
        drafter = NgramDrafter()
    elif mode == "self":
        drafter = ModelDrafter(fake_target(), target=fake_target())
    else:
        drafter = ScriptedDrafter(data, mode)
    continuation: list[int] = []
    if cached == "right":  # the last generation, maybe longer or shorter than this one
        continuation = prompt + plain_greedy(prompt, data.draw(st.integers(0, 50)))
    elif cached == "wrong":
        continuation = prompt + data.draw(st.lists(st.integers(0, VOCAB - 1), max_size=30))
    out, stats = run(prompt, drafter, k, max_tokens, continuation=continuation)
    assert out == plain_greedy(prompt, max_tokens)
    assert stats.accepted <= stats.drafted
    assert stats.target_passes == stats.rounds + 1
    if mode == "self" and k > 0 and cached != "wrong":
        assert stats.accepted == stats.drafted  # a model drafting for itself is always right


@settings(max_examples=120, deadline=None)
@given(
    prompt=st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12),
    k=st.integers(1, 12),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["random", "exact", "one_wrong", "ngram"]),
    temperature=st.sampled_from([0.5, 1.0, 1.5]),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
def test_sampling_with_lookup_drafts_gives_the_seeds_plain_text(
    prompt, k, max_tokens, mode, temperature, seed, data
):
    """At T > 0, a deterministic draft of any length, right or wrong, does not change the text
    a seed gives: the adaptive policy's timing-driven k cannot make a seeded completion differ
    from plain sampling (and from itself)."""
    drafter = NgramDrafter() if mode == "ngram" else ScriptedDrafter(data, mode)
    params = SamplingParams(temperature=temperature, top_k=8, top_p=0.9, seed=seed)
    plain, _ = run(prompt, None, 0, max_tokens, params=params, seed=seed)
    spec, stats = run(prompt, drafter, k, max_tokens, params=params, seed=seed)
    assert spec == plain
    assert stats.accepted <= stats.drafted


def test_self_draft_needs_fewer_target_passes():
    plain, plain_stats = run([3, 4, 5], None, 0, 30)
    spec, spec_stats = run([3, 4, 5], ModelDrafter(fake_target(), target=fake_target()), 4, 30)
    assert spec == plain
    assert spec_stats.target_passes < plain_stats.target_passes / 2


def test_cancellation_between_rounds():
    token = CancelToken()
    token.cancel("newer request")
    with pytest.raises(Cancelled):
        generate(
            fake_target(),
            None,
            FixedPolicy(0),
            DecodeJob([1, 2], 10, SamplingParams(), frozenset()),
            cancel=token,
            rng=np.random.default_rng(0),
            stats=DecodeStats(),
        )


def test_a_cancel_stops_the_prompt_chunk_being_computed():
    """A request's prompt is evaluated in large chunks, and a cancel stops the one being
    computed (nobody waits for it: a newer key typed into the generation takes it over rather
    than cancelling it), with the cancel's reason; the chunks done before stay cached."""
    target = fake_target()
    target.delay_s = 0.05  # a model call's compute, during which the abort check is polled
    prompt = [1 + i % (VOCAB - 1) for i in range(3 * ABORTABLE_CHUNK)]
    token = CancelToken()
    calls = 0
    evaluate = target.evaluate

    def counted(tokens, **kwargs):  # the second chunk is cancelled while it computes
        nonlocal calls
        calls += 1
        if calls == 2:
            threading.Timer(0.01, token.cancel, ("a newer request elsewhere",)).start()
        return evaluate(tokens, **kwargs)

    target.evaluate = counted  # type: ignore[method-assign]
    with pytest.raises(Cancelled, match="a newer request elsewhere"):
        generate(
            target,
            None,
            FixedPolicy(0),
            DecodeJob(prompt, 10, SamplingParams(), frozenset()),
            cancel=token,
            rng=np.random.default_rng(0),
            stats=DecodeStats(),
        )
    assert (calls, target.aborted) == (2, 1)
    assert target.tokens == prompt[:ABORTABLE_CHUNK]


def test_a_draft_model_catching_up_stops_at_a_cancel():
    """A jump leaves hundreds of tokens for the draft model to evaluate before it drafts: a
    cancel lands between its chunks, not after the whole context."""
    draft = fake_target()
    drafter = ModelDrafter(draft, target=fake_target())
    context = [1 + i % (VOCAB - 1) for i in range(500)]
    checks = 0

    def check() -> None:
        nonlocal checks
        checks += 1
        if checks > 2:
            raise Cancelled("newer request")

    request = DraftRequest(context, 4, SamplingParams(), np.random.default_rng(0), check=check)
    with pytest.raises(Cancelled):
        drafter.draft(request)
    assert 0 < len(draft.tokens) < 200  # two chunks kept for the next request, not all 500
    drafter.draft(DraftRequest(context, 4, SamplingParams(), np.random.default_rng(0)))
    assert draft.tokens[: len(context)] == context


def test_the_decode_loop_hands_its_cancel_to_the_drafter():
    token = CancelToken()

    class CancelledWhileDrafting(Drafter):
        def draft(self, request: DraftRequest) -> Draft:
            token.cancel("newer request")  # the newer keystroke arrives mid-draft
            assert request.check is not None
            request.check()
            return Draft([1, 2])

    with pytest.raises(Cancelled):
        generate(
            fake_target(),
            CancelledWhileDrafting(),
            FixedPolicy(4),
            DecodeJob([1, 2], 10, SamplingParams(), frozenset()),
            cancel=token,
            rng=np.random.default_rng(0),
            stats=DecodeStats(),
        )


# -- speculative sampling keeps the target distribution ---------------------------------------

P = np.array([0.5, 0.2, 0.15, 0.1, 0.05])


def test_verify_first_token_distribution_matches_target():
    """One verify step: the emitted first token must be distributed as p, whatever q is."""
    params = SamplingParams(temperature=1.0)
    q = np.array([0.1, 0.6, 0.1, 0.1, 0.1])
    rows = np.log(np.vstack([P, P]))
    rng = np.random.default_rng(7)
    counts: Counter[int] = Counter()
    n, n_accepted = 40_000, 0
    for _ in range(n):
        x = int(rng.choice(5, p=q))
        accepted, nxt = verify(rows, Draft([x], [q]), params, rng)
        counts[x if accepted else nxt] += 1
        n_accepted += accepted
    observed = np.array([counts[i] for i in range(5)])
    chi2 = float((((observed - n * P) ** 2) / (n * P)).sum())
    assert chi2 < 18.5  # p = 0.001 for 4 degrees of freedom
    # and the acceptance rate is sum(min(p, q)) = 0.55
    assert abs(n_accepted / n - float(np.minimum(P, q).sum())) < 0.01


@pytest.mark.parametrize("deterministic", [False, True])
def test_sequences_from_speculative_sampling_match_plain_sampling(deterministic):
    """Two-token sequences on a 4-token vocabulary: speculative vs the exact target law."""
    vocab = 4

    def logits(context):
        return hashed_noise(context, vocab, window=2, salt="t") * 0.7

    def draft_logits(context):
        return hashed_noise(context, vocab, window=2, salt="d") * 0.7

    params = SamplingParams(temperature=1.0, top_k=3)
    target = FakeModel(logits, n_vocab=vocab, fingerprint="v4")
    if deterministic:
        drafter = NgramDrafter(max_ngram=1)
        prompt = [1, 2, 1, 3, 1]
    else:
        drafter = ModelDrafter(
            FakeModel(draft_logits, n_vocab=vocab, fingerprint="v4"), target=target
        )
        prompt = [1]
    from spec_lsp.engine import sampling

    exact: dict[tuple[int, int], float] = {}
    p0 = sampling.distribution(logits(prompt), params)
    for a in range(vocab):
        p1 = sampling.distribution(logits([*prompt, a]), params)
        for b in range(vocab):
            exact[(a, b)] = p0[a] * p1[b]
    rng = np.random.default_rng(11)
    counts: Counter[tuple[int, int]] = Counter()
    n = 6000
    for _ in range(n):
        out = generate(
            target,
            drafter,
            FixedPolicy(3),
            DecodeJob(prompt, 2, params, frozenset()),
            cancel=CancelToken(),
            rng=rng,
            stats=DecodeStats(),
        )
        counts[(out[0], out[1])] += 1
    cells = [c for c in exact if exact[c] * n >= 5]
    chi2 = sum((counts[c] - n * exact[c]) ** 2 / (n * exact[c]) for c in cells)
    assert sum(counts[c] for c in exact if c not in cells) <= n * 0.02 + 10
    assert chi2 < 40.0  # ~p = 0.001 at up to 15 degrees of freedom


def test_ngram_lookup_prefers_the_occurrence_with_the_longest_shared_context():
    # "x = 1 ; A B -> C" earlier, "y = 2 ; A B -> D" later; the tail "x = 1 ; A B" matches the
    # first occurrence further back, so its continuation (C) is proposed, not the latest (D)
    x, y, eq, one, two, semi, a, b, c, d = range(10, 20)
    context = [x, eq, one, semi, a, b, c, 0, y, eq, two, semi, a, b, d, 0, x, eq, one, semi, a, b]
    request = DraftRequest(context, 1, SamplingParams(), np.random.default_rng(0))
    assert NgramDrafter(max_ngram=2).draft(request).tokens == [c]
    latest_only = NgramDrafter(max_ngram=2, max_candidates=1)
    assert latest_only.draft(request).tokens == [d]

    # and it says how much context that occurrence shares: the n-gram (2) and "x = 1 ;" (4)
    assert NgramDrafter(max_ngram=2).draft(request).strength == 6


def _lookup_by_hand(context: list[int], k: int, max_ngram: int, max_candidates: int):
    """The n-gram lookup's rule in plain loops: the longest tail n-gram (<= max_ngram) seen
    before; of its latest `max_candidates` occurrences, the one sharing the most context
    before it (up to 64 tokens), the latest among equals; what followed it, and n + shared."""
    for n in range(min(max_ngram, len(context) - 1), 0, -1):
        tail = context[-n:]
        hits = [i for i in range(len(context) - n) if context[i : i + n] == tail]
        if not hits:
            continue
        best, best_shared = hits[-1], -1
        for hit in reversed(hits[-max_candidates:]):
            shared = 0
            while (
                shared < 64
                and hit - shared - 1 >= 0
                and context[hit - shared - 1] == context[len(context) - n - shared - 1]
            ):
                shared += 1
            if shared > best_shared:
                best, best_shared = hit, shared
        return context[best + n : best + n + k], n + best_shared
    return [], None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=120),
    st.integers(1, 8),
    st.integers(1, 5),
    st.integers(1, 40),
)
def test_ngram_lookup_follows_its_rule_on_any_context(context, k, max_ngram, max_candidates):
    request = DraftRequest(context, k, SamplingParams(), np.random.default_rng(0))
    draft = NgramDrafter(max_ngram=max_ngram, max_candidates=max_candidates).draft(request)
    tokens, strength = _lookup_by_hand(context, k, max_ngram, max_candidates)
    assert draft.tokens == tokens
    if tokens:
        assert draft.strength == strength


class StrengthLookup(Drafter):
    """A lookup that is right (the target's greedy continuation) when its match is strong and
    wrong when it is weak; every other round is weak."""

    name = "lookup"
    free = True

    def __init__(self) -> None:
        self.oracle = fake_target()
        self.requests: list[int] = []

    def draft(self, request: DraftRequest) -> Draft:
        self.requests.append(request.max_tokens)
        tokens, logits = [], sync(self.oracle, request.context)[0]
        for _ in range(request.max_tokens):
            tokens.append(int(np.argmax(logits)))
            logits = self.oracle.evaluate([tokens[-1]], logits_from=0)[0]
        if len(self.requests) % 2:
            return Draft([(t + 1) % VOCAB for t in tokens], strength=1)
        return Draft(tokens, strength=12)


def test_lookup_proposes_first_and_the_policy_sizes_it_by_strength():
    prompt = [5, 6, 7]
    profile = CostProfile({1: 1.0, 2: 1.6, 4: 2.6, 8: 4.5, 16: 5.4})
    policy = AdaptivePolicy(profile, estimate=AcceptanceEstimate(0.5), draft_max=8)
    policy.observe_verify = policy.observe_overhead = lambda *_: None  # the synthetic costs stay
    drafter = StrengthLookup()
    stats = DecodeStats()
    job = DecodeJob(prompt, 400, SamplingParams(), frozenset())
    out = generate(
        fake_target(),
        drafter,
        policy,
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    assert out == plain_greedy(prompt, 400)  # still exact (the fake target never stops here)
    assert drafter.requests[:20] == [8] * 20  # always asked for draft_max (room permitting)
    late = list(zip(stats.k_trace, stats.accepted_trace))[-25:-5]  # (the end has less room)
    assert all(k in (0, 8) for k, _ in late)  # weak proposals are skipped, strong ones verified
    assert [a for k, a in late if k] == [8] * sum(1 for k, _ in late if k)
    assert sum(1 for k, _ in late if k) >= 8


def test_each_draft_call_is_reported_to_the_policy_with_its_time():
    class Recording(FixedPolicy):
        def __init__(self) -> None:
            super().__init__(3)
            self.drafts: list[tuple[int, float]] = []

        def observe_draft(self, drafted: int, seconds: float) -> None:
            self.drafts.append((drafted, seconds))

    target = fake_target()
    policy = Recording()
    stats = DecodeStats()
    generate(
        target,
        NgramDrafter(),
        policy,
        DecodeJob([1, 2, 3, 1, 2, 3, 1, 2], 30, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    assert sum(n for n, _ in policy.drafts) == stats.drafted > 0
    assert all(n > 0 and seconds >= 0 for n, seconds in policy.drafts)


def test_a_draft_calls_catch_up_on_new_context_is_not_reported_as_its_cost():
    """After a keystroke the draft model first evaluates the new text (here 100 tokens, 50 ms):
    the draft cost the policy calibrates from is the call without that catch-up."""

    class CatchingUp(Drafter):
        name = "model"

        def __init__(self) -> None:
            self.calls = 0
            self.last_catch_up = (0, 0.0)

        def draft(self, request: DraftRequest) -> Draft:
            self.calls += 1
            if self.calls == 1:
                time.sleep(0.05)
                self.last_catch_up = (100, 0.05)
            else:
                self.last_catch_up = (1, 0.0)  # a round's own re-sync: part of the cost
            return Draft([7] * request.max_tokens)

    class Recording(FixedPolicy):
        def __init__(self) -> None:
            super().__init__(2)
            self.drafts: list[float] = []

        def observe_draft(self, drafted: int, seconds: float) -> None:
            self.drafts.append(seconds)

    policy = Recording()
    generate(
        fake_target(),
        CatchingUp(),
        policy,
        DecodeJob([1, 2, 3], 6, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=DecodeStats(),
    )
    assert policy.drafts and policy.drafts[0] < 0.02


def test_a_drafter_that_keeps_declining_is_learned_as_one_that_does_not_pay():
    """A draft model whose confidence stays under the policy's p-min returns nothing, yet each
    call costs time: a declined position counts as rejected, so the policy stops asking every
    round (it probes now and then instead), and the call's time calibrates the draft cost."""

    class Declining(Drafter):
        name = "model"

        def __init__(self) -> None:
            self.calls = 0

        def draft(self, request: DraftRequest) -> Draft:
            self.calls += 1
            return Draft([])

    profile = CostProfile({1: 1.0, 2: 1.05, 4: 1.15, 8: 1.4, 16: 2.0})
    profile.draft_seconds_per_token, profile.draft_seconds_fixed = 0.01, 0.01
    policy = AdaptivePolicy(profile, estimate=AcceptanceEstimate(0.5), draft_max=8)
    policy.observe_verify = policy.observe_overhead = lambda *_: None  # the synthetic costs stay
    calibrated: list[tuple[int, float]] = []
    policy.observe_draft = lambda n, seconds: calibrated.append((n, seconds))  # type: ignore
    drafter, stats = Declining(), DecodeStats()
    out = generate(
        fake_target(),
        drafter,
        policy,
        DecodeJob([5, 6, 7], 200, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    assert out == plain_greedy([5, 6, 7], 200)
    assert stats.rounds == 199 and stats.drafted == 0
    assert drafter.calls < 25  # (asked every round, it was called 199 times)
    assert calibrated and all(n == 0 for n, _ in calibrated)
    assert policy.estimate.alphas(1)[0] < 0.2
