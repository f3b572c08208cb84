"""The adaptive draft length on synthetic machines and acceptance streams."""

from __future__ import annotations

import numpy as np
import pytest

from spec_lsp.engine.drafters.base import Draft, Drafter
from spec_lsp.engine.policy import estimate as policy_module
from spec_lsp.engine.policy.adaptive import EXPLORE_SHARE, MARGIN, AdaptivePolicy, expected_tokens
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, prior_acceptance
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.startup.calibrate import measure_drafter

GPU_LIKE = CostProfile({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2, 32: 1.5})
THIS_CPU = CostProfile({1: 1.0, 2: 1.7, 4: 2.7, 8: 7.0, 16: 14.0, 32: 28.0})  # Qwen-1.5B, 2 threads
STEPPED = CostProfile({1: 1.0, 2: 1.1, 3: 1.2, 4: 1.3, 5: 2.6, 8: 3.0, 16: 5.0})


def policy(profile: CostProfile, alpha0: float = 0.5, **kw) -> AdaptivePolicy:
    return AdaptivePolicy(profile, estimate=AcceptanceEstimate(alpha0), **kw)


def feed(p: AdaptivePolicy, alpha: float, rounds: int, seed: int = 0) -> list[int]:
    """Simulate rounds where each drafted token is accepted with probability alpha."""
    rng = np.random.default_rng(seed)
    ks = []
    for _ in range(rounds):
        k = p.choose_k()
        tried = k or p.shadow_k()  # a free drafter is scored even when not verified
        accepted = 0
        while accepted < tried and rng.random() < alpha:
            accepted += 1
        p.observe(tried, accepted)
        ks.append(k)
    return ks


def test_expected_tokens_formula():
    assert expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert expected_tokens(0.0, 5) == 1.0
    assert expected_tokens(1.0, 3) == 4.0


def test_k_rises_with_acceptance_on_cheap_verification():
    ks = feed(policy(GPU_LIKE), alpha=0.95, rounds=40)
    assert np.mean(ks[-10:]) >= 12


def test_k_falls_to_zero_when_acceptance_is_low():
    ks = feed(policy(THIS_CPU), alpha=0.1, rounds=60)
    assert ks[-20:].count(0) >= 16  # zero except the occasional probe


def test_expensive_verification_keeps_k_small_even_with_good_acceptance():
    ks = feed(policy(THIS_CPU), alpha=0.92, rounds=60)
    assert 1.5 <= np.mean(ks[-20:]) <= 5  # optimum is k = 3 or 4 here, never the 16 a GPU takes


def test_stepped_curve_avoids_the_step():
    """A curve that jumps at n = 5 makes k = 3 (batch 4) better than k = 4 or 5."""
    assert policy(STEPPED).best_k(alpha=0.8) == 3


def test_matches_exhaustive_search():
    for profile in (GPU_LIKE, THIS_CPU, STEPPED):
        p = policy(profile)
        for alpha in np.linspace(0.05, 0.97, 12):
            rates = [expected_tokens(alpha, k) / profile.verify(k + 1) for k in range(17)]
            best = int(np.argmax(rates))
            expected = (
                best if rates[best] > MARGIN * rates[0] else 0
            )  # a gain must clear the margin
            assert p.best_k(alpha) == expected


def test_a_drafter_as_costly_as_the_target_settles_on_zero():
    self_draft = CostProfile({1: 1.0, 2: 1.1, 4: 1.2, 8: 1.4, 16: 1.8}, draft_seconds_per_token=1.0)
    ks = feed(policy(self_draft, alpha0=0.6), alpha=1.0, rounds=12)
    assert ks[:4] == [0, 0, 0, 0]


def test_probes_bring_speculation_back():
    p = policy(THIS_CPU)
    feed(p, alpha=0.05, rounds=40)
    assert p.best_k() == 0
    ks = feed(p, alpha=0.98, rounds=150, seed=1)
    assert ks[-1] > 0 and np.mean(ks[-10:]) >= 1


def test_prior_falls_with_temperature():
    assert prior_acceptance(0.0) > prior_acceptance(0.5) > prior_acceptance(1.0)


def test_min_confidence_is_derived_from_costs():
    assert policy(GPU_LIKE, alpha0=0.9).min_confidence() < 0.2
    assert policy(THIS_CPU, alpha0=0.9).min_confidence() > 0.3


def test_profile_interpolates_between_measured_points():
    assert STEPPED.verify(6) == pytest.approx(2.6 + (3.0 - 2.6) / 3)
    assert THIS_CPU.verify(3) == pytest.approx(2.2)
    assert THIS_CPU.verify(64) > THIS_CPU.verify(32)


