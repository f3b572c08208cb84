"""`spec-lsp bench`: the sources and the policies benchmarks, or their tables again from the raw
runs they saved. The tables go to stdout and to `<out>/bench.md`.

`spec-lsp bench NAME ARGS...` runs one of the other benchmarks (`MODULES`) with its own
arguments (`spec-lsp bench places --help`).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from spec_lsp.bench import policies, sources
from spec_lsp.bench.common import MAX_REPS, read_results
from spec_lsp.config import Settings

# the benchmarks with arguments of their own: `spec-lsp bench NAME` -> spec_lsp.bench.MODULE
MODULES = {
    "places": "places",  # time to a suggestion at places of an open file, against plain FIM
    "crossfile": "crossfile",  # lines that use another module's definition: context or none
    "context-time": "context_time",  # cross-file lines opened, typed, read: context and when
    "block-swap": "block_swap",  # a new block under an evaluated text: moved KV or exact
    "kv-shift": "kv_shift",
    "names": "names",  # the next identifier at dereferences: the guide on and off  # a part dropped from the context block: shift or re-evaluate
    "fim": "fim_quality",  # held-out lines: the prompt layouts' exact matches
    "gate": "gate",  # the confidence gate, fitted and measured on held-out lines
    "llama-server": "llama_server",  # the remote engine against llama.cpp's llama-server
    "remote": "remote",  # the remote engine against `python -m llama_cpp.server`
    "replay": "replay",  # keystroke latency over LSP, with and without caching
    "policy-replay": "policy_replay",  # the adaptive policy replayed without timing noise
    "probe-cost": "probe_cost",  # what the crash probe adds to a first start
    "soak": "soak",  # the server under editor-like typing: memory, latency, outcomes
    "retention": "retention",  # a retention check's cost: rapidfuzz against the exact DP
}


def run_module(name: str, argv: list[str]) -> int:
    """The benchmark `name` (a key of MODULES) with its own command-line arguments."""
    module = importlib.import_module(f"spec_lsp.bench.{MODULES[name]}")
    sys.argv = [f"spec-lsp bench {name}", *argv]
    try:
        done = module.main()
    except SystemExit as exit_:
        done = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return done if isinstance(done, int) else 0


def main(
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
