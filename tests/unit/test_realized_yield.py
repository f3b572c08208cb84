"""What drafting really yields: the ledger benches a source and strength that lose against
plain rounds, probes it rarely, and puts it back when a probe pays; the decode loop feeds it
the rounds' wall time, so a profile that says drafting pays cannot keep a losing drafter on."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.backends.fake import FakeModel
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import AdaptivePolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, strength_bucket
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.policy.realized import PROBE_FIRST, RealizedYield
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams
from tests.unit.test_speculative import (
    STOP,
    VOCAB,
    ScriptedDrafter,
    fake_target,
    plain_greedy,
    target_logits,
)


def test_a_source_that_loses_is_benched_and_others_are_not() -> None:
    ledger = RealizedYield()
    ledger.observe_plain(0.010)
    for _ in range(3):  # 1.5 tokens a round at the cost of 2.5 plain rounds
        ledger.observe_drafting("ngram", strength_bucket(3), 1, 0.025)
        ledger.observe_drafting("ngram", strength_bucket(12), 4, 0.025)
    assert not ledger.allows("ngram", strength_bucket(3))
    assert ledger.allows("ngram", strength_bucket(12))  # a strong match pays: its bucket drafts on
    assert ledger.allows("other", strength_bucket(3))
    report = ledger.report()
    assert report["ngram/1"]["benched"] and not report["ngram/3"]["benched"]


def test_a_strength_never_tried_follows_the_source_overall() -> None:
    ledger = RealizedYield()
    ledger.observe_plain(0.010)
    for strength in (1, 3, 6):  # one losing round at each of three strengths
        ledger.observe_drafting("ngram", strength_bucket(strength), 1, 0.03)
    assert not ledger.allows(
        "ngram", strength_bucket(12)
    )  # the source loses overall: a new strength waits
    assert ledger.allows("other", strength_bucket(12))
    assert ledger.realized_loss(0.03) == pytest.approx(2.0)


def test_one_bad_round_does_not_bench() -> None:
    ledger = RealizedYield()
    ledger.observe_plain(0.010)
    ledger.observe_drafting("ngram", strength_bucket(3), 1, 0.03)
    assert ledger.allows("ngram", strength_bucket(3))


def test_a_benched_source_is_probed_rarely_and_comes_back_when_a_probe_pays() -> None:
    ledger = RealizedYield()
    ledger.observe_plain(0.010)
    for _ in range(3):
        ledger.observe_drafting("ngram", None, 1, 0.02)
    allowed = [ledger.allows("ngram", None) for _ in range(PROBE_FIRST)]
    assert allowed == [False] * (PROBE_FIRST - 1) + [True]  # one probe after the wait
    ledger.observe_drafting("ngram", None, 1, 0.02)  # the probe lost: wait twice as long
    allowed = [ledger.allows("ngram", None) for _ in range(2 * PROBE_FIRST)]
    assert allowed.count(True) == 1 and allowed[-1]
    ledger.observe_drafting("ngram", None, 4, 0.02)  # the machine is free again: it pays
    assert ledger.allows("ngram", None) and ledger.allows("ngram", None)


class SleepyTarget:
    """The fake target, each pass costing `per_token` seconds per token evaluated: a CPU whose
    batches cost what they hold (a profile measured on an idle machine says otherwise)."""

    def __init__(self, per_token: float) -> None:
        self.model, self.per_token = fake_target(), per_token

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def evaluate(self, tokens: Sequence[int], **kwargs):
        time.sleep(self.per_token * len(tokens))
        return self.model.evaluate(tokens, **kwargs)


class Wrong(Drafter):
    """A strong-looking lookup that is always wrong (the file changed under it)."""

    name = "wrong"
    free = True

    def draft(self, request: DraftRequest) -> Draft:
        right = plain_greedy(list(request.context), 1)
        wrong = ((right[0] if right else 0) + 1) % VOCAB
        return Draft([wrong] * request.max_tokens, strength=20)


def _decode(ledger: RealizedYield | None, policy_profile: CostProfile) -> DecodeStats:
    stats = DecodeStats()
    policy = AdaptivePolicy(
        policy_profile,
        estimate=AcceptanceEstimate(0.95, prior_weight=100.0),  # trusts the drafts
        draft_max=4,
        ledger=ledger,
    )
    prompt = [3, 5, 7]
    out = generate(
        SleepyTarget(0.008),  # type: ignore[arg-type]
        Wrong(),
        policy,
        DecodeJob(prompt, 24, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    assert out == plain_greedy(prompt, 24)[: len(out)]
    return stats


def test_the_loop_stops_drafting_that_loses_whatever_the_profile_says() -> None:
    """Each generation starts from the same stale profile (batches look nearly free) and an
    estimate that trusts the lookup: alone, every generation drafts and loses its first round;
    the ledger, kept across generations as the engine keeps it, benches the source."""
    flat = {1: 0.008, 2: 0.0081, 4: 0.0082, 8: 0.0085}

    def drafted(ledger: RealizedYield | None) -> list[int]:
        return [sum(_decode(ledger, CostProfile(dict(flat))).k_trace) for _ in range(12)]

    assert drafted(None) == [4] * 12
    judged = drafted(RealizedYield())
    assert sum(judged) <= 24  # benched after three; then a probe now and then, ever rarer


@settings(max_examples=80, deadline=None)
@given(
    prompt=st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["random", "exact", "one_wrong", "ngram"]),
    verdicts=st.lists(st.booleans(), min_size=1, max_size=8),
    cached=st.sampled_from(["none", "right", "wrong"]),
    data=st.data(),
)
def test_greedy_speculation_under_the_ledger_equals_plain_greedy(
    prompt, max_tokens, mode, verdicts, cached, data
):
    """Temperature 0 under the adaptive policy with its ledger: whatever it benches or probes
    (rounds judged by drawn outcomes), for every drafter, the text is plain greedy decoding."""
    ledger = RealizedYield()
    ledger.observe_plain(0.01)
    for i, pays in enumerate(verdicts):  # a history that benches some keys and not others
        for _ in range(3):
            ledger.observe_drafting(
                "ngram" if i % 2 else "scripted",
                strength_bucket(4 * i),
                1,
                0.005 if pays else 0.05,
            )
            ledger.observe_drafting("continuation", None, 1, 0.005 if pays else 0.05)
    # frozen: the rounds' wall time must not change which drafts hypothesis sees
    ledger.observe_plain = ledger.observe_drafting = lambda *_a, **_k: None  # type: ignore[method-assign]
    ledger.realized_loss = lambda _seconds: None  # type: ignore[method-assign]
    drafter = NgramDrafter() if mode == "ngram" else ScriptedDrafter(data, mode)
    continuation: list[int] = []
    if cached == "right":
        continuation = prompt + plain_greedy(prompt, data.draw(st.integers(0, 50)))
    elif cached == "wrong":
        continuation = prompt + data.draw(st.lists(st.integers(0, VOCAB - 1), max_size=30))
    policy = AdaptivePolicy(
        CostProfile({1: 0.01, 2: 0.011, 4: 0.012, 8: 0.014, 16: 0.02}),
        estimate=AcceptanceEstimate(data.draw(st.floats(0.3, 0.99))),
        draft_max=8,
        ledger=ledger,
        clock=lambda: 0.0,
    )
    policy.observe_verify = policy.observe_overhead = policy.observe_draft = (  # type: ignore[method-assign]
        lambda *_a: None
    )
    stats = DecodeStats()
    out = generate(
        fake_target(),
        drafter,
        policy,
        DecodeJob(
            prompt, max_tokens, SamplingParams(), frozenset({STOP}), continuation=continuation
        ),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    assert out == plain_greedy(prompt, max_tokens)
    assert stats.accepted <= stats.drafted


class Oracle(Drafter):
    """A lookup that is always right (the code repeats itself), strongly matched."""

    name = "oracle"
    free = True

    def draft(self, request: DraftRequest) -> Draft:
        return Draft(plain_greedy(list(request.context), request.max_tokens), strength=20)


def test_a_profile_taken_on_a_busy_machine_is_measured_again_and_drafting_returns(
    monkeypatch,
) -> None:
    """The profile says a batch of 2 costs 2.5 passes (measured while other work held the
    cores); the machine is free now and a batch costs one pass. Sure lookups get a one-token
    probe now and then (within the allowance: 1.5 wasted passes fit in 2% of 96 tokens), which
    measures the batch again, and the policy drafts once it pays."""
    monkeypatch.setattr("spec_lsp.engine.policy.realized.COST_PROBE_EVERY", 8)
    target = FakeModel(target_logits, n_vocab=VOCAB, delay_s=0.01)
    started = time.perf_counter()
    for token in range(1, 9):
        target.evaluate([token], logits_from=0)
    one = (time.perf_counter() - started) / 8  # a pass here: the batch costs the same
    busy = {1: one, 2: 2.5 * one, 4: 5 * one, 8: 10 * one}  # as other work made it look

    def drafted(ledger: RealizedYield | None) -> list[int]:
        profile, estimate, found = CostProfile(dict(busy)), AcceptanceEstimate(0.5), []
        for _ in range(3):
            stats = DecodeStats()
            generate(
                target,
                Oracle(),
                AdaptivePolicy(profile, estimate=estimate, draft_max=4, ledger=ledger),
                DecodeJob([3, 5, 7], 96, SamplingParams(), frozenset()),
                cancel=CancelToken(),
                rng=np.random.default_rng(0),
                stats=stats,
            )
            found.append(stats.drafted)
        return found

    assert drafted(None) == [0, 0, 0]  # the stale profile alone never drafts again
    assert drafted(RealizedYield())[-1] >= 45  # measured again: most of the generation drafted
