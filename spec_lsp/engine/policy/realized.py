"""What drafting really yields on this machine, judged as it runs.

The adaptive policy predicts a round's worth from its acceptance estimate and the cost profile;
both can be wrong: the profile is measured once and other processes take the cores later, and
the estimate starts from priors. This ledger keeps, per draft source (the drafter's name) and
match-strength bucket, what drafting rounds really committed against what their seconds would
have bought in plain rounds measured alongside them:

    yield(source, bucket) = sum(tokens) / sum(seconds / plain_round_seconds)     (decayed)

Plain decoding yields 1 by definition. Where a key's yield falls under 1 with enough evidence
the key is benched: the policy drafts nothing for it (a free lookup is still scored by shadow
drafts, at no cost) and probes it rarely, waiting twice as long after each probe that loses; a
probe that pays puts the key back. So drafting stops where it loses, whatever the profile says,
and comes back where it pays again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTINUATION = "continuation"  # the source name of drafts from the last generation's tokens
SYMBOL = "symbol"  # the rest of the only name the guide leaves (engine/guide)
DECAY = 0.9  # per drafting round of the key: the last ~10 rounds weigh most
EVIDENCE = 2.5  # decayed drafting rounds before a key can be benched (about three rounds)
PROBE_FIRST = 24  # rounds the key would have drafted before its first probe once benched
PROBE_MAX = 384  # the longest wait: a probe that loses costs under 0.5% of the rounds between
# a lookup the estimate is sure of but the profile says does not pay is drafted one token every
# this many such rounds: the profile's batch costs are measured again (a profile taken while
# other work held the cores would otherwise keep drafting off once the machine is free)
COST_PROBE_EVERY = 64
OUTLIER = 4.0
OVERALL = -1  # the bucket of a source's account over every strength  # a round is counted at most this many plain rounds (a burst of other load)
PLAIN_WEIGHT = 0.2  # EWMA weight of a plain round's seconds


@dataclass
class Account:
    """One key's decayed drafting evidence and its bench state."""

    tokens: float = 0.0  # tokens its drafting rounds committed
    plain: float = 0.0  # the plain rounds their seconds would have paid for
    rounds: float = 0.0
    benched: bool = False
    wait: int = PROBE_FIRST  # rounds benched before the next probe
    idle: int = 0  # rounds it would have drafted since it was benched or last probed
    probing: bool = False
    drafted_rounds: int = 0  # every drafting round (undecayed), for the statistics
    probes: int = 0
    tokens_committed: int = 0  # by its drafting rounds (undecayed)
    saved: float = 0.0  # plain rounds those rounds saved: tokens less their time in plain rounds

    @property
    def value(self) -> float | None:
        return self.tokens / self.plain if self.plain > 0 else None


