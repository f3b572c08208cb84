"""Context and time: what the context block does for a line using another module's name, and
whether it is in the KV by the time the person asks, under three ways of coming to the line.

Cases: single lines of real installed packages that use a name another module of the same
package defines (crossfile.uses, found with `ast`). The packages: those of PACKAGES (held by
this environment for the server, its tests and its remote engine; none is one of PyPI's most
downloaded, such as crossfile's httpx, click and jinja2, or requests, numpy, pydantic, pytest,
whose lines the model has likely seen many times) in which crossfile.uses finds at least
MIN_USES lines; the lines chosen from them by crossfile.choose with `--seed` (the packages
taking turns, at most 2 lines of a file, a name of a module once).

At each line the defining module is open in a tab (opened first: a tab the person had open),
then the line's file is opened (its real URI) with the line emptied to its indentation, and:

1. open-read-ask: the file opened (didOpen, no edit), READ_S of reading, an Invoked request;
2. type: the file opened, TYPE_READ_S in it, then the line's first characters after its
   indentation (`typed_keys`: min(4, a third of the line), at least 1) typed at KEY_S a key,
   each key an edit and an Automatic request, the previous one cancelled as VS Code does
   ($/cancelRequest); the answer is the last key's (the typed text, then its first line),
   timed from the last key; an Automatic answer sent before the generation ended
   (`stop_reason` first_answer) may be a line's beginning, as the editor shows it;
3. read-until-quiet: the file opened, READ_S of reading and on until the server has no idle
   work left (at most crossfile.QUIET_MAX_S more), an Invoked request;
4. type-at-once: the file opened and the line typed from that moment (its first AT_ONCE_KEYS
   characters) at KEY_S a key, each key an edit and an Automatic request: whether the idle
   work between keys still gets the block into the KV (its readiness / KEY_S: the keys it
   takes), and the last key's answer;
5. back-and-forth: the file opened and read until quiet (the focus's first visit), the
   defining module brought into view and read until quiet, the file brought into view again
   and read until quiet (the second visit), an Invoked request: what a focus costs the first
   time and when the person comes back.

Each protocol runs at each line once per context budget (`--budgets`, `contextTokens`: the
settings given and 0 by default; 0 is no context block; the model not reloaded), or with the
guide on and off (`--guide`: names that exist, the context as set), the settings taking turns
going first from line to line; between runs every document is closed and the KV
emptied (crossfile.forget). Reported for each run: the exact line (crossfile.same_line),
whether the answer's first line names the name, seconds to the answer, the context tokens and
chunks of its prompt, the readiness: seconds from opening the file until the file's context
block was in the KV (`block_in_kv`, polled every POLL_S until the ask, or the first key;
None: not by then), and the CPU a focus costs: the process's CPU time (all its threads) from
opening the file to the ask or the first key (5: each visit, until quiet). Per package, the
exact lines with no context show what the model knows already.

    .venv/bin/python -m bench.context_time [--lines 42] [--protocols 1,2,3] \
        [--budgets 640,320,0 | --guide]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.common import LESS_KNOWN as PACKAGES
from bench.common import ROOT, log
from bench.crossfile import (
    QUIET_MAX_S,
    Use,
    choose,
    forget,
    line_row,
    package_dir,
    package_version,
    same_line,
    uses,
)
from bench.in_process import Server
from bench.places import emptied, engine_options, loaded_engine, machine, report
from spec_lsp.engine import Completion, CompletionRequest

MIN_USES = 12  # lines crossfile.uses finds in a package for it to count
LINES = 42
PROTOCOLS = {
    1: "open-read-ask",
    2: "type",
    3: "read-until-quiet",
    4: "type-at-once",
    5: "back-and-forth",
}
NONE = "0"  # the budget without a context block: what the others are compared with
GUIDE = ("on", "off")  # --guide: the settings compared (off: what on is compared with)
READ_S = 5.0
TYPE_READ_S = 10.0  # in the file before typing
KEY_S = 0.150
MAX_KEYS = 4
AT_ONCE_KEYS = 40  # protocol 4: the line typed from the moment the file opens, at most this
POLL_S = 0.1


@dataclass
class Run:
    """One protocol at one line under one setting."""

    protocol: str
    setting: str  # the context budget (contextTokens), or the guide (on / off)
    text: str = ""  # the line answered (type: the typed text, then the answer's first line)
    typed: str = ""
    exact: bool = False
    uses_name: bool = False
    seconds: float = 0.0  # to the answer: from the ask (type: from the last key)
    read_s: float = 0.0  # from opening the file to the ask (type: to the first key; 4: the last)
    ready_s: float | None = None  # from opening the file to its context block in the KV
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    cache: str = ""  # how the prompt was served (file_prefix: from the file prefix)
    context_tokens: int = 0
    context_chunks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""
    cpu_s: float = 0.0  # the process's CPU from opening the file to the ask (5: to quiet)
    cpu_back_s: float | None = None  # 5: from bringing the file into view again to quiet
    guide_unprepared: int = 0  # the guide on and the file's analysis not ready at the ask
    guide_masked: int = 0  # tokens the guide masked in the answer


# ---------------------------------------------------------------------------------------------
# The cases


def eligible(found: dict[str, list[Use]], min_uses: int = MIN_USES) -> dict[str, list[Use]]:
    """The packages with at least `min_uses` lines found."""
    return {name: lines for name, lines in found.items() if len(lines) >= min_uses}


def cases(found: dict[str, list[Use]], n: int, seed: int) -> list[Use]:
    """`n` lines of the eligible packages, the same for the same seed (crossfile.choose)."""
    return choose([use for lines in eligible(found).values() for use in lines], n, seed)


def typed_keys(expected: str) -> str:
    """The characters typed before the pause: the line's first min(MAX_KEYS, a third of it),
    at least one (`expected`: the line without its indentation)."""
    return expected[: max(1, min(MAX_KEYS, len(expected) // 3))]


# ---------------------------------------------------------------------------------------------
# Readiness


def block_in_kv(memory: dict[str, Any]) -> bool:
    """The file prefix's context block evaluated into the KV (engine.memory()["file_prefix"]):
    the engine's `block_ready` where it reports it; else a block chosen and the file prefix
    from it all evaluated (a stand-in: later than the block alone)."""
    return bool(memory.get("block_ready", memory["block_tokens"] > 0 and not memory["pending"]))


class Readiness:
    """Polls, from its making (the file opened) until `stop`, when the file's context block is
    first in the KV."""

    def __init__(self, server: Server, uri: str) -> None:
        self.server, self.uri = server, uri
        self.opened = time.perf_counter()
        self.seconds: float | None = None
        self.task = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        engine = self.server.engine
        while self.seconds is None:
            if engine.parts.file_prefix.document == self.uri and block_in_kv(
                engine.memory()["file_prefix"]
            ):
                self.seconds = time.perf_counter() - self.opened
            await asyncio.sleep(POLL_S)

    def stop(self) -> float:
        """Stops polling; the seconds since the file was opened."""
        self.task.cancel()
        return time.perf_counter() - self.opened


# ---------------------------------------------------------------------------------------------
# The protocols


async def read(server: Server, protocol: int) -> None:
    """The person in the file before asking (or typing), as `protocol` says."""
    if protocol in (3, 5):
        await server.read_until_quiet(READ_S, READ_S + QUIET_MAX_S)
    elif protocol != 4:  # (4: typing at once)
        await asyncio.sleep(TYPE_READ_S if protocol == 2 else READ_S)


async def type_start(
    server: Server, request: CompletionRequest, use: Use, text: str, keys: str
) -> tuple[Completion | None, float]:
    """`keys` typed into `request`'s place, a key at a time, each an edit and an Automatic
    request; the last key's answer and the seconds to it."""
    task: asyncio.Future[tuple[Completion | None, float]] | None = None
    for k in range(1, len(keys) + 1):
        prefix, suffix, _ = emptied(text, use.line, keys[:k])
        typed = replace(request, prefix=prefix, suffix=suffix)
        server.edit(typed)
        if task is not None and not task.done():
            task.cancel()  # $/cancelRequest, as VS Code sends it with the next key
        task = asyncio.ensure_future(server.ask(typed, invoked=False))
        if k < len(keys):
            await asyncio.sleep(KEY_S)
    assert task is not None
    return await task


