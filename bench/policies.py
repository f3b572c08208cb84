"""`spec-lsp bench --part policies`: speculation policies and drafters against no speculation and
plain llama-cpp-python, on three workload classes and three temperatures. Interleaved runs;
ratios.

Writes `<out>/bench.json.gz` (raw runs), `<out>/speedup-<drafter>.png` and `<out>/k_trace.png`,
and returns the tables (`bench.command` prints them and writes `<out>/bench.md`).
Longer than 300 lines: the runs, the table and the plots of one benchmark, read together.
"""

from __future__ import annotations

import functools
import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench import baseline
from bench.common import (
    AGAIN,
    MIN_PAIRS,
    PAIRED,
    PRECISION,
    SAME_TEXT_NOTE,
    TEMPERATURES,
    WORKLOADS,
    Run,
    geomean,
    log,
    ratio,
    rep_names,
    rep_seed,
    same_text,
    schedule,
    total_rate,
    write_results,
)
from bench.timing import policy_run, rerun_note, run_rep, smol_path, warm_up
from spec_lsp.config import Settings
from spec_lsp.engine import CompletionRequest, Engine, SamplingParams, build_engine
from spec_lsp.engine.toolkit import (
    AcceptanceEstimate,
    AdaptivePolicy,
    DecodeJob,
    Drafter,
    DraftPolicy,
    FixedPolicy,
    ModelDrafter,
    NgramDrafter,
    prior_acceptance,
)

RESULTS = "bench.json.gz"  # the raw runs, in --out
FIXED_KS = (2, 4, 8, 16)
SMOL_LENGTH = 5  # SmolLM2 drafting for itself: generations this many times Qwen's
TOTALS = "adaptive (totals)"


def run(
    settings: Settings, quick: bool, out: Path, max_tokens: int, reps: int, max_reps: int
) -> str:
    """Every policy with the n-gram drafter and with SmolLM2 drafting for itself, and plain
    llama-cpp-python: the raw runs and the plots go to `out`; returns the tables."""
    prompts = {w: p[:1] if quick else p for w, p in WORKLOADS.items()}
    runs: list[Run] = []
    pairs = [("ngram", settings.model_copy(update={"drafter": "ngram"}))]
    pairs.append(
        (
            "smollm2-self",
            settings.model_copy(
                update={"drafter": "model", "model": smol_path(), "draft_model": smol_path()}
            ),
        )
    )
    for label, pair_settings in pairs:
        # SmolLM2 runs ~8x faster than Qwen: longer generations keep its cells above timing
        # noise (at 3x, runs of 1.8 s, its pairs swung by 7%)
        tokens = max_tokens * (SMOL_LENGTH if label == "smollm2-self" else 1)
        engine = build_engine(pair_settings)
        engine.load()
        profile = engine.ensure_profile()
        log(
            f"[{label}] verify cost n/1: {profile.relative()}  draft {profile.draft_seconds_per_token * 1000:.1f} ms/token"
        )
        runs += _bench_pair(engine, label, prompts, tokens, reps, max_reps)
        if label == "ngram":
            runs += _bench_llama_cpp_python(engine, prompts, max_tokens)
        engine.close()
    tables = render(runs)
    write_results(out / RESULTS, [r.__dict__ for r in runs])
    _plots(runs, out)
    return tables


def from_saved(data: list[dict[str, Any]], out: Path) -> str:
    """The tables (and the plots, into `out`) again from the raw runs `run` saved."""
    runs = [Run(**r) for r in data]
    tables = render(runs)
    _plots(runs, out)
    return tables


def _policies(
    engine: Engine, estimate: AcceptanceEstimate
) -> Iterator[tuple[str, DraftPolicy | None]]:
    yield AGAIN, None
    for k in FIXED_KS:
        yield f"fixed-{k}", FixedPolicy(k)
    assert engine.parts.cost_profile is not None
    yield (
        "adaptive",
        AdaptivePolicy(
            engine.parts.cost_profile, estimate=estimate, draft_max=engine.settings.draft_max
        ),
    )