class RealizedYield:
    """The ledger of drafting rounds against plain ones; one per engine (the machine's)."""

    def __init__(self) -> None:
        self.plain_seconds: float | None = None  # EWMA seconds of a plain round
        self.accounts: dict[tuple[str, int | None], Account] = {}
        self._unpriced = 0  # rounds a sure lookup was not drafted for its predicted cost

    def observe_plain(self, seconds: float) -> None:
        old = self.plain_seconds
        if old is not None:
            seconds = min(seconds, OUTLIER * old)
        self.plain_seconds = (
            seconds if old is None else (1 - PLAIN_WEIGHT) * old + PLAIN_WEIGHT * seconds
        )

    def observe_drafting(
        self,
        source: str,
        bucket: int | None,
        tokens: int,
        seconds: float,
        *,
        plain_seconds: float | None = None,
    ) -> None:
        """A round that verified a draft from `source` committed `tokens` in `seconds`;
        `plain_seconds`: a plain round's cost when none was measured yet (the profile's)."""
        base = self.plain_seconds or plain_seconds
        if base is None or base <= 0:
            return
        for account in (self._account(source, bucket), self._overall(source)):
            _judge(account, tokens, seconds / base)

    def realized_loss(self, seconds: float) -> float | None:
        """Plain rounds a round of `seconds` cost beyond one (None: no plain round measured)."""
        if not self.plain_seconds:
            return None
        return min(seconds / self.plain_seconds, OUTLIER) - 1.0

    def allows(self, source: str, bucket: int | None) -> bool:
        """May `source` draft this round at this strength (`estimate.strength_bucket`, as every
        method here takes it)? A benched key waits its turn for a
        probe (each call while benched is a round it would have drafted)."""
        account = self.accounts.get((source, bucket))
        if account is None or account.drafted_rounds < EVIDENCE:
            # a strength with too little evidence of its own follows the source's overall
            account = self.accounts.get((source, OVERALL))
        if account is None or not account.benched:
            return True
        account.idle += 1
        if account.idle >= account.wait:
            account.idle = 0
            account.probing = True
            account.probes += 1
            return True
        return False

    def benched(self, source: str, bucket: int | None) -> bool:
        account = self.accounts.get((source, bucket))
        if account is None or account.drafted_rounds < EVIDENCE:
            account = self.accounts.get((source, OVERALL))
        return account is not None and account.benched

    def cost_probe_due(self) -> bool:
        """Another round a sure lookup went undrafted for its predicted cost: is it time to draft
        one token and measure what a batch costs now?"""
        self._unpriced += 1
        if self._unpriced >= COST_PROBE_EVERY:
            self._unpriced = 0
            return True
        return False

    def report(self) -> dict[str, dict[str, Any]]:
        """Per key ("source/bucket"): its realized yield over plain, rounds, benched or not."""
        return {
            f"{source}/{'-' if bucket is None else 'all' if bucket == OVERALL else bucket}": {
                "yield": round(a.value, 3) if a.value is not None else None,
                "rounds": a.drafted_rounds,
                "tokens": a.tokens_committed,
                "plain_rounds_saved": round(a.saved, 1),
                "benched": a.benched,
                "probes": a.probes,
            }
            for (source, bucket), a in sorted(
                list(self.accounts.items()),
                key=lambda item: (item[0][0], -2 if item[0][1] is None else item[0][1]),
            )
        }

    def saved_by_source(self) -> dict[str, float]:
        """Per source, the plain rounds its drafting rounds saved (their tokens less their time
        in plain rounds; negative where drafting lost)."""
        return {
            source: round(a.saved, 1)
            for (source, bucket), a in sorted(self.accounts.items(), key=lambda item: item[0][0])
            if bucket == OVERALL
        }

    def clear(self) -> None:
        self.plain_seconds = None
        self.accounts.clear()

    def _account(self, source: str, bucket: int | None) -> Account:
        return self._get((source, bucket))

    def _overall(self, source: str) -> Account:
        return self._get((source, OVERALL))

    def _get(self, key: tuple[str, int | None]) -> Account:
        found = self.accounts.get(key)
        if found is None:
            found = self.accounts[key] = Account()
        return found


def _judge(account: Account, tokens: int, plain: float) -> None:
    """Count a drafting round that committed `tokens` in `plain` plain rounds' time; bench the
    account once its yield is under 1 with evidence; a probe is judged on its own round."""
    account.tokens = DECAY * account.tokens + tokens
    account.plain = DECAY * account.plain + min(plain, OUTLIER)
    account.rounds = DECAY * account.rounds + 1.0
    account.drafted_rounds += 1
    account.tokens_committed += tokens
    account.saved += tokens - min(plain, OUTLIER)
    if account.probing:  # did it pay?
        account.probing = False
        if tokens >= plain:
            account.benched, account.wait = False, PROBE_FIRST
            account.tokens, account.plain, account.rounds = tokens, plain, 1.0
        else:
            account.wait = min(2 * account.wait, PROBE_MAX)
        return
    value = account.value
    if account.rounds >= EVIDENCE and value is not None and value < 1.0:
        account.benched = True
        account.idle = 0