def update_for(setting: str) -> dict[str, Any]:
    """The engine settings a run's `setting` stands for (a budget, or the guide on or off)."""
    return {"guide": setting == "on"} if setting in GUIDE else {"context_tokens": int(setting)}


async def run_protocol(server: Server, use: Use, root: Path, protocol: int, setting: str) -> Run:
    """The defining module in a tab, then the line's file opened (didOpen, the line emptied),
    the reading and the ask (or the typing) of `protocol`, under `setting` (update_for); then
    every document closed and the KV emptied."""
    async with server.paused():
        wanted = server.settings.model_copy(update=update_for(setting))
        await server.scheduler.run(lambda: server.engine.update_settings(wanted))
    tab = root.parent / use.source
    module = server.request(tab.as_uri(), tab.name, "", tab.read_text(encoding="utf-8"))
    server.open(module)
    path = root.parent / use.path
    text = path.read_text(encoding="utf-8")
    request = server.request(path.as_uri(), path.name, *emptied(text, use.line)[:2])
    readiness = Readiness(server, path.as_uri())
    cpu = time.process_time()
    server.open(request)
    await read(server, protocol)
    run = Run(PROTOCOLS[protocol], setting)
    run.cpu_s = time.process_time() - cpu
    if protocol == 5:  # the module in view, then the file again: its second visit
        server.focus(module)
        await server.read_until_quiet(READ_S, READ_S + QUIET_MAX_S)
        cpu = time.process_time()
        server.focus(request)  # (read as long as the first time: the focus taken, then quiet)
        await server.read_until_quiet(READ_S, READ_S + QUIET_MAX_S)
        run.cpu_back_s = time.process_time() - cpu
    if protocol in (2, 4):  # (4: the readiness goes on being polled while typing)
        run.typed = typed_keys(use.expected) if protocol == 2 else use.expected[:AT_ONCE_KEYS]
        if protocol == 2:
            run.read_s = readiness.stop()
        completion, run.seconds = await type_start(server, request, use, text, run.typed)
        if protocol == 4:
            run.read_s = readiness.stop()
    else:
        run.read_s = readiness.stop()
        completion, run.seconds = await server.ask(request)
    run.ready_s = readiness.seconds
    if completion is not None:
        stats = completion.stats
        run.text = run.typed + completion.text.split("\n")[0]
        run.prompt_tokens, run.prompt_evaluated = stats.prompt_tokens, stats.prompt_tokens_evaluated
        run.cache = stats.cache
        run.context_tokens = stats.context_tokens
        run.context_chunks = list(stats.context_chunks)
        run.stop_reason = stats.stop_reason
        run.guide_unprepared, run.guide_masked = stats.guide_unprepared, stats.guide_masked
    run.exact = same_line(run.text, use.expected)
    run.uses_name = bool(re.search(rf"\b{re.escape(use.name)}\b", run.text))
    await forget(server, [tab.as_uri(), path.as_uri()])
    return run


