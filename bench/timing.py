"""Making timed runs: one generation timed (`policy_run`) after a warm-up, and units of runs made
again while the hypervisor takes this VM's CPU (`steady`), the benchmarks' guard against noise
from other tenants.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bench.common import Run, digest, log
from spec_lsp.engine import CancelToken, DecodeStats, SamplingParams
from spec_lsp.engine.toolkit import (
    DecodeJob,
    Drafter,
    DraftPolicy,
    FixedPolicy,
    ModelBackend,
    generate,
)

# a unit (a pair, or one run) in which the hypervisor took more than STEAL_MAX of this VM's CPU
# time during a run measured the neighbours, not the policy: it runs again, up to RERUNS times
STEAL_MAX = 0.04
RERUNS = 2


def cpu_ticks() -> tuple[int, int] | None:
    """(stolen, total) CPU ticks of this machine so far (Linux /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) == 8 else 0, sum(fields))


def stolen(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float:
    """Share of the CPU time between two `cpu_ticks()` readings that the hypervisor took."""
    if before is None or after is None or after[1] <= before[1]:
        return 0.0
    return (after[0] - before[0]) / (after[1] - before[1])


def wait_for_quiet(
    limit: float = 60.0,
    window: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    ticks: Callable[[], tuple[int, int] | None] = cpu_ticks,
) -> float:
    """Wait (at most `limit` s) until the hypervisor takes under half of STEAL_MAX over
    `window` s: a stretch of steal lasts a minute or two, and a unit run again at once would
    run in it again. Returns the seconds waited."""
    waited = 0.0
    while waited < limit:
        before = ticks()
        sleep(window)
        waited += window
        if stolen(before, ticks()) < STEAL_MAX / 2:
            break
    return waited


def run_unit(one: Callable[[str, str], Run], unit: list[tuple[str, str]]) -> list[Run]:
    """The runs of one unit, (policy, baseline) each, by `one(policy, baseline)`."""
    return [one(name, baseline) for name, baseline in unit]


def run_rep(
    one: Callable[[str, str], Run], units: list[list[tuple[str, str]]], where: str
) -> list[Run]:
    """A rep's units (`schedule`), each run again while the hypervisor takes the CPU
    (`steady`), logged in one line."""
    made = [r for unit in units for r in steady(functools.partial(run_unit, one, unit), where)]
    log(f"{where}: " + " ".join(f"{r.policy}={r.rate:.1f}" for r in made))
    return made


def steady(
    unit: Callable[[], list[Run]],
    label: str = "",
    wait: Callable[[], object] = wait_for_quiet,
) -> list[Run]:
    """Run `unit` (its runs return with their `steal`), again while the hypervisor took more
    than STEAL_MAX during one of them (at most RERUNS times; the last attempt is kept)."""
    for attempt in range(RERUNS + 1):
        runs = unit()
        worst = max((r.steal for r in runs), default=0.0)
        if worst <= STEAL_MAX:
            break
        if attempt < RERUNS:
            log(f"{label} {'+'.join(r.policy for r in runs)}: {worst:.0%} stolen, again")
            wait()
    for r in runs:
        r.reruns = attempt
    return runs


def rerun_note(runs: list[Run]) -> str:
    """How many runs were made again because the hypervisor took CPU time during them."""
    again = [r for r in runs if r.reruns]
    worst = max((r.steal for r in runs), default=0.0)
    return (
        f"\nRe-run: {len(again)} of {len(runs)} runs were kept from a second or third attempt "
        f"of their unit (the hypervisor took more than {STEAL_MAX:.0%} of this VM's CPU time "
        f"during a run of the earlier attempt; /proc/stat's steal). Most stolen in a kept run: "
        f"{worst:.1%}.\n"
    )


# a run's name -> its drafter (None: no speculation) and policy
Pick = Callable[[str], tuple[Drafter | None, DraftPolicy]]


def policy_run(
    target: ModelBackend,
    pick: Pick,
    job: DecodeJob,
    where: Run,
    name: str,
    baseline: str,
    outputs: dict[str, list[int]] | None = None,
) -> Run:
    """One generation of `job` under run `name` (`pick` gives its drafter and policy), as a
    Run like `where` (drafter, workload, temperature, prompt, rep) with its time and the CPU
    stolen meanwhile; its tokens go to `outputs[name]` when given."""
    drafter, policy = pick(name)
    stats = DecodeStats()
    before = cpu_ticks()
    out = generate(
        target,
        drafter,
        policy,
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(job.sampling.seed),
        stats=stats,
    )
    if outputs is not None:
        outputs[name] = out
    return replace(
        where,
        policy=name,
        tokens=stats.tokens,
        seconds=stats.decode_seconds,
        drafted=stats.drafted,
        accepted=stats.accepted,
        k_trace=stats.k_trace,
        text=digest(out),
        baseline=baseline,
        steal=stolen(before, cpu_ticks()),
    )


def warm_up(target: ModelBackend, prompt: list[int]) -> None:
    """Evaluate the prompt and a few plain rounds first (not measured): the first passes after
    a new prompt are slower (allocations, caches) and would penalise whichever policy runs first."""
    greedy(target, prompt, 8)


def greedy(
    target: ModelBackend,
    prompt: list[int],
    n: int,
    stop_ids: frozenset[int] = frozenset(),
    should_stop: Callable[[list[int]], bool] | None = None,
) -> list[int]:
    """The target's greedy continuation of `prompt`, through the engine's loop without a
    drafter (the KV the target holds is reused as a prefix)."""
    job = DecodeJob(prompt, n, SamplingParams(), stop_ids)
    if should_stop is not None:
        job = replace(job, should_stop=should_stop)
    return generate(
        target,
        None,
        FixedPolicy(0),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=DecodeStats(),
    )


def smol_path() -> str:
    """The pulled SmolLM2-135M: the policies bench's self-drafting pair, the sources bench's
    default draft model."""
    from spec_lsp import models

    path = models.installed_path("smollm2-135m")
    if path is None:
        raise SystemExit("spec-lsp bench needs SmolLM2: run `spec-lsp models pull`")
    return str(path)
