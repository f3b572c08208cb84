"""Soak: the real server over stdio while a scripted user edits documents as in an editor.

Not part of the tests (`make soak`: half an hour). The user (`soak_typist`) edits this
repository's Python files key by key: types, backspaces, accepts suggestions, moves the cursor
to other lines, pastes and deletes blocks of lines, switches documents, closes and reopens
them. After each change an Automatic inline completion request follows, and the previous one
of the document, if still open, is cancelled with `$/cancelRequest` (as VS Code does). Pace:
human-like (--keystroke-s, random gaps) or steady (--keys-per-second); it stops after
--minutes or --keys.

    .venv/bin/python -m bench.soak --minutes 30 --drafter auto
    .venv/bin/python -m bench.soak --backend fake --keys-per-second 200 --minutes 2

The server's stderr goes to a file (--stderr, printed). Every --sample-s the RSS of the server
and its children is read, and what the server says it holds (specLsp/stats memory); the report
is a markdown table per period (latency p50/p95 of the answers, outcomes, the requests still
open at its end, the saved KV states) and the totals, also written to --out.

The warm-up lasts until the server's bounded caches are at their steady state: the user visits
every document first, and RSS growth is measured from the first sample at least --warmup-s in
(and in the run's first half) at which the saved KV states fill their pool (with a model each
is ~10-15 MB, four of them more than the growth allowed); the report says which sample that
was, or that the pool never filled (then from --warmup-s).

Exit status 1 (FAILED, each reason printed with the server's stderr around errors) when: the
server died or stopped reading; any answer was an error (printed with its request as it comes;
RequestCancelled for a request the client cancelled is not one); a request was still open
--drain-s after the typing stopped (the server then gets SIGABRT, and its stderr ends with every
thread's stack), or was answered twice; the server's text of a document differs from the
client's (specLsp/document); RSS grew by more than --max-growth-mb from the end of the warm-up
to the end; the engine crashed on a request (the server answers it empty, the
person never sees it: the server's `errors` count) or the server logged an error.

Modules: soak_args (flags), soak_client (JSON-RPC and the ledger of requests), soak_typist
(the user), soak_report (RSS, periods, table, stderr excerpts).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.soak_args import options, parse, server_command, warmup_s
from bench.soak_client import Client, Ledger, clock
from bench.soak_report import (
    HEADER,
    Period,
    Sampler,
    growth_mb,
    percentile,
    row,
    stderr_excerpts,
    table,
    tail,
    warmup_end,
)
from bench.soak_typist import Document, Typist

STALL_S = 10.0  # the server reading nothing of its stdin this long fails the run


class Soak:
    """One run: start the server, type, wait for the last answers, stop it, judge, report."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.stderr = Path(
            args.stderr or ROOT / "bench" / "out" / f"soak-{stamp}-{os.getpid()}.stderr.log"
        )
        self.ledger = Ledger()
        self.failures: list[str] = []
        self.checks: list[asyncio.Future[None]] = []
        self.reads: list[asyncio.Future[None]] = []  # specLsp/stats memory, one per sample
        self.periods: list[Period] = []
        self.stats: dict[str, Any] = {}
        self.note = ""

    async def run(self) -> int:
        args = self.args
        self.stderr.parent.mkdir(parents=True, exist_ok=True)
        command = server_command(args)
        print(f"server: {' '.join(command)}\nserver stderr: {self.stderr}", file=sys.stderr)
        with self.stderr.open("wb") as err:
            self.proc = await asyncio.create_subprocess_exec(
                *command,
                env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # stacks on a crash or SIGABRT
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                limit=2**22,
            )
        self.client = Client(self.proc, self.ledger, time.monotonic())
        self.client.on_error.append(
            lambda r: print(f"ERROR answer {r.error} to {r.describe()}", file=sys.stderr)
        )
        try:
            loaded = await self.client.initialize(options(args), args.load_timeout_s)
            print(f"ready in {loaded:.1f}s", file=sys.stderr)
        except Exception as exc:
            print(f"FAILED: the server did not start: {exc!r}", *tail(self.stderr, 30), sep="\n")
            if self.proc.returncode is None:
                self.proc.kill()
            await self.proc.wait()
            return 1
        self.code = code_version()  # what the server ran: the files as they are now
        rng = random.Random(args.seed)
        files = sorted((ROOT / "spec_lsp").rglob("*.py"))
        chosen = rng.sample(files, min(args.documents, len(files)))
        sources = {f"file:///soak/{p.relative_to(ROOT)}": p.read_text() for p in chosen}
        self.typist = Typist(self.client, sources, rng)
        await self.type(rng)
        await self.finish()
        return self.report()

    def check(self, doc: Document) -> None:
        self.checks.append(asyncio.ensure_future(self.typist.check(doc)))

    async def type(self, rng: random.Random) -> None:
        args, client, proc = self.args, self.client, self.proc
        sampler = Sampler(self.ledger, self.typist, proc.pid)
        client.started = started = time.monotonic()  # t = 0: the first key
        print(HEADER, file=sys.stderr, flush=True)
        self.wall = time.time()
        self.load = [os.getloadavg()[0]]  # other work on the machine slows the answers
        end = started + args.minutes * 60 if args.minutes is not None else math.inf
        next_sample, next_key, keys = args.sample_s, started, 0
        while time.monotonic() < end and (args.keys is None or keys < args.keys):
            if proc.returncode is not None or client.broken:
                self.failures.append(
                    f"the server died at t={client.now():.1f}s (exit status {proc.returncode}, "
                    f"{client.broken or 'stdout open'})"
                )
                break
            self.typist.tick()
            keys += 1
            try:
                await client.flush(STALL_S)
            except (TimeoutError, asyncio.TimeoutError):
                self.failures.append(f"the server read nothing of its stdin for {STALL_S:.0f}s")
                break
            except ConnectionError as exc:
                self.failures.append(f"writing to the server: {exc!r}")
                break
            if args.keys_per_second:  # steady; when behind, on from now rather than a burst
                next_key = max(next_key + 1 / args.keys_per_second, time.monotonic() - 0.1)
                delay = next_key - time.monotonic()
            else:
                delay = rng.expovariate(1 / args.keystroke_s)
            await asyncio.sleep(max(0.0, delay))
            if client.now() >= next_sample:
                self.periods.append(sampler.sample(client.now()))
                print(
                    row(self.periods[-1]), file=sys.stderr, flush=True
                )  # as it goes; the table at the end
                self.check(self.typist.current)
                self.read_held(self.periods[-1])
                next_sample += args.sample_s
        self.typing_s = client.now()
        self.load.append(os.getloadavg()[0])
        if not self.periods or self.typing_s - self.periods[-1].t > 0.5:
            self.periods.append(sampler.sample(self.typing_s))
            self.read_held(self.periods[-1])
        self.backlog = len(self.ledger.open)

    def read_held(self, period: Period) -> None:
        """What the server says it holds at the end of `period` (specLsp/stats memory), read
        without pausing the typing."""
        documents = len(self.typist.docs)

        async def read() -> None:
            with contextlib.suppress(Exception):
                stats = await self.client.call("specLsp/stats", None, 30)
                period.held = stats.get("memory") or {}
                period.steady = pool_full(period.held, documents)

        self.reads.append(asyncio.ensure_future(read()))

    async def finish(self) -> None:
        """Wait for the last answers (and the server's text of every document), then stop it."""
        client, proc = self.client, self.proc
        alive = proc.returncode is None and not client.broken
        if alive:
            for doc in self.typist.docs:
                self.check(doc)
        waited = time.monotonic()
        while self.ledger.open and time.monotonic() - waited < self.args.drain_s:
            if client.broken:
                break
            await asyncio.sleep(0.05)
        self.drained_s = time.monotonic() - waited
        self.left = self.ledger.close(client.now())
        with contextlib.suppress(Exception):  # the last reads of what the server holds
            await asyncio.wait_for(asyncio.gather(*self.reads), 10)
        for check in self.checks + self.reads:
            check.cancel()
        if alive and client.broken:
            self.failures.append(f"the server died after the typing: {client.broken}")
        elif alive:
            with contextlib.suppress(Exception):  # a server that does not answer: none
                self.stats = await client.call("specLsp/stats", None, 30)
            if self.left and self.args.stacks:  # why: every thread's stack, into its stderr
                proc.send_signal(signal.SIGABRT)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), 30)
                self.note = (
                    "requests were left open: the server was sent SIGABRT (after the stats above),"
                    " so its stderr ends with every thread's stack (--no-stacks: not)"
                )
                alive = False  # its exit status is the abort's
            else:
                try:
                    await client.call("shutdown", None, 30)
                    client.notify("exit", None)
                    await asyncio.wait_for(proc.wait(), 30)
                except Exception as exc:
                    self.failures.append(f"the server did not shut down: {exc!r}")
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        elif alive and proc.returncode != 0:
            self.failures.append(f"the server exited with status {proc.returncode}")

    def report(self) -> int:
        args, ledger, keys, periods = self.args, self.ledger, self.typist.keys, self.periods
        failures = self.failures + ledger.failures()
        failures += [f"document differs: {m}" for m in self.typist.mismatches]
        warmup = warmup_s(args)
        index, steady = warmup_end(periods, warmup)
        growth = growth_mb(periods, warmup, index)
        if not growth <= args.max_growth_mb:  # nan fails too
            failures.append(f"RSS grew {growth:+.1f} MB after the warm-up ({args.max_growth_mb})")
        log = tail(self.stderr, 10**9)
        warnings = sum(" WARNING " in line for line in log)
        errors = sum(" ERROR " in line or "Traceback" in line for line in log)
        failures += server_failures(self.stats, errors)
        base = periods[index]
        base.baseline = True
        end = next((p for p in reversed(periods) if p.held), None)
        pace = f"{args.keys_per_second:g} keys/s" if args.keys_per_second else "human pace"
        model = "fake backend" if args.backend == "fake" else (args.model or "default model")
        every = [s for _, s in ledger.latencies]
        rss = [p.rss_mb for p in periods if not math.isnan(p.rss_mb)] or [math.nan]
        cancels = sum(r.cancelled is not None for r in ledger.requests.values())
        answers = ", ".join(f"{k} {ledger.outcomes[k]}" for k in ("items", "empty", "cancelled"))
        lines = [
            f"{model}, drafter {args.drafter}, {len(self.typist.docs)} documents, {pace}, "
            f"seed {args.seed}: typed {self.typing_s:.0f}s from {clock(self.wall)} (t=0)",
            f"- keys: {sum(keys.values())} ({sum(keys.values()) / self.typing_s:.1f}/s): "
            + ", ".join(f"{k} {n}" for k, n in keys.most_common()),
            f"- inline completions: {ledger.sent_inline} sent, $/cancelRequest for {cancels}; "
            f"answers {answers}, error {ledger.outcomes['error']}",
            f"- latency ms (items and empty answers): p50 {percentile(every, 0.5) * 1000:.0f}, "
            f"p95 {percentile(every, 0.95) * 1000:.0f}, p99 {percentile(every, 0.99) * 1000:.0f},"
            f" max {max(every, default=math.nan) * 1000:.0f}",
            f"- open when the typing stopped: {self.backlog}; "
            f"after waiting {self.drained_s:.1f}s: {len(self.left)}",
            f"- warm-up: until t={base.t:.0f}s, "
            + (
                f"the first sample from t={warmup:.0f}s on with the saved KV states filling "
                "their pool"
                if steady
                else f"the first sample from t={warmup:.0f}s on (the saved KV states did not "
                "fill their pool in the run's first half)"
            ),
            f"- RSS MB (server and children): {base.rss_mb:.1f} at the end of the warm-up "
            f"(t={base.t:.0f}s), {rss[-1]:.1f} at the end, max {max(rss):.1f}; "
            f"growth {growth:+.1f} (limit {args.max_growth_mb:g})",
            f"- machine: {os.cpu_count()} CPUs, load average (1 min) {self.load[0]:.1f} when the "
            f"typing started, {self.load[-1]:.1f} when it stopped",
            f"- code: {self.code}",
        ]
        if self.stats:
            keep = ("server_requests", "pending", "latency_ms_p50", "latency_ms_p95")
            shown = {k: self.stats[k] for k in keep if k in self.stats}
            lines.append(f"- server stats: {json.dumps(shown)}")
        if base.held and end is not None and end.held:
            lines.append(f"- held at the end of the warm-up: {held(base.held)}")
            lines.append(f"- held at the end (t={end.t:.0f}s): {held(end.held)}")
            less = end.rss_mb - end.states_mb - (base.rss_mb - base.states_mb)
            lines.append(f"- RSS less the saved KV states: growth {less:+.1f} MB")
        report = "\n".join([table(periods), "", *lines, "", "FAILED" if failures else "OK"])
        print(report)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            title = f"Soak: `python -m bench.soak {' '.join(sys.argv[1:])}`"
            Path(args.out).write_text(f"{title}\n\n{report}\n")
            print(f"report written to {args.out}")
        print(
            f"server stderr: {self.stderr} ({len(log)} lines, {warnings} warnings, {errors} errors)"
        )
        if failures:
            print(f"\nFAILED ({len(failures)}):", *failures[:50], sep="\n- ")
            if len(failures) > 50:
                print(f"... and {len(failures) - 50} more")
            if self.note:
                print(f"\n{self.note}")
            excerpt = stderr_excerpts(self.stderr) or tail(self.stderr, 20)
            print(f"\nserver stderr ({self.stderr}):", *excerpt, sep="\n  ")
        return 1 if failures else 0