async def ask_all(
    server: Server,
    chosen: list[Use],
    roots: dict[str, Path],
    protocols: list[int],
    budgets: list[str],
) -> list[dict[str, Any]]:
    """Every protocol at every line under every setting (their order turning by line)."""
    results = []
    for n, use in enumerate(chosen):
        runs = []
        for budget in budgets[n % len(budgets) :] + budgets[: n % len(budgets)]:
            for protocol in protocols:
                run = await run_protocol(server, use, roots[use.package], protocol, budget)
                runs.append(run)
                ready = "-" if run.ready_s is None else f"{run.ready_s:.1f}s"
                log(
                    f"{n + 1:3d} {use.path}:{use.line + 1} {run.protocol} {run.setting}: "
                    f"{'Y' if run.exact else '-'}{'n' if run.uses_name else '-'} "
                    f"{run.seconds:.1f}s prompt {run.prompt_evaluated}/{run.prompt_tokens} "
                    f"{run.cache} ctx {run.context_tokens} ready {ready} "
                    f"read {run.read_s:.0f}s cpu {run.cpu_s:.1f}s"
                    + ("" if run.cpu_back_s is None else f" back {run.cpu_back_s:.1f}s")
                    + f"  {run.text[:50]!r}"
                )
        log(f"    expected: {use.expected[:70]}")
        results.append({"use": asdict(use), "runs": [asdict(r) for r in runs]})
    return results


# ---------------------------------------------------------------------------------------------
# Reporting


def quantile(values: list[float], q: float) -> float | None:
    """The `q` quantile (nearest rank) of `values`; None if there are none."""
    ordered = sorted(values)
    return ordered[max(0, round(q * len(ordered)) - 1)] if ordered else None


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def times(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}x" if value is not None and base else ""


def settings_of(runs: list[dict[str, Any]]) -> list[str]:
    """The settings the runs were made with, the base last: budgets largest first (0, no
    context, last), or the guide on, then off."""
    return sorted(
        {r["setting"] for r in runs}, key=lambda b: GUIDE.index(b) if b in GUIDE else -int(b)
    )


def dimension(settings: list[str]) -> str:
    """What the settings compared are: the guide, or context budgets."""
    return "guide" if set(settings) <= set(GUIDE) else "contextTokens"


