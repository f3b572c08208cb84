"""Turning logits into a distribution the same way for the target and the drafter.

Speculative sampling is exact only if the draft's q and the target's p are both the
distributions the sampler would really draw from: temperature, then top-k, then top-p.
"""

from __future__ import annotations

import numpy as np

from spec_lsp.engine.types import SamplingParams


def distribution(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Probabilities after temperature, top-k and top-p (float64, sums to 1)."""
    x = np.asarray(logits, dtype=np.float64)
    if params.greedy:
        one_hot = np.zeros_like(x)
        one_hot[int(np.argmax(x))] = 1.0
        return one_hot
    x = x / params.temperature
    if 0 < params.top_k < x.size:
        kth = np.partition(x, -params.top_k)[-params.top_k]
        x = np.where(x >= kth, x, -np.inf)
    p = np.exp(x - np.max(x))
    p /= p.sum()
    if params.top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        cumulative = np.cumsum(p[order])
        # keep the smallest prefix whose mass reaches top_p (the first token always stays)
        cut = int(np.searchsorted(cumulative, params.top_p)) + 1
        mask = np.zeros_like(p, dtype=bool)
        mask[order[:cut]] = True
        p = np.where(mask, p, 0.0)
        p /= p.sum()
    return p


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One sample from a distribution (inverse CDF: robust to tiny rounding in p)."""
    cumulative = np.cumsum(p)
    return int(
        min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), p.size - 1)
    )


def pick(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator) -> int:
    if params.greedy:
        return int(np.argmax(logits))
    return draw(distribution(logits, params), rng)


def top_probability(logits: np.ndarray) -> float:
    """The model's own confidence in its top token (softmax at temperature 1)."""
    x = np.asarray(logits, dtype=np.float64)
    e = np.exp(x - np.max(x))
    return float(e.max() / e.sum())
