"""`drafter = auto` with synthetic sources: exact, learns which source is right from the next
context, weighs cost, drafts nothing when nothing pays, and keeps probing a costly model rarely."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine.backends.base import sync
from spec_lsp.engine.backends.fake import FakeModel, hashed_noise
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters import auto as auto_drafter
from spec_lsp.engine.drafters.auto import AUTO_EXPLORE_SHARE, NOTHING, AutoDrafter
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams

VOCAB = 24


def target_logits(context: Sequence[int]) -> np.ndarray:
    return hashed_noise(context, VOCAB, window=2, salt="auto")


def fake_target() -> FakeModel:
    return FakeModel(target_logits, n_vocab=VOCAB, fingerprint="v24")


def truth(context: Sequence[int], n: int) -> list[int]:
    """The target's greedy continuation (what a perfect drafter proposes)."""
    model = fake_target()
    logits, out = sync(model, context)[0], []
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        logits = model.evaluate([out[-1]], logits_from=0)[0]
    return out


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Synthetic(Drafter):
    """A source that is right, wrong, right from some round on, or silent; costing `step`
    seconds of the fake clock per token (+1) when it is a model."""

    def __init__(self, name: str, kind: str, *, clock: Clock | None = None, step: float = 0.0):
        self.name, self.kind, self.clock, self.step = name, kind, clock, step
        self.calls = 0

    def draft(self, request: DraftRequest) -> Draft:
        self.calls += 1
        if self.kind == "silent":  # (a model's call still costs its fixed step)
            if self.clock is not None:
                self.clock.now += self.step
            return Draft([])
        tokens = truth(request.context, request.max_tokens)
        wrong = self.kind == "wrong" or (self.kind == "late" and self.calls < 30)
        if self.kind == "random":
            wrong = bool(hash((self.name, len(request.context))) % 2)
        if wrong:
            tokens = [(t + 1) % VOCAB for t in tokens]
        if self.clock is not None:
            self.clock.now += self.step * (len(tokens) + 1)
        return Draft(tokens)


def gpu_like() -> CostProfile:
    """Verifying more tokens costs little more than one (seconds of the fake clock)."""
    return CostProfile({1: 1.0, 2: 1.05, 4: 1.15, 8: 1.4, 16: 2.0, 32: 3.5}, key="test")


