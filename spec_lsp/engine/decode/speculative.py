"""The speculative decode loop: draft k tokens cheaply, verify them in one target pass.

State between rounds: the target's KV cache holds `prompt + out[:-1]`; `out[-1]` (the last token
chosen) is not yet evaluated. A round evaluates `[out[-1]] + draft` in one batch and gets k+1
rows of logits: row i is the target's distribution for the token after `draft[:i]`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from spec_lsp.engine import sampling
from spec_lsp.engine.backends.base import ABORTABLE_CHUNK, ModelBackend, sync
from spec_lsp.engine.drafters import table
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest, catch_up_of
from spec_lsp.engine.drafters.lookups import beside
from spec_lsp.engine.drafters.ngram import TAIL as LAST_TAIL
from spec_lsp.engine.guide import hook as guided
from spec_lsp.engine.policy.adaptive import DraftPolicy
from spec_lsp.engine.policy.realized import CONTINUATION, SYMBOL
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams

Shadows = list[tuple[int, list[int], int | None]]  # (position in out, proposal, strength)
SHADOW_TOKENS = 4  # how much of an unverified lookup proposal is scored (short: evidence soon)


@dataclass
class DecodeJob:
    prompt: Sequence[int]
    max_tokens: int
    sampling: SamplingParams
    stop_ids: frozenset[int]
    should_stop: Callable[[list[int]], bool] = lambda _tokens: (
        False
    )  # stop strings, post-processing
    continuation: Sequence[
        int
    ] = ()  # the document's last prompt + generation (a near-certain draft)
    on_round: Callable[[list[int]], None] | None = None  # progress: the tokens committed so far
    first_allowed: Sequence[int] | None = (
        None  # token healing: the first token must be one of these
    )
    logprobs: bool = True  # record each token's log probability (what the gate reads)
    guide: guided.Guide | None = None  # names that exist: every verified row is guided first
    suffix: Sequence[int] = ()  # the prompt's tokens of the text after the cursor (a lookup)


def verify(
    rows: np.ndarray,
    draft: Draft,
    params: SamplingParams,
    rng: np.random.Generator,
    noise: Callable[[int], float] | None = None,
) -> tuple[int, int]:
    """Return (number of draft tokens accepted, the target's token after them).

    Greedy: accept while the draft equals the target's argmax; the token after is the argmax at
    the first mismatch (or the bonus row). The result is exactly plain greedy decoding.
    Sampling (Leviathan et al. / Chen et al.): accept draft token x with probability
    min(1, p(x)/q(x)); on rejection draw from the residual max(0, p - q), renormalised. Every
    emitted token is then distributed exactly as the target's p. A deterministic draft
    (n-gram lookup) has q = one-hot(x): acceptance is p(x) and the residual is p without x.
    `noise(i)`, the uniform of the i-th row's position (see sampling.PositionNoise), decides
    deterministic drafts and the token after the draft, so the text for a seed is the text
    plain sampling gives; without it, those draws come from `rng`.
    """
    if params.greedy:  # (every row's argmax at once; no uniforms to draw)
        best = rows[: len(draft.tokens) + 1].argmax(axis=1).tolist()
        n = next((i for i, x in enumerate(draft.tokens) if best[i] != x), len(draft.tokens))
        return n, best[n]
    u = noise if noise is not None else (lambda _i: float(rng.random()))
    for i, x in enumerate(draft.tokens):
        if draft.probs is None:  # (a deterministic draft: accepted with probability p(x))
            target_choice = sampling.pick(rows[i], params, u(i))
            if target_choice != x:
                return i, target_choice
            continue
        keep, p = sampling.support(rows[i], params)  # p over `keep`, the sampler's support
        at = np.flatnonzero(keep == x)
        p_x = float(p[at[0]]) if at.size else 0.0
        q_x = float(draft.probs[i][x])
        if q_x > 0 and rng.random() < min(1.0, p_x / q_x):
            continue
        residual = np.maximum(p - draft.probs[i][keep], 0.0)
        if residual.sum() <= 0.0:  # p == q up to rounding: the residual is empty, p itself is right
            residual = p
        return i, int(keep[sampling.draw(residual / residual.sum(), rng)])
    n = len(draft.tokens)
    return n, sampling.pick(rows[n], params, u(n))


def generate(
    target: ModelBackend,
    drafter: Drafter | None,
    policy: DraftPolicy,
    job: DecodeJob,
    *,
    cancel: CancelToken,
    rng: np.random.Generator,
    stats: DecodeStats,
) -> list[int]:
    """Generate up to job.max_tokens tokens after job.prompt; return them (stop token excluded)."""
    started = time.perf_counter()
    policy.begin(job.max_tokens)
    # a cancel here means nobody waits for this prompt (a newer key typed into it takes the
    # generation over instead): stop the chunk being computed rather than finish it
    logits, stats.prompt_tokens_evaluated = sync(
        target,
        job.prompt,
        check=cancel.raise_if_cancelled,
        chunk=ABORTABLE_CHUNK,
        abort=cancel,
    )
    stats.prompt_tokens = len(job.prompt)
    stats.target_passes += 1
    stats.prompt_seconds = time.perf_counter() - started
    started = time.perf_counter()
    if job.first_allowed:
        masked = np.full_like(logits, -np.inf)
        masked[list(job.first_allowed)] = logits[list(job.first_allowed)]
        logits = masked
    logits = guided.first_row(job.guide, logits)
    noise = sampling.PositionNoise(rng)
    out = [sampling.pick(logits, job.sampling, noise[0])]
    stats.token_logprobs = [sampling.logprob(logits, out[0])] if job.logprobs else []
    known = _continuation_after(job)
    # the sources beside the request's drafter (drafters/table.py): after an edit, the last
    # suggestion looked up; and the text after the cursor
    last = job.continuation[-(job.max_tokens + LAST_TAIL) :] if not known else ()
    kit = table.Kit(last_suggestion=last, suffix=job.suffix)
    drafter = beside(drafter, table.beside_sources(kit))
    shadows: Shadows = []
    context = _Context(job.prompt, job.max_tokens + policy.draft_max + 2)
    last_start, model_seconds = 0.0, 0.0
    checked = 0  # tokens of `out` already looked at for a stop token
    while not _finished(out, job, stats, checked):
        checked = len(out)
        now = time.perf_counter()
        if last_start:  # the loop's own cost last round: everything but drafting and the model
            policy.observe_overhead(now - last_start - model_seconds)
        last_start, model_seconds = now, 0.0
        cancel.raise_if_cancelled()
        shadows = score_shadows(shadows, out, policy)
        room = job.max_tokens - len(out)
        draft = _from_continuation(known, out, policy, room)
        stats.continuation_drafted += len(draft.tokens)
        symbol = 0
        if not draft.tokens and job.guide is not None:  # the rest of the only name left
            draft = Draft(
                guided.certain(job.guide, out, min(policy.certain_k(), room)), source=SYMBOL
            )
            symbol = len(draft.tokens)
            stats.symbol_drafted += symbol
        from_continuation = bool(draft.tokens)  # (a certain draft, free: not the drafter's)
        if not from_continuation and drafter is not None:
            t = time.perf_counter()
            array = context.up_to(out)
            draft = draft_round(drafter, policy, job, out, rng, room, shadows, cancel, array)
            drafting = time.perf_counter() - t
            model_seconds += drafting
            stats.draft_seconds += drafting
            calibrates = draft.tokens or draft.short  # (a declined call cost time too)
            if calibrates and not drafter.sizes_itself:  # (auto: its own)
                caught = catch_up_of(drafter)  # new context after a keystroke: not a draft cost
                policy.observe_draft(len(draft.tokens), drafting - (caught[1] if caught else 0.0))
        t = time.perf_counter()
        rows = target.evaluate([out[-1], *draft.tokens], logits_from=0, view=True)
        model_seconds += time.perf_counter() - t
        policy.observe_verify(len(draft.tokens) + 1, time.perf_counter() - t)
        rows = guided.rows(job.guide, rows, out, draft.tokens)
        n_accepted, next_token = verify(rows, draft, job.sampling, rng, noise.after(len(out)))
        target.truncate(len(job.prompt) + len(out) + n_accepted)  # drop the rejected draft rows
        out += [*draft.tokens[:n_accepted], next_token]
        if job.logprobs:  # (row i chose the i-th token committed this round)
            committed = out[len(out) - n_accepted - 1 :]
            stats.token_logprobs += [sampling.logprob(rows[i], t) for i, t in enumerate(committed)]
        if not from_continuation:  # the drafter's acceptance, not the cache's
            declined = draft.short and n_accepted == len(draft.tokens)  # (see Draft.short)
            policy.observe(len(draft.tokens) + declined, n_accepted, draft.strength)
        stats.rounds += 1
        stats.target_passes += 1
        stats.drafted += len(draft.tokens)
        stats.accepted += n_accepted
        stats.symbol_accepted += n_accepted if symbol else 0
        stats.k_trace.append(len(draft.tokens))
        stats.accepted_trace.append(n_accepted)
        if job.on_round is not None:
            job.on_round(out)
        source = (
            (draft.source or CONTINUATION) if from_continuation else draft.source or _name(drafter)
        )
        if draft.tokens:
            stats.count_draft(source, len(draft.tokens), n_accepted)
        seconds = time.perf_counter() - now  # the round as it ran: what drafting must beat
        policy.observe_round(
            source,
            draft.strength,
            len(draft.tokens),
            n_accepted + 1,
            seconds,
            free=table.loop_drafted(source),
        )
    stats.decode_seconds = time.perf_counter() - started
    stats.acceptance_estimate = policy.acceptance_estimate()
    return out[: stats.tokens]


def draft_round(
    drafter: Drafter,
    policy: DraftPolicy,
    job: DecodeJob,
    out: list[int],
    rng: np.random.Generator,
    room: int,
    shadows: Shadows,
    cancel: CancelToken,
    array: np.ndarray | None = None,
) -> Draft:
    """This round's draft. A free lookup proposes first (as far as the policy would ever draft)
    and the policy sizes it from the proposal's match strength; a proposal not verified is kept
    as a shadow and scored later. A costly drafter drafts only the k the policy chose.
    `array`: the same context as int64, which free lookups read."""
    context = list(job.prompt) + out
    if drafter.free or drafter.sizes_itself:
        limit = min(policy.draft_max, room)
        if limit <= 0:
            return Draft([])
        proposal = drafter.draft(
            DraftRequest(
                context, limit, job.sampling, rng, check=cancel.raise_if_cancelled, array=array
            )
        )
        if drafter.sizes_itself:
            return proposal
        if not proposal.tokens:  # (nothing to size: the policy is not asked)
            return proposal
        source = proposal.source or drafter.name
        k = min(policy.choose_k(proposal.strength, source=source), len(proposal.tokens), room)
        if k == 0:
            if proposal.tokens:
                shadows.append((len(out), proposal.tokens[:SHADOW_TOKENS], proposal.strength))
            return Draft([])
        probs = proposal.probs[:k] if proposal.probs is not None else None
        return Draft(proposal.tokens[:k], probs, proposal.strength, source=proposal.source)
    counted = (lambda: drafter.catch_up(context)) if drafter.counts_catch_up else None
    k = min(policy.choose_k(catch_up=counted, source=drafter.name), room)
    shadow = k == 0
    if shadow and policy.shadow_k() <= 0:
        return Draft([])
    request = DraftRequest(
        context,
        k or policy.shadow_k(),
        job.sampling,
        rng,
        policy.min_confidence(),
        shadow=shadow,
        check=cancel.raise_if_cancelled,
    )
    draft = drafter.draft(request)
    if shadow:
        if draft.tokens:
            shadows.append((len(out), draft.tokens, draft.strength))
        return Draft([])
    return replace(draft, short=True) if len(draft.tokens) < k else draft


class _Context:
    """The prompt and the tokens committed so far as one int64 array, appended to in place:
    free lookups read it every round without converting the context."""

    def __init__(self, prompt: Sequence[int], room: int) -> None:
        self.start = len(prompt)
        self.buffer = np.empty(self.start + room, dtype=np.int64)
        self.buffer[: self.start] = prompt
        self.filled = self.start

    def up_to(self, out: list[int]) -> np.ndarray:
        """A view of the prompt + `out` (the tokens of `out` not written yet are appended)."""
        end = self.start + len(out)
        if end > len(self.buffer):
            self.buffer = np.concatenate([self.buffer, np.empty(end, dtype=np.int64)])
        self.buffer[self.filled : end] = out[self.filled - self.start :]
        self.filled = end
        return self.buffer[:end]


def _continuation_after(job: DecodeJob) -> list[int]:
    """The last generation's tokens past this prompt, if this prompt is a prefix of it."""
    n = len(job.prompt)
    if len(job.continuation) > n and list(job.continuation[:n]) == list(job.prompt):
        return list(job.continuation[n:])
    return []


def _from_continuation(known: list[int], out: list[int], policy: DraftPolicy, room: int) -> Draft:
    """While the committed tokens follow the last generation, propose its next tokens (as many
    as the policy's `certain_k`, asked only then)."""
    n = len(out)
    if len(known) <= n or known[:n] != out:
        return Draft([])
    return Draft(known[n : n + min(policy.certain_k(), room)])


def _name(drafter: Drafter | None) -> str:
    return drafter.name if drafter is not None else ""


def score_shadows(shadows: Shadows, out: list[int], policy: DraftPolicy) -> Shadows:
    """Score each shadow proposal once the target has produced as many tokens as it has (or
    once it has produced a token that differs)."""
    pending: Shadows = []
    for start, proposal, strength in shadows:
        produced = out[start : start + len(proposal)]
        matched = next(
            (i for i, (a, b) in enumerate(zip(proposal, produced)) if a != b), len(produced)
        )
        if matched == len(produced) < len(proposal):
            pending.append((start, proposal, strength))
            continue
        policy.observe(len(proposal), matched, strength)
    return pending


def _finished(out: list[int], job: DecodeJob, stats: DecodeStats, checked: int = 0) -> bool:
    """Cut `out` at a stop token or max_tokens; record why and how many tokens count
    (`checked`: the tokens at its start looked at before, none a stop token)."""
    for i in range(checked, len(out)):
        if out[i] in job.stop_ids:
            stats.tokens, stats.stop_reason = i, "eos"
            return True
    stats.tokens = min(len(out), job.max_tokens)
    if len(out) >= job.max_tokens:
        stats.stop_reason = "max_tokens"
        return True
    if job.should_stop(out):
        stats.stop_reason = "stop_string"
        return True
    return False