def base_of(settings: list[str]) -> str:
    """What the other settings are compared with: the guide off, or no context."""
    return "off" if "off" in settings else NONE


def summary_rows(protocol: str, runs: list[dict[str, Any]]) -> list[str]:
    """A protocol's rows, one per budget, each against no context (budget 0)."""
    of = [r for r in runs if r["protocol"] == protocol]
    by = {s: [r for r in of if r["setting"] == s] for s in settings_of(of)}
    base_setting = base_of(list(by))
    base = by.get(base_setting, [])
    base_exact = sum(r["exact"] for r in base)
    base_p50 = quantile([r["seconds"] for r in base], 0.5)
    rows = []
    for setting, group in by.items():
        total, exact = len(group), sum(r["exact"] for r in group)
        named = sum(r["uses_name"] for r in group)
        p50, p90 = (quantile([r["seconds"] for r in group], q) for q in (0.5, 0.9))
        ready = [r["ready_s"] for r in group if r["ready_s"] is not None]
        cpu = quantile([r["cpu_s"] for r in group], 0.5)
        back = [r["cpu_back_s"] for r in group if r.get("cpu_back_s") is not None]
        ratio = f"{exact / base_exact:.2f}x" if base_exact else f"{exact} vs 0"
        rows.append(
            f"| {protocol} | {setting} | {exact}/{total} | "
            f"{ratio if setting != base_setting else ''} | {named}/{total} | "
            f"{seconds(p50)} / {seconds(p90)} | "
            f"{times(p50, base_p50) if setting != base_setting else ''} | "
            f"{len(ready)}/{total} | {seconds(quantile(ready, 0.5))} | "
            f"{seconds(cpu)} | {seconds(quantile(back, 0.5)) if back else ''} | "
            f"{statistics.median([r['context_tokens'] for r in group] or [0]):.0f} | "
            f"{sum(r['stop_reason'] == 'first_answer' for r in group)} |"
        )
    return rows