MEASURED_CPU = CostProfile(  # Qwen-1.5B here: linear to 8, then flat to 16 (a kernel switch)
    {1: 1.0, 2: 1.62, 3: 2.09, 4: 2.6, 6: 3.8, 8: 4.55, 12: 5.6, 16: 5.4, 32: 9.6}
)


def test_strength_buckets_separate_strong_from_weak_matches():
    """Lookup proposals that share long context are copied text (accepted whole); those matching
    one token are guesses (rejected at once). With four guesses to one copy, the overall estimate
    says "do not draft" on this CPU; per strength, the policy drafts copies long, skips guesses."""
    p = policy(MEASURED_CPU, alpha0=0.4)
    rng = np.random.default_rng(1)
    for _ in range(200):
        strength = int(rng.choice([1, 12], p=[0.8, 0.2]))
        k = p.choose_k(strength)
        tried = k or 8  # unverified proposals are scored as shadows
        p.observe(tried, tried if strength == 12 else 0, strength)
    assert p.best_k() == 0  # the overall estimate alone would never draft...
    assert p.choose_k(12) >= 8  # ...but a strong match is drafted long
    assert p.choose_k(1) == 0
    assert p.choose_k(None) == 0 and p.choose_k(5) == 0  # buckets without evidence: overall


@pytest.mark.parametrize("strength", [None, 12])
def test_a_run_of_improbable_failures_forgets_the_evidence_it_contradicts(monkeypatch, strength):
    """Copies right to the 8th token for 40 rounds, then wrong at the 4th twice in a row: at
    alpha ~0.95 that is a change (the file's next place), not bad luck. The 4th position forgets
    its passes (drafts stop before it), the first three keep theirs; without the test the 4th
    would still look safe after those two failures."""

    def after_change(surprise: float) -> list[float]:
        monkeypatch.setattr(policy_module, "SURPRISE", surprise)
        estimate = AcceptanceEstimate(0.5)
        for _ in range(40):
            estimate.update(8, 8, strength)
        assert estimate.alphas(8, strength)[3] > 0.9
        estimate.update(8, 3, strength)
        estimate.update(8, 3, strength)
        return estimate.alphas(8, strength)

    forgotten, kept = after_change(policy_module.SURPRISE), after_change(0.0)
    assert forgotten[3] < 0.5 < 0.8 < kept[3]
    assert min(forgotten[:3]) > 0.9


@pytest.mark.parametrize("alpha", [0.3, 0.6, 0.9])
def test_bad_luck_is_not_taken_for_a_change(monkeypatch, alpha):
    """Stationary acceptance: the occasional improbable run barely moves the estimate."""

    def mean_estimate(surprise: float) -> float:
        monkeypatch.setattr(policy_module, "SURPRISE", surprise)
        rng, estimate, seen = np.random.default_rng(3), AcceptanceEstimate(0.5), []
        for _ in range(3000):
            accepted = 0
            while accepted < 4 and rng.random() < alpha:
                accepted += 1
            estimate.update(4, accepted)
            seen.append(estimate.alphas(4)[0])
        return float(np.mean(seen[200:]))

    with_test = mean_estimate(policy_module.SURPRISE)
    assert abs(with_test - alpha) < 0.05
    assert abs(with_test - mean_estimate(0.0)) < 0.01


def test_strength_buckets_lean_on_the_overall_estimate_until_they_have_evidence():
    e = AcceptanceEstimate(0.5)
    for _ in range(30):
        e.update(4, 4, strength=20)
    assert e.alphas(4, strength=3) == e.alphas(4)  # no evidence in that bucket
    assert min(e.alphas(4, strength=20)) > 0.9
    one = AcceptanceEstimate(0.5)
    one.update(4, 0, strength=20)  # a single failure moves a bucket only part of the way
    assert 0.2 < one.alphas(1, strength=20)[0] < one.alphas(1)[0] + 1e-9
    seeded = e.seeded()
    assert seeded.alphas(4, strength=20)[0] > 0.8  # other documents keep some of it


def feed_costly(p: AdaptivePolicy, rounds: int, catch_up: int | None) -> list[int]:
    """Rounds of a costly drafter that is never right; `catch_up`: what it reports each round."""
    ks = []
    for _ in range(rounds):
        k = p.choose_k(catch_up=None if catch_up is None else lambda: catch_up)
        p.observe(k, 0)
        ks.append(k)
    return ks


def pays_if_right() -> CostProfile:
    """A draft model that would pay if it were always right (a GPU-like curve, drafts at 0.3
    of a target token), so the policy keeps probing it while it loses. A new one per policy:
    probes teach the profile this machine's catch-up rate."""
    return CostProfile(
        {1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2, 32: 1.5}, draft_seconds_per_token=0.3
    )


