"""Measure this machine's costs: target passes of n tokens, and a drafter's cost per token and
per call (`spec-lsp profile`; once per model file, threads and backend, then cached)."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence

from spec_lsp.engine.backends.base import ModelBackend, sync
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
) -> CostProfile | None:
    """Time target passes of n tokens after `context` (a realistic KV length), and the drafter.

    Stops adding larger batch sizes once `budget_seconds` is spent (slow models on slow CPUs).
    The target's cache is restored to `context` afterwards. A cancel of `abort` stops it within
    the pass being computed (the server measures in idle time, and a request stops it): then
    None, and `samples` (if given) keeps the passes timed so far for the next call to go on
    from.
    """
    samples = samples if samples is not None else {}
    try:
        sync(target, context, abort=abort)
        filler = list(context[-64:]) * 2
        started = time.perf_counter()
        for n in sizes:
            # back to back: llama.cpp reuses its compute graph while the batch shape repeats,
            # as it mostly does between decode rounds; the first call of a new shape pays a
            # rebuild
            times = samples.setdefault(n, [])
            for _ in range(len(times), repeats + 1 if n <= 8 else 2):
                if abort is not None and abort.cancelled:
                    return None
                t = time.perf_counter()
                target.evaluate(filler[:n], logits_from=0, abort=abort)
                times.append(time.perf_counter() - t)
                target.truncate(len(context))
            if time.perf_counter() - started > budget_seconds and len(samples) >= 4:
                break
    except Cancelled:  # (the cache holds what it holds: the next sync reads it)
        return None
    verify = {
        n: min(times[1:]) for n, times in samples.items() if len(times) > 1
    }  # warm, least disturbed
    per_token, fixed, catch_up = measure_drafter(drafter, context) if drafter else (0, 0, None)
    profile = CostProfile(verify, per_token, fixed, key=key, catch_up_seconds_per_token=catch_up)
    log.info(
        "cost profile %s: verify(n)/verify(1) = %s, draft %.4fs/token + %.4fs, catch-up %s",
        key,
        profile.relative(),
        per_token,
        fixed,
        f"{catch_up:.4f}s/token" if catch_up is not None else "-",
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
