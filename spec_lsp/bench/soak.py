"""Soak: the real server over stdio for --minutes, a scripted user typing into documents.

Not part of the tests (it takes half an hour by default). The user types this repository's own
Python files character by character (a completion request after every keystroke, as editors
do), accepts some suggestions whole, deletes now and then, switches between documents, and
closes and reopens them. RSS of the server is sampled every --sample-s seconds; at the end a
table of RSS and answer latency per sample period, and the totals, are printed.

    .venv/bin/python -m spec_lsp.bench.soak --minutes 30 --model ~/.cache/spec-lsp/models/...gguf

Exit status 1 when the server died, a request went unanswered or was answered twice, or the
RSS grew by more than --max-growth-mb between the end of the first period and the end.
Longer than 300 lines: the JSON-RPC client, the scripted typist and the report of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from spec_lsp.bench.common import ROOT


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# an answer as it came (a JSON-RPC message) and the seconds it took
Answer = tuple[dict[str, Any], float]


class Server:
    """JSON-RPC over the server's stdio, counting answers per id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.pending: dict[int, tuple[float, asyncio.Future[Answer]]] = {}
        self.duplicates = 0
        self.reader = asyncio.ensure_future(self._read())

    def _write(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> asyncio.Future[Answer]:
        self.next_id += 1
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = (time.monotonic(), future)
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return future

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        answered: set[int] = set()
        while True:
            length = 0
            while (line := (await stdout.readline()).strip()) != b"":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not length:
                return
            msg = json.loads(await stdout.readexactly(length))
            if "method" in msg:
                if "id" in msg:  # a request from the server: answer it (nothing to configure)
                    self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            if msg.get("id") in answered:
                self.duplicates += 1
                continue
            answered.add(msg["id"])
            sent, future = self.pending.pop(msg["id"], (0.0, None))
            if future is not None and not future.done():
                future.set_result((msg, time.monotonic() - sent))


class Document:
    """A file being typed: the text so far, its cursor at the end of it."""

    def __init__(self, uri: str, source: str, rng: random.Random) -> None:
        self.uri, self.source, self.rng = uri, source, rng
        self.typed = len(source) * 2 // 5
        self.version = 1

    @property
    def text(self) -> str:
        return self.source[: self.typed]

    def cursor(self) -> dict[str, int]:
        text = self.text
        return {"line": text.count("\n"), "character": len(text) - text.rfind("\n") - 1}

    def change(self, server: Server, start: dict[str, int], text: str) -> None:
        self.version += 1
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [{"range": {"start": start, "end": self.cursor()}, "text": text}],
            },
        )


class Typist:
    def __init__(self, server: Server, files: list[Path], rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.docs = [
            Document(f"file:///soak/{p.name}", p.read_text(), rng)
            for p in files
            if p.stat().st_size
        ]
        self.latencies: list[tuple[float, float]] = []  # (when answered, seconds)
        self.outcomes = {"items": 0, "empty": 0, "error": 0}
        self.current = self.docs[0]
        for doc in self.docs:
            self.open(doc)

    def open(self, doc: Document) -> None:
        item = {"uri": doc.uri, "languageId": "python", "version": doc.version, "text": doc.text}
        self.server.notify("textDocument/didOpen", {"textDocument": item})

    async def keystroke(self) -> None:
        rng, doc, server = self.rng, self.current, self.server
        roll = rng.random()
        if roll < 0.02:  # switch documents
            self.current = rng.choice(self.docs)
            return
        if roll < 0.025:  # close and reopen
            server.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
            doc.version = 1
            self.open(doc)
            return
        before = doc.cursor()
        if roll < 0.08 and doc.typed > 0:  # backspace
            doc.typed -= 1
            doc.version += 1
            server.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": doc.uri, "version": doc.version},
                    "contentChanges": [
                        {"range": {"start": doc.cursor(), "end": before}, "text": ""}
                    ],
                },
            )
            return
        if doc.typed >= len(doc.source):  # done: start over from 40 %
            doc.typed = len(doc.source) * 2 // 5
            doc.version += 1
            server.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": doc.uri, "version": doc.version},
                    "contentChanges": [{"text": doc.text}],
                },
            )
            return
        doc.typed += 1
        doc.version += 1
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": doc.uri, "version": doc.version},
                "contentChanges": [
                    {"range": {"start": before, "end": before}, "text": doc.source[doc.typed - 1]}
                ],
            },
        )
        params = {
            "textDocument": {"uri": doc.uri},
            "position": doc.cursor(),
            "context": {"triggerKind": 2},
        }
        asyncio.ensure_future(self._answer(server.request("textDocument/inlineCompletion", params)))

    async def _answer(self, future: asyncio.Future[Answer]) -> None:
        msg, seconds = await future
        if "error" in msg:
            self.outcomes["error"] += 1
            return
        items = (msg.get("result") or {}).get("items") or []
        self.outcomes["items" if items else "empty"] += 1
        self.latencies.append((time.monotonic(), seconds))
        if items and self.rng.random() < 0.3:  # accept: type what matches the file at once
            doc = self.current
            suggestion = items[0]["insertText"]
            rest = doc.source[doc.typed :]
            n = next((i for i, (a, b) in enumerate(zip(suggestion, rest)) if a != b), None)
            n = min(len(suggestion), len(rest)) if n is None else n
            if n:
                before = doc.cursor()
                doc.typed += n
                doc.version += 1
                self.server.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": doc.uri, "version": doc.version},
                        "contentChanges": [
                            {"range": {"start": before, "end": before}, "text": rest[:n]}
                        ],
                    },
                )


