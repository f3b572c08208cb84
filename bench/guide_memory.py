"""The guide's memory: what the analysis of an open Python file keeps, and whether it stays flat.

The engine runs on the fake backend (the analysis does not depend on the model), the guide on,
no workspace folder (the workspace index would read the standard library: not the guide's),
the analysis as in the editor (its time budget and receivers per file). The files: the
standard library's modules of at least 1,000 lines (names.split_files' rule without the split),
the first `--files`. Each round opens them one after the other, waits for each one's analysis,
then closes them all. Read for each file: the seconds until its first table (partial: what is
ready near the cursor, here the file's end, as a request would read it) and until the whole;
the process's RSS (VmRSS) and Python's allocated blocks (sys.getallocatedblocks), after each
file and after the closing. The first round's
growth per file is what an open file costs (its table, and Jedi's inference of the modules it
uses: shared by all files, so the first files cost the most); the rounds after it show whether
what a closed file leaves behind grows.

    spec-lsp bench guide-memory [--files 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, log
from bench.places import report
from spec_lsp.config import Settings
from spec_lsp.engine import Engine, build_engine

MIN_LINES = 1000


def files(n: int) -> list[Path]:
    """The first `n` standard-library modules of MIN_LINES lines or more, not private."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = [
        path
        for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/__init__.py"))
        if not path.relative_to(stdlib).as_posix().startswith("_")
        and path.read_text(encoding="utf-8", errors="replace").count("\n") >= MIN_LINES
    ]
    return found[:n]


def sample(engine: Engine) -> dict[str, float]:
    gc.collect()
    memory = engine.stats()["memory"]["guide"]
    return {
        "rss_mb": _own_rss_mb(),
        "blocks": sys.getallocatedblocks(),
        "tables_kb": memory["bytes"] / 1024,
        "documents": memory["documents"],
    }


def _own_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_round(engine: Engine, paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        uri = path.as_uri()
        started = time.perf_counter()
        engine.document_changed(uri, path.read_text(encoding="utf-8"))
        while engine.parts.analyses.table(uri) is None and time.perf_counter() - started < 300:
            time.sleep(0.02)
        first = time.perf_counter() - started  # (a partial table: the receivers at the end)
        done = engine.parts.analyses.wait(uri, 300)
        rows.append(
            {
                "file": path.name,
                "lines": path.read_text(encoding="utf-8").count("\n"),
                "analysed": done,
                "first_s": first,
                "seconds": time.perf_counter() - started,
                **sample(engine),
            }
        )
        log(f"  {path.name}: {rows[-1]}")
    for path in paths:
        engine.document_closed(path.as_uri())
    rows.append({"file": "(all closed)", **sample(engine)})
    log(f"  closed: {rows[-1]}")
    return rows


def render(rounds: list[list[dict[str, Any]]], before: dict[str, float], head: str) -> str:
    first = rounds[0]
    opened = [r for r in first if "lines" in r]
    out = [
        head,
        "",
        f"Before any file: RSS {before['rss_mb']:.0f} MB, {before['blocks'] / 1e3:.0f}k blocks.",
        "",
        "| round | file | lines | first table (s) | analysis (s) | RSS (MB) | RSS added (MB) | "
        "tables (KiB) | blocks (k) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    last = before["rss_mb"]
    for n, rows in enumerate(rounds, 1):
        for r in rows:
            took = f"{r['seconds']:.1f}" if "seconds" in r else ""
            ready = f"{r['first_s']:.1f}" if "first_s" in r else ""
            out.append(
                f"| {n} | {r['file']} | {r.get('lines', '')} | {ready} | {took} | "
                f"{r['rss_mb']:.0f} | "
                f"{r['rss_mb'] - last:+.0f} | {r['tables_kb']:.0f} | {r['blocks'] / 1e3:.0f} |"
            )
            last = r["rss_mb"]
    if opened:
        grown = opened[-1]["rss_mb"] - before["rss_mb"]
        later = [rows[-1]["rss_mb"] for rows in rounds]
        blocks = [rows[-1]["blocks"] / 1e3 for rows in rounds]
        out += [
            "",
            f"Round 1: {len(opened)} files open, RSS +{grown:.0f} MB "
            f"({grown / len(opened):.1f} MB a file on average; the first "
            f"+{opened[0]['rss_mb'] - before['rss_mb']:.0f} MB, the last "
            f"+{opened[-1]['rss_mb'] - opened[-2]['rss_mb'] if len(opened) > 1 else 0:.0f} MB); "
            f"the tables {opened[-1]['tables_kb'] / len(opened):.0f} KiB a file. After each "
            f"round's closing: RSS {', '.join(f'{x:.0f}' for x in later)} MB, blocks "
            f"{', '.join(f'{x:.0f}k' for x in blocks)}.",
        ]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--out", default=str(ROOT / "bench" / "results" / "guide-memory.md"), type=Path
    )
    args = parser.parse_args()
    paths = files(args.files)
    engine = build_engine(Settings(guide=True, cache=False, drafter="none"), backend="fake")
    engine.load()
    before = sample(engine)
    rounds = []
    for n in range(args.rounds):
        log(f"round {n + 1}")
        rounds.append(one_round(engine, paths))
    head = (
        f"# The guide's memory per open file\n\n`spec-lsp bench guide-memory --files "
        f"{args.files} --rounds {args.rounds}`: {len(paths)} standard-library modules opened "
        "one after the other on the fake backend (guide on, the editor's analysis budget), "
        "then all closed, per round; Python "
        f"{sys.version.split()[0]}."
    )
    report(args.out, render(rounds, before, head), {"rounds": rounds, "before": before})


if __name__ == "__main__":
    main()
