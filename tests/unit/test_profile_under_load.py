"""A cost profile measured while other programs held the cores must not stick: the sizes are
timed in turn (a burst of load slows them alike), figures that cannot be right (a batch dearer
than its passes) are measured again and never cached, and a profile taken under load is
measured again once the machine is quiet."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import build_engine
from spec_lsp.engine.backends import threads as cpu_threads
from spec_lsp.engine.backends.fake import FakeModel, corpus_model
from spec_lsp.engine.policy import profile as cost_profile
from spec_lsp.engine.policy.profile import REMEASURE_S, CostProfile, due_again
from spec_lsp.engine.startup import calibrate
from spec_lsp.engine.types import CancelToken, CompletionRequest


class BurstyModel(FakeModel):
    """A pass of n tokens costs 1 + 0.5 (n - 1) on a fake clock, four times that while a burst
    of other load lasts (the timed passes `burst`, counted from the first)."""

    def __init__(self, burst: range) -> None:
        base = corpus_model()
        super().__init__(base._logits_fn)
        self.now = 0.0
        self.burst = burst
        self.passes = 0

    def clock(self) -> float:
        return self.now

    def evaluate(
        self, tokens: Sequence[int], *, logits_from: int, abort: CancelToken | None = None
    ) -> np.ndarray:
        if len(tokens) <= 8:  # (a timed pass; the context's own evaluation is not)
            cost = 1.0 + 0.5 * (len(tokens) - 1)
            self.now += cost * (4.0 if self.passes in self.burst else 1.0)
            self.passes += 1
        return super().evaluate(tokens, logits_from=logits_from, abort=abort)


class Load:
    def __init__(self, cores: float) -> None:
        self._cores = cores

    def cores(self) -> float:
        return self._cores


def test_a_burst_of_load_slows_every_size_alike() -> None:
    """Measured size after size, a burst over the passes of sizes 2 and 3 made them cost 4x;
    timed in turn, each size keeps a pass outside the burst and the ratios are the machine's."""
    model = BurstyModel(burst=range(4, 12))  # the 2nd and 3rd of four sweeps of four sizes
    context = list(model.tokenize("def foo(x):\n    return x * 2\n"))
    profile = calibrate.measure(
        model,
        None,
        context=context,
        sizes=(1, 2, 3, 4),
        repeats=3,
        clock=model.clock,
        load=lambda: Load(1.5),  # type: ignore[arg-type,return-value]
    )
    assert profile is not None
    assert profile.relative() == {1: 1.0, 2: 1.5, 3: 2.0, 4: 2.5}
    assert profile.suspect() is None
    assert profile.load == 1.5 and profile.loaded


def test_a_batch_dearer_than_its_passes_is_suspect() -> None:
    cached = CostProfile({1: 0.1, 2: 0.17, 4: 0.877})  # c(4) = 8.77 c(1), as once cached
    reason = cached.suspect()
    assert reason is not None and "8.77x" in reason
    assert CostProfile({1: 0.1, 2: 0.17, 4: 0.30}).suspect() is None


def test_when_a_profile_is_measured_again() -> None:
    bad = CostProfile({1: 0.1, 4: 0.877})
    assert due_again(bad, since_measured=None, others=2.0)  # cannot be right: at once
    assert due_again(bad, since_measured=REMEASURE_S / 2, others=0.0) is None  # (not in a loop)
    loaded = CostProfile({1: 0.1, 4: 0.27}, load=1.2)
    assert due_again(loaded, since_measured=None, others=0.1)  # quiet now: measured again
    assert due_again(loaded, since_measured=None, others=1.5) is None  # still busy: kept
    assert (
        due_again(CostProfile({1: 0.1, 4: 0.27}, load=0.1), since_measured=None, others=0.0) is None
    )


@pytest.fixture
def profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path))
    return tmp_path