def _bench_pair(
    engine: Engine,
    label: str,
    prompts: dict[str, list[tuple[str, str]]],
    max_tokens: int,
    reps: int,
    max_reps: int,
) -> list[Run]:
    loaded = engine.parts.models
    drafter: Drafter = NgramDrafter()
    if label != "ngram":
        assert loaded.draft is not None
        drafter = ModelDrafter(loaded.draft, target=loaded.target)
    runs = []
    for (workload, items), temperature in itertools.product(prompts.items(), TEMPERATURES):
        for index, (prefix, suffix) in enumerate(items):
            request = CompletionRequest(prefix=prefix, suffix=suffix, language="python")
            prompt = engine.parts.prompt_tokens(request)
            # like the engine's per-document memory: the estimate carries over between requests
            estimate = AcceptanceEstimate(prior_acceptance(temperature))
            warm_up(loaded.target, prompt)
            made_here: list[Run] = []
            for rep in itertools.count():
                policies = dict(_policies(engine, estimate))
                names = rep_names(list(policies), rep, reps, max_reps, made_here)
                if names is None:
                    break
                units = schedule(names, PAIRED, rep)

                one = functools.partial(
                    policy_run,
                    loaded.target,
                    functools.partial(pick_policy, drafter, policies),
                    DecodeJob(
                        prompt,
                        max_tokens,
                        SamplingParams(temperature, 40, 0.95, seed=rep_seed(engine.settings, rep)),
                        frozenset(),
                    ),
                    Run(label, workload, temperature, "", index, 0, 0.0, rep=rep),
                )
                where = f"[{label}] {workload} T={temperature} prompt {index} rep {rep}"
                made = run_rep(one, units, where)
                runs += made
                made_here += made
    return runs


def pick_policy(
    drafter: Drafter, policies: dict[str, DraftPolicy | None], name: str
) -> tuple[Drafter | None, DraftPolicy]:
    """The policies bench's drafter and policy for run `name` (no policy: no speculation)."""
    policy = policies.get(name)
    return (drafter, policy) if policy else (None, FixedPolicy(0))


def _bench_llama_cpp_python(
    engine: Engine, prompts: dict[str, list[tuple[str, str]]], max_tokens: int
) -> list[Run]:
    """The same prompts through plain llama-cpp-python: create_completion, and with its
    LlamaPromptLookupDecoding draft (which needs logits_all=True)."""
    runs = []
    loaded = engine.parts.models
    for name, prompt_lookup in (("llama-cpp-python", False), ("llama-cpp-python+PLD", True)):
        llm = baseline.plain_llama(
            loaded.target.info.path,
            n_ctx=engine.settings.context_size,
            threads=engine.settings.threads,
            prompt_lookup=prompt_lookup,
        )
        for (workload, items), temperature in itertools.product(prompts.items(), TEMPERATURES):
            for index, (prefix, suffix) in enumerate(items):
                prompt = engine.parts.prompt_tokens(CompletionRequest(prefix=prefix, suffix=suffix))
                tokens, seconds = baseline.timed_completion(
                    llm, prompt, max_tokens=max_tokens, temperature=temperature
                )
                runs.append(Run("ngram", workload, temperature, name, index, tokens, seconds))
        log(f"[{name}] done")
        llm.close()
    return runs


PAIRED_NOTE = (
    "\nRatios: A/A and adaptive are each run right after a run of no speculation on the same "
    "prompt and seed; their ratio is, per prompt, the median over these pairs (a burst of "
    "other load on this VM slows a run or two: it moves one pair, not the median), then the "
    "geometric mean over the cell's prompts; `adaptive (totals)` is the ratio of the pairs' "
    "total rates. Every policy runs in the first reps; then A/A and adaptive run again, per "
    "prompt, until the standard error of each one's log ratio over its pairs is under "
    f"{PRECISION:.0%}, with at least {MIN_PAIRS} pairs and at most --max-reps (the `pairs` "
    "column: runs over the cell's prompts; the rule looks at the spread, not at the ratio). "
    "Fixed k: the same median and mean of its rate over that of its rep's "
    "no-speculation runs (a rep's runs lie within a minute). llama-cpp-python (run once per "
    "prompt, after the reps): total rate over that of all the cell's no-speculation runs. "
    "Adaptive / best fixed: adaptive's ratio over the best fixed k's; in parentheses, "
    "adaptive's total rate over the best fixed k's, on the same prompts and seeds.\n"
)


