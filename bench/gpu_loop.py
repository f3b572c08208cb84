"""The decode loop on this build (made for a GPU): the cost curve `spec-lsp profile` measures,
then timed decodes against plain llama-cpp-python, pair by pair, in the same process.

`spec-lsp bench gpu-loop --model M.gguf --gpu-layers -1`

What it prints:
- the curve c(k)/c(1) of target passes of k tokens with logits on every row (what a
  verification pass asks for), as the engine's calibration measures it;
- our loop without drafts against plain llama-cpp-python (`create_completion`, streamed): the
  loop's own cost per token, which on a GPU (a pass of about 2 ms) decides what drafts can win;
- our loop under the adaptive policy with drafts of a set acceptance: an oracle proposes the
  target's own greedy continuation and spoils each token with probability 1 - alpha (so the
  figure does not depend on what the weights write); the ratio timed, and the ratio modelled on
  the measured curve from the rounds the policy chose (c(1) x tokens / sum of c(k+1)); each
  run's policy keeps its curve, estimate and ledger from pair to pair, as a server keeps them
  from one completion to the next (what drafting really yields is learned over the run);
- the default free drafter (prompt n-grams) on the same prompt, for what it is worth there.

Weights cannot travel to a lent GPU machine (64 MiB a call): random weights of the real shapes
do (`bench/gpu/` writes them and runs this); timing does not depend on the values. Every timed
run's text is compared with the plain greedy text: speculation must not change it.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import statistics
import textwrap
import time
from dataclasses import dataclass, field

import numpy as np

from bench.baseline import plain_llama, timed_completion
from bench.timing import greedy
from spec_lsp.engine import CancelToken, DecodeStats, SamplingParams
from spec_lsp.engine.toolkit import (
    AcceptanceEstimate,
    AdaptivePolicy,
    CostProfile,
    DecodeJob,
    Draft,
    Drafter,
    DraftPolicy,
    DraftRequest,
    FixedPolicy,
    NgramDrafter,
    RealizedYield,
    calibrate,
    generate,
    llama_model,
    prior_acceptance,
)


class Oracle(Drafter):
    """Proposes the target's greedy continuation `reference` after `prompt`, each token spoiled
    with probability 1 - alpha (decided by its position, so every run sees the same drafts); a
    spoiled token ends the proposal (what follows it would be rejected anyway). Off the
    reference (the text went another way), it proposes nothing."""

    name = "oracle"
    free = True

    def __init__(self, prompt: list[int], reference: list[int], alpha: float) -> None:
        self.prompt, self.reference, self.alpha = prompt, reference, alpha
        self.diverged = 0

    def spoiled(self, position: int) -> bool:
        digest = hashlib.blake2b(f"{self.alpha}:{position}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") / 2**64 >= self.alpha

    def draft(self, request: DraftRequest) -> Draft:
        made = list(request.context[len(self.prompt) :])
        at = len(made)
        if made != self.reference[:at]:
            self.diverged += 1
            return Draft([])
        tokens = []
        for i, token in enumerate(self.reference[at : at + request.max_tokens]):
            if self.spoiled(at + i):
                tokens.append(token ^ 1)  # another token (vocabularies have an even size)
                break
            tokens.append(token)
        return Draft(tokens, strength=8)


@dataclass
class Timed:
    name: str
    ratios: list[float] = field(default_factory=list)  # tokens/s over plain's, pair by pair
    tokens_per_s: list[float] = field(default_factory=list)
    same_text: bool = True
    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    modelled: list[float] = field(default_factory=list)
    ks: list[int] = field(default_factory=list)


@dataclass
class Learned:
    """What a server running one drafter all day keeps from one completion to the next: its
    calibrated curve, the acceptance estimate and the ledger of what drafting really yielded."""

    profile: CostProfile
    estimate: AcceptanceEstimate = field(
        default_factory=lambda: AcceptanceEstimate(prior_acceptance(0.0))
    )
    ledger: RealizedYield = field(default_factory=RealizedYield)


def run_ours(
    target, drafter: Drafter | None, learned: Learned, prompt: list[int], n: int
) -> tuple[list[int], DecodeStats]:
    policy: DraftPolicy
    if drafter is None:
        policy = FixedPolicy(0)
    else:
        policy = AdaptivePolicy(
            learned.profile, estimate=learned.estimate, draft_max=16, ledger=learned.ledger
        )
    stats = DecodeStats()
    out = generate(
        target,
        drafter,
        policy,
        DecodeJob(prompt, n, SamplingParams(), frozenset()),
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return out, stats


def modelled(stats: DecodeStats, profile: CostProfile) -> float:
    """Plain's cost of these tokens over the rounds' cost on the measured curve (no noise)."""
    cost = sum(profile.verify(k + 1) for k in stats.k_trace)
    return profile.verify(1) * stats.tokens / cost if cost else 1.0


def prompt_text() -> str:
    """A real module's code (the standard library's textwrap: a prompt, not a test of recall)."""
    return inspect.getsource(textwrap)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spec-lsp bench gpu-loop", description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--gpu-layers", type=int, default=-1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--alphas", default="0.5,0.7,0.8,0.9")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    n, layers = args.tokens, args.gpu_layers

    target = llama_model(args.model, n_ctx=2048, threads=args.threads, gpu_layers=layers)
    context = target.tokenize(calibrate.PROFILE_TEXT)
    started = time.perf_counter()
    profile = calibrate.measure(target, None, context=context, budget_seconds=60)
    assert profile is not None
    curve = {k: round(v, 3) for k, v in profile.relative().items()}
    print(
        f"cost profile ({time.perf_counter() - started:.1f} s): c(1) = "
        f"{profile.verify(1) * 1000:.2f} ms; c(k)/c(1) = {curve}"
    )

    prompt = target.tokenize(prompt_text())[: args.prompt_tokens]
    reference = greedy(target, prompt, n)
    plain = plain_llama(
        args.model, n_ctx=2048, threads=args.threads, prompt_lookup=False, gpu_layers=layers
    )
    timed_completion(plain, prompt, max_tokens=8, temperature=0.0)  # warm

    runs: dict[str, Timed] = {"no drafts": Timed("no drafts")}
    drafters: dict[str, Drafter | None] = {"no drafts": None}
    for alpha in (float(a) for a in args.alphas.split(",")):
        name = f"oracle a={alpha:.2f}"
        runs[name] = Timed(name)
        drafters[name] = Oracle(prompt, reference, alpha)
    runs["ngram"], drafters["ngram"] = Timed("ngram"), NgramDrafter()
    # each run's policy learns across its pairs, as a server's does across completions
    learned = {name: Learned(CostProfile.from_json(profile.to_json())) for name in runs}

    for pair in range(args.pairs):
        for name, timed in runs.items():
            order = ("plain", "ours") if pair % 2 == 0 else ("ours", "plain")
            rates = {}
            for side in order:
                if side == "plain":
                    got, seconds = timed_completion(plain, prompt, max_tokens=n, temperature=0.0)
                    rates[side] = (got - 1) / seconds if seconds else float("nan")
                else:
                    out, stats = run_ours(target, drafters[name], learned[name], prompt, n)
                    # as plain's: the passes after the first token (that one comes with the prompt)
                    rates[side] = (stats.tokens - 1) / stats.decode_seconds
                    timed.same_text &= out == reference[: len(out)]
                    timed.drafted += stats.drafted
                    timed.accepted += stats.accepted
                    timed.rounds += stats.rounds
                    timed.modelled.append(modelled(stats, profile))
                    timed.ks.extend(stats.k_trace)
            timed.tokens_per_s.append(rates["ours"])
            timed.ratios.append(rates["ours"] / rates["plain"])
        print(f"pair {pair + 1}/{args.pairs} done", flush=True)

    print()
    print(
        "| run | ours tok/s | x plain, median (range) | modelled | accepted/drafted | "
        "k chosen (median) | same text |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    rows = []
    for timed in runs.values():
        med = statistics.median(timed.ratios)
        row = {
            "run": timed.name,
            "tokens_per_s": statistics.median(timed.tokens_per_s),
            "ratio_median": med,
            "ratio_min": min(timed.ratios),
            "ratio_max": max(timed.ratios),
            "modelled": statistics.median(timed.modelled),
            "accepted": timed.accepted,
            "drafted": timed.drafted,
            "k_median": statistics.median(timed.ks) if timed.ks else 0,
            "same_text": timed.same_text,
        }
        rows.append(row)
        print(
            f"| {timed.name} | {row['tokens_per_s']:.1f} | {med:.3f}x "
            f"({row['ratio_min']:.2f}-{row['ratio_max']:.2f}) | {row['modelled']:.2f}x | "
            f"{timed.accepted}/{timed.drafted} | {row['k_median']} | {timed.same_text} |"
        )
    us = 1e6 / statistics.median(runs["no drafts"].tokens_per_s)
    plain_us = us * statistics.median(runs["no drafts"].ratios)
    print(
        f"\nper token: ours {us:.0f} us, plain llama-cpp-python {plain_us:.0f} us "
        f"(ours - plain: {us - plain_us:+.0f} us); one pass of 1 token measured "
        f"{profile.verify(1) * 1e6:.0f} us"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"curve": curve, "c1_seconds": profile.verify(1), "runs": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