def test_a_cached_profile_that_cannot_be_right_is_measured_again(profiles) -> None:
    engine = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    engine.load()
    try:
        key = engine.stage.profile_key()
        cost_profile.save(CostProfile({1: 0.01, 2: 0.017, 4: 0.0877}, key=key))
        engine.update_settings(Settings(drafter="ngram", precompute=False, threads=None))
        engine.stage.configure(engine.settings)  # (the cache read again, as at a start)
        assert engine.needs_profile  # without the check: the cached figures kept for good
        profile = engine.ensure_profile()
        assert profile.relative()[4] != 8.77  # measured again (the fake's passes take ~50 us)
        assert not engine.needs_profile  # (and not again at once, whatever it measured)
    finally:
        engine.close()


def test_sizes_the_loop_does_not_run_keep_their_ratio_when_the_speed_moves() -> None:
    # measured while the cores were shared (190 ms a pass), then single passes run at 28 ms:
    # c(4) was left at its old time and read as 21x c(1), and the policy never drafted again
    profile = CostProfile({1: 0.190, 2: 0.326, 4: 0.595, 8: 1.218})
    for _ in range(60):
        profile.observe_verify(1, 0.028)
    assert profile.relative()[4] == pytest.approx(0.595 / 0.190, rel=0.01)
    assert profile.verify(1) == pytest.approx(0.028, rel=0.01)
    for _ in range(60):  # a size the loop runs follows its own passes
        profile.observe_verify(2, 0.070)
    assert profile.relative()[2] == pytest.approx(2.5, rel=0.05)


def test_a_profile_measured_under_load_is_measured_again_at_a_quiet_start(
    profiles, monkeypatch
) -> None:
    engine = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    engine.load()
    try:
        key = engine.stage.profile_key()
        loaded = CostProfile({1: 0.190, 2: 0.326, 4: 0.595}, key=key, load=1.9)
        cost_profile.save(loaded)
        engine.update_settings(Settings(drafter="ngram", precompute=False, threads=None))
        engine.stage.configure(engine.settings)  # (the cache read again, as at a start)
        quiet = cpu_threads.ThreadChooser(2)
        quiet.choose = lambda: 2  # type: ignore[method-assign]
        quiet.measured, quiet.others = True, 0.0
        monkeypatch.setattr(cpu_threads, "SHARED", quiet)  # (the machine is quiet now)
        assert engine.needs_profile
        profile = engine.ensure_profile()  # what `spec-lsp demo` and `complete` call
        assert profile.verify(1) < 0.1  # measured again (the fake's passes take ~50 us)
    finally:
        engine.close()


def test_a_file_opened_takes_the_idle_time_before_the_profile(profiles) -> None:
    """A person writing in a file they just opened pauses 1-2 s at a time: the profile (some
    seconds of passes) took those pauses first and never ended, its own context put into the
    KV at each one. The file prefix goes first; the profile after it, its context evaluated
    once and kept while requests stop it."""
    engine = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    engine.load()
    try:
        stage = engine.stage
        assert stage.needs_profile
        text = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(40))
        engine.document_opened(
            CompletionRequest("", text, document_id="file:///m.py", language="python")
        )
        target, evaluated = stage.loaded.target, []
        context = len(target.tokenize(calibrate.PROFILE_TEXT)[:256])
        real_evaluate = target.evaluate
        request = CancelToken()
        stop_at = [1]  # (a request comes after this many tokens evaluated)

        def counted(tokens, **kwargs):
            evaluated.append(len(tokens))
            rows = real_evaluate(tokens, **kwargs)
            if sum(evaluated) >= stop_at[0]:
                request.cancel("a request")
            return rows

        target.evaluate = counted
        engine.idle_step(request)  # the first pass of the step, then a request
        assert stage.file_prefix.evaluated > 0 and stage.needs_profile  # (the file first)
        while stage.file_prefix.pending:
            stage.file_prefix.grow(
                target, stage.prompts, stage.settings, CancelToken(), park=lambda: None
            )
        evaluated.clear()
        request, stop_at[0] = CancelToken(), context
        stage._measure_profile(request)  # its context evaluated, then a request
        assert sum(evaluated) >= context and stage.needs_profile
        target.truncate(0)  # (the request's prompt took the live cache)
        evaluated.clear()
        request, stop_at[0] = CancelToken(), 1
        stage._measure_profile(request)
        assert sum(evaluated) <= 1  # the context kept (a sync evaluates the last token at least)
        engine.idle_step(CancelToken())
        assert not stage.needs_profile
    finally:
        engine.close()
