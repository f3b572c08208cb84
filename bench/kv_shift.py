"""A changed context block: re-evaluate from the changed chunk on, or shift the KV after it?

The context block sits before the file's text; when one of its chunks changes, the KV of
everything after that chunk (the rest of the block, the file prefix, the window) no longer
matches its positions. Two ways on:

- re-evaluate from the changed chunk on (what spec-lsp does, in idle time): exact;
- evaluate the new chunk only and move the KV after it to its new positions (llama.cpp's
  sequence position shift, `llama_memory_seq_add`: what llama-server's `--cache-reuse` does
  with the runs it finds again): cheap, but that KV was computed after the old chunk, so the
  model reads an approximation.

Measured with llama.cpp's own implementation of both, llama-server (`make llama-server`), on the
same prompts: per case, the prompt with the old block is evaluated (kept in the server's cache),
then the prompt with the changed block is completed twice, once with reuse by shifting
(`n_cache_reuse`, chunks of at least `--reuse` tokens) and once without (only the common prefix
reused: re-evaluation from the changed chunk on). Reported: tokens evaluated and time for each,
and whether the greedy completions are the same text.

Prompts: Qwen2.5-Coder's repository format; the block is three chunks of other standard-library
modules (14 lines each), the file's text (its first 40-70 lines) ends at a line start, and the
change drops the first or the last chunk from the block. (llama-server's reuse moves cached runs
back to where the new prompt has them; a chunk replaced by another is new text in the middle,
which it does not evaluate into a gap: after a replacement it reuses nothing past the common
prefix, so a replacement cannot be measured this way.) The server keeps no prompts in RAM
(`--cache-ram 0`): it would hand the whole changed prompt back from there.

`--in-process` measures spec-lsp's own shift (`kvShift`: backends/base.py `moved_runs`, the
backend's `move_back`) on the same cases, through the engine's backend and its `sync`, against
re-evaluation from the change on (`kvShift` off; plain llama-cpp-python's prefix cache does the
same); each completion greedy, through the engine's decoding loop without a drafter.

    .venv/bin/python -m bench.kv_shift --cases 6     # bench/results/kv-shift.md
    .venv/bin/python -m bench.kv_shift --cases 6 --in-process   # kv-shift-in-process.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sysconfig
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import ROOT, log, write_results
from bench.llama_server import DEFAULT_BINARY, LlamaServerProcess

MODULES = ["textwrap.py", "shlex.py", "bisect.py", "heapq.py", "fractions.py", "difflib.py"]
CHUNK_LINES = 14


def stdlib_lines(name: str) -> list[str]:
    return (Path(sysconfig.get_paths()["stdlib"]) / name).read_text().splitlines(keepends=True)


def chunk(name: str, rng: random.Random) -> tuple[str, str]:
    lines = stdlib_lines(name)
    start = rng.randrange(20, max(21, len(lines) - CHUNK_LINES))
    return name, "".join(lines[start : start + CHUNK_LINES])


def prompt(block: list[tuple[str, str]], file: str, prefix: str) -> str:
    parts = ["<|repo_name|>stdlib\n"]
    parts += [f"<|file_sep|>{path}\n{text}" for path, text in block]
    parts.append(f"<|file_sep|>{file}\n{prefix}")
    return "".join(parts)


def cases(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    found = []
    for i in range(n):
        names = rng.sample(MODULES, 5)
        file, others = names[0], names[1:]
        lines = stdlib_lines(file)
        cut = rng.randrange(40, min(len(lines) - 1, 70))
        while cut < len(lines) - 1 and not lines[cut].startswith("    "):
            cut += 1
        indent = lines[cut][: len(lines[cut]) - len(lines[cut].lstrip())]
        prefix = "".join(lines[:cut]) + indent
        block = [chunk(name, rng) for name in others[:3]]
        where = 0 if i % 2 == 0 else len(block) - 1  # the first chunk or the last
        changed = block[:where] + block[where + 1 :]  # dropped from the block
        found.append(
            {
                "file": file,
                "line": cut + 1,
                "changed": "first" if where == 0 else "last",
                "before": prompt(block, file, prefix),
                "after": prompt(changed, file, prefix),
            }
        )
    return found


def complete(url: str, text: str, *, reuse: int, n_predict: int) -> dict[str, Any]:
    body = {
        "prompt": text,
        "n_predict": n_predict,
        "temperature": 0,
        "cache_prompt": True,
        "n_cache_reuse": reuse,
        "stop": ["\n\n"],
    }
    request = urllib.request.Request(
        f"{url}/completion",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        data = json.loads(response.read())
    timings = data.get("timings", {})
    return {
        "seconds": time.perf_counter() - started,
        "evaluated": timings.get("prompt_n", 0),
        "cached": timings.get("cache_n", 0),
        "prompt_ms": timings.get("prompt_ms", 0.0),
        "text": data.get("content", ""),
    }


def compared(row: dict[str, Any], label: str) -> dict[str, Any]:
    """The row with whether the two completions agree (logged)."""
    row["same"] = row["shift"]["text"] == row["reevaluate"]["text"]
    first = [row[v]["text"].split("\n")[0].strip() for v in ("shift", "reevaluate")]
    row["same_first_line"] = first[0] == first[1]
    again, moved = row["reevaluate"], row["shift"]
    log(
        f"{label} {row['file']}:{row['line']} ({row['changed']} chunk): re-evaluate "
        f"{again['evaluated']} tokens {again['prompt_ms']:.0f} ms, shift {moved['evaluated']} "
        f"tokens {moved['prompt_ms']:.0f} ms; same text {row['same']}"
    )
    return row


def run(url: str, chosen: list[dict[str, Any]], reuse: int, n_predict: int) -> list[dict]:
    results = []
    for i, case in enumerate(chosen):
        row: dict[str, Any] = {k: case[k] for k in ("file", "line", "changed")}
        for variant, chunk_reuse in (("reevaluate", 0), ("shift", reuse)):
            complete(url, case["before"], reuse=0, n_predict=1)  # the old block, cached
            row[variant] = complete(url, case["after"], reuse=chunk_reuse, n_predict=n_predict)
        results.append(compared(row, f"case {i + 1}/{len(chosen)}"))
    return results


def run_in_process(
    model_path: str, chosen: list[dict[str, Any]], reuse: int, n_predict: int, threads: int
) -> list[dict]:
    """The same cases through spec-lsp's backend: `sync` to the old block's prompt, then to the
    changed one, with the shift on (`reuse`) and off; then a greedy completion."""
    from bench.timing import greedy
    from spec_lsp.engine.toolkit import detokenize, llama_model, sync

    model = llama_model(model_path, n_ctx=4096, threads=threads)
    stop = model.tokenize("\n\n")
    results = []
    try:
        for i, case in enumerate(chosen):
            row: dict[str, Any] = {k: case[k] for k in ("file", "line", "changed")}
            before = model.tokenize(case["before"], special=True)
            after = model.tokenize(case["after"], special=True)
            for variant, shift in (("reevaluate", 0), ("shift", reuse)):
                model.truncate(0)
                model.shift_min = 0
                sync(model, before)  # the old block's prompt, cached
                model.shift_min = shift
                started = time.perf_counter()
                _logits, evaluated = sync(model, after)
                prompt_ms = (time.perf_counter() - started) * 1000
                out = greedy(
                    model,
                    after,
                    n_predict,
                    model.info.stop_ids,
                    lambda out: out[-len(stop) :] == stop,
                )
                text = detokenize(model, out).split("\n\n")[0]
                row[variant] = {
                    "seconds": time.perf_counter() - started,
                    "evaluated": evaluated,
                    "cached": len(after) - evaluated,
                    "prompt_ms": prompt_ms,
                    "text": text,
                }
            results.append(compared(row, f"case {i + 1}/{len(chosen)}"))
    finally:
        model.close()
    return results


def render(rows: list[dict[str, Any]], head: dict[str, Any]) -> str:
    lines = [
        f"# A chunk dropped from the context block: re-evaluate or shift the KV: {head['model']}\n",
        f"`{head['command']}`; {head['server']}, {head['cpus']} CPUs, threads "
        f"{head['threads']}; load average {head['load_after']:.1f} at the end.\n",
        "| chunk dropped | cases | re-evaluate: tokens, prompt ms (p50) | shift: tokens, "
        "prompt ms (p50) | shift / re-evaluate time | same completion | same first line |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label in ("first", "last", "all"):
        group = [r for r in rows if label in ("all", r["changed"])]
        if not group:
            continue
        re_ms = statistics.median(r["reevaluate"]["prompt_ms"] for r in group)
        sh_ms = statistics.median(r["shift"]["prompt_ms"] for r in group)
        lines.append(
            f"| {label} | {len(group)} | "
            f"{statistics.median(r['reevaluate']['evaluated'] for r in group):.0f}, "
            f"{re_ms:.0f} | {statistics.median(r['shift']['evaluated'] for r in group):.0f}, "
            f"{sh_ms:.0f} | {sh_ms / re_ms:.2f}x | {sum(r['same'] for r in group)}/{len(group)}"
            f" | {sum(r['same_first_line'] for r in group)}/{len(group)} |"
        )
    lines.append("\n| case | chunk | re-evaluated text | shifted text |\n|---|---|---|---|")
    for r in rows:
        texts = [
            r[v]["text"].split("\n")[0].strip().replace("|", "\\|") for v in ("reevaluate", "shift")
        ]
        lines.append(f"| {r['file']}:{r['line']} | {r['changed']} | `{texts[0]}` | `{texts[1]}` |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(DEFAULT_BINARY))
    parser.add_argument("--model", help="GGUF (default: the pulled Qwen2.5-Coder-1.5B)")
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--reuse", type=int, default=64, help="shortest chunk reused by a shift")
    parser.add_argument("--n-predict", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--port", type=int, default=18438)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="spec-lsp's own shift (kvShift) instead of llama-server's",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    from spec_lsp.engine.toolkit import DEFAULT_TARGET, default_path

    model = args.model or default_path(DEFAULT_TARGET, "model")
    name = "kv-shift-in-process.md" if args.in_process else "kv-shift.md"
    out = Path(args.out or ROOT / "bench" / "results" / name)
    command = f"python -m bench.kv_shift --cases {args.cases} --reuse {args.reuse}"
    if args.in_process:
        chosen = cases(args.cases, args.seed)
        rows = run_in_process(str(model), chosen, args.reuse, args.n_predict, args.threads)
        engine = "spec-lsp's backend (llama-cpp-python 0.3.36)"
        report(out, rows, engine, Path(model).name, args.threads, command + " --in-process")
        return
    binary = Path(args.binary)
    if not binary.is_file():
        raise SystemExit(f"no llama-server at {binary}: build it with `make llama-server`")
    # (no prompt cache in RAM: it would hand the changed block's prompt back whole)
    server = LlamaServerProcess(binary, str(model), args.port, args.threads, "--cache-ram", "0")
    server.restart()
    try:
        rows = run(server.url, cases(args.cases, args.seed), args.reuse, args.n_predict)
    finally:
        server.stop()
    engine = f"llama-server ({server.version()})"
    report(out, rows, engine, Path(model).name, args.threads, command)


def report(
    out: Path, rows: list[dict[str, Any]], engine: str, model: str, threads: int, command: str
) -> None:
    head = {
        "model": model,
        "server": engine,
        "cpus": os.cpu_count(),
        "threads": threads,
        "load_after": os.getloadavg()[0],
        "command": command,
    }
    write_results(out.with_suffix(".json.gz"), {"setup": head, "rows": rows})
    text = render(rows, head)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
