"""Measure this machine's costs: target passes of n tokens, and a drafter's cost per token and
per call (`spec-lsp profile`; once per model file, threads and backend, then cached)."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence

from spec_lsp.engine.backends.base import ModelBackend, sync
from spec_lsp.engine.backends.threads import OthersLoad
from spec_lsp.engine.drafters.base import Drafter, DraftRequest
from spec_lsp.engine.policy.profile import BATCH_SIZES, CostProfile
from spec_lsp.engine.types import Cancelled, CancelToken, SamplingParams

log = logging.getLogger(__name__)

# the context the target is measured after (a realistic KV length, code that repeats)
PROFILE_TEXT = (
    "import json\nfrom pathlib import Path\n\n\ndef load_settings(path: Path) -> dict:\n"
    "    with path.open() as handle:\n        data = json.load(handle)\n"
    "    return {key.lower(): value for key, value in data.items()}\n\n\n"
) * 8


def measure(
    target: ModelBackend,
    drafter: Drafter | None,
    *,
    context: Sequence[int],
    key: str = "",
    sizes: Sequence[int] = BATCH_SIZES,
    repeats: int = 3,
    budget_seconds: float = 30.0,
    samples: dict[int, list[float]] | None = None,
    abort: CancelToken | None = None,
    clock: Callable[[], float] = time.perf_counter,
    load: Callable[[], OthersLoad] = OthersLoad,
) -> CostProfile | None:
    """Time target passes of n tokens after `context` (a realistic KV length), and the drafter.

    The sizes are timed in turn, one pass of each per sweep (the first sweep warms each shape),
    so that a burst of other load slows every size alike and the ratios the policy reads stay
    right; measured size after size, a burst that lasted through the larger sizes once made
    c(4) 8.77x c(1). Each size keeps its fastest warm pass. Once `budget_seconds` is spent
    (slow models on slow CPUs) no size is begun, and those begun finish their second pass. The
    profile records the cores other programs kept busy meanwhile (`CostProfile.load`). The
    target's cache is restored to `context` afterwards. A cancel of `abort` stops it within
    the pass being computed (the server measures in idle time, and a request stops it): then
    None, and `samples` (if given) keeps the passes timed so far for the next call to go on
    from.
    """
    samples = samples if samples is not None else {}
    others = load()
    try:
        sync(target, context, abort=abort)
        filler = list(context[-64:]) * 2
        started = clock()
        while True:
            over = clock() - started > budget_seconds and len(samples) >= 4
            due = [
                n
                for n in sizes
                if len(samples.get(n, [])) < (repeats + 1 if n <= 8 else 2)
                and not (over and n not in samples)
            ]
            if not due:
                break
            for n in due:
                if abort is not None and abort.cancelled:
                    return None
                t = clock()
                target.evaluate(filler[:n], logits_from=0, abort=abort)
                samples.setdefault(n, []).append(clock() - t)
                target.truncate(len(context))
    except Cancelled:  # (the cache holds what it holds: the next sync reads it)
        return None
    verify = {
        n: min(times[1:]) for n, times in samples.items() if len(times) > 1
    }  # warm, least disturbed
    per_token, fixed, catch_up = measure_drafter(drafter, context) if drafter else (0, 0, None)
    profile = CostProfile(
        verify,
        per_token,
        fixed,
        key=key,
        catch_up_seconds_per_token=catch_up,
        load=others.cores(),
    )
    log.info(
        "cost profile %s: verify(n)/verify(1) = %s, draft %.4fs/token + %.4fs, catch-up %s, "
        "other programs %s cores",
        key,
        profile.relative(),
        per_token,
        fixed,
        f"{catch_up:.4f}s/token" if catch_up is not None else "-",
        f"{profile.load:.1f}" if profile.load is not None else "?",
    )
    return profile


def measure_drafter(drafter: Drafter, context: Sequence[int]) -> tuple[float, float, float | None]:
    """Per-token and fixed cost of a draft call, from calls of 1 and 4 tokens; and, for a draft
    model that reports its catch-up (`last_catch_up`), its seconds per token of catching up on
    half of `context` it has not seen (None otherwise)."""
    import numpy as np

    rng = np.random.default_rng(0)

    def timed(k: int, tokens: Sequence[int] = context) -> float:
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            drafter.draft(DraftRequest(list(tokens), k, SamplingParams(), rng))
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    timed(1)  # warm the draft's cache on the context
    one, four = timed(1), timed(4)
    per_token = max((four - one) / 3, 0.0)
    catch_up = None
    if drafter.counts_catch_up and len(context) >= 64:
        drafter.draft(DraftRequest(list(context[: len(context) // 2]), 1, SamplingParams(), rng))
        drafter.draft(DraftRequest(list(context), 1, SamplingParams(), rng))
        tokens, seconds = drafter.last_catch_up
        catch_up = seconds / tokens if tokens >= 16 else None
    return per_token, max(one - per_token, 0.0), catch_up
