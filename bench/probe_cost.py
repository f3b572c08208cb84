"""What the crash probe adds to a start: the first time a (llama.cpp build, model file) pair is
loaded, a child process loads the models and decodes a few tokens before the engine loads them.

Per drafter setting (ngram: the target only; model: target and draft), in turn, several times:
the engine's load with no cached verdict (probe, then load) and with the verdict cached (the
load alone, as every later start). The difference over the load alone is what a first start
pays on top.

    python -m bench.probe_cost [--reps 3]   (writes bench/results/probe.md)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from bench.common import ROOT
from spec_lsp.config import Settings
from spec_lsp.engine import build_engine


def timed_load(settings: Settings) -> float:
    engine = build_engine(settings)
    start = time.perf_counter()
    engine.load()
    seconds = time.perf_counter() - start
    engine.close()
    return seconds


def measure(settings: Settings, reps: int) -> tuple[list[float], list[float]]:
    first, later = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as verdicts:
            os.environ["SPEC_LSP_PROBE_DIR"] = verdicts  # no verdict yet
            first.append(timed_load(settings))
            later.append(timed_load(settings))  # the verdict cached
    return first, later


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "probe.md"))
    args = parser.parse_args(argv)
    rows = [
        "| drafter (models loaded) | first start: probe + load, p50 | later start: load, p50 "
        "| probe / load |",
        "|---|---:|---:|---:|",
    ]
    for drafter, models in (("ngram", "Qwen-1.5B"), ("model", "Qwen-1.5B + SmolLM2")):
        settings = Settings(drafter=drafter, draft_policy="fixed")  # (no cost profile)
        first, later = measure(settings, args.reps)
        load, total = statistics.median(later), statistics.median(first)
        probe = total - load
        rows.append(
            f"| {drafter} ({models}) | {total:.2f} s | {load:.2f} s | {probe / load:.2f}x |"
        )
    table = "\n".join(rows)
    print(table)
    with open(args.out, "w") as out:
        out.write(f"# The crash probe's cost at a first start ({args.reps} reps each)\n\n")
        out.write(table + "\n\nCommand: `python -m bench.probe_cost`\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
