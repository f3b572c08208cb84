"""Acceptance estimates: how often a draft token at position j is accepted, per document.

Exponentially weighted evidence per draft position (and per lookup match strength), seeded from
the document's language; the adaptive policy turns them into a draft length.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


def prior_acceptance(temperature: float) -> float:
    """Before any evidence: code drafts are often right at T=0, much less so when sampling."""
    return max(0.15, 0.5 - 0.2 * min(temperature, 1.5))


DEPTH = 64
STRENGTH_EDGES = (2, 4, 8, 16)  # shared-context tokens: <=2, 3-4, 5-8, 9-16, more
# within a bucket, an untested position's prior is the position before it times this: a copy
# that has held for j tokens usually holds for one more (the overall estimate uses 0.85)
BUCKET_CHAIN = 0.95
STRENGTH_WEIGHT = 2.0  # a bucket's alpha leans on the overall alpha until it has evidence
# evidence a run of failures has contradicted: a position that failed s times in a row (no pass
# between) while its alpha said each failure had probability 1 - alpha is forgotten once
# (1 - alpha)^s falls below this (a change, not bad luck: the file's next place, a sample that
# left the pattern); its alpha then rests on those failures and the prior
SURPRISE = 0.01


def strength_bucket(strength: int | None) -> int | None:
    """A lookup proposal's match strength (tokens of context shared with the earlier occurrence)
    in coarse buckets: how often such a proposal is right is learned per bucket."""
    if strength is None:
        return None
    return next(
        (i for i, edge in enumerate(STRENGTH_EDGES) if strength <= edge), len(STRENGTH_EDGES)
    )


@dataclass
class AcceptanceEstimate:
    """Exponentially weighted acceptance per draft position (as vLLM's adaptive K).

    alpha_j = P(draft token j is accepted | tokens 1..j-1 were). A round that accepts a of k
    tokens passes positions 1..a and fails position a+1; deeper positions were not tested
    (censored) and learn nothing. Untested positions fall back to a prior that shrinks with
    depth, so long drafts must be earned by evidence, not assumed from short ones. A position
    whose failures in a row were improbable under its alpha forgets its older evidence
    (SURPRISE): after twelve completions at one place of a file, the first drafts at another
    place need not fail for eight more before the estimate follows.
    """

    prior: float
    prior_weight: float = 2.0
    decay: float = 0.95
    passed: list[float] = field(default_factory=lambda: [0.0] * DEPTH)
    failed: list[float] = field(default_factory=lambda: [0.0] * DEPTH)
    probe_interval: int = 8  # rounds at k = 0 between probes; grows while probes do not pay
    rounds_at_zero: int = 0
    probe_seconds: float | None = None  # what the last probe cost beyond a plain round
    # per strength bucket: (passed, failed) per position, as above
    by_strength: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)
    # failures in a row per position, overall (None) and per bucket (see SURPRISE)
    streaks: dict[int | None, list[int]] = field(default_factory=dict)

    def update(self, drafted: int, accepted: int, strength: int | None = None) -> None:
        if drafted <= 0:
            return
        bucket = strength_bucket(strength)
        depth = min(drafted, DEPTH)
        # what the evidence so far predicted, overall and for the bucket
        predicted = {None: self._alphas(depth), bucket: self.alphas(depth, strength)}
        counts: list[tuple[int | None, list[float], list[float]]] = [
            (None, self.passed, self.failed)
        ]
        if bucket is not None:
            passed, failed = self.by_strength.setdefault(bucket, ([0.0] * DEPTH, [0.0] * DEPTH))
            counts.append((bucket, passed, failed))
        for key, passed, failed in counts:
            streak = self.streaks.setdefault(key, [0] * DEPTH)
            _forget_if_contradicted(streak, predicted[key], passed, failed, drafted, accepted)
            _count(passed, failed, drafted, accepted, self.decay)

    def alphas(self, k: int, strength: int | None = None) -> list[float]:
        """alpha per position 0..k-1; a position's prior is the one before it, a little lower
        (so evidence at depth j makes depth j+1 worth trying, and no further). With a strength
        whose bucket has evidence: the bucket's own counts, the first position leaning on the
        overall alpha and each later one on the bucket's previous position (BUCKET_CHAIN)."""
        counts = self.by_strength.get(strength_bucket(strength))  # type: ignore[arg-type]
        if counts is None or k <= 0:
            return self._alphas(k)
        passed, failed = counts
        result: list[float] = []
        prior = self._alphas(1)[0]
        for j in range(k):
            if j >= DEPTH:
                result.append(result[-1] * 0.97)
                continue
            alpha = (passed[j] + prior * STRENGTH_WEIGHT) / (
                passed[j] + failed[j] + STRENGTH_WEIGHT
            )
            result.append(alpha)
            prior = alpha * BUCKET_CHAIN
        return result

    def _alphas(self, k: int) -> list[float]:
        result, prior = [], self.prior
        for j in range(min(k, DEPTH)):
            alpha = (self.passed[j] + prior * self.prior_weight) / (
                self.passed[j] + self.failed[j] + self.prior_weight
            )
            result.append(alpha)
            prior = alpha * 0.85
        return result + [result[-1] * 0.97] * (k - len(result)) if k > DEPTH else result

    def expected_tokens(self, k: int, strength: int | None = None) -> float:
        """1 + sum over i <= k of the probability that the first i drafts are all accepted."""
        total, survive = 1.0, 1.0
        for alpha in self.alphas(k, strength):
            survive *= alpha
            total += survive
        return total

    @property
    def value(self) -> float:
        """Overall acceptance of tried draft tokens (for the statistics)."""
        passed, failed = sum(self.passed), sum(self.failed)
        return (passed + self.prior * self.prior_weight) / (passed + failed + self.prior_weight)

    def seeded(self) -> AcceptanceEstimate:
        """A new estimate for another document of the same language: keep a little evidence."""
        return AcceptanceEstimate(
            self.prior,
            self.prior_weight,
            self.decay,
            [x * 0.3 for x in self.passed],
            [x * 0.3 for x in self.failed],
            by_strength={
                b: ([x * 0.3 for x in p], [x * 0.3 for x in f])
                for b, (p, f) in self.by_strength.items()
            },
        )


def _forget_if_contradicted(
    streak: list[int],
    alphas: list[float],
    passed: list[float],
    failed: list[float],
    drafted: int,
    accepted: int,
) -> None:
    """Count failures in a row at the failed position (a pass resets a position's run); when
    the run was improbable under the position's alpha (SURPRISE), drop that position's evidence
    but the run itself (the failure being counted makes it whole)."""
    for j in range(min(accepted, DEPTH)):
        streak[j] = 0
    if accepted >= drafted or accepted >= DEPTH:
        return
    streak[accepted] += 1
    if (1.0 - alphas[accepted]) ** streak[accepted] < SURPRISE:
        passed[accepted], failed[accepted] = 0.0, float(streak[accepted] - 1)
        streak[accepted] = 0


def _count(passed: list[float], failed: list[float], drafted: int, accepted: int, decay: float):
    """Decay the tested positions, then count the passes and the first failure."""
    for j in range(min(drafted, DEPTH)):
        passed[j] *= decay
        failed[j] *= decay
    for j in range(min(accepted, DEPTH)):
        passed[j] += 1.0
    if accepted < drafted and accepted < DEPTH:
        failed[accepted] += 1.0


# documents whose estimates are kept (least recently used go first): an estimate is a few KB
# (its counts per position and strength bucket), and a document that comes back after 256
# others is seeded again from its language, as a new one is
DOCUMENTS = 256


class PolicyBook:
    """Acceptance estimates per document, seeded from the language's, for the adaptive policy."""

    def __init__(self, *, size: int = DOCUMENTS) -> None:
        self.size = size
        # per document (least recently used first): per temperature, its estimate
        self._by_document: OrderedDict[str, dict[str, AcceptanceEstimate]] = OrderedDict()
        self._by_language: dict[str, AcceptanceEstimate] = {}

    def estimate(self, document: str, language: str, temperature: float) -> AcceptanceEstimate:
        key = f"{temperature:.2f}"
        by_temperature = self._by_document.get(document)
        if by_temperature is None:
            by_temperature = self._by_document[document] = {}
        self._by_document.move_to_end(document)
        found = by_temperature.get(key)
        if found is None:
            lang = self._by_language.get(f"{language}|{key}")
            found = lang.seeded() if lang else AcceptanceEstimate(prior_acceptance(temperature))
            by_temperature[key] = found
        while len(self._by_document) > self.size:
            self._by_document.popitem(last=False)
        return found

    def remember_language(
        self, language: str, temperature: float, estimate: AcceptanceEstimate
    ) -> None:
        self._by_language[f"{language}|{temperature:.2f}"] = estimate

    def forget(self, document: str) -> None:
        """A closed document: its estimates go (its language's seed stays)."""
        self._by_document.pop(document, None)

    def documents(self) -> list[str]:
        return list(self._by_document)

    def clear(self) -> None:
        self._by_document.clear()
        self._by_language.clear()
