"""Held-out dereferences asked after a person read the file for a few seconds: the guide on and off.

`bench names` asks once the file's analysis is done; a person asks when they get to the `.`,
the analysis maybe not done. Here each file is opened (didOpen, through the server's scheduler
in process: the file prefix, the context and the analysis start as in `spec-lsp serve`), read
for `--read-s` seconds (5), and the case is asked (Invoked, the file cut right after the `.`),
guide on, then off on the same prompt. Counted against the receiver's members once the analysis
is done: the next identifier right, and names written that are not members.

Held-out files, by rule, outside every other set of `bench names` (report, fit, choose,
less-known) and of the gate's and the writing bench's packages: the standard library's modules
of 500-999 lines (top level, not private), after the largest module of three installed packages
no set uses (HELD_OUT_PACKAGES); `--per-file` cases spread over each (default 4), kept where a
throwaway Jedi in this process resolves the receiver (the server's own analysis stays cold),
until `--cases` (100).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sysconfig
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import ROOT, log
from bench.in_process import Server
from bench.names import Case, candidates, outcome, receiver_key, request_at, spread
from bench.places import engine_options, loaded_engine, machine, report
from spec_lsp.engine.toolkit import python_analysis as analysis

HELD_OUT_PACKAGES = ("urllib3", "starlette", "tqdm")
LINES = (500, 1000)


def held_out_files() -> list[Path]:
    """Each HELD_OUT_PACKAGES' largest module (tests left out); then the standard library's
    top-level modules of 500-999 lines, not private, by path."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])

    def lines(path: Path) -> int:
        return path.read_text(encoding="utf-8", errors="replace").count("\n")

    found = []
    for package in HELD_OUT_PACKAGES:
        modules = [p for p in sorted((site / package).rglob("*.py")) if "test" not in p.name]
        if modules:
            found.append(max(modules, key=lambda p: (lines(p), p.as_posix())))
    found += [
        path
        for path in sorted(stdlib.glob("*.py"))
        if not path.name.startswith("_") and LINES[0] <= lines(path) < LINES[1]
    ]
    return found


def chosen(args: argparse.Namespace) -> list[Case]:
    """The cases: spread over each file, kept where a Jedi of this process resolves the
    receiver (with its members), until `--cases`."""
    jedi = analysis.Analyser(max_receivers=12)
    cases: list[Case] = []
    for path in held_out_files():
        kept = 0
        for case in spread(candidates(path), args.per_file * 3):
            if kept >= args.per_file or len(cases) >= args.cases:
                break
            table = jedi.analyse(
                case.document, version=0, path=case.path, root=None, near_line=case.line
            )
            if table.lookup(table.scope_at(case.cut), receiver_key(case)) is not None:
                cases.append(case)
                kept += 1
        jedi.forget(str(path))
    return cases


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = chosen(args)
    log(f"{len(cases)} cases in {len({c.path for c in cases})} files")
    engine, _extra = loaded_engine(args)
    server = Server(engine, engine.settings)
    rows: list[dict[str, Any]] = []
    try:
        for case in cases:
            request = request_at(case, tokens=args.tokens, multiline=False)
            uri = request.document_id
            server.open(replace(request, prefix=case.document, suffix=""))  # (didOpen)
            opened = time.perf_counter()
            first_table_s = None  # (open to the file's first table, while the person reads)
            while (waited := time.perf_counter() - opened) < args.read_s:
                if first_table_s is None and engine.parts.analyses.table(uri) is not None:
                    first_table_s = waited
                await server.read(min(0.05, args.read_s - waited))
            got: dict[str, Any] = {}
            for variant, guide in (("on", True), ("off", False)):
                engine.update_settings(engine.settings.model_copy(update={"guide": guide}))
                answer, _seconds = await server.ask(request)
                got[variant] = answer
            engine.update_settings(engine.settings.model_copy(update={"guide": True}))
            analyses = engine.parts.analyses
            ready = analyses.wait(uri, 120)
            table = analyses.table(uri) if ready else None
            members = table.lookup(table.scope_at(case.cut), receiver_key(case)) if table else None
            await server.close_document(uri)
            if members is None:
                log(f"{Path(case.path).name}:{case.line}: the server's analysis did not resolve it")
                continue
            on = got["on"]
            row: dict[str, Any] = {
                "path": case.path,
                "line": case.line,
                "receiver": case.receiver,
                "expected": case.expected,
                "complete": members.complete,
                "table_s": round(time.perf_counter() - opened, 2),  # (open to analysis done)
                "first_table_s": None if first_table_s is None else round(first_table_s, 2),
                "unprepared": bool(on and on.stats.guide_unprepared),
                "waited_ms": round(on.stats.guide_waited_ms) if on else 0,
            }
            for variant, answer in got.items():
                row[variant] = outcome(case, answer.text if answer else "", members.names)
            rows.append(row)
            log(
                f"{len(rows)} {Path(case.path).name}:{case.line} {case.receiver}.{case.expected}"
                f" -> on={row['on']['text']!r} off={row['off']['text']!r}"
                f"{' (no table yet)' if row['unprepared'] else ''}"
            )
    finally:
        server.close()
        engine.close()
    return rows


def render(rows: list[dict[str, Any]], head: str) -> str:
    out = [
        head,
        "",
        "| variant | right | not a member | no table at the ask |",
        "|---|---:|---:|---:|",
    ]
    for variant in ("on", "off"):
        right = sum(r[variant]["right"] for r in rows)
        unknown = sum(r[variant]["unknown"] and not r[variant]["defined"] for r in rows)
        unprepared = sum(r["unprepared"] for r in rows) if variant == "on" else "-"
        out.append(f"| {variant} | {right} of {len(rows)} | {unknown} | {unprepared} |")
    timed = [r["first_table_s"] for r in rows if r.get("first_table_s") is not None]
    if timed:
        out += [
            "",
            f"The file's first table before the ask: {len(timed)} of {len(rows)} cases, "
            f"from the open p50 {statistics.median(timed):.2f} s, at most {max(timed):.2f} s.",
        ]
    files = sorted({r["path"] for r in rows})
    out += [
        "",
        f"{len(rows)} cases in {len(files)} files: " + ", ".join(Path(f).name for f in files),
    ]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--read-s", type=float, default=5.0)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--per-file", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--list", action="store_true", help="print the cases and stop")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "names-read.md"))
    engine_options(parser)
    args = parser.parse_args()
    if args.list:
        for case in chosen(args):
            print(f"{Path(case.path).name}:{case.line} {case.receiver}.{case.expected}")
        return
    started = time.perf_counter()
    rows = asyncio.run(run(args))
    head = (
        f"# Held-out dereferences read {args.read_s:g} s first: "
        f"{machine(args.model or 'the default model')}\n\n`spec-lsp bench names-read"
        f" --read-s {args.read_s:g} --cases {args.cases}`; {time.perf_counter() - started:.0f} s."
    )
    report(Path(args.out), render(rows, head), {"rows": rows, "read_s": args.read_s})


if __name__ == "__main__":
    main()
