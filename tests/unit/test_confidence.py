"""The confidence of a suggestion (engine/finishing/confidence.py) and the gate it drives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, build_engine, sampling
from spec_lsp.engine.finishing import confidence, gate_weights
from spec_lsp.engine.types import Completion, CompletionRequest, DecodeStats


@pytest.fixture(autouse=True)
def fitted_fake(tmp_path, monkeypatch):
    """Gate weights fitted for the fake model (without them the gate is off for it)."""
    monkeypatch.setenv("SPEC_LSP_PROFILE_DIR", str(tmp_path))
    gate_weights.save(gate_weights.model_key("<fake-corpus>"), confidence.SHIPPED)


REQUEST = CompletionRequest(prefix="def area(r):\n    return ", suffix="\n")


def completion(text: str, logprobs: list[float], typed: str = "") -> Completion:
    stats = DecodeStats(token_logprobs=logprobs)
    return Completion(text=text, stats=stats, raw_text=typed + text, typed=typed)


def test_logprob_is_the_log_softmax_of_the_token() -> None:
    logits = np.array([2.0, 1.0, 0.0], dtype=np.float32)
    expected = 1.0 - math.log(math.exp(2) + math.exp(1) + 1)
    assert math.isclose(sampling.logprob(logits, 1), expected, rel_tol=1e-5)


def test_the_place_features() -> None:
    f = confidence.features("x = foo(", ")\n", "a, b", [-0.1, -0.5])
    assert f["after_opener"] == 1 and f["end_of_line"] == 0 and f["in_word"] == 0
    assert math.isclose(f["mean_logprob"], -0.3) and f["min_logprob"] == -0.5
    f = confidence.features("    retu", "rn\n", "rn x", [0.0])
    assert f["in_word"] == 1 and f["end_of_line"] == 0
    f = confidence.features("    y = 1\n    ", "\n", "y = 1", [0.0], last_outcome="rejected")
    assert f["repeats_line"] == 1 and f["end_of_line"] == 1 and f["last_rejected"] == 1
    below = confidence.features("    ", "\n    z = 2\n", "z = 2", [0.0])
    assert below["repeats_line"] == 1 and below["last_rejected"] == 0


def test_the_tokens_of_the_text_shown_are_read() -> None:
    c = completion("abcdefgh", [-1.0, -2.0, -3.0, -4.0])  # two characters a token
    assert confidence.shown_logprobs(c) == [-1.0, -2.0, -3.0, -4.0]
    assert confidence.shown_logprobs(c, chars=3) == [-1.0, -2.0]
    typed = completion("efgh", [-1.0, -2.0, -3.0, -4.0], typed="abcd")
    assert confidence.shown_logprobs(typed) == [-3.0, -4.0]
    assert confidence.shown_logprobs(completion("abc", [])) == []


def test_a_sure_suggestion_passes_and_an_unsure_one_is_hidden_whole() -> None:
    sure = completion("3.14159 * r * r", [-0.01] * 6)
    assert confidence.gate(REQUEST, sure, 0.25)[0] == sure.text
    # sure of its first word, then guessing: not cut to its first word (the gate bench measured
    # such parts mostly wrong), hidden
    unsure = completion("3.14159 * radius_of_it", [-0.01, -0.01, -6.0, -7.0, -8.0, -9.0])
    text, assessed = confidence.gate(REQUEST, unsure, 0.25)
    assert text == "" and assessed is not None and assessed.score < 0.25
    assert confidence.gate(REQUEST, unsure, 0.0)[0] == unsure.text  # 0: show everything


def test_the_chance_falls_with_each_unsure_token() -> None:
    """The shipped model reads the chance the model gives the whole first line: a longer
    line of equally sure tokens scores lower, a surer one higher."""
    short = confidence.assess(REQUEST, completion("x + y", [-0.5] * 2))
    long = confidence.assess(REQUEST, completion("x + y + z + w", [-0.5] * 6))
    surer = confidence.assess(REQUEST, completion("x + y + z + w", [-0.05] * 6))
    assert short is not None and long is not None and surer is not None
    assert short.score > long.score and surer.score > long.score


def test_without_token_probabilities_nothing_is_gated() -> None:
    cached = completion("anything at all", [])  # (typed-through and in-flight answers)
    text, assessed = confidence.gate(REQUEST, cached, 0.99)
    assert text == cached.text and assessed is None


def test_a_multi_line_suggestion_is_judged_by_its_first_line() -> None:
    text = "\n    total = 0\n" + "    total += value\n" * 20
    assert confidence.first_line(text) == "\n    total = 0"
    # sure of its first line, unsure later: shown whole (its length is not held against it)
    lps = [-0.01] * 8 + [-5.0] * 100
    sure = completion(text, lps)
    assert confidence.gate(REQUEST, sure, 0.25)[0] == text
    unsure = completion(text, [-5.0] * 108)
    assert confidence.gate(REQUEST, unsure, 0.25)[0] == ""


def test_the_decode_records_token_probabilities_only_with_the_gate_on() -> None:
    """On: a threshold and weights for the model (the fixture's, for the fake one)."""
    request = CompletionRequest(prefix="def fo", suffix="\n", document_id="d")
    for threshold, fitted, recorded in ((0.4, False, False), (0.4, True, True), (0.0, True, False)):
        key = gate_weights.model_key("<fake-corpus>")
        if fitted:
            gate_weights.save(key, confidence.SHIPPED)
        else:
            gate_weights.path_for(key).unlink()
        engine = build_engine(Settings(gate_threshold=threshold, cache=False), backend="fake")
        engine.load()
        done = engine.complete(request, CancelToken())
        engine.close()
        lps = done.stats.token_logprobs
        assert bool(lps) == recorded and all(-0.1 < lp <= 0.0 for lp in lps), lps
        assert len(lps) in ((0,) if not recorded else (done.stats.tokens, done.stats.tokens + 1))


def test_the_rest_of_a_suggestion_typed_into_is_judged_by_its_own_probabilities() -> None:
    """A cached answer (typed through, or the suggestion computed ahead as if accepted) keeps
    the target's probabilities: the gate judges what is left of it, so the part it hid does not
    come back ungated after the person takes the first word."""
    engine = build_engine(Settings(gate_threshold=0.4), backend="fake")
    engine.load()
    try:
        asked = CompletionRequest(prefix="def fo", suffix="\n", document_id="d")
        first = engine.complete(asked, CancelToken())
        assert first.text and first.stats.token_logprobs
        typed = first.text[:1]
        hit = engine.peek(CompletionRequest(prefix="def fo" + typed, suffix="\n", document_id="d"))
        assert hit is not None and hit.stats.cache == "typed_through" and hit.typed == typed
        assert hit.stats.token_logprobs == pytest.approx(first.stats.token_logprobs, abs=1e-5)
        assert hit.raw_text == first.raw_text
        assert confidence.assess(asked, hit) is not None
    finally:
        engine.close()


def test_the_rest_of_a_sure_suggestion_scores_no_lower_than_the_whole() -> None:
    """Typing along a suggestion shown whole never hides it (the score of a part that drops
    tokens from the front is no lower, with the shipped weights)."""
    whole = completion("value = compute(a, b)", [-0.3, -1.5, -0.2, -0.9, -0.1, -0.4])
    rest = completion("compute(a, b)", [-0.3, -1.5, -0.2, -0.9, -0.1, -0.4], typed="value = ")
    assert confidence.assess(REQUEST, rest).score >= confidence.assess(REQUEST, whole).score  # type: ignore[union-attr]


def test_logprob_over_a_large_vocabulary_matches_the_exact_log_softmax() -> None:
    """The normaliser leaves out logits far below the top: on a 152k vocabulary (a spread as a
    real model's, a flat one, a sure one) the result stays within 0.01 nats of the exact."""
    rng = np.random.default_rng(0)
    for scale, spike in ((3.0, 20.0), (1.0, 0.0), (4.0, 40.0)):
        logits = (rng.standard_normal(151_936) * scale).astype(np.float32)
        logits[7] += spike
        exact = logits.astype(np.float64)
        norm = exact.max() + math.log(np.exp(exact - exact.max()).sum())
        for token in (7, 100, int(np.argmin(logits))):
            assert abs(sampling.logprob(logits, token) - (exact[token] - norm)) < 0.01
