"""Draft length is a decision: each round, the k that maximises expected tokens per second.

With per-token acceptance probability alpha, a draft of k tokens yields on average
    E[tokens | k] = (1 - alpha^(k+1)) / (1 - alpha)        (accepted drafts + the target's own)
for one draft of k tokens plus one target pass over k+1 tokens, so the policy picks
    k* = argmax_k  E[tokens | k] / (draft_cost(k) + verify_cost(k+1)),   k = 0 allowed,
with verify_cost measured on this machine (policy/profile.py). When k = 0 wins, it still probes with a
short draft now and then (backing off while probes fail) so speculation returns when it pays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from spec_lsp.engine.policy.estimate import AcceptanceEstimate, strength_bucket
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.policy.realized import CONTINUATION, RealizedYield


class DraftPolicy(Protocol):
    draft_max: int

    def choose_k(
        self,
        strength: int | None = None,
        catch_up: Callable[[], int] | None = None,
        *,
        source: str = "",
    ) -> int:
        """The draft length for this round; `strength`: the proposal's match strength when a
        lookup drafter proposed first (see `strength_bucket`); `catch_up`: counts the tokens a
        draft model must evaluate before it can draft, asked only when a probe is considered
        (None: the drafter does not say); `source`: the drafter's name (what it really yielded
        here is judged per source and strength)."""
        ...

    def observe_round(
        self,
        source: str,
        strength: int | None,
        drafted: int,
        tokens: int,
        seconds: float,
        *,
        free: bool = False,  # drafted with no drafter call (drafters/table.py: "loop")
    ) -> None:
        """A round as it ran: `drafted` tokens from `source` (0: a plain round) committed
        `tokens` in `seconds` of wall time (drafting, the target's pass, the loop)."""
        ...

    def begin(self, max_tokens: int) -> None:
        """A generation of up to `max_tokens` tokens starts (what its drafts may risk)."""
        ...

    def certain_k(self) -> int:
        """Batch size for a draft that is almost surely right (the last generation's tokens)."""
        ...

    def shadow_k(self) -> int: ...

    def min_confidence(self) -> float: ...

    def observe(self, drafted: int, accepted: int, strength: int | None = None) -> None: ...

    def acceptance_estimate(self) -> float | None: ...

    def observe_overhead(self, seconds: float) -> None: ...

    def observe_verify(self, n: int, seconds: float) -> None: ...

    def observe_draft(self, drafted: int, seconds: float) -> None: ...


class FixedPolicy:
    """Always draft `draft_max` tokens (llama-server's behaviour), with its p-min cut-off."""

    def __init__(self, draft_max: int, *, p_min: float = 0.0) -> None:
        self.draft_max = draft_max
        self.p_min = p_min
        self.drafted = 0
        self.accepted = 0

    def choose_k(
        self,
        strength: int | None = None,
        catch_up: Callable[[], int] | None = None,
        *,
        source: str = "",
    ) -> int:
        return self.draft_max

    def observe_round(
        self,
        source: str,
        strength: int | None,
        drafted: int,
        tokens: int,
        seconds: float,
        *,
        free: bool = False,  # drafted with no drafter call (drafters/table.py: "loop")
    ) -> None:
        pass

    def shadow_k(self) -> int:
        return 0

    def begin(self, max_tokens: int) -> None:
        pass

    def certain_k(self) -> int:
        return max(self.draft_max, 1)

    def min_confidence(self) -> float:
        return self.p_min

    def observe(self, drafted: int, accepted: int, strength: int | None = None) -> None:
        self.drafted += drafted
        self.accepted += accepted

    def acceptance_estimate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    def observe_overhead(self, seconds: float) -> None:
        pass

    def observe_verify(self, n: int, seconds: float) -> None:
        pass

    def observe_draft(self, drafted: int, seconds: float) -> None:
        pass


MARGIN = 1.05  # a predicted gain under 5% is not worth the risk of being slower
# a generation's drafts may lose at most this share of its tokens (in plain rounds) beyond what
# its drafts have won so far: a draft whose failure would cost more waits until earlier drafts
# have paid for it, so no generation ends much slower than plain decoding (~1.5% at worst, as
# costed by the profile), while a generation whose drafts pay may risk what they won
ALLOWANCE = 0.02
# a round whose first draft token is accepted with less than SURE may risk only UNSURE_SHARE of
# what the generation may still lose: a first failure then leaves room for a surer draft later
# (chosen on the policy replay's tuning completions; the report is on others)
SURE = 0.6
UNSURE_SHARE = 0.5
SURE_LOOKUP = 0.85  # a lookup this likely to be right is worth a cost probe (RealizedYield)
# trying a costly drafter that is not chosen (its catch-up and larger batch included) may take
# this share of the decoding time since the last try: where a draft model never pays, exploring
# it costs ~2%, inside the 3% auto may lose to the best single source (at 5% the bench showed
# auto at 0.95x of it in cells where only the free lookups were worth anything)
EXPLORE_SHARE = 0.02


def can_explore(
    rounds: int, round_seconds: float, cost: float, share: float = EXPLORE_SHARE
) -> bool:
    """May a try costing `cost` seconds be spent after `rounds` rounds without one (tries may
    take `share` of decoding time)?"""
    return rounds * round_seconds * share >= cost


def expected_tokens(alpha: float, k: int) -> float:
    if alpha >= 0.999999:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


class AdaptivePolicy:
    def __init__(
        self,
        profile: CostProfile,
        *,
        estimate: AcceptanceEstimate,
        draft_max: int = 16,
        draft_min: int = 0,
        probe_every: int = 8,
        clock: Callable[[], float] = time.perf_counter,
        ledger: RealizedYield | None = None,
    ) -> None:
        self.profile = profile
        self.ledger = ledger  # what drafting really yielded here (None: predictions only)
        # plain rounds this generation's drafts won (accepted tokens beyond what their rounds
        # cost), and what they may lose beyond that (`begin`; unbounded until then)
        self.balance = 0.0
        self.allowance = float("inf")
        self._clock = clock
        # this round's probe, if it is one: (started, k, tokens the draft model caught up on)
        self._probe: tuple[float, int, int | None] | None = None
        self.estimate = estimate
        self.draft_max = draft_max
        self.draft_min = draft_min
        self.probe_every = probe_every
        self._last_k = 0
        self._ever_pays: bool | None = None

    def rate(self, k: int, alpha: float | None = None, strength: int | None = None) -> float:
        """Expected tokens per second with a draft of k tokens (per-position estimates, or a
        flat alpha when given)."""
        tokens = (
            self.estimate.expected_tokens(k, strength)
            if alpha is None
            else expected_tokens(alpha, k)
        )
        seconds = self.profile.round_overhead + self.profile.draft(k) + self.profile.verify(k + 1)
        return tokens / seconds

    def rates(
        self, alpha: float | None = None, strength: int | None = None, *, free: bool = False
    ) -> list[float]:
        """Expected tokens per second for k = 0..draft_max, in one pass (`free`: drafts that
        cost nothing to propose, as the last generation's continuation)."""
        return self._rates(self._alphas(alpha, strength), self._costs(free))

    def _alphas(self, alpha: float | None, strength: int | None) -> list[float]:
        if alpha is not None:
            return [alpha] * self.draft_max
        return self.estimate.alphas(self.draft_max, strength)

    def _costs(self, free: bool) -> list[float]:
        """Seconds of a round drafting k = 0..draft_max tokens, the loop's own cost left out."""
        return self.profile.round_costs(self.draft_max, free=free)

    def _rates(self, alphas: list[float], costs: list[float]) -> list[float]:
        overhead = self.profile.round_overhead
        result, tokens, survive = [1.0 / (overhead + costs[0])], 1.0, 1.0
        for k in range(1, self.draft_max + 1):
            survive *= alphas[k - 1]
            tokens += survive
            result.append(tokens / (overhead + costs[k]))
        return result

    def best_k(
        self,
        alpha: float | None = None,
        strength: int | None = None,
        *,
        free: bool = False,
        risk: float = float("inf"),
    ) -> int:
        """The fastest k; speculation must beat no speculation by MARGIN (model error, noise);
        `risk`: the most a round may lose if its whole draft fails (plain rounds). It runs each
        round a lookup proposes: the costs are read once, for the rates and the losses."""
        alphas = self._alphas(alpha, strength)
        costs = self._costs(free)
        rates = self._rates(alphas, costs)
        if alpha is None and alphas and alphas[0] < SURE:
            risk *= UNSURE_SHARE  # the first token is a coin toss: keep a chance for later
        one = self.profile.verify(1)
        candidates = [
            k
            for k in range(max(1, self.draft_min), self.draft_max + 1)
            if costs[k] / one - 1.0 <= risk  # (`loss(k)`)
        ]
        best = max(candidates, key=lambda k: (rates[k], -k), default=0)
        return best if best and rates[best] > MARGIN * rates[0] else 0

    def begin(self, max_tokens: int) -> None:
        self.balance, self.allowance = 0.0, ALLOWANCE * max(max_tokens - 1, 0)

    def loss(self, k: int, *, free: bool = False) -> float:
        """Plain rounds lost by a round whose k drafted tokens all fail."""
        p = self.profile
        draft = 0.0 if free else p.draft(k)
        return (draft + p.verify(k + 1)) / p.verify(1) - 1.0

    def choose_k(
        self,
        strength: int | None = None,
        catch_up: Callable[[], int] | None = None,
        *,
        source: str = "",
    ) -> int:
        risk = self.balance + self.allowance
        k = self.best_k(strength=strength, risk=risk)
        self._probe = None
        if (
            k
            and self.ledger is not None
            and not self.ledger.allows(source, strength_bucket(strength))
        ):
            self._last_k = 0  # it loses here, whatever the prediction (a free one: shadows)
            return 0
        if k == 0 and strength is not None and self._cost_probe(source, strength, risk):
            self._last_k = 1  # the profile says a batch costs too much: is that still true?
            return 1
        if k == 0 and self.draft_max > 0 and not self._free_drafts() and self._can_ever_pay():
            # a costly drafter is probed now and then; a free one is scored by shadow drafts
            self.estimate.rounds_at_zero += 1
            probe_k = max(1, self.draft_min, min(2, self.draft_max))
            due = self.estimate.rounds_at_zero >= self.estimate.probe_interval
            if due and self.loss(probe_k) <= risk:
                tokens = catch_up() if catch_up else None
                cost = self.probe_cost(probe_k, tokens)  # its catch-up included
                if cost <= risk * self.profile.verify(1) and can_explore(
                    self.estimate.rounds_at_zero, self.profile.verify(1), cost
                ):
                    self.estimate.rounds_at_zero = 0
                    self._probe = (self._clock(), probe_k, tokens)
                    k = probe_k
        self._last_k = k
        return k

    def probe_cost(self, k: int, catch_up: int | None) -> float:
        """Predicted seconds a probe of k tokens costs beyond a plain round: drafting, the larger
        batch, and catching the draft model up on the tokens it has not seen
        (`CostProfile.catch_up_rate`)."""
        p = self.profile
        base = p.draft(k) + p.verify(k + 1) - p.verify(1)
        if catch_up is None:
            return max(base, self.estimate.probe_seconds or 0.0)
        return base + catch_up * p.catch_up_rate(p.draft_seconds_per_token)

    def _cost_probe(self, source: str, strength: int, risk: float) -> bool:
        """Draft one token of a lookup the estimate is sure of (SURE_LOOKUP), now and then
        (`RealizedYield.cost_probe_due`), within the allowance, unless the ledger has benched
        it: the pass measures a batch's cost again (`observe_verify`)."""
        ledger = self.ledger
        if ledger is None or not self._free_drafts() or self.loss(1) > risk:
            return False
        if self.estimate.alphas(1, strength)[0] < SURE_LOOKUP or ledger.benched(
            source, strength_bucket(strength)
        ):
            return False
        return ledger.cost_probe_due()

    def certain_k(self) -> int:
        """Continuation drafts (the last generation's tokens): near-certain and free (0 where
        they have been losing all the same: the person edits inside them)."""
        if self.ledger is not None and not self.ledger.allows(CONTINUATION, None):
            return 0
        return max(1, self.best_k(alpha=0.98, free=True))

    def _can_ever_pay(self) -> bool:
        """Would speculation pay even if every draft token were accepted? If not (a drafter as
        costly as the target on a CPU), probing is pure loss."""
        if self._ever_pays is None:
            self._ever_pays = self.best_k(alpha=0.999) > 0
        return self._ever_pays

    def _free_drafts(self) -> bool:
        return self.profile.draft(4) < 0.02 * self.profile.verify(1)

    def shadow_k(self) -> int:
        """At k = 0 a free drafter (n-gram lookup) can still propose, unverified, and be scored
        against the tokens the target produces: evidence at no cost. 0 when drafting costs."""
        if self._last_k == 0 and self._free_drafts():
            return min(4, self.draft_max)
        return 0

    def min_confidence(self) -> float:
        """Stop drafting at a token whose draft probability cannot pay for its own verification.

        Adding a token to the batch costs marginal seconds m = verify(k+2) - verify(k+1) plus
        drafting it; it yields at most its acceptance probability (~ the draft's confidence c)
        in tokens. At the current best rate R tokens/s it pays only if c >= R * m.
        """
        k = max(self._last_k, 1)
        marginal = (
            self.profile.verify(k + 2)
            - self.profile.verify(k + 1)
            + self.profile.draft_seconds_per_token
        )
        return min(0.95, max(0.0, max(self.rates()) * marginal))

    def observe(self, drafted: int, accepted: int, strength: int | None = None) -> None:
        self.estimate.update(drafted, accepted, strength)
        if self._probe is not None:  # a probe: learn what it cost
            started, k, catch_up = self._probe
            extra = max(self._clock() - started - self.profile.verify(1), 0.0)
            self.estimate.probe_seconds = extra
            if catch_up:  # learn this machine's catch-up rate from what the probe really took
                p = self.profile
                rate = max(extra - p.draft(k) - p.verify(k + 1) + p.verify(1), 0.0) / catch_up
                old = p.catch_up_seconds_per_token
                p.catch_up_seconds_per_token = rate if old is None else 0.5 * old + 0.5 * rate
            self._probe = None
            # a probe that does not make speculation worth it waits twice as long for the next
            # (a drafter as costly as the target is right, and still does not pay)
            pays = self.best_k() > 0
            interval = self.estimate.probe_interval
            self.estimate.probe_interval = self.probe_every if pays else min(interval * 2, 256)

    def acceptance_estimate(self) -> float | None:
        return round(self.estimate.value, 4)

    def observe_round(
        self,
        source: str,
        strength: int | None,
        drafted: int,
        tokens: int,
        seconds: float,
        *,
        free: bool = False,  # drafted with no drafter call (drafters/table.py: "loop")
    ) -> None:
        if drafted:  # the worse of what the profile says it cost and what it took
            predicted = self.loss(drafted, free=free)
            realized = self.ledger.realized_loss(seconds) if self.ledger is not None else None
            self.balance += tokens - 1 - max(predicted, realized or 0.0)
        if self.ledger is None:
            return
        if drafted == 0:
            self.ledger.observe_plain(seconds)
            return
        plain = self.profile.verify(1) + self.profile.round_overhead
        self.ledger.observe_drafting(
            source, strength_bucket(strength), tokens, seconds, plain_seconds=plain
        )

    def observe_overhead(self, seconds: float) -> None:
        self.profile.observe_overhead(seconds)

    def observe_verify(self, n: int, seconds: float) -> None:
        self.profile.observe_verify(n, seconds)

    def observe_draft(self, drafted: int, seconds: float) -> None:
        """A draft call as run calibrates the draft cost (not a probe's: its catch-up is
        budgeted apart)."""
        if self._probe is None:
            self.profile.observe_draft(drafted, seconds)


def make_policy(
    settings: Any,
    profile: CostProfile | None,
    estimate: AcceptanceEstimate,
    ledger: RealizedYield | None = None,
) -> DraftPolicy:
    if settings.draft_policy == "fixed":
        return FixedPolicy(settings.draft_max, p_min=settings.draft_p_min)
    return AdaptivePolicy(
        profile or CostProfile.prior(),
        estimate=estimate,
        draft_max=settings.draft_max,
        draft_min=settings.draft_min,
        ledger=ledger,
    )
