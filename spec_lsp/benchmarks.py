"""`spec-lsp bench ARGS...`: the benchmarks live in the repository, beside the package, and are
never installed with it; this finds them in a checkout and runs their own command there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = "bench"  # the benchmarks' package: in a checkout, never installed
CHECKOUT = Path(__file__).resolve().parents[1]  # the repository, where this is a checkout


def run_benchmarks(argv: list[str]) -> int:
    """`spec-lsp bench ARGS...`: the benchmarks' own command (`python -m BENCHMARKS ARGS...`),
    in a child process run from the checkout this package is installed from (an editable
    install), else from the checkout in the current folder; an installed package has no
    benchmarks, and says where they are."""
    relative = Path(*BENCHMARKS.split(".")) / "__main__.py"
    found = [root for root in (CHECKOUT, Path.cwd()) if (root / relative).is_file()]
    if not found:
        raise SystemExit(
            "spec-lsp bench: the benchmarks are not installed with spec-lsp; they run from a "
            "checkout of the repository (git clone it, then `pip install -e '.[bench]'` there "
            f"and run `spec-lsp bench` again). No {relative.parent} in {CHECKOUT} or here."
        )
    path = os.pathsep.join(p for p in [str(found[0]), os.environ.get("PYTHONPATH", "")] if p)
    child = [sys.executable, "-m", BENCHMARKS, *argv]
    return subprocess.call(child, env={**os.environ, "PYTHONPATH": path})
