"""Policy replay: the adaptive policy with the n-gram drafter, replayed without timing noise, on
this machine's cost curve and on curves of other machines; and the real loop timed in pairs.

Timed runs of a self-calibrating policy differ from run to run by more than most policy changes
do. This replays the policy instead: the target's greedy output (T = 0) at places down source
files no one here wrote (modules of the running interpreter's standard library: the top-level
`.py` files of 200-700 lines, sorted, `--files` of them drawn with `--seed`, `--places` lines
each, a line's code cut at its indentation) is collected once; then each completion is replayed
round by round through the decode loop's own drafting step (`draft_round`: proposal, k, shadow), a
draft accepted as far as it matches that output, every round costed on a verify curve and
reported to the policy as the round's seconds (what it judges drafting by, as in the real loop).
The ratio is modeled: c(1) x the completion's rounds' tokens over the sum of c(k + 1). The
acceptance estimate carries from one place of a file to the next, as in the server, and each
file starts fresh; what drafting really yields (policy/realized.py) is the machine's, kept
across files, as in the server.

    .venv/bin/python -m bench.policy_replay --collect   # greedy outputs (minutes)
    .venv/bin/python -m bench.policy_replay             # replay (seconds)
    .venv/bin/python -m bench.policy_replay --timed     # the real loop, in pairs

Curves: this machine's profile (stored with the collection) and those in `--curves` (JSON:
name -> {k: c(k)/c(1)}; `bench/curves.json` holds the H100, 16-thread and 2-thread curves of
Qwen2.5-Coder-1.5B measured with llama-bench).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import sysconfig
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ROOT, geomean, read_results, write_results
from bench.timing import greedy
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
    Drafter,
    FixedPolicy,
    NgramDrafter,
    RealizedYield,
    Shadows,
    add_by_source,
    after_cursor,
    common_prefix_len,
    draft_round,
    generate,
    model_drafter,
    prior_acceptance,
    score_shadows,
    strength_bucket,
    sync,
)

DATA = ROOT / "bench" / "results" / "policy-replay.json.gz"
CURVES = ROOT / "bench" / "curves.json"
TOKENS = 48
BUCKETS = ("<=2", "3-4", "5-8", "9-16", ">16")


def stdlib_sources() -> list[Path]:
    """The rule: top-level modules of the running interpreter's standard library, 200-700
    lines, sorted by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return [
        p
        for p in sorted(root.glob("*.py"))
        if 200 < len(p.read_text(errors="replace").splitlines()) < 700
    ]