def run(prompt, drafter, *, k=6, max_tokens=120):
    stats = DecodeStats()
    out = generate(
        fake_target(),
        drafter,
        FixedPolicy(k),
        DecodeJob(prompt, max_tokens, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return out, stats


@settings(max_examples=60, deadline=None)
@given(
    prompt=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=10),
    kinds=st.lists(st.sampled_from(["right", "wrong", "late", "silent", "random"]), max_size=3),
    model=st.sampled_from([None, "right", "wrong", "random"]),
    k=st.integers(1, 10),
    max_tokens=st.integers(1, 50),
    profile=st.booleans(),
)
def test_greedy_auto_equals_plain_greedy(prompt, kinds, model, k, max_tokens, profile):
    clock = Clock()
    lookups = [Synthetic(f"s{i}", kind) for i, kind in enumerate(kinds)]
    drafter = AutoDrafter(
        lookups,
        model=Synthetic("model", model, clock=clock, step=0.1) if model else None,
        profile=gpu_like() if profile else None,
        clock=clock,
    )
    out, stats = run(prompt, drafter, k=k, max_tokens=max_tokens)
    assert out == truth(prompt, max_tokens)
    assert stats.accepted <= stats.drafted


def test_it_learns_which_lookup_is_right():
    auto = AutoDrafter([Synthetic("wrong", "wrong"), Synthetic("right", "right")])
    out, stats = run([1, 2, 3], auto)
    report = auto.report()
    assert report["right"]["chosen"] > 5 * max(report["wrong"]["chosen"], 1)
    assert report["right"]["acceptance"] == 1.0 and report["wrong"]["acceptance"] == 0.0
    assert stats.accepted / stats.drafted > 0.9


def test_it_follows_a_source_that_becomes_right():
    auto = AutoDrafter([Synthetic("early", "random"), Synthetic("late", "late")])
    _, stats = run([5], auto, max_tokens=300)
    assert auto.last_choice == "late"
    assert auto.report()["late"]["chosen"] > auto.report()["early"]["chosen"]


def test_it_drafts_nothing_when_no_source_pays():
    auto = AutoDrafter([Synthetic("a", "wrong"), Synthetic("b", "wrong")])
    _, stats = run([1, 2], auto, max_tokens=100)
    assert auto.last_choice == NOTHING
    assert stats.drafted < 0.15 * 100 * 6  # a few tries, then nothing
    assert sum(1 for n in stats.k_trace if n == 0) > 0.8 * stats.rounds


def test_a_free_lookup_beats_an_equally_right_costly_model():
    clock = Clock()
    model = Synthetic("model", "right", clock=clock, step=0.3)
    lookup = Synthetic("lookup", "right")
    auto = AutoDrafter([lookup], model=model, profile=gpu_like(), clock=clock)
    _, stats = run([3, 1], auto)
    report = auto.report()
    assert report["model"]["chosen"] <= 2  # measured once, retried once: never better
    assert report["lookup"]["chosen"] >= stats.rounds - 2


def test_the_model_is_used_when_lookups_have_nothing_and_it_pays():
    clock = Clock()
    model = Synthetic("model", "right", clock=clock, step=0.02)
    auto = AutoDrafter(
        [Synthetic("lookup", "silent")], model=model, profile=gpu_like(), clock=clock
    )
    _, stats = run([3, 1], auto, max_tokens=240)
    # first tried after PROBE_FIRST rounds, once they pay for the try (AUTO_EXPLORE_SHARE of
    # their time: 0.8 s at a prior 0.25 s per model step needs 80 one-second rounds); once it
    # wins, every round
    first_try = 0.8 / AUTO_EXPLORE_SHARE
    chosen = auto.report()["model"]["chosen"]
    assert stats.rounds - first_try - 8 <= chosen <= stats.rounds - first_try
    assert stats.accepted == stats.drafted > 0


def test_a_model_that_cannot_pay_is_never_tried():
    """A draft model as slow as the target (on a CPU) never beats drafting nothing."""
    clock = Clock()
    model = Synthetic("model", "right", clock=clock, step=0.02)
    auto = AutoDrafter(
        [Synthetic("lookup", "silent")], model=model, profile=gpu_like(), clock=clock
    )
    auto.candidates[-1].seconds_per_step = 1.0  # measured: a second per draft token
    run([3, 1], auto)
    assert auto.report()["model"]["chosen"] == 0


def test_a_model_that_does_not_pay_is_probed_rarely():
    clock = Clock()
    model = Synthetic("model", "wrong", clock=clock, step=0.3)
    auto = AutoDrafter([], model=model, profile=gpu_like(), clock=clock)
    _, stats = run([7], auto, max_tokens=400)
    assert model.calls < 12  # trials at growing intervals, not every round
    assert stats.rounds > 350


def test_a_costly_try_waits_until_it_is_a_small_share_of_decoding():
    """A try that once cost 100 s (its catch-up) is not repeated within 400 one-second rounds;
    without that cost on record the same model is tried."""
    for probe_seconds, tried in ((100.0, False), (None, True)):
        clock = Clock()
        model = Synthetic("model", "wrong", clock=clock, step=0.01)
        auto = AutoDrafter([], model=model, profile=gpu_like(), clock=clock)
        auto.candidates[-1].probe_seconds = probe_seconds
        run([7], auto, max_tokens=400)
        assert (model.calls > 0) is tried


def test_a_first_try_is_charged_its_predicted_catch_up():
    """Before any try is on record, the model's catch-up on the prompt is predicted (tokens it
    has not seen x its batched cost per token) and budgeted: a model that would first evaluate
    5000 tokens is not tried within 400 rounds; the same model with nothing to catch up is."""
    for unseen, tried in ((5000, False), (0, True)):
        clock = Clock()
        model = Synthetic("model", "wrong", clock=clock, step=0.01)
        model.counts_catch_up = True
        model.catch_up = lambda context, unseen=unseen: unseen  # type: ignore[method-assign]
        auto = AutoDrafter([], model=model, profile=gpu_like(), clock=clock)
        run([7], auto, max_tokens=400)
        assert (model.calls > 0) is tried


def test_the_catch_up_is_counted_only_when_the_rest_of_a_try_fits_the_budget():
    """Counting a model's catch-up re-tokenizes the context (~0.6 ms on Qwen's prompt, nearly
    1% of a round): while a try's draft and batch alone exceed the budget it is not counted.
    Rounds 32.. wait for a try costing ~0.1 s against 1% of 1 s rounds (~10 rounds), and each
    then pays a count only once (the try follows)."""
    clock = Clock()
    model = Synthetic("model", "wrong", clock=clock, step=0.01)
    counted: list[int] = []
    model.counts_catch_up = True
    model.catch_up = lambda context: counted.append(len(context)) or 0  # type: ignore[method-assign]
    auto = AutoDrafter([], model=model, profile=gpu_like(), clock=clock)
    run([7], auto, max_tokens=400)
    assert model.calls > 0
    assert len(counted) <= model.calls


class CatchingUp(Synthetic):
    """A model that evaluates what it has not seen before drafting, at `rate` s per token."""

    def __init__(self, *args, rate: float, **kw):
        super().__init__(*args, **kw)
        self.rate, self.seen = rate, 0
        self.last_catch_up = (0, 0.0)

    counts_catch_up = True

    def catch_up(self, context: Sequence[int]) -> int:
        return len(context) - self.seen

    def draft(self, request: DraftRequest) -> Draft:
        unseen = self.catch_up(request.context)
        self.last_catch_up = (unseen, unseen * self.rate)
        self.clock.now += unseen * self.rate
        self.seen = len(request.context)
        return super().draft(request)


def test_a_try_teaches_the_catch_up_rate_apart_from_the_cost_per_step():
    """The first try evaluates the whole prompt: the catch-up is learned as its own rate (it
    replaces the startup figure) and kept out of the model's cost per drafted token (which it
    would inflate 10x)."""
    clock = Clock()
    model = CatchingUp("model", "wrong", clock=clock, step=0.01, rate=0.002)
    profile = gpu_like()
    profile.catch_up_seconds_per_token = 0.0005  # as measured at startup (here: optimistic)
    auto = AutoDrafter([], model=model, profile=profile, clock=clock)
    run(list(range(20)), auto, max_tokens=800)
    source = auto.candidates[-1]
    assert model.calls >= 2
    assert source.catch_up_rate == pytest.approx(0.002)
    assert source.seconds_per_step == pytest.approx(0.01, rel=0.05)  # (+ small re-syncs)


@dataclass
class ShadowRequest(DraftRequest):
    shadow: bool = True  # a draft the loop will not verify (the policy chose k = 0)


def test_shadow_requests_never_run_the_model():
    clock = Clock()
    model = Synthetic("model", "right", clock=clock, step=0.0)
    auto = AutoDrafter(
        [Synthetic("lookup", "silent")], model=model, profile=gpu_like(), clock=clock
    )
    rng = np.random.default_rng(0)
    for n in range(20):
        auto.draft(ShadowRequest(list(range(n + 1)), 4, SamplingParams(), rng))
    assert model.calls == 0


def test_a_proposal_not_chosen_is_scored_at_its_horizon_and_censored_there(monkeypatch):
    class Fixed(Drafter):
        name = "fixed"

        def draft(self, request: DraftRequest) -> Draft:
            return Draft([1, 2, 3, 4])

    auto = AutoDrafter([Fixed()])  # (a prior of 0.5 on a CPU-like curve: never chosen)
    rng = np.random.default_rng(0)

    def call(context):
        auto.draft(DraftRequest(context, 4, SamplingParams(), rng))
        assert auto.last_choice == NOTHING
        return auto.report()["fixed"]

    call([9, 9])
    assert call([9, 9, 1, 2, 7])["tested"] == 0  # 3 tokens committed: [1, 2, 3, 4] waits
    scored = call([9, 9, 1, 2, 7, 1])  # 4 committed: [1, 2, 3, 4] against [1, 2, 7, 1]
    assert (scored["tested"], scored["accepted"]) == (4, 2)
    estimate = auto.candidates[0].estimate
    assert estimate is not None and estimate.failed[2] > 0 and estimate.passed[1] > 0
    # another generation (the context is not an extension): what waited is dropped
    assert call([5, 5, 5, 5, 5, 5, 5, 5])["tested"] == 4

    # past the horizon nothing is tested: no failure recorded where nothing was committed
    monkeypatch.setattr(auto_drafter, "HORIZON", 2)
    auto = AutoDrafter([Fixed()])
    call([9, 9])
    scored = call([9, 9, 1, 2])
    assert (scored["tested"], scored["accepted"]) == (2, 2)
    estimate = auto.candidates[0].estimate
    assert estimate is not None and estimate.failed[2] == 0.0


def test_a_model_that_declines_to_draft_is_learned_as_not_paying():
    """A model that returns nothing when chosen (its confidence under p-min) costs a call each
    time: auto scores the declined position as rejected and stops choosing it."""
    clock = Clock()
    model = Synthetic("model", "silent", clock=clock, step=0.02)
    auto = AutoDrafter(
        [Synthetic("lookup", "silent")], model=model, profile=gpu_like(), clock=clock
    )
    auto.candidates[-1].estimate = AcceptanceEstimate(0.9)  # as if it had been right elsewhere
    _, stats = run([3, 1], auto, max_tokens=400)
    assert stats.rounds == 399 and stats.drafted == 0
    assert model.calls < 20  # (chosen on its estimate, it was called every round)
    assert auto.candidates[-1].estimate.alphas(1)[0] < 0.2


class Switch(Drafter):
    """A lookup that proposes the target's continuation while `right`, else a wrong one."""

    name = "lookup"

    def __init__(self) -> None:
        self.right = True

    def draft(self, request: DraftRequest) -> Draft:
        tokens = truth(request.context, request.max_tokens)
        return Draft(tokens if self.right else [(t + 1) % VOCAB for t in tokens])


def test_each_document_learns_its_own_sources():
    lookup = Switch()
    auto = AutoDrafter([lookup])
    auto.set_document("file:///repeats.py", "python")
    run([1, 2, 3], auto)  # the lookup is right in this file...
    lookup.right = False
    auto.set_document("file:///fresh.py", "python")
    _, stats = run([4, 5, 6], auto)  # ...and wrong in this one: learned, it stops drafting
    assert stats.drafted < 30
    request = DraftRequest([7, 8, 9], 6, SamplingParams(), np.random.default_rng(0))
    lookup.right = True
    auto.set_document("file:///repeats.py", "python")
    assert auto.draft(request).tokens  # trusted at once where it was right
    auto.set_document("file:///fresh.py", "python")
    assert not auto.draft(request).tokens  # not where it was wrong
    # and a temperature learns apart from another: at T = 1 the prior, not T = 0's evidence
    hot = DraftRequest([7, 8, 9], 6, SamplingParams(temperature=1.0), np.random.default_rng(0))
    auto.draft(hot)
    assert lookup.name in auto.report()
    estimate = auto.candidates[0].estimate
    assert estimate is not None and estimate.value == pytest.approx(0.3)
