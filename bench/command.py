"""`spec-lsp bench` (`python -m bench` from a checkout): the sources and the policies
benchmarks, or their tables again from the raw runs they saved. The tables go to stdout and to
`<out>/bench.md`.

`spec-lsp bench NAME ARGS...` runs one of the other benchmarks (`MODULES`) with its own
arguments (`spec-lsp bench places --help`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from bench import policies, sources
from bench.common import MAX_REPS, read_results
from spec_lsp.cli import settings_flags, settings_from_args
from spec_lsp.config import Settings

# the benchmarks with arguments of their own: `spec-lsp bench NAME` -> bench.MODULE
MODULES = {
    "places": "places",  # time to a suggestion at places of an open file, against plain FIM
    "crossfile": "crossfile",  # lines that use another module's definition: context or none
    "context-time": "context_time",  # cross-file lines opened, typed, read: context and when
    "block-swap": "block_swap",  # a new block under an evaluated text: moved KV or exact
    "kv-shift": "kv_shift",  # a part dropped from the context block: shift or re-evaluate
    "names": "names",  # the next identifier at dereferences: the guide on and off
    "names-braced": "names_braced",  # the same in TypeScript, Go, Rust and Java
    "names-read": "names_read",  # held-out dereferences asked after reading 5 s: guide on/off
    "guide-memory": "guide_memory",  # the guide's analysis: memory per open file, flat or not
    "fim": "fim_quality",  # held-out lines: the prompt layouts' exact matches
    "gate": "gate",  # the confidence gate, fitted and measured on held-out lines
    "llama-server": "llama_server",  # the remote engine against llama.cpp's llama-server
    "remote": "remote",  # the remote engine against `python -m llama_cpp.server`
    "replay": "replay",  # keystroke latency over LSP, with and without caching
    "policy-replay": "policy_replay",  # the adaptive policy replayed without timing noise
    "overhead": "overhead",  # the loop's own cost per token against plain llama-cpp-python
    "probe-cost": "probe_cost",  # what the crash probe adds to a first start
    "soak": "soak",  # the server under editor-like typing: memory, latency, outcomes
    "writing": "writing",  # a person writing bodies: ghost text in the pauses, Tab, CPU
    "retention": "retention",  # a retention check's cost: rapidfuzz against the exact DP
    "gpu-loop": "gpu_loop",  # the decode loop's curve and speed on this build (a GPU), vs plain
}


def run_module(name: str, argv: list[str]) -> int:
    """The benchmark `name` (a key of MODULES) with its own command-line arguments."""
    module = importlib.import_module(f"bench.{MODULES[name]}")
    sys.argv = [f"spec-lsp bench {name}", *argv]
    try:
        done = module.main()
    except SystemExit as exit_:
        done = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return done if isinstance(done, int) else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spec-lsp bench",
        description="compare speculation policies and drafters",
        epilog="spec-lsp bench NAME [ARGS...] runs another benchmark with its own arguments: "
        f"{', '.join(MODULES)} (bench/README.md)",
    )
    # the bench runs every drafter, policy and temperature itself: only the flags it honors
    settings_flags(parser, per_request=False)
    parser.add_argument(
        "--draft-model",
        help="the sources bench's draft model (default: the pulled SmolLM2-135M; the policies "
        "bench runs SmolLM2 drafting for itself)",
    )
    parser.add_argument("--draft-max", type=int, help="the longest draft the policies may choose")
    parser.add_argument(
        "--seed",
        type=int,
        help="sampling seeds: rep r of every prompt and cell samples with SEED + r (default 0)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        help="tokens per generation (default 48; 32 with --quick)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer prompts and cells")
    parser.add_argument("--out", default="bench/out", help="directory for the table and plots")
    parser.add_argument(
        "--part",
        choices=("all", "policies", "sources"),
        default="all",
        help="policies: none / fixed k / adaptive per drafter; sources: each draft source and auto",
    )
    parser.add_argument(
        "--reps",
        type=positive_int,
        default=None,
        help="interleaved repetitions per prompt and cell (default 3; 1 with --quick)",
    )
    parser.add_argument(
        "--max-reps",
        type=positive_int,
        default=None,
        help="after --reps, paired runs (A/A, adaptive, each source) go on per prompt until "
        "their ratio to no speculation is known to 1%%, up to this many reps "
        "(default 8; --reps with --quick)",
    )
    parser.add_argument(
        "--rerender",
        action="store_true",
        help="only draw the tables and plots again from the raw runs saved in --out",
    )
    return parser


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    """`spec-lsp bench [NAME] ARGS...`."""
    given = sys.argv[1:] if argv is None else argv
    if given and not given[0].startswith("-"):
        if given[0] not in MODULES:
            raise SystemExit(f"spec-lsp bench: no benchmark {given[0]!r} ({', '.join(MODULES)})")
        return run_module(given[0], given[1:])
    args = build_parser().parse_args(given)
    if args.rerender:
        return rerender(Path(args.out), args.part)
    return run_benchmarks(
        settings_from_args(args),
        quick=args.quick,
        out=Path(args.out),
        part=args.part,
        reps=args.reps,
        max_reps=args.max_reps,
        max_tokens=args.max_tokens,
    )


def run_benchmarks(
    settings: Settings,
    *,
    quick: bool = False,
    out: Path = Path("bench/out"),
    part: str = "all",
    reps: int | None = None,
    max_reps: int | None = None,
    max_tokens: int | None = None,
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    max_tokens = max_tokens or (32 if quick else 48)
    reps = reps or (1 if quick else 3)
    # paired runs go on, per prompt, until known to PRECISION or max_reps (--quick: no more)
    max_reps = max(reps, max_reps or (reps if quick else MAX_REPS))
    tables = ""
    if part in ("all", "sources"):
        source_prompts = {w: p[:1] if quick else p for w, p in sources.WORKLOADS.items()}
        tables += sources.run(settings, source_prompts, max_tokens, reps, out, max_reps)
    if part in ("all", "policies"):
        tables += policies.run(settings, quick, out, max_tokens, reps, max_reps)
    return _emit(tables, out)


def rerender(out: Path, part: str = "all") -> int:
    """The tables (and plots) again from the raw runs a previous bench saved in `out`."""
    tables = ""
    wanted = {"sources": sources.RESULTS, "policies": policies.RESULTS}
    for name, filename in wanted.items():
        if part not in ("all", name):
            continue
        path = out / filename
        if not path.exists():
            if part == name:
                raise SystemExit(f"{path} not found: run `spec-lsp bench --part {name}` first")
            continue
        data = read_results(path)
        if name == "sources":
            tables += sources.from_saved(data)
        else:
            tables += policies.from_saved(data, out)
    if not tables:
        raise SystemExit(f"no saved runs in {out}: run `spec-lsp bench` first")
    return _emit(tables, out)


def _emit(tables: str, out: Path) -> int:
    """The CLI's output: the tables to `<out>/bench.md` and to stdout."""
    (out / "bench.md").write_text(tables)
    print(tables)
    return 0
