"""Cached runs a prompt has earlier than the cache holds them (text removed before them: a
context part dropped, lines deleted) are moved into place, not evaluated again; text inserted
is evaluated with everything after it, as llama-server's --cache-reuse does."""

from __future__ import annotations

import numpy as np

from spec_lsp.engine.backends.base import SHIFT_MIN_TOKENS, moved_runs, sync
from spec_lsp.engine.backends.fake import FakeModel, hashed_noise

A, B, C, D = (list(range(i * 100, i * 100 + 80)) for i in (1, 2, 3, 4))


def model(shift_min: int = 16) -> FakeModel:
    fake = FakeModel(lambda ctx: hashed_noise(ctx, 600), n_vocab=600)
    fake.shift_min = shift_min
    return fake


def test_a_dropped_part_is_moved_back_and_the_rest_of_the_cache_kept() -> None:
    assert moved_runs(A + B + C + D, A + C + D, 80, 16) == [(160, 80, 159)]  # (the last: logits)
    assert moved_runs(A + B + C + D, A + C + [7], 80, 16) == [(160, 80, 80)]
    assert moved_runs(A + B + C + D, A + C, 80, 16) == [(160, 80, 79)]
    assert moved_runs(A + B + C + D, A + D + [5], 80, 16) == [(240, 80, 80)]
    # two parts dropped (B, the end of C): two runs, each where the one before ends
    assert moved_runs(A + B + C + D, A + C[:40] + D + [5], 80, 16) == [
        (160, 80, 40),
        (240, 120, 80),
    ]


def test_inserted_text_and_short_runs_are_evaluated() -> None:
    assert moved_runs(A + C + D, A + B + C + D, 80, 16) == []  # (no room made before C)
    assert moved_runs(A + B + C, A + C[:10] + [1], 80, 16) == []  # shorter than the minimum
    assert moved_runs(A + B, A + B, 159, 16) == []  # (the same: the last token evaluated)
    assert moved_runs([], A, 0, 16) == []


def test_sync_moves_instead_of_evaluating_and_the_logits_are_those_of_the_prompt() -> None:
    fake = model()
    sync(fake, A + B + C + D)
    before = fake.evaluated
    logits, evaluated = sync(fake, A + C + D)
    assert evaluated == 1 and fake.evaluated - before == 1  # the last token (its logits)
    assert fake.moved == 159 and fake.tokens == A + C + D
    assert np.allclose(logits, hashed_noise(A + C + D, 600))
    # what follows is evaluated as usual, after the moved run
    _logits, evaluated = sync(fake, A + C + D + [1, 2, 3])
    assert evaluated == 3 and fake.tokens == A + C + D + [1, 2, 3]


def test_no_move_when_off_or_the_model_cannot_shift() -> None:
    off = model(shift_min=0)
    sync(off, A + B + C + D)
    assert sync(off, A + C + D)[1] == 160 and off.moved == 0
    fixed = model()
    fixed.info = fixed.info.__class__(**{**fixed.info.__dict__, "can_shift": False})
    sync(fixed, A + B + C + D)
    assert sync(fixed, A + C + D)[1] == 160 and fixed.moved == 0


def test_a_repetitive_cache_whose_every_position_nearly_matches() -> None:
    """Whitespace and repeated lines: every position starts a near match, none a run."""
    assert moved_runs([5] * 6000, [5] * 63 + [6] + [5] * 3000, 0, SHIFT_MIN_TOKENS) == []
    assert moved_runs([6] + [5] * 6000, [5] * 3000, 0, SHIFT_MIN_TOKENS) == [(1, 0, 2999)]
