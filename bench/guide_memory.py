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

`--first-table` (`guide-first-table.md`): the seconds from opening a file to its first table
where the person types (the file's end), each run in a fresh process (Jedi cold at its start),
`--repeat` runs a scenario (the median, and the range): the first file opened as soon as the
engine is loaded, and `--gap` seconds later (the person opens a file a while after the server
started); each later file opened once the one before it is analysed whole and closed (the thread
idle, Jedi's caches as warm in any version), or as soon as the one before has its first table
(its analysis still running). `--ask`: a scenario more, each file asked at once at its end:
whether the request waited for the first table, and whether it was guided. The machine's load
average beside each.

    spec-lsp bench guide-memory --first-table [--files 3] [--gap 15] [--repeat 3] [--ask]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, log
from bench.places import report
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, Engine, build_engine

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


SCENARIOS = {  # name -> (opened after the gap, each file asked at once, the next at once)
    "at the load": (False, False, False),
    "later": (True, False, False),
    "later, asked at once": (True, True, False),
    "later, the next while the one before is analysed": (True, False, True),
}


def first_tables(files_n: int, gap: float, ask: bool, busy: bool) -> dict[str, Any]:
    """(One fresh process, one scenario.) Each file's seconds to its first table."""
    paths = files(files_n)
    engine = build_engine(Settings(guide=True, cache=False, drafter="none"), backend="fake")
    engine.load()
    analyses = engine.parts.analyses
    loads = [os.getloadavg()[0]]
    time.sleep(gap)
    rows = []
    for path in paths:
        uri, text = path.as_uri(), path.read_text(encoding="utf-8")
        started = time.perf_counter()
        engine.document_changed(uri, text)
        row: dict[str, Any] = {"file": path.name, "lines": text.count("\n")}
        if ask:  # (a request at once, at the file's end)
            request = CompletionRequest(text, "", document_id=uri, max_tokens=4, language="python")
            stats = engine.complete(request, CancelToken()).stats
            row["waited_ms"] = getattr(stats, "guide_waited_ms", 0.0)
            row["guided"] = not stats.guide_unprepared
        while analyses.table(uri) is None and time.perf_counter() - started < 300:
            time.sleep(0.01)
        row["first_s"] = time.perf_counter() - started
        if not busy:  # (the whole: the next file finds Jedi as warm in any version, and the
            analyses.wait(uri, 300)  # thread idle)
            engine.document_closed(uri)
        rows.append(row)
        log(f"  {row}")
    loads.append(os.getloadavg()[0])
    guide = engine.stats()["guide"]
    engine.shutdown()
    run = {"rows": rows, "load": loads}
    return run | ({"warm_up_s": guide["warm_up_seconds"]} if "warm_up_seconds" in guide else {})


def render_first(runs: dict[str, list[dict[str, Any]]], head: str) -> str:
    """Per scenario and file: the median first table over the runs, and their range."""
    out = [
        head,
        "",
        "| scenario | file | lines | first table (s), median | range | first ask | load avg |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for name, done in runs.items():
        load = ", ".join(f"{min(r['load']):.1f}-{max(r['load']):.1f}" for r in done)
        for n, rows in enumerate(zip(*(r["rows"] for r in done), strict=True)):
            first = sorted(r["first_s"] for r in rows)
            asked = ""
            if "guided" in rows[0]:
                guided = sum(r["guided"] for r in rows)
                waited = "/".join(f"{r['waited_ms']:.0f}" for r in rows)
                asked = f"guided {guided}/{len(rows)}, waited {waited} ms"
            out.append(
                f"| {name if n == 0 else ''} | {rows[0]['file']} | {rows[0]['lines']} | "
                f"{statistics.median(first):.2f} | {first[0]:.2f}-{first[-1]:.2f} | {asked} | "
                f"{load if n == 0 else ''} |"
            )
    warm = [r["warm_up_s"] for d in runs.values() for r in d if r.get("warm_up_s") is not None]
    if warm:
        out += [
            "",
            f"Jedi's warm-up, where a later opening let it run: {min(warm):.1f}-{max(warm):.1f} s "
            "(at the load the first file stops it: that file's analysis pays the rest).",
        ]
    return "\n".join(out) + "\n"


def main_first_table(args: argparse.Namespace) -> None:
    runs: dict[str, list[dict[str, Any]]] = {}
    for name, (later, ask, busy) in SCENARIOS.items():
        if ask and not args.ask:
            continue
        gap = args.gap if later else 0.0
        for n in range(args.repeat):
            log(f"first tables: {name}, run {n + 1}")
            command = [sys.executable, "-m", "bench.guide_memory", "--first-table-run"]
            command += ["--files", str(args.files), "--gap", str(gap)]
            command += (["--ask"] if ask else []) + (["--busy"] if busy else [])
            done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
            sys.stderr.write(done.stderr)
            runs.setdefault(name, []).append(json.loads(done.stdout.strip().splitlines()[-1]))
    head = (
        "# The guide's first table per file\n\n`spec-lsp bench guide-memory --first-table "
        f"--files {args.files} --gap {args.gap:g} --repeat {args.repeat}"
        f"{' --ask' if args.ask else ''}`: standard-library modules opened one after the other on "
        "the fake backend (guide on), each run in a fresh process (Jedi cold); the seconds from "
        "opening a file to its first table (the receivers nearest its end). At the load: the "
        f"first file opened as the engine is loaded; later: {args.gap:g} s after. Each next "
        "file opened once the one before is analysed whole and closed, or (the last scenario) "
        "as soon as it has its first table. Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cores shared; the load average at each "
        "run's start and end."
    )
    out = (
        args.out if args.out != DEFAULT_OUT else ROOT / "bench" / "results" / "guide-first-table.md"
    )
    report(out, render_first(runs, head), {"runs": runs})


DEFAULT_OUT = ROOT / "bench" / "results" / "guide-memory.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=DEFAULT_OUT, type=Path)
    parser.add_argument("--first-table", action="store_true", help="the seconds to a first table")
    parser.add_argument("--gap", type=float, default=15.0, help="--first-table: a later opening")
    parser.add_argument("--ask", action="store_true", help="--first-table: asked at once too")
    parser.add_argument("--repeat", type=int, default=3, help="--first-table: runs a scenario")
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-table-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_table_run:
        print(json.dumps(first_tables(args.files, args.gap, args.ask, args.busy)))
        return
    if args.first_table:
        args.files = args.files or 3
        main_first_table(args)
        return
    args.files = args.files or 8
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
