"""The remote engine against the in-process one on the infilling bench: time to a suggestion and
tokens per second, same model, same machine.

The held-out lines of `fim_quality` (its task set: standard-library modules, one line removed,
the cursor after its indentation), each completed by the whole engine (`complete()`: prompt,
decode, post-processing; caches off, single line, at most 40 tokens) twice: in process (plain
decoding: the server has no draft model here either) and through `python -m llama_cpp.server`
started on loopback with the same GGUF and the same threads. The two alternate per task (which
goes first swaps), after one untimed request each. Per engine: the time from `complete()` to
the suggestion (p50, p95), the time to the first token, tokens per second while decoding
(total tokens over total decode time), exact matches with the removed line, and how many
suggestions are the same text as in-process.

    .venv/bin/python -m bench.remote --tasks 16

Writes bench/results/remote.md and the raw runs as bench/results/remote.json.gz.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import ROOT, log, write_results
from bench.fim_quality import tasks
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, Engine, build_engine


def start_server(model: str, port: int, threads: int) -> subprocess.Popen[bytes]:
    """llama-cpp-python's OpenAI-compatible server on loopback; returns once it answers."""
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--verbose",
        "False",
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("llama_cpp.server did not answer within 120 s")


def run_one(engine: Engine, request: CompletionRequest, expected: str) -> dict[str, Any]:
    started = time.perf_counter()
    completion = engine.complete(request, CancelToken())
    seconds = time.perf_counter() - started
    s = completion.stats
    return {
        "seconds": seconds,
        "first_token_seconds": s.first_token_seconds or s.prompt_seconds,
        "tokens": s.tokens,
        "decode_seconds": s.decode_seconds,
        "text": completion.text,
        "exact": completion.text.strip() == expected,
    }


def summary(runs: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, Any]:
    times = sorted(r["seconds"] for r in runs)
    p95 = times[min(len(times) - 1, max(0, round(0.95 * len(times)) - 1))]
    decode = sum(r["decode_seconds"] for r in runs)
    return {
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": p95 * 1000,
        "first_token_p50_ms": statistics.median(r["first_token_seconds"] for r in runs) * 1000,
        "tokens_per_second": sum(r["tokens"] for r in runs) / decode if decode else 0.0,
        "exact": sum(r["exact"] for r in runs),
        "same_text": sum(r["text"] == ref["text"] for r, ref in zip(runs, reference)),
    }


def render(results: dict[str, Any]) -> str:
    head = results["setup"]
    lines = [
        f"# Remote engine vs in-process: {head['model']}, {head['tasks']} infilling tasks\n",
        f"`{head['command']}`; threads {head['threads']} for both; {head['cpus']} CPUs, load "
        f"average {head['load_before']:.2f} before and {head['load_after']:.2f} after.\n",
        "| engine | time to suggestion p50 (ms) | p95 (ms) | first token p50 (ms) | "
        "tokens/s decoding | exact lines | same text as in-process |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("local", "in-process"), ("remote", "remote (llama_cpp.server, loopback)")):
        s = results["summary"][name]
        lines.append(
            f"| {label} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {s['first_token_p50_ms']:.0f} | "
            f"{s['tokens_per_second']:.1f} | {s['exact']}/{head['tasks']} | "
            f"{s['same_text']}/{head['tasks']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--model", help="GGUF (default: the pulled Qwen2.5-Coder-1.5B)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    from spec_lsp.engine.toolkit import DEFAULT_TARGET, default_path

    model = args.model or default_path(DEFAULT_TARGET, "model")
    base = Settings(cache=False, drafter="none", threads=args.threads)
    load_before = os.getloadavg()[0]
    server = start_server(model, args.port, args.threads)
    local = build_engine(base.model_copy(update={"model": model}))
    remote = build_engine(
        base.model_copy(update={"engine": "remote", "remote_url": f"http://127.0.0.1:{args.port}"})
    )
    runs: dict[str, list[dict[str, Any]]] = {"local": [], "remote": []}
    try:
        local.load()
        remote.load()
        chosen = tasks(args.tasks)
        warm = CompletionRequest(prefix="def f(x):\n    ", max_tokens=8, multiline=False)
        for engine in (local, remote):
            engine.complete(warm, CancelToken())
        for i, (prefix, suffix, expected) in enumerate(chosen):
            request = CompletionRequest(
                prefix=prefix,
                suffix=suffix,
                document_id=f"task{i}",
                file_name="module.py",
                max_tokens=40,
                multiline=False,
            )
            order = ("local", "remote") if i % 2 == 0 else ("remote", "local")
            for name in order:
                engine = local if name == "local" else remote
                runs[name].append(run_one(engine, request, expected))
            log(
                f"{i + 1:3d}/{len(chosen)} local {runs['local'][-1]['seconds']:.2f} s, "
                f"remote {runs['remote'][-1]['seconds']:.2f} s"
            )
    finally:
        local.close()
        remote.close()
        server.kill()
    results = {
        "setup": {
            "model": Path(model).name,
            "tasks": len(runs["local"]),
            "threads": args.threads,
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg()[0],
            "command": f".venv/bin/python -m bench.remote --tasks {args.tasks}",
        },
        "summary": {name: summary(r, runs["local"]) for name, r in runs.items()},
        "runs": runs,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_results(out / "remote.json.gz", results)
    table = render(results)
    (out / "remote.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