def test_probing_a_draft_model_is_budgeted_by_its_catch_up():
    """A probe first catches the draft model's cache up on everything it has not seen (a new
    prompt: hundreds of tokens). Probes may take EXPLORE_SHARE of decoding time, so a large
    catch-up waits many rounds; a small one is tried at the usual interval."""
    small = feed_costly(policy(pays_if_right(), alpha0=0.05), 100, catch_up=1)
    assert 2 <= sum(k > 0 for k in small) <= 8
    large = feed_costly(policy(pays_if_right(), alpha0=0.05), 300, catch_up=100)
    assert not any(large)
    # 100 tokens at 0.3 each (until a probe measures it, a catch-up token is priced as a drafted
    # one): 30 rounds' worth of target time, affordable after ~30 / EXPLORE_SHARE rounds
    expected = (30.0 + 0.635) / EXPLORE_SHARE  # catch-up, then draft(2) and the batch
    later = feed_costly(policy(pays_if_right(), alpha0=0.05), int(expected * 1.2), catch_up=100)
    assert 0.9 * expected <= later.index(2) <= 1.1 * expected


def test_a_probe_that_costs_more_than_predicted_makes_the_next_wait():
    now = [0.0]
    p = AdaptivePolicy(
        CostProfile(
            {1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.2, 32: 1.5}, draft_seconds_per_token=0.3
        ),
        estimate=AcceptanceEstimate(0.05),
        clock=lambda: now[0],
    )
    ks = []
    for _ in range(int(40 / EXPLORE_SHARE)):
        k = p.choose_k(catch_up=lambda: 10)
        now[0] += 1.0 + (30.0 if k else 0.0)  # the probe's catch-up really took 30 rounds' time
        p.observe(k, 0)
        ks.append(k)
    probes = [i for i, k in enumerate(ks) if k]
    # predicted cheap (draft(2), the batch, 10 tokens of catch-up at 0.3: ~3.6 rounds): tried
    # as soon as the budget allows
    assert probes and probes[0] <= 4 / EXPLORE_SHARE
    assert p.profile.catch_up_seconds_per_token == pytest.approx(
        (30.0 - 0.6 - p.profile.verify(3) + 1.0) / 10
    )
    # then it waits: 30 s at EXPLORE_SHARE (600 rounds at 5%)
    assert len(probes) >= 2 and probes[1] - probes[0] >= 0.8 * 30 / EXPLORE_SHARE
    assert p.estimate.probe_seconds == pytest.approx(30.0)


def test_the_profile_measures_a_draft_models_catch_up_rate():
    """`measure_drafter` times a catch-up on half the context the model has not seen, from what
    the drafter reports; a drafter that reports none (a lookup) gets None."""

    class Model(Drafter):
        name = "model"
        counts_catch_up = True

        def __init__(self) -> None:
            self.seen = 0
            self.last_catch_up = (0, 0.0)

        def draft(self, request):
            unseen = max(len(request.context) - self.seen, 1)
            self.last_catch_up = (unseen, unseen * 0.004)
            self.seen = len(request.context)
            return Draft([1] * request.max_tokens)

    class Lookup(Drafter):
        name = "lookup"

        def draft(self, request):
            return Draft([])

    context = list(range(200))
    assert measure_drafter(Model(), context)[2] == pytest.approx(0.004)
    assert measure_drafter(Lookup(), context)[2] is None


def test_draft_calls_as_run_calibrate_the_draft_cost():
    """A draft model that costs 10x in the decode loop what it cost alone at startup: the
    profile learns it from the calls run, and a policy that drafted on the startup figure
    stops (it would be slower than no speculation)."""
    profile = CostProfile(
        {1: 1.0, 2: 1.3, 3: 1.6, 4: 1.9, 8: 3.1, 16: 5.5, 32: 10.0}, draft_seconds_per_token=0.1
    )
    p = policy(profile, alpha0=0.9)
    k = p.best_k()
    assert k > 0
    for _ in range(40):
        p.observe_draft(k, 10 * profile.draft_seconds_per_token * k)
    assert profile.draft(k) == pytest.approx(1.0 * k, rel=0.01)
    assert policy(profile, alpha0=0.9).best_k() == 0


def test_free_drafts_and_probes_do_not_calibrate_the_draft_cost():
    free = CostProfile({1: 1.0, 2: 1.3})
    policy(free).observe_draft(4, 0.5)  # a lookup: no measured cost to scale
    assert free.draft(4) == 0.0 and free.draft_scale == 1.0
    costly = pays_if_right()
    p = policy(costly, alpha0=0.05)
    ks = feed_costly(p, 400, catch_up=1)
    assert any(ks)  # it probed...
    p.choose_k(catch_up=lambda: 1)
    p._probe = (0.0, 2, 1)  # ...and during a probe, a draft call with its catch-up
    p.observe_draft(2, 100.0)
    assert costly.draft_scale == 1.0
