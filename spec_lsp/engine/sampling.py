"""Turning logits into a distribution the same way for the target and the drafter.

Speculative sampling is exact only if the draft's q and the target's p are both the
distributions the sampler would really draw from: temperature, then top-k, then top-p.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spec_lsp.engine.types import SamplingParams


def support(logits: np.ndarray, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """The tokens the sampler can draw and their probabilities (float64, summing to 1), after
    temperature, top-k and top-p; not for greedy parameters.

    Top-k selects k entries in O(n) on the logits as they come (float32), so the softmax and
    the top-p sort run on k values, not on a 150k vocabulary.
    """
    x = np.asarray(logits)
    if 0 < params.top_k < x.size:
        keep = np.argpartition(x, -params.top_k)[-params.top_k :]
    else:
        keep = np.arange(x.size)
    values = x[keep].astype(np.float64) / params.temperature
    small = np.exp(values - values.max())
    small /= small.sum()
    if params.top_p < 1.0:
        order = np.argsort(-small, kind="stable")
        cumulative = np.cumsum(small[order])
        # keep the smallest prefix whose mass reaches top_p (the first token always stays)
        cut = int(np.searchsorted(cumulative, params.top_p)) + 1
        kept = order[:cut]
        keep, small = keep[kept], small[kept] / small[kept].sum()
    return keep, small


def distribution(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Probabilities over the whole vocabulary (float64, sums to 1): see `support`."""
    p = np.zeros(np.shape(logits)[-1], dtype=np.float64)
    if params.greedy:
        p[int(np.argmax(logits))] = 1.0
        return p
    keep, probs = support(logits, params)
    p[keep] = probs
    return p


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One sample from a distribution over the vocabulary (only its non-zero entries are
    walked: inverse CDF, robust to tiny rounding in p)."""
    nonzero = np.flatnonzero(p)
    if nonzero.size == 0:
        return int(p.size - 1)
    return int(nonzero[_inverse_cdf(p[nonzero], float(rng.random()))])


def _inverse_cdf(probs: np.ndarray, u: float) -> int:
    cumulative = np.cumsum(probs)
    index = np.searchsorted(cumulative, u * cumulative[-1], side="right")
    return int(min(index, probs.size - 1))


def pick(logits: np.ndarray, params: SamplingParams, u: float) -> int:
    """The sampler's token for the uniform `u` in [0, 1): inverse CDF over the support in token
    id order, so the same `u` picks the same token whatever order the support came in, and
    logits that differ by rounding (a row from a batch of 5 or of 1) almost always agree."""
    if params.greedy:
        return int(np.argmax(logits))
    keep, probs = support(logits, params)
    order = np.argsort(keep)
    return int(keep[order[_inverse_cdf(probs[order], u)]])


class PositionNoise:
    """One uniform per output position, fixed by the generation's seed.

    The token at position j is `pick(row, params, noise[j])` whoever proposed it. A
    deterministic draft (a lookup) is accepted exactly when it is that token, which happens
    with probability p(x) (as speculative sampling's min(1, p/q) with q one-hot), and the token
    emitted otherwise is p without x: the target's law, unchanged. And the text for a seed no
    longer depends on how many tokens were drafted each round (timing-driven, when adaptive).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = np.random.default_rng(int(rng.integers(2**63)))
        self._values = self._rng.random(64)

    def __getitem__(self, position: int) -> float:
        while position >= self._values.size:
            self._values = np.concatenate([self._values, self._rng.random(self._values.size)])
        return float(self._values[position])

    def after(self, start: int) -> Callable[[int], float]:
        """The uniforms from `start` on: row i of a verify batch is position start + i."""
        return lambda i: self[start + i]


def top_probability(logits: np.ndarray) -> float:
    """The model's own confidence in its top token (softmax at temperature 1)."""
    x = np.asarray(logits, dtype=np.float32)
    top = float(x.max())
    return float(1.0 / np.exp(x - top, dtype=np.float64).sum())


# logits further than this below the top are left out of a log probability's normaliser: each
# adds under e^-17 = 4e-8 of the top's weight, so all of a 152k vocabulary together under 0.6%
# (0.006 nats) at worst, ~1e-4 nats on real rows; and the exponentials are taken of a few
# thousand logits, not of the whole vocabulary (~0.1 ms a token instead of ~0.4 ms for Qwen)
NEGLIGIBLE = 17.0


def logprob(logits: np.ndarray, token: int) -> float:
    """The log probability of `token` under the model's own distribution (softmax at
    temperature 1): what a suggestion's confidence is read from (the normaliser over the
    logits within NEGLIGIBLE of the top)."""
    x = np.asarray(logits, dtype=np.float32)
    top = float(x.max())
    near = x[x > top - NEGLIGIBLE]
    total = float(np.exp(near - top, dtype=np.float64).sum())
    return float(x[token]) - top - float(np.log(total))