def places(path: Path, count: int, rng: random.Random) -> list[tuple[str, str, int]]:
    """(prefix, suffix, line) at `count` lines with code in the file's last four fifths: the
    cursor after the line's indentation, the rest of the file after it."""
    lines = path.read_text(errors="replace").split("\n")
    coded = [i for i in range(len(lines) // 5, len(lines) - 5) if lines[i].strip()]
    result = []
    for line_no in sorted(rng.sample(coded, min(count, len(coded)))):
        line = lines[line_no]
        indent = len(line) - len(line.lstrip())
        prefix = "\n".join(lines[:line_no]) + "\n" + line[:indent]
        suffix = line[indent:] + "\n" + "\n".join(lines[line_no + 1 :])
        result.append((prefix, suffix, line_no + 1))
    return result


def collect(files: int, per_file: int, seed: int) -> dict[str, Any]:
    """The target's greedy output at the chosen places (the default model and settings)."""
    engine = build_engine(Settings().model_copy(update={"drafter": "ngram"}))
    engine.load()
    target = engine.parts.models.target
    profile = engine.ensure_profile()
    rng = random.Random(seed)
    result: dict[str, Any] = {"profile": profile.to_json(), "files": []}
    for path in rng.sample(stdlib_sources(), files):
        completions = []
        for prefix, suffix, line in places(path, per_file, rng):
            prompt = engine.parts.prompt_tokens(
                CompletionRequest(prefix=prefix, suffix=suffix, language="python")
            )
            out = greedy(target, prompt, TOKENS)
            completions.append({"line": line, "prompt": prompt, "output": [int(t) for t in out]})
            print(f"  {path.name}:{line}", file=sys.stderr, flush=True)
        result["files"].append({"path": path.name, "completions": completions})
    engine.close()
    return result


@dataclass
class Tally:
    """Where a curve's gains came from: per strength bucket, drafting rounds, tokens drafted
    and accepted, and plain rounds saved (tokens committed minus the rounds' cost in c(1))."""

    rounds: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    drafted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    accepted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    saved: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    ks: list[int] = field(default_factory=list)

    def add(self, strength: int | None, k: int, accepted: int, cost: float) -> None:
        bucket = strength_bucket(strength)
        name = "-" if bucket is None else BUCKETS[bucket]
        self.rounds[name] += 1
        self.drafted[name] += k
        self.accepted[name] += accepted
        self.saved[name] += accepted + 1 - cost
        self.ks.append(k)


def replay(
    prompt: list[int], output: list[int], policy: AdaptivePolicy, tally: Tally | None = None
) -> float:
    """One completion replayed as the decode loop runs it with the n-gram lookup: c(1) x its
    tokens over the sum of its rounds' c(k + 1), each round reported to the policy."""
    profile = policy.profile
    drafter, out, cost = NgramDrafter(), [output[0]], 0.0
    shadows: Shadows = []
    job = DecodeJob(prompt, len(output), SamplingParams(), frozenset())
    rng = np.random.default_rng(0)
    c1 = profile.verify(1)
    policy.begin(len(output))
    while len(out) < len(output):
        shadows = score_shadows(shadows, out, policy)
        draft = draft_round(
            drafter, policy, job, out, rng, len(output) - len(out), shadows, CancelToken()
        )
        k = len(draft.tokens)
        accepted = common_prefix_len(draft.tokens, output[len(out) : len(out) + k])
        if k:
            policy.observe(k, accepted, draft.strength)
        seconds = profile.verify(k + 1)
        policy.observe_round(drafter.name, draft.strength, k, accepted + 1, seconds)
        if k and tally is not None:
            tally.add(draft.strength, k, accepted, seconds / c1)
        cost += seconds
        out += output[len(out) : len(out) + accepted + 1]
    return (len(output) - 1) * c1 / cost


def curves(data: dict[str, Any], path: Path | None) -> dict[str, CostProfile]:
    """This machine's measured curve, then those of the file (relative costs)."""
    here = CostProfile.from_json(data["profile"])
    found = {"this machine": CostProfile(dict(here.verify_seconds), key="here")}
    if path is not None and path.exists():
        for name, relative in json.loads(path.read_text()).items():
            if name.startswith("_"):
                continue
            found[name] = CostProfile({int(k): float(v) for k, v in relative.items()}, key=name)
    return found


def run_curve(data: dict[str, Any], profile: CostProfile) -> tuple[list[list[float]], Tally]:
    """Every file's completions replayed on `profile` (a copy: replays do not calibrate it)."""
    ledger, tally, ratios = RealizedYield(), Tally(), []
    for item in data["files"]:
        policy = AdaptivePolicy(
            CostProfile(dict(profile.verify_seconds), key=profile.key),
            estimate=AcceptanceEstimate(prior_acceptance(0.0)),
            draft_max=16,
            ledger=ledger,
        )
        ratios.append(
            [replay(c["prompt"], c["output"], policy, tally) for c in item["completions"]]
        )
    return ratios, tally


def report(data: dict[str, Any], curve_file: Path | None) -> str:
    rows = []
    summary = [
        "| curve | c(2) c(4) c(8) | geomean | first of a file | worst | below 0.98x | "
        "rounds drafting | mean k drafted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, profile in curves(data, curve_file).items():
        ratios, tally = run_curve(data, profile)
        every = [r for file_ratios in ratios for r in file_ratios]
        rel = profile.relative()
        shape = " ".join(
            f"{rel.get(k, profile.verify(k) / profile.verify(1)):.2f}" for k in (2, 4, 8)
        )
        drafting = len(tally.ks)
        summary.append(
            f"| {name} | {shape} | {geomean(every):.3f}x | "
            f"{geomean([r[0] for r in ratios]):.3f}x | {min(every):.3f}x | "
            f"{sum(r < 0.98 for r in every)} of {len(every)} | {drafting} | "
            f"{statistics.mean(tally.ks) if tally.ks else 0:.1f} |"
        )
        rows.append(_gains(name, tally))
        if name == "this machine":
            rows.append(_per_file(data, ratios))
    return "\n".join(summary) + "\n" + "\n".join(rows)


def _gains(name: str, tally: Tally) -> str:
    lines = [
        f"\nWhere the gains come from ({name}; drafter ngram, per match strength: tokens of "
        "context shared with the copied occurrence):\n",
        "| strength | rounds | drafted | accepted | plain rounds saved |",
        "|---|---|---|---|---|",
    ]
    for bucket in sorted(
        tally.rounds, key=lambda b: (b != "-", BUCKETS.index(b) if b in BUCKETS else -1)
    ):
        lines.append(
            f"| {bucket} | {tally.rounds[bucket]} | {tally.drafted[bucket]} | "
            f"{tally.accepted[bucket]} | {tally.saved[bucket]:+.1f} |"
        )
    return "\n".join(lines)


def _per_file(data: dict[str, Any], ratios: list[list[float]]) -> str:
    lines = ["\nPer file (this machine's curve):\n", "| file | completions |", "|---|---|"]
    for item, file_ratios in zip(data["files"], ratios):
        lines.append(f"| {item['path']} | {' '.join(f'{r:.2f}x' for r in file_ratios)} |")
    return "\n".join(lines)


def timed(data: dict[str, Any], draft_model: str | None, per_file: int | None = None) -> str:
    """Every collected completion through the real loop: plain, with n-gram drafts and (with a
    draft model) with the model's drafts, each under the adaptive policy, back to back (the
    order rotates per completion); per drafter, the ratio of its decode rate to plain's in the
    same completion, and its drafts' acceptance. The ledger is kept across completions and
    each drafter's estimate across a file's completions, as in the server."""
    settings = Settings(drafter="model" if draft_model else "ngram", draft_model=draft_model)
    engine = build_engine(settings)
    engine.load()
    loaded = engine.parts.models
    target = loaded.target
    profile = engine.ensure_profile()
    # a lookup costs nothing to draft: its policy prices batches only (as the engine's
    # profile for drafter ngram does); a draft model's, its measured cost too
    free = CostProfile(dict(profile.verify_seconds), key="lookup")
    profiles = {"ngram": free, "model": profile}
    drafters: dict[str, Drafter | None] = {"plain": None, "ngram": NgramDrafter()}
    if loaded.draft is not None:
        drafters["model"] = model_drafter(loaded.draft, target)
    ledger = RealizedYield()
    ratios: dict[str, list[float]] = {name: [] for name in drafters if name != "plain"}
    counts = {name: [0, 0] for name in ratios}  # drafted, accepted
    by_source: dict[str, list[int]] = {}  # rounds, drafted, accepted
    turn = 0
    for item in data["files"]:
        estimates = {name: AcceptanceEstimate(prior_acceptance(0.0)) for name in ratios}
        for c in item["completions"][:per_file]:
            suffix = after_cursor(c["prompt"], target.info.special)  # (a source of its own)
            job = DecodeJob(c["prompt"], TOKENS, SamplingParams(0.0), frozenset(), suffix=suffix)
            greedy(target, c["prompt"], TOKENS)  # warm: the prompt in the KV cache
            rates = {}
            names = list(drafters)
            turn += 1
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                stats = DecodeStats()
                policy = (
                    AdaptivePolicy(
                        profiles[name], estimate=estimates[name], draft_max=16, ledger=ledger
                    )
                    if name != "plain"
                    else FixedPolicy(0)
                )
                generate(
                    target,
                    drafters[name],
                    policy,
                    job,
                    cancel=CancelToken(),
                    rng=np.random.default_rng(0),
                    stats=stats,
                )
                rates[name] = stats.tokens / max(stats.decode_seconds, 1e-9)
                if name != "plain":
                    counts[name][0] += stats.drafted
                    counts[name][1] += stats.accepted
                add_by_source(by_source, {f"{name}: {k}": v for k, v in stats.by_source.items()})
            for name in ratios:
                ratios[name].append(rates[name] / rates["plain"])
            shown = " ".join(f"{n} {r[-1]:.2f}x" for n, r in ratios.items())
            print(f"  {item['path']}:{c['line']} {shown}", file=sys.stderr, flush=True)
    engine.close()
    lines = [
        f"\nTimed in the real loop ({target.info.name}, {len(ratios['ngram'])} completions, "
        "back to back; decode rate over plain's in the same completion):\n",
        "| drafter | median | geomean | range | drafted | accepted |",
        "|---|---|---|---|---|---|",
    ]
    for name, values in ratios.items():
        drafted, accepted = counts[name]
        lines.append(
            f"| {name} | {statistics.median(values):.3f}x | {geomean(values):.3f}x | "
            f"{min(values):.2f}x-{max(values):.2f}x | {drafted} | {accepted} "
            f"({accepted / max(drafted, 1):.0%}) |"
        )
    lines += [
        "\nPer draft source (the drafter, then the source that proposed: the prompt's n-grams, the"
        " text after the cursor), with the plain rounds its rounds saved by the ledger's account:\n",
        "| drafter: source | rounds | drafted | accepted | plain rounds saved |",
        "|---|---|---|---|---|",
    ]
    saved = ledger.saved_by_source()
    for key, (rounds, drafted, accepted) in sorted(by_source.items()):
        lines.append(
            f"| {key} | {rounds} | {drafted} | {accepted} ({accepted / max(drafted, 1):.0%}) | "
            f"{saved.get(key.split(': ')[1], 0.0):.1f} |"
        )
    lines.append(f"\nThe ledger at the end: {json.dumps(ledger.report())}")
    return "\n".join(lines)


def draft_acceptance(data: dict[str, Any], draft_model: str) -> str:
    """How often a draft model's greedy token is the target's, at every position of the
    collected outputs (the target's greedy text, its prefix given): the acceptance alpha of its
    drafts for this target at T = 0, and the longest runs. One batch per completion."""
    engine = build_engine(Settings(drafter="model", draft_model=draft_model))
    engine.load()
    draft = engine.parts.models.draft
    assert draft is not None
    matches: list[bool] = []
    for item in data["files"]:
        for c in item["completions"]:
            logits, _ = sync(draft, c["prompt"])
            rows = draft.evaluate(c["output"][:-1], logits_from=0)
            guesses = [int(np.argmax(logits)), *(int(np.argmax(row)) for row in rows)]
            matches += [a == b for a, b in zip(guesses, c["output"])]
    engine.close()
    alpha = sum(matches) / max(len(matches), 1)
    runs = "".join("1" if m else "0" for m in matches).split("0")
    mean_run = statistics.mean(len(r) for r in runs) if runs else 0.0
    return (
        f"\n{draft.info.name} drafting for the target at T = 0: its greedy token is the "
        f"target's at {alpha:.1%} of {len(matches)} positions (mean run of agreement "
        f"{mean_run:.2f} tokens)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collect", action="store_true", help="collect greedy outputs first")
    parser.add_argument("--timed", action="store_true", help="also time the real loop in pairs")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--places", type=int, default=6, help="completions per file")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--curves", type=Path, default=CURVES, help="other machines' curves")
    parser.add_argument("--data", type=Path, default=DATA, help="the collected completions")
    parser.add_argument("--per-file", type=int, default=None, help="--timed: completions per file")
    parser.add_argument(
        "--draft-acceptance", default=None, metavar="MODEL", help="a draft model's acceptance"
    )
    parser.add_argument(
        "--draft-model",
        default=None,
        help="--timed: also this draft model (a pulled default's name or a GGUF)",
    )
    args = parser.parse_args()
    if args.collect or not args.data.exists():
        write_results(args.data, collect(args.files, args.places, args.seed))
    data = read_results(args.data)
    print(report(data, args.curves))
    if args.timed:
        print(timed(data, args.draft_model, args.per_file))
    if args.draft_acceptance:
        print(draft_acceptance(data, args.draft_acceptance))
    return 0


if __name__ == "__main__":
    sys.exit(main())