async def soak(args: argparse.Namespace) -> int:
    command = [sys.executable, "-m", "spec_lsp.cli", "serve", "--model", args.model]
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=2**22,
    )
    server = Server(proc)
    rng = random.Random(args.seed)
    options = {"drafter": args.drafter, "maxTokens": args.max_tokens}
    if args.draft_model:
        options["draftModel"] = args.draft_model
    await server.request("initialize", {"capabilities": {}, "initializationOptions": options})
    server.notify("initialized", {})
    loaded = time.monotonic()
    while not (await server.request("specLsp/stats", None))[0]["result"]["ready"]:
        await asyncio.sleep(0.2)
    print(f"model ready in {time.monotonic() - loaded:.1f}s", file=sys.stderr)
    files = sorted((ROOT / "spec_lsp").rglob("*.py"))
    typist = Typist(server, rng.sample(files, min(args.documents, len(files))), rng)

    started = time.monotonic()
    end = started + args.minutes * 60
    samples: list[tuple[float, float, int, float, float]] = []
    next_sample, last_count = started + args.sample_s, 0
    while time.monotonic() < end and proc.returncode is None:
        await typist.keystroke()
        await asyncio.sleep(rng.expovariate(1 / args.keystroke_s))
        if time.monotonic() >= next_sample:
            period = [s for t, s in typist.latencies[last_count:]]
            last_count = len(typist.latencies)
            samples.append(
                (
                    time.monotonic() - started,
                    rss_mb(proc.pid),
                    len(period),
                    percentile(period, 0.5) * 1000,
                    percentile(period, 0.95) * 1000,
                )
            )
            next_sample += args.sample_s
    alive = proc.returncode is None
    await asyncio.sleep(3)  # the last answers
    unanswered = sum(1 for _, f in server.pending.values() if not f.done())
    stats = (await server.request("specLsp/stats", None))[0]["result"] if alive else {}
    if alive:
        await server.request("shutdown", None)
        server.notify("exit", None)
        await asyncio.wait_for(proc.wait(), 30)

    print(f"{'t (s)':>8} {'RSS MB':>8} {'answers':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for t, rss, n, p50, p95 in samples:
        print(f"{t:8.0f} {rss:8.1f} {n:8d} {p50:8.0f} {p95:8.0f}")
    everything = [s for _, s in typist.latencies]
    rss_values = [s[1] for s in samples]
    growth = rss_values[-1] - rss_values[0] if rss_values else float("nan")
    print(
        f"\n{args.minutes:g} min, {len(typist.docs)} documents: {server.next_id} requests, "
        f"answers {typist.outcomes}, unanswered {unanswered}, answered twice {server.duplicates}"
    )
    print(
        f"latency ms: p50 {percentile(everything, 0.5) * 1000:.0f}, "
        f"p95 {percentile(everything, 0.95) * 1000:.0f}, "
        f"p99 {percentile(everything, 0.99) * 1000:.0f}, max {max(everything, default=0) * 1000:.0f}"
    )
    if rss_values:
        print(
            f"RSS MB: first sample {rss_values[0]:.1f}, last {rss_values[-1]:.1f}, "
            f"max {max(rss_values):.1f}, growth {growth:+.1f}"
        )
    if stats:
        keep = ("server_requests", "pending", "latency_ms_p50", "latency_ms_p95", "acceptance")
        print("server stats:", json.dumps({k: stats.get(k) for k in keep}))
    ok = alive and unanswered == 0 and server.duplicates == 0 and growth <= args.max_growth_mb
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--model", required=True, help="target GGUF")
    parser.add_argument("--draft-model", default=None)
    parser.add_argument("--drafter", default="ngram")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--documents", type=int, default=5)
    parser.add_argument("--sample-s", type=float, default=10.0, help="RSS sampling period")
    parser.add_argument("--keystroke-s", type=float, default=0.15, help="mean time per key")
    parser.add_argument("--max-growth-mb", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=0)
    return asyncio.run(soak(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
