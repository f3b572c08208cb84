"""The decode loop's own cost per token: spec-lsp (nothing drafted, and n-gram drafts) against
plain llama-cpp-python, the time each spends outside llama.cpp's forward pass.

At places in standard-library modules (policy_replay's rule, code no one here wrote), the same
prompt goes through `Engine.complete` (the whole request path: the loop, the stop rule, the
in-flight text, the policy and ledger) with drafter `none` and with `ngram`, and through plain
llama-cpp-python's `create_completion` (streamed, greedy, as many tokens as spec-lsp generated
there), back to back, the order rotating. `llama_decode` is timed around every call
(baseline.decode_clock): the time between a run's consecutive passes, per token, is what the
loop adds; its thread's CPU time there is steady where wall time swings with other load. Pairs of decode rates (spec-lsp
over plain in the same place) say whether the difference shows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from bench.baseline import decode_clock, plain_llama
from bench.common import geomean
from bench.policy_replay import places, stdlib_sources
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, Engine, build_engine

PLAIN = "llama-cpp-python"
MIN_TOKENS = 8


Calls = list[tuple[float, float, float, float]]


@dataclass
class Side:
    """One side's runs: tokens and decode seconds (its rates), and the time between its
    consecutive model passes (wall and its thread's CPU), per token."""

    tokens: int = 0
    rates: list[float] = field(default_factory=list)
    gap_tokens: float = 0.0
    gap_wall: float = 0.0
    gap_cpu: float = 0.0

    def add(self, tokens: int, seconds: float, passes: Calls) -> None:
        """A run of `tokens` in `seconds`, its loop's model passes `passes` (in order): the gaps
        between them are the loop's own time, `tokens` / len(passes) tokens per pass."""
        self.tokens += tokens
        self.rates.append(tokens / max(seconds, 1e-9))
        gaps = len(passes) - 1
        if gaps > 0:
            self.gap_tokens += tokens * gaps / len(passes)
            self.gap_wall += sum(b[0] - a[1] for a, b in zip(passes, passes[1:]))
            self.gap_cpu += sum(b[2] - a[3] for a, b in zip(passes, passes[1:]))

    def merge(self, other: Side) -> None:
        self.tokens += other.tokens
        self.rates += other.rates
        self.gap_tokens += other.gap_tokens
        self.gap_wall += other.gap_wall
        self.gap_cpu += other.gap_cpu

    def per_token(self) -> tuple[float, float]:
        """(wall, CPU) microseconds between model passes per token."""
        n = max(self.gap_tokens, 1e-9)
        return 1e6 * self.gap_wall / n, 1e6 * self.gap_cpu / n


def ours(engine: Engine, request: CompletionRequest, drafter: str, side: Side) -> int:
    """One completion through the engine; the loop's rounds are the last llama_decode calls."""
    engine.update_settings(engine.settings.model_copy(update={"drafter": drafter}))
    with decode_clock() as calls:
        stats = engine.complete(request, CancelToken()).stats
    side.add(stats.tokens, stats.decode_seconds, calls[len(calls) - stats.rounds :])
    return stats.tokens


def plain(llm: Any, prompt: list[int], tokens: int, side: Side) -> None:
    """Plain llama-cpp-python's decode of `tokens` tokens: from the first streamed token to the
    last, and the llama_decode calls between them (one per token)."""
    import time

    first = last = 0.0
    n = 0
    with decode_clock() as calls:
        for chunk in llm.create_completion(
            list(prompt), max_tokens=tokens, temperature=0.0, repeat_penalty=1.0, stream=True
        ):
            choice = chunk["choices"][0]
            if choice.get("finish_reason") is not None and not choice["text"]:
                continue
            last = time.perf_counter()
            first = first or last
            n += 1
    if n > 1:
        side.add(n - 1, last - first, [c for c in calls if first < c[0] < last])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--per-file", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="both sides (fixed: a fair pair)")
    args = parser.parse_args()
    settings = Settings(
        model=args.model,
        drafter="ngram",
        threads=args.threads,
        max_tokens=args.tokens,
        multiline="always",
        precompute=False,
        cache=False,
    )
    engine = build_engine(settings)
    engine.load()
    engine.ensure_profile()
    llm = plain_llama(
        engine.parts.models.target.info.path, n_ctx=4096, threads=args.threads, prompt_lookup=False
    )
    rng = random.Random(args.seed)
    sides = {"none": Side(), "ngram": Side(), PLAIN: Side()}
    pairs: list[float] = []
    turn = 0
    for path in rng.sample(stdlib_sources(), args.files):
        for prefix, suffix, line in places(path, args.per_file, rng):
            request = CompletionRequest(
                prefix, suffix, document_id=str(path), language="python", max_tokens=args.tokens
            )
            prompt = engine.parts.prompt_tokens(request)
            tokens = ours(engine, request, "none", Side())  # warm: the prompt in both caches
            if tokens < MIN_TOKENS:  # (a line ended at once: no decoding to speak of)
                continue
            plain(llm, prompt, tokens, Side())
            names = list(sides)
            turn += 1
            done = {name: Side() for name in names}
            for name in names[turn % 3 :] + names[: turn % 3]:
                if name == PLAIN:
                    plain(llm, prompt, tokens, done[name])
                else:
                    ours(engine, replace(request), name, done[name])
            for name, side in done.items():
                sides[name].merge(side)
            pairs.append(done["none"].rates[-1] / max(done[PLAIN].rates[-1], 1e-9))
            print(
                f"  {path.name}:{line} {tokens} tokens; outside llama_decode "
                + " ".join(f"{n} {s.per_token()[1]:.0f}us" for n, s in done.items())
                + f"; none/plain {pairs[-1]:.3f}x",
                file=sys.stderr,
                flush=True,
            )
    engine.close()
    llm.close()
    print(
        f"\nThe loop's own cost per token ({args.model}, {args.threads} threads both sides, "
        f"{len(pairs)} places, {args.tokens} tokens at most):\n"
    )
    print("| run | tokens | decode tok/s (median) | wall us/token | its thread's CPU us/token |")
    print("|---|---|---|---|---|")
    for name, side in sides.items():
        wall, cpu = side.per_token()
        print(
            f"| {name} | {side.tokens} | {statistics.median(side.rates):.1f} | {wall:.0f} | "
            f"{cpu:.0f} |"
        )
    print(
        f"\nspec-lsp with nothing drafted over plain llama-cpp-python, pairs back to back: "
        f"median {statistics.median(pairs):.3f}x, geomean {geomean(pairs):.3f}x, "
        f"{min(pairs):.2f}x-{max(pairs):.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
