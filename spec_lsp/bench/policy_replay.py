"""Policy replay: the adaptive policy with the n-gram drafter, replayed without timing noise.

Timed runs of a self-calibrating policy differ from run to run by more than most policy changes
do (two runs of the same completions at T = 0 settled at 1.17x and 1.05x). This replays the
policy instead: the target's greedy output (T = 0) at several places down real source files is
collected once; then each completion is replayed round by round, the n-gram lookup proposing,
the policy choosing k, a draft accepted as far as it matches that output, every round costed
with this machine's measured verify curve (`spec-lsp profile`, the n-gram drafter's). The ratio
is modeled: plain decoding's cost over the replay's. The acceptance estimate carries from one
place of a file to the next, as in the server; each file starts fresh, as a file never seen.

    .venv/bin/python -m spec_lsp.bench.policy_replay --collect  # greedy outputs (minutes), then replay
    .venv/bin/python -m spec_lsp.bench.policy_replay            # replay the collected outputs (seconds)

The speed of the real loop is `spec-lsp bench`'s to measure; this is for comparing policies.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

import numpy as np

from spec_lsp.bench.common import ROOT, geomean
from spec_lsp.config import Settings
from spec_lsp.engine import (
    CancelToken,
    CompletionRequest,
    DecodeStats,
    SamplingParams,
    build_engine,
)
from spec_lsp.engine.toolkit import (
    AcceptanceEstimate,
    AdaptivePolicy,
    CostProfile,
    DecodeJob,
    FixedPolicy,
    NgramDrafter,
    Shadows,
    common_prefix_len,
    draft_round,
    generate,
    prior_acceptance,
    score_shadows,
)

DATA = ROOT / "bench" / "out" / "policy_replay.json"
TOKENS = 48


def collect(files: int, places: int, seed: int) -> None:
    """The target's greedy output at `places` places down each of `files` source files of this
    repository (the cursor at the start of a line's code, the rest of the file after it)."""
    settings = Settings()
    engine = build_engine(settings.model_copy(update={"drafter": "ngram"}))
    engine.load()
    loaded = engine.models
    profile = engine.ensure_profile()
    rng = random.Random(seed)
    sources = [
        p
        for p in sorted((ROOT / "spec_lsp").rglob("*.py"))
        if 200 < len(p.read_text().splitlines()) < 700
    ]
    result: dict[str, Any] = {"profile": profile.to_json(), "files": []}
    for path in rng.sample(sources, min(files, len(sources))):
        lines = path.read_text().split("\n")
        completions = []
        for line_no in sorted(rng.sample(range(len(lines) // 5, len(lines) - 5), places)):
            line = lines[line_no]
            indent = len(line) - len(line.lstrip())
            request = CompletionRequest(
                prefix="\n".join(lines[:line_no]) + "\n" + line[:indent],
                suffix=line[indent:] + "\n" + "\n".join(lines[line_no + 1 :]),
                language="python",
            )
            prompt = engine.prompt_tokens(request)
            out = generate(
                loaded.target,
                None,
                FixedPolicy(0),
                DecodeJob(prompt, TOKENS, SamplingParams(0.0), frozenset()),
                cancel=CancelToken(),
                rng=np.random.default_rng(0),
                stats=DecodeStats(),
            )
            completions.append(
                {"line": line_no + 1, "prompt": prompt, "output": [int(t) for t in out]}
            )
            print(f"  {path.relative_to(ROOT)}:{line_no + 1}", file=sys.stderr, flush=True)
        result["files"].append({"path": str(path.relative_to(ROOT)), "completions": completions})
    engine.close()
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(result))


def replay(prompt: list[int], output: list[int], policy: AdaptivePolicy) -> float:
    """One completion replayed as the decode loop runs it with a lookup drafter (its own
    `draft_round`: proposal, k, shadow), a draft accepted as far as it matches `output`: plain
    decoding's modeled seconds over the replay's."""
    profile = policy.profile
    drafter, out, seconds = NgramDrafter(), [output[0]], 0.0
    shadows: Shadows = []
    job = DecodeJob(prompt, len(output), SamplingParams(), frozenset())
    rng = np.random.default_rng(0)
    while len(out) < len(output):
        shadows = score_shadows(shadows, out, policy)
        draft = draft_round(
            drafter, policy, job, out, rng, len(output) - len(out), shadows, CancelToken()
        )
        k = len(draft.tokens)
        accepted = common_prefix_len(draft.tokens, output[len(out) : len(out) + k])
        if k:
            policy.observe(k, accepted, draft.strength)
        seconds += profile.verify(k + 1) + profile.round_overhead
        out += output[len(out) : len(out) + accepted + 1]
    plain = (len(output) - 1) * (profile.verify(1) + profile.round_overhead)
    return plain / seconds


def report(data: dict[str, Any]) -> str:
    rows = ["| file | first completion | later completions (each) |", "|---|---|---|"]
    first, later = [], []
    for item in data["files"]:
        profile = CostProfile.from_json(data["profile"])
        policy = AdaptivePolicy(
            profile, estimate=AcceptanceEstimate(prior_acceptance(0.0)), draft_max=16
        )
        ratios = [replay(c["prompt"], c["output"], policy) for c in item["completions"]]
        first.append(ratios[0])
        later += ratios[1:]
        rows.append(
            f"| {item['path']} | {ratios[0]:.2f}x | {' '.join(f'{r:.2f}x' for r in ratios[1:])} |"
        )
    every = first + later
    losing = sum(r < 0.99 for r in every)
    rows.append(
        f"\nGeometric mean: first completion of a file {geomean(first):.3f}x, later "
        f"{geomean(later):.3f}x; {losing} of {len(every)} completions below 0.99x "
        f"(worst {min(every):.2f}x). Modeled from the verify curve "
        f"{CostProfile.from_json(data['profile']).relative()}."
    )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true", help="collect greedy outputs first")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--places", type=int, default=5, help="completions per file")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.collect or not DATA.exists():
        collect(args.files, args.places, args.seed)
    print(report(json.loads(DATA.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
