"""A machine too slow for the model is told so, measured, not guessed: the pace read from the
cost profile (or timed by doctor), the 0.5B offered once per load where the 1.5B decodes under
the pace at which the writing bench saw the 0.5B complete more code, and nothing said above it,
for the 0.5B itself, or before anything is measured."""

from __future__ import annotations

import pytest

from spec_lsp import doctor, models
from spec_lsp.config import Settings
from spec_lsp.engine import build_engine
from spec_lsp.engine.backends.fake import corpus_model
from spec_lsp.engine.local import pace
from spec_lsp.engine.policy import profile as cost_profile
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.startup import calibrate

BIG = "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SMALL = "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def slow_profile(key: str = "k") -> CostProfile:  # 5.7 tokens/s, a 2-core VM's 1 thread
    return CostProfile({1: 0.175, 8: 0.640, 32: 0.960}, key=key, load=0.0)


def test_the_pace_is_read_from_the_measured_profile() -> None:
    found = pace.of_profile(slow_profile())
    assert found is not None
    assert found.decode_tok_s == pytest.approx(1 / 0.175)
    assert found.prompt_tok_s == pytest.approx(32 / 0.960)
    assert found.slow


@pytest.mark.parametrize(
    "profile",
    [
        None,
        CostProfile.prior(),  # nothing measured yet
        CostProfile({1: 0.110, 32: 0.520}, key="k", load=1.5),  # measured beside other load
        CostProfile({1: 0.110, 4: 1.0}, key="k"),  # cannot be right (4 tokens > 4 passes)
    ],
)
def test_nothing_is_said_before_a_pace_can_be_trusted(profile) -> None:
    assert pace.of_profile(profile) is None
    assert pace.advice(pace.of_profile(profile), BIG) is None


def test_a_slow_machine_is_offered_the_small_model_and_a_fast_one_is_not() -> None:
    said = pace.advice(pace.of_profile(slow_profile()), BIG)
    assert said is not None
    assert "5.7 tokens/s" in said and "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" in said
    assert f"spec-lsp models pull {pace.SMALL_MODEL}" in said
    assert pace.SMALL_MODEL in models.DEFAULT_MODELS  # (a name the command knows)
    fast = CostProfile({1: 0.025, 32: 0.300}, key="k", load=0.0)  # 40 tokens/s
    assert pace.advice(pace.of_profile(fast), BIG) is None
    tie = CostProfile({1: 0.100, 32: 0.480}, key="k", load=0.0)  # 10: the two completed alike
    assert pace.advice(pace.of_profile(tie), BIG) is None
    assert pace.advice(pace.of_profile(slow_profile()), SMALL) is None  # nothing smaller


def test_the_engine_tells_it_once_per_load_and_shows_it_in_its_stats(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path))
    told: list[str] = []
    engine = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    engine.notify = told.append  # (as the server sets it before the load)
    engine.load()
    try:
        assert told == [] and engine.stats()["pace"] is None  # (the fake's profile: none yet)
        cost_profile.save(slow_profile(engine.stage.profile_key()))
        engine.stage.configure(engine.settings)  # (the cache read, as at a start)
        engine.stage.configure(engine.settings)
        assert len(told) == 1 and pace.SMALL_MODEL in told[0]
        shown = engine.stats()["pace"]
        assert shown["slow"] and shown["decode_tok_s"] == pytest.approx(5.7)
        assert shown["advice"] == told[0]
        engine.load()  # a new load may tell it again
        assert len(told) == 2
    finally:
        engine.close()


def test_doctor_times_it_with_the_cost_profiles_own_measurement() -> None:
    model = corpus_model()
    context = model.tokenize(calibrate.PROFILE_TEXT)[:160]
    profile = calibrate.measure(model, None, context=context, sizes=(1, pace.PROMPT_BATCH))
    found = pace.read(profile)
    assert found is not None and found.decode_tok_s > 0 and found.prompt_tok_s > 0
    assert found.load == profile.load  # (said with the figures, not judged on)


def test_doctor_says_it_from_the_servers_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path))
    settings = Settings()
    path = str(models.default_model_path("qwen2.5-coder-1.5b"))
    key = cost_profile.profile_key(path, threads=None, backend="llama", drafter=settings.drafter)
    cost_profile.save(slow_profile(key))
    check = doctor._pace(settings)
    assert check.status == "info" and "slow" in check.detail
    assert "measured cost profile" in check.detail
    assert f"models pull {pace.SMALL_MODEL}" in check.fix
    cost_profile.save(CostProfile({1: 0.025, 32: 0.300}, key=key, load=0.0))
    assert doctor._pace(settings).status == "ok"


def test_a_pace_timed_beside_other_load_is_not_judged() -> None:
    busy = pace.Pace(4.6, 33.0, load=1.2)  # (doctor run beside a benchmark)
    assert busy.slow and busy.loaded and "1.2 cores busy" in busy.describe()
    assert pace.advice(busy, BIG) is None
    assert pace.advice(pace.Pace(4.6, 33.0, load=0.1), BIG) is not None