def render(results: list[dict[str, Any]], protocols: list[str], header: str) -> str:
    """The summary per protocol and budget, the exact lines per package, then every line."""
    runs = [run for result in results for run in result["runs"]]
    budgets = settings_of(runs)
    rows = [
        header,
        "",
        f"| protocol | {dimension(budgets)} | exact | against {base_of(budgets)} | name used | "
        f"time p50 / p90 (s) | p50 against {base_of(budgets)} | context in the KV before the ask | readiness p50 (s) | "
        "CPU per focus p50 (s) | CPU, second visit p50 (s) | context tokens p50 | "
        "answered early |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for protocol in protocols:
        rows += summary_rows(protocol, runs)
    packages: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        packages[result["use"]["package"]].append(result)
    rows += [
        "",
        "| package | lines | " + " | ".join(f"{p} {b}" for p in protocols for b in budgets) + " |",
        "|---|---:|" + "---:|" * len(protocols) * len(budgets),
    ]
    for package, group in sorted(packages.items()):
        counts = [
            sum(
                r["exact"]
                for result in group
                for r in result["runs"]
                if r["protocol"] == p and r["setting"] == b
            )
            for p in protocols
            for b in budgets
        ]
        rows.append(f"| {package} | {len(group)} | " + " | ".join(map(str, counts)) + " |")
    rows += [
        "",
        f"Every line: exact (✓) or not (·) at {dimension(budgets)} {' / '.join(budgets)}, per "
        "protocol; "
        f"the readiness (s, at {budgets[0]}; - : not before the ask).",
        "",
        "| # | line | uses | defined in | "
        + " | ".join(f"{p} | ready" for p in protocols)
        + " | expected |",
        "|---:|---|---|---|" + "---|---:|" * len(protocols) + "---|",
    ]
    for n, result in enumerate(results, 1):
        use, cells = result["use"], []
        for p in protocols:
            by = {r["setting"]: r for r in result["runs"] if r["protocol"] == p}
            marks = " / ".join("✓" if by[b]["exact"] else "·" for b in budgets)
            ready = by[budgets[0]]["ready_s"]
            cells.append(f"{marks} | {'-' if ready is None else f'{ready:.1f}'}")
        rows.append(line_row(n, use, cells))
    return "\n".join(rows) + "\n"


def case_parser(doc: str, lines: int, out: str) -> argparse.ArgumentParser:
    """A benchmark's arguments (`doc`: its module's docstring): --lines and --seed (how many
    lines are asked at, and which: cases), the engine's options and --out (the report, in
    bench/results by default)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--lines", type=int, default=lines)
    parser.add_argument("--seed", type=int, default=0)
    engine_options(parser)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / out))
    return parser


def package_versions(chosen: list[Use]) -> str:
    """The packages of the lines `chosen`, each with its version and its lines' count."""
    counts: dict[str, int] = defaultdict(int)
    for use in chosen:
        counts[use.package] += 1
    return ", ".join(f"{name} {package_version(name)} ({counts[name]})" for name in counts)


def main() -> None:
    parser = case_parser(__doc__, LINES, "context-time.md")
    parser.add_argument(
        "--packages",
        nargs="+",
        default=PACKAGES,
        help=f"those with at least {MIN_USES} lines found are asked at",
    )
    parser.add_argument(
        "--protocols",
        default="1,2,3",
        help="of 1 (open, read, ask), 2 (type), 3 (read until quiet, ask), 4 (type at once), "
        "5 (back and forth: the CPU of a focus, first and second visit)",
    )
    parser.add_argument(
        "--budgets",
        default=None,
        help="contextTokens to compare, e.g. 640,320,0 (default: the settings' and 0)",
    )
    parser.add_argument(
        "--guide",
        action="store_true",
        help="compare the guide on and off (contextTokens as set) instead of budgets",
    )
    args = parser.parse_args()
    if args.guide and args.budgets:
        raise SystemExit("--guide compares the guide at the budget set: not with --budgets")
    protocols = [int(p) for p in args.protocols.split(",")]
    if not set(protocols) <= set(PROTOCOLS):
        raise SystemExit(f"--protocols: of {', '.join(map(str, PROTOCOLS))}")
    roots = {name: package_dir(name) for name in args.packages}
    found = {name: uses(root) for name, root in roots.items()}
    chosen = cases(found, args.lines, args.seed)
    log(
        "lines found: "
        + ", ".join(f"{name} {len(lines)}" for name, lines in found.items())
        + f"; at least {MIN_USES}: {', '.join(eligible(found))}; {len(chosen)} chosen"
    )
    engine, extra = loaded_engine(args)
    model = engine.parts.models.target.info.path
    budgets = (
        list(GUIDE)
        if args.guide
        else [
            str(b)
            for b in sorted(
                {
                    int(b)
                    for b in (args.budgets or f"{engine.settings.context_tokens},0").split(",")
                },
                reverse=True,
            )
        ]
    )
    server = Server(engine, engine.settings)
    try:
        results = asyncio.run(ask_all(server, chosen, roots, protocols, budgets))
    finally:
        server.close()
    versions = package_versions(chosen)
    header = (
        f"# Context and time: {machine(model)}\n\n"
        f"`python -m bench.context_time {' '.join(_argv_shown(args))}`; "
        f"{len(results)} lines (per package) of {versions}; settings: {extra or 'defaults'}, "
        f"{dimension(budgets)} {', '.join(budgets)}. Protocols: 1 open, read {READ_S:g} s, "
        f"ask; 2 open, {TYPE_READ_S:g} s, type the line's first characters at "
        f"{KEY_S * 1000:g} ms a key (Automatic requests), the last key's answer; 3 open, read "
        f"until quiet, ask; 4 type from the moment the file opens; 5 open, read until quiet, "
        f"the defining module in view until quiet, the file again until quiet, ask. "
        f"Exact: the line (2: typed text and answer). Time: to the answer (2: from the last "
        f"key). Readiness: from opening the file to its context block in the KV. CPU per "
        f"focus: the process's CPU time (all threads) from opening the file to the ask or the "
        f"first key (5: to quiet); second visit: from the file in view again to quiet. "
        f"Answered early: before the generation ended (Invoked: at its first whole line; "
        f"Automatic: possibly a line's beginning, as the editor shows it)."
    )
    names = [PROTOCOLS[p] for p in protocols]
    report(
        Path(args.out),
        render(results, names, header),
        {"results": results, "settings": extra, "protocols": names, "packages": versions},
    )


def _argv_shown(args: argparse.Namespace) -> list[str]:
    shown = [f"--lines {args.lines}", f"--protocols {args.protocols}"]
    shown += [f"--budgets {args.budgets}"] if args.budgets else []
    shown += ["--guide"] if args.guide else []
    shown += [f"--seed {args.seed}"] if args.seed else []
    shown += [f"--packages {' '.join(args.packages)}"] if args.packages != PACKAGES else []
    shown += [f"--model {args.model}"] if args.model else []
    shown += [f"--setting {s}" for s in args.setting]
    return shown


if __name__ == "__main__":
    main()