def render(runs: list[Run]) -> str:
    """One table per drafter: tokens/s ratio to no speculation per cell (workload x temperature),
    then the geometric mean of each policy's ratios over the whole table."""
    cells: dict[tuple[str, str, float], dict[str, list[Run]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in runs:
        cells[(r.drafter, r.workload, r.temperature)][r.policy].append(r)
    lines = []
    for drafter in sorted({r.drafter for r in runs}):
        policies = ["none", AGAIN, *(f"fixed-{k}" for k in FIXED_KS), "adaptive"]
        extra = [
            p
            for p in ("llama-cpp-python", "llama-cpp-python+PLD")
            if any(r.policy == p and r.drafter == drafter for r in runs)
        ]
        shown = [*policies[1:], TOTALS, *extra]
        lines += [
            f"\n### drafter: {drafter} ({max(r.tokens for r in runs if r.drafter == drafter)}-token generations)\n",
            "| workload | T | none tok/s | "
            + " | ".join(shown)
            + " | adaptive accept | adaptive mean k | adaptive rounds to k=0 "
            "| adaptive / best fixed (totals) | same text as none | pairs (A/A, adaptive) |",
            "|---" * (len(shown) + 9) + "|",
        ]
        whole: dict[str, list[float]] = defaultdict(list)
        for (d, workload, temperature), by_policy in sorted(cells.items()):
            if d != drafter:
                continue
            base = total_rate(by_policy["none"])
            ratios = {p: ratio(by_policy, p) for p in shown if p != TOTALS}
            ratios[TOTALS] = ratio(by_policy, "adaptive", totals=True)
            for p, value in ratios.items():
                whole[p].append(value)
            adaptive = by_policy["adaptive"]
            accept = sum(r.accepted for r in adaptive) / max(sum(r.drafted for r in adaptive), 1)
            mean_k = (
                statistics.mean(k for r in adaptive for k in (r.k_trace or [0]))
                if adaptive
                else 0.0
            )
            # against the best fixed k: ratio over ratio, and directly over total rates
            best_fixed = max(ratios[f"fixed-{k}"] for k in FIXED_KS)
            best_total = max(total_rate(by_policy[f"fixed-{k}"]) for k in FIXED_KS)
            # over totals on the same prompts and seeds: the reps in which the fixed k ran
            fixed_reps = {(r.prompt, r.rep) for r in by_policy[f"fixed-{FIXED_KS[0]}"]}
            alongside = [r for r in adaptive if (r.prompt, r.rep) in fixed_reps]
            versus = (
                f"{ratios['adaptive'] / best_fixed:.2f} ({total_rate(alongside) / best_total:.2f})"
                if best_fixed and best_total
                else "-"
            )
            lines.append(
                f"| {workload} | {temperature} | {base:.2f} | "
                + " | ".join(f"{ratios[p]:.2f}x" for p in shown)
                + f" | {accept:.0%} | {mean_k:.1f} | {_settles(adaptive)} "
                f"| {versus} "
                f"| {same_text(by_policy, policies[1:])} "
                f"| {len(by_policy[AGAIN])}, {len(adaptive)} |"
            )
        lines.append(
            "| **whole table** (geometric mean) | | | "
            + " | ".join(f"**{geomean(whole[p]):.2f}x**" for p in shown)
            + " | | | | | | |"
        )
        lines.append(PAIRED_NOTE)
        lines.append(rerun_note([r for r in runs if r.drafter == drafter]))
        lines.append(SAME_TEXT_NOTE)
    return "\n".join(lines) + "\n"


def _settles(runs: list[Run]) -> str:
    """The round after which k stays 0 to the end of its generation, worst over the cell's
    adaptive runs ('-' when some run still drafts in its last round)."""
    worst = 0
    for r in runs:
        trace = r.k_trace or []
        if trace and trace[-1]:
            return "-"
        worst = max(worst, max((i + 1 for i, k in enumerate(trace) if k), default=0))
    return str(worst)


def _plots(runs: list[Run], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed: no plots")
        return
    for drafter in sorted({r.drafter for r in runs}):
        cells = sorted({(r.workload, r.temperature) for r in runs if r.drafter == drafter})
        policies = [
            p
            for p in [
                "none",
                AGAIN,
                *(f"fixed-{k}" for k in FIXED_KS),
                "adaptive",
                "llama-cpp-python",
                "llama-cpp-python+PLD",
            ]
            if any(r.policy == p and r.drafter == drafter for r in runs)
        ]
        fig, ax = plt.subplots(figsize=(12, 4))
        width = 0.8 / len(policies)
        for i, policy in enumerate(policies):
            ratios = []
            for workload, temperature in cells:
                sel = [
                    r
                    for r in runs
                    if (r.drafter, r.workload, r.temperature) == (drafter, workload, temperature)
                ]
                by_policy: dict[str, list[Run]] = defaultdict(list)
                for r in sel:
                    by_policy[r.policy].append(r)
                ratios.append(ratio(by_policy, policy))
            ax.bar(np.arange(len(cells)) + i * width, ratios, width, label=policy)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(cells)) + 0.4, [f"{w}\nT={t}" for w, t in cells])
        ax.set_ylabel("tokens/s vs no speculation")
        ax.set_title(f"speedup per policy (drafter: {drafter})")
        ax.legend(fontsize=7, ncol=4)
        fig.tight_layout()
        fig.savefig(out / f"speedup-{drafter}.png", dpi=90)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3))
    for drafter in sorted({r.drafter for r in runs}):
        trace = next(
            (
                r.k_trace
                for r in runs
                if r.drafter == drafter
                and r.policy == "adaptive"
                and r.workload == "repeat"
                and r.temperature == 0.0
            ),
            None,
        )
        if trace:
            ax.step(range(len(trace)), trace, where="post", label=drafter)
    ax.set_xlabel("round")
    ax.set_ylabel("draft length k")
    ax.set_title("adaptive k over one generation (repeat workload, T=0)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "k_trace.png", dpi=90)
    plt.close(fig)
