"""The engine's promises with a guide: the mask is part of the target. Greedy speculation is
plain greedy decoding of the guided target, token for token; seeded sampling gives plain
guided sampling's text; speculative sampling keeps the guided distribution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.engine import sampling
from spec_lsp.engine.backends.base import sync
from spec_lsp.engine.backends.fake import FakeModel, hashed_noise
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters.model import ModelDrafter
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams
from tests.unit.test_speculative import STOP, VOCAB, ScriptedDrafter, fake_target, run


class HashedGuide:
    """A guide whose trigger points and kept tokens depend on the text so far (hashed), and
    whose symbol drafts are drawn by hypothesis: right (the guided greedy tokens) or wrong."""

    def __init__(self, prompt: Sequence[int], data: st.DataObject | None = None) -> None:
        self.prompt, self.data = list(prompt), data

    def keep(self, out: Sequence[int]) -> np.ndarray | None:
        h = hashed_noise([*self.prompt, *out], VOCAB, window=2, salt="guide")
        if h[1] < 0:  # no trigger point here
            return None
        keep = h > 0.2
        keep[int(np.argmin(h))] = True  # (never empty)
        return keep

    def guide(self, logits: np.ndarray, out: Sequence[int]) -> np.ndarray:
        keep = self.keep(out)
        return logits if keep is None else np.where(keep, logits, -np.inf)

    def draft(self, out: Sequence[int], limit: int) -> list[int]:
        if self.data is None or limit <= 0:
            return []
        n = self.data.draw(st.integers(0, min(limit, 4)))
        return self.data.draw(st.lists(st.integers(0, VOCAB - 1), min_size=n, max_size=n))


def plain(prompt: list[int], max_tokens: int, params: SamplingParams, seed: int = 0) -> list[int]:
    """Token by token: the guided row, sampled with the position's uniform (no speculation)."""
    model, guide = fake_target(), HashedGuide(prompt)
    logits, _ = sync(model, prompt)
    noise = sampling.PositionNoise(np.random.default_rng(seed))
    out: list[int] = []
    while len(out) < max_tokens:
        token = sampling.pick(guide.guide(logits, out), params, noise[len(out)])
        if token == STOP:
            break
        out.append(token)
        logits = model.evaluate([token], logits_from=0)[0]
    return out


def speculative(prompt, drafter, k, max_tokens, params, *, guide, seed=0):
    return run(prompt, drafter, k, max_tokens, params=params, seed=seed, guide=guide)


@settings(max_examples=150, deadline=None)
@given(
    prompt=st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12),
    k=st.integers(0, 12),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["random", "exact", "one_wrong", "ngram", "self"]),
    data=st.data(),
)
def test_guided_greedy_speculation_equals_plain_guided_greedy(prompt, k, max_tokens, mode, data):
    """Whatever the drafter and the symbol drafts propose (drafted against the unguided target,
    or at random), the text is the guided target's greedy text."""
    if mode == "ngram":
        drafter = NgramDrafter()
    elif mode == "self":  # (drafts the unguided target's text: rejected where the mask bites)
        drafter = ModelDrafter(fake_target(), target=fake_target())
    else:
        drafter = ScriptedDrafter(data, mode)
    params = SamplingParams()
    out, stats = speculative(
        prompt, drafter, k, max_tokens, params, guide=HashedGuide(prompt, data)
    )
    assert out == plain(prompt, max_tokens, params)
    assert stats.symbol_accepted <= stats.symbol_drafted
    guide = HashedGuide(prompt)
    for i, token in enumerate(out):  # (and no token the guide forbids)
        keep = guide.keep(out[:i])
        assert keep is None or keep[token]


def test_the_guide_changes_the_text():
    """Not vacuous: on these prompts the guided text differs from the unguided one."""
    params = SamplingParams()
    differ = 0
    for first in range(1, VOCAB):
        guided, _ = speculative([first, 3], None, 0, 20, params, guide=HashedGuide([first, 3]))
        unguided, _ = speculative([first, 3], None, 0, 20, params, guide=None)
        differ += guided != unguided
    assert differ >= VOCAB // 3


@settings(max_examples=100, deadline=None)
@given(
    prompt=st.lists(st.integers(1, VOCAB - 1), min_size=1, max_size=12),
    k=st.integers(1, 12),
    max_tokens=st.integers(1, 40),
    mode=st.sampled_from(["random", "exact", "one_wrong", "ngram"]),
    temperature=st.sampled_from([0.5, 1.0, 1.5]),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
def test_guided_sampling_with_lookup_drafts_gives_the_seeds_plain_guided_text(
    prompt, k, max_tokens, mode, temperature, seed, data
):
    drafter = NgramDrafter() if mode == "ngram" else ScriptedDrafter(data, mode)
    params = SamplingParams(temperature=temperature, top_k=8, top_p=0.9, seed=seed)
    spec, _ = speculative(
        prompt, drafter, k, max_tokens, params, guide=HashedGuide(prompt, data), seed=seed
    )
    assert spec == plain(prompt, max_tokens, params, seed)


def test_speculative_sampling_keeps_the_guided_distribution():
    """Two-token sequences, a draft model that ignores the mask: the law is the guided one."""
    vocab = 4

    def logits(context):
        return hashed_noise(context, vocab, window=2, salt="t") * 0.7

    def draft_logits(context):
        return hashed_noise(context, vocab, window=2, salt="d") * 0.7

    class TwoOfFour:  # after token 1 or 3 only tokens 0 and 2 may come; the first is free
        def guide(self, row, out):
            return (
                np.where([True, False, True, False], row, -np.inf)
                if out[-1:] in ([1], [3])
                else row
            )

        def draft(self, out, limit):
            return []

    params = SamplingParams(temperature=1.0)
    target = FakeModel(logits, n_vocab=vocab, fingerprint="v4")
    drafter = ModelDrafter(FakeModel(draft_logits, n_vocab=vocab, fingerprint="v4"), target=target)
    prompt, guide = [1, 2], TwoOfFour()
    exact: dict[tuple[int, int], float] = {}
    p0 = sampling.distribution(guide.guide(logits(prompt), []), params)
    for a in range(vocab):
        p1 = sampling.distribution(guide.guide(logits([*prompt, a]), [a]), params)
        for b in range(vocab):
            exact[(a, b)] = p0[a] * p1[b]
    rng = np.random.default_rng(5)
    counts: Counter[tuple[int, int]] = Counter()
    n = 6000
    for _ in range(n):
        out = generate(
            target,
            drafter,
            FixedPolicy(3),
            DecodeJob(prompt, 2, params, frozenset(), guide=guide),
            cancel=CancelToken(),
            rng=rng,
            stats=DecodeStats(),
        )
        counts[(out[0], out[1])] += 1
    assert all(counts[(a, b)] == 0 for a in (1, 3) for b in (1, 3))  # never past the mask
    cells = [c for c in exact if exact[c] * n >= 5]
    chi2 = sum((counts[c] - n * exact[c]) ** 2 / (n * exact[c]) for c in cells)
    assert chi2 < 40.0  # ~p = 0.001 at up to 15 degrees of freedom
