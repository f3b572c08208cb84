"""`drafter = auto`: each round, the draft source with the best expected tokens per second.

The adaptive policy picks k; this picks where the draft comes from. Free sources (prompt n-gram,
the open documents' n-gram) propose every round; the draft model costs real time, so it runs only when
chosen. With alpha_s,j the running acceptance of source s at draft position j, a proposal of n
tokens is worth
    rate(s) = E_s[tokens | n] / (draft_seconds(s, n) + verify_seconds(n + 1)),
    E_s[tokens | n] = 1 + sum_i prod_{j<=i} alpha_s,j      (accepted drafts + the target's own),
and drafting nothing is worth 1 / verify_seconds(1) (times the policy's MARGIN: speculation must
win clearly). The best rate wins.

Learning needs no hook in the loop: later calls' contexts hold what the target committed, so
every proposal, chosen or not, is scored against it (accepted = common prefix; positions past
what was committed are untested): the chosen draft at the next call, the others once HORIZON
tokens are committed after them. Each document (and temperature) has its own acceptance per
source, seeded from the last document of its language, as the policy's estimates are. A draft
model not chosen for a while is tried again now and then, less often while trials do not win,
and never so often that trying (its catch-up included, predicted before the first try) takes
more than AUTO_EXPLORE_SHARE (1%) of decoding time.

(~330 lines: choosing, scoring and trying sources are one learning loop over shared state.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from spec_lsp.engine.backends.base import common_prefix_len
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest, catch_up_of
from spec_lsp.engine.policy.adaptive import MARGIN, can_explore
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, PolicyBook
from spec_lsp.engine.policy.profile import CostProfile

NOTHING = "none"
DECLINED = -1  # scored after a model's draft that stopped short: never what the target commits
MODEL_COST_PRIOR = 0.25  # a draft model token in verify(1) units, until measured
TAIL = 16
# a proposal not chosen is scored once this many tokens (or its length) are committed after it,
# whatever they are: deep positions get evidence from every proposal, not only from drafts that
# were verified that far (a lookup's long drafts pay most where a long batch is cheap per token)
HORIZON = 16
PROBE_FIRST = 32  # rounds before a costly source is tried (again); doubled while it loses
PROBE_MAX = 1024  # the longest interval between tries
# trying the model may take this share of decoding time: half the policy's EXPLORE_SHARE, since
# under auto the lookups still speculate while the model waits (a lone model drafter has only its
# probes to find its way back). At 2% the sources bench measured auto 1.5-2% below the workspace
# lookup alone on code repeating another file, about half of it in tries of a model that never paid
AUTO_EXPLORE_SHARE = 0.01
# a costly source is tried again only once the rounds since its last try may pay for what that
# try cost (a try first catches the model's cache up): `can_explore`, the adaptive policy's budget


@dataclass
class Candidate:
    drafter: Drafter
    free: bool  # computed every round (and scored when not chosen)
    # the current document's acceptance (see AutoDrafter.set_document)
    estimate: AcceptanceEstimate | None = None
    seconds_per_step: float | None = None  # EWMA: per call (free) or per model step (model)
    chosen: int = 0
    tested: int = 0  # draft tokens compared with what the target committed
    accepted: int = 0
    probe_interval: int = PROBE_FIRST  # rounds without this (costly) source before trying it
    idle_rounds: int = 0
    probe_seconds: float | None = None  # what its last try cost (catch-up included)
    catch_up_rate: float | None = None  # seconds per token of catching a model up (measured)

    @property
    def name(self) -> str:
        return self.drafter.name


@dataclass
class _Option:
    rate: float  # expected tokens per second
    source: Candidate | None  # None: draft nothing
    n: int  # draft length
    draft: Draft | None  # a lookup's proposal (a model's is made only when chosen)
    probe: bool = False  # a costly source tried again, not chosen on its estimate


@dataclass
class _Pending:
    length: int  # the context length at the call
    tail: list[int]  # its last TAIL tokens
    estimates: dict[str, AcceptanceEstimate]  # the call's document's, per source
    proposals: dict[str, list[int]] = field(default_factory=dict)
    strengths: dict[str, int | None] = field(default_factory=dict)
    chosen: str = NOTHING  # the source whose draft was verified


class AutoDrafter(Drafter):
    name = "auto"
    # asked every round with the policy's draft_max, and the length it returns is its choice
    # (per source, as the policy would choose it)
    sizes_itself = True

    def __init__(
        self,
        lookups: Sequence[Drafter],
        *,
        model: Drafter | None = None,
        profile: CostProfile | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`profile`: this machine's measured costs (seconds). Without one, costs are in units
        of verify(1) from the prior curve, lookups free and a model step MODEL_COST_PRIOR."""
        self.candidates = [Candidate(d, free=True) for d in lookups]
        if model is not None:
            self.candidates.append(Candidate(model, free=False))
        self.profile = profile
        self._costs = profile or CostProfile.prior()
        self._clock = clock
        self.last_choice = NOTHING
        self._pending: list[_Pending] = []  # calls whose proposals are not all scored yet
        self._document, self._language = "", ""
        # acceptance per source, per document and temperature, as the policy's: a file that
        # repeats itself must not teach auto to trust the lookups in a fresh one
        self._books = {s.name: PolicyBook() for s in self.candidates}

    def set_document(self, document: str, language: str = "") -> None:
        """The document the next calls draft for: it learns its own acceptance per source, at
        first seeded from the last document of its language (a little of that evidence)."""
        self._document, self._language = document, language

    def forget(self, document: str) -> None:
        """A closed document: its acceptance per source goes (its language's seed stays)."""
        for book in self._books.values():
            book.forget(document)

    def documents(self) -> set[str]:
        """Documents with acceptance estimates in any source's book."""
        return {d for book in self._books.values() for d in book.documents()}

    def estimates(self, temperature: float) -> dict[str, AcceptanceEstimate]:
        """Each source's acceptance in the current document at this temperature."""
        found = {}
        for name, book in self._books.items():
            found[name] = book.estimate(self._document, self._language, temperature)
            book.remember_language(self._language, temperature, found[name])
        return found

    def set_profile(self, profile: CostProfile | None) -> None:
        """The engine's measured costs (they may arrive after the drafter is built)."""
        self.profile = profile
        self._costs = profile or CostProfile.prior()

    def draft(self, request: DraftRequest) -> Draft:
        self._learn(request.context)
        estimates = self.estimates(request.sampling.temperature)
        pending = _Pending(len(request.context), list(request.context[-TAIL:]), estimates)
        self._pending.append(pending)
        # speculation must beat drafting nothing by the policy's MARGIN (model error, noise)
        options: list[_Option] = [_Option(MARGIN / self._verify(1), None, 0, None)]
        for source in self.candidates:
            source.estimate = estimates[source.name]
            if source.free:
                proposal = self._run(source, request)
                pending.proposals[source.name] = proposal.tokens
                pending.strengths[source.name] = proposal.strength
                n_max = min(len(proposal.tokens), request.max_tokens)
                rate, n = self._best(source, n_max, proposal.strength)
                options.append(_Option(rate, source, n, proposal))
            elif request.max_tokens > 0 and not request.shadow:
                options.append(self._consider_model(source, request))
        best = max(options, key=lambda option: option.rate)
        self.last_choice = best.source.name if best.source else NOTHING
        if best.source is None or best.n == 0:
            return Draft([])
        best.source.chosen += 1
        pending.chosen = best.source.name
        if best.draft is not None:  # a lookup: keep the prefix worth verifying
            probs = best.draft.probs[: best.n] if best.draft.probs is not None else None
            return Draft(
                best.draft.tokens[: best.n], probs, best.draft.strength, source=best.source.name
            )
        model = best.source  # run the draft model now
        others = max(o.rate for o in options if o is not best)
        winning = self._best(model, request.max_tokens)[0] >= others
        model.probe_interval = PROBE_FIRST if winning else min(2 * model.probe_interval, PROBE_MAX)
        model.idle_rounds = 0
        started = self._clock()
        draft = self._run(model, replace(request, max_tokens=best.n))
        if best.probe:  # what it cost: the draft (catch-up included) and the larger batch
            model.probe_seconds = (
                self._clock() - started + self._verify(len(draft.tokens) + 1) - self._verify(1)
            )
        short = len(draft.tokens) < best.n  # it declined the rest (see Draft.short)
        pending.proposals[model.name] = draft.tokens + [DECLINED] * short
        return replace(draft, short=short, source=model.name)

    def _consider_model(self, source: Candidate, request: DraftRequest) -> _Option:
        k = request.max_tokens
        rate, n = self._best(source, k)
        source.idle_rounds += 1
        if source.idle_rounds >= source.probe_interval and self._could_pay(source, k):
            probe_n = max(n, min(2, k))
            rounds, round_seconds = source.idle_rounds, self._verify(1)
            cost = self._try_cost(source, probe_n)
            # the catch-up is counted (a re-tokenization: ~0.6 ms, nearly 1% of a Qwen round
            # here, every round while waiting) only once the rest of the try fits the budget
            if can_explore(rounds, round_seconds, cost, AUTO_EXPLORE_SHARE) and can_explore(
                rounds,
                round_seconds,
                cost + self._catch_up_cost(source, request),
                AUTO_EXPLORE_SHARE,
            ):
                return _Option(float("inf"), source, probe_n, None, probe=True)  # try again
        return _Option(rate, source, n, None)

    def _try_cost(self, source: Candidate, n: int) -> float:
        """What trying the model now costs beyond a plain round, before any catch-up: its
        draft and the larger batch; for a model that cannot count its catch-up, at least
        what its last try cost (catch-up included)."""
        predicted = self._draft_cost(source, n) + self._verify(n + 1) - self._verify(1)
        if not source.drafter.counts_catch_up:
            return max(predicted, source.probe_seconds or 0.0)
        return predicted

    def _catch_up_cost(self, source: Candidate, request: DraftRequest) -> float:
        """Catching the model's cache up on what it has not seen (the first try after a new
        prompt is mostly that): tokens to catch up x the rate measured on its earlier calls
        (or in the profile at startup); without either, priced as drafted tokens (a batch is
        cheaper per token: this errs towards trying less)."""
        if not source.drafter.counts_catch_up:
            return 0.0
        rate = source.catch_up_rate
        if rate is None:  # the profile's (measured at startup), else a drafted token's
            step = self._draft_cost(source, 0)
            rate = self.profile.catch_up_rate(step) if self.profile is not None else step
        return source.drafter.catch_up(request.context) * rate

    def _could_pay(self, source: Candidate, k: int) -> bool:
        """Would this source beat drafting nothing if nearly every token were accepted? A draft
        model as costly as the target never would: trying it is pure loss (and each try first
        catches its cache up on everything since the last one)."""
        return any(
            (1 - 0.99 ** (m + 1)) / 0.01 / (self._draft_cost(source, m) + self._verify(m + 1))
            > 1.0 / self._verify(1)
            for m in range(1, k + 1)
        )

    def _best(self, source: Candidate, n: int, strength: int | None = None) -> tuple[float, int]:
        """The best rate over draft lengths 1..n of this source, and that length (0: none)."""
        assert source.estimate is not None
        best, tokens, survive = (0.0, 0), 1.0, 1.0
        for m, alpha in enumerate(source.estimate.alphas(n, strength), start=1):
            survive *= alpha
            tokens += survive
            rate = tokens / (self._draft_cost(source, m) + self._verify(m + 1))
            if rate > best[0]:
                best = (rate, m)
        return best

    def report(self) -> dict[str, dict[str, float]]:
        """Per source: rounds chosen, draft tokens scored, accepted, acceptance, and the cost
        measured (ms per call for a lookup, per token for a model)."""
        return {
            s.name: {
                "chosen": s.chosen,
                "tested": s.tested,
                "accepted": s.accepted,
                "acceptance": round(s.accepted / s.tested, 4) if s.tested else 0.0,
                "ms_per_step": round(1000 * (s.seconds_per_step or 0.0), 3),
                "catch_up_ms_per_token": round(1000 * (s.catch_up_rate or 0.0), 3),
            }
            for s in self.candidates
        }

    def _learn(self, context: Sequence[int]) -> None:
        """Score earlier calls' proposals against what the target committed since: the chosen
        draft at the next call (what was verified), the others once HORIZON tokens (or their
        length) are committed. When they are scored never depends on whether they were right,
        so the estimates are not biased; a proposal still waiting when the generation ends
        (the context no longer extends its call's) is dropped."""
        latest = self._pending[-1] if self._pending else None
        if latest is None or len(context) <= latest.length:
            self._pending = []
            return
        if list(context[latest.length - len(latest.tail) : latest.length]) != latest.tail:
            self._pending = []  # another generation (its earlier calls are prefixes of this one)
            return
        waiting = []
        for pending in self._pending:
            since = len(context) - pending.length
            for name in list(pending.proposals):
                proposal = pending.proposals[name]
                if name != pending.chosen and since < min(len(proposal), HORIZON):
                    continue
                del pending.proposals[name]
                if proposal:
                    self._score(pending, name, proposal, context)
            if pending.proposals:
                waiting.append(pending)
        self._pending = waiting

    def _score(
        self, pending: _Pending, name: str, proposal: list[int], context: Sequence[int]
    ) -> None:
        committed = list(context[pending.length : pending.length + min(len(proposal), 64)])
        tested = min(len(proposal), len(committed))
        accepted = common_prefix_len(proposal[:tested], committed)
        pending.estimates[name].update(tested, accepted, pending.strengths.get(name))
        source = next(s for s in self.candidates if s.name == name)
        source.tested += tested
        source.accepted += accepted

    def _run(self, source: Candidate, request: DraftRequest) -> Draft:
        started = self._clock()
        draft = source.drafter.draft(request)
        seconds = self._clock() - started
        if not source.free:  # a model: a catch-up is learned apart from its cost per step
            caught = catch_up_of(source.drafter)
            if caught is not None:
                tokens, catch_up = caught
                rate, old_rate = catch_up / tokens, source.catch_up_rate
                source.catch_up_rate = rate if old_rate is None else 0.5 * old_rate + 0.5 * rate
                seconds = max(seconds - catch_up, 0.0)
        per = seconds if source.free else seconds / (len(draft.tokens) + 1)
        old = source.seconds_per_step
        source.seconds_per_step = per if old is None else 0.8 * old + 0.2 * per
        return draft

    def _verify(self, n: int) -> float:
        """A round with a target pass of n tokens: the pass and the loop's own overhead."""
        return self._costs.round_overhead + self._costs.verify(n)

    def _draft_cost(self, source: Candidate, n: int) -> float:
        """Seconds to draft n tokens (verify(1) units without a profile). A lookup's cost is
        paid every round whatever is chosen, so it does not count against it."""
        if source.free:
            return 0.0
        if self.profile is None:
            return MODEL_COST_PRIOR * (n + 1)
        if source.seconds_per_step is not None:
            return source.seconds_per_step * (n + 1)
        if self.profile.draft_seconds_per_token > 0:  # measured at startup (the engine's profile)
            return self.profile.draft(n + 1)
        return MODEL_COST_PRIOR * self._verify(1) * (n + 1)