def main() -> int:
    return asyncio.run(Soak(parse(description=__doc__.split("\n")[0])).run())


def held(memory: dict[str, Any]) -> str:
    """The server's caches in a line (specLsp/stats memory): where RSS growth may come from."""
    states = memory.get("saved_states", {})
    suggestions = memory.get("suggestions", {})
    continuations = memory.get("continuations", {})
    workspace = memory.get("workspace", {})
    return (
        f"saved KV states {states.get('count')} ({states.get('bytes', 0) / 2**20:.1f} MB), "
        f"suggestions {suggestions.get('entries')} ({suggestions.get('chars')} chars), "
        f"continuations {continuations.get('tokens')} tokens, "
        f"workspace {workspace.get('documents')} documents ({workspace.get('chars')} chars), "
        f"rss {memory.get('rss_mb')} MB"
    )


def code_version() -> str:
    """The commit, and the files of the package that differ from it (the server runs them)."""

    def git(*argv: str) -> str:
        try:
            done = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True)
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=all", "--", "spec_lsp").splitlines()
    if not changed:
        return f"commit {head}"
    return f"commit {head} with {len(changed)} files under spec_lsp/ changed and not committed"


def pool_full(memory: dict[str, Any], documents: int) -> bool:
    """The saved KV states at their steady state: as many as the pool keeps (the current
    document's state is live, not saved), or within one state of its byte bound; or states
    without KV (the fake backend's: tokens only), which nothing waits for."""
    states = memory.get("saved_states") or {}
    count, nbytes = states.get("count", 0), states.get("bytes", 0)
    if count and nbytes / count < 2**20:
        return True
    if count and count >= min(states.get("max_count", 0), documents - 1):
        return True
    return bool(count) and nbytes + nbytes / count > states.get("max_bytes", math.inf)


def server_failures(stats: dict[str, Any] | None, error_lines: int) -> list[str]:
    """What the server hid from the client: requests the engine crashed on (answered empty, so
    the person never sees it: the server's `errors` count), and error lines in its log."""
    failures = []
    crashed = (stats or {}).get("server_requests", {}).get("errors", 0)
    if crashed:
        failures.append(f"the engine crashed on {crashed} requests (answered empty)")
    if error_lines:
        failures.append(f"the server logged {error_lines} error lines")
    return failures


if __name__ == "__main__":
    sys.exit(main())
