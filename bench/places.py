"""Time to a visible suggestion: places in an open file, and typing with pauses.

What a person waits for, against what they would use instead: plain llama-cpp-python FIM
(`create_completion` on the same FIM prompt and window, same model, one process, stopping at
the end of the line), in the same run, the two taking turns first.

- places: a real Python module open in the editor (the standard library of the running
  interpreter); one line at a time is emptied to its indentation (an edit), the person reads
  for `--read-s`, and asks (Invoked) there, place after place through the file. Reported: time
  to a suggestion for the file's first ask and the later ones, the share of the prompt
  evaluated, and exact matches of the line.
- typing: at a few lines, the first half of the line is typed at `--key-ms` a key as VS Code
  sends it (an edit and an Automatic request a key, the previous request cancelled), then the
  person pauses. Reported: suggestions shown while typing (answered before the next key) and
  the time from the last key to its suggestion.

spec-lsp runs as the language server runs it (bench/in_process.py: its scheduler, the prewarm
of an edited place, idle work while the person reads); plain llama-cpp-python's turns pause it.

    .venv/bin/python -m bench.places [--places 6] [--typing 3] [--files textwrap.py]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import re
import statistics
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.baseline import plain_llama
from bench.common import ROOT, log, write_results
from bench.in_process import Server
from spec_lsp.config import Settings
from spec_lsp.engine import Completion, Engine, build_engine
from spec_lsp.prompts import fim, window

FILES = ["textwrap.py", "shlex.py"]


@dataclass
class Ask:
    file: str
    line: int
    order: int  # 0: the file's first ask
    expected: str
    spec_s: float = 0.0  # to the answer (the server's first answer)
    spec_text: str = ""
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    prompt_s: float = 0.0  # spec-lsp's prompt evaluation
    cache: str = ""  # how spec-lsp's prompt was served (file_prefix: from the file prefix)
    context_tokens: int = 0  # the context block's tokens in spec-lsp's prompt (--tabs)
    context_cached: int = 0  # of them, held in the KV cache when asked
    read_s: float = 0.0  # idle time before the ask (the person reading)
    plain_s: float = 0.0
    plain_text: str = ""


@dataclass
class Typed:
    file: str
    line: int
    keys: int
    shown_while_typing: int = 0
    spec_after_pause_s: float = 0.0
    plain_after_pause_s: float = 0.0
    read_s: float = 0.0  # idle time before typing (the person reading)
    outcomes: list[str] = field(default_factory=list)


def stdlib(name: str) -> str:
    return (Path(sysconfig.get_paths()["stdlib"]) / name).read_text()


def places(text: str, n: int, seed: int) -> list[int]:
    """Code lines worth completing, spread through the file (in file order, then shuffled so
    the person jumps about as one does)."""
    if n <= 0:
        return []
    lines = text.split("\n")
    candidates = [
        i
        for i, line in enumerate(lines[10:], 10)
        if len(line.strip()) > 20
        and not line.strip().startswith(("#", '"', "'", "@"))
        and '"""' not in line
    ]
    step = max(1, len(candidates) // n)
    chosen = candidates[step // 2 :: step][:n]
    random.Random(seed).shuffle(chosen)
    return chosen


def emptied(text: str, line: int, keep: str = "") -> tuple[str, str, str]:
    """(prefix, suffix, expected): `line` emptied to its indentation (plus `keep`, typed)."""
    lines = text.split("\n")
    original = lines[line]
    indent = original[: len(original) - len(original.lstrip())]
    prefix = "\n".join(lines[:line]) + "\n" + indent + keep
    suffix = "\n" + "\n".join(lines[line + 1 :])
    return prefix, suffix, original.strip()


class Plain:
    """Plain llama-cpp-python FIM as a user would write it: our window and template, its
    create_completion, greedy, stopping at the end of the line."""

    def __init__(self, engine: Engine, path: str, settings: Settings) -> None:
        self.template = engine.parts.models.template
        self.settings = settings
        self.model_path = path
        self.llm = plain_llama(
            path, n_ctx=settings.context_size, threads=settings.threads, prompt_lookup=False
        )

    def complete(
        self,
        prefix: str,
        suffix: str,
        *,
        file_name: str = "",
        before: Sequence[fim.Segment] = (),
        max_tokens: int = 64,
        logits_processor: Any = None,
    ) -> tuple[str, float]:
        """(the line, seconds to it); `file_name` as the template places it, `before`: what
        goes in front of the FIM prompt (other files, in the model's repository format);
        `logits_processor`: llama-cpp-python's, called with the tokens so far (the prompt's
        included) and each row of logits."""
        started = time.perf_counter()
        count = lambda text: len(self.llm.tokenize(text.encode(), add_bos=False))  # noqa: E731
        pre, suf = window.window(
            prefix,
            suffix,
            count_tokens=count,
            prefix_budget=self.settings.prefix_tokens,
            suffix_budget=self.settings.suffix_tokens,
        )
        tokens: list[int] = []
        segments = fim.build_prompt(self.template, prefix=pre, suffix=suf, file_name=file_name)
        for segment in [*before, *segments]:
            tokens += self.llm.tokenize(
                segment.text.encode(), add_bos=False, special=segment.special
            )
        out = self.llm.create_completion(
            tokens,
            max_tokens=max_tokens,
            temperature=0.0,
            top_k=1,
            repeat_penalty=1.0,
            stop=["\n"],
            logits_processor=logits_processor,
        )
        return out["choices"][0]["text"], time.perf_counter() - started


def first_line(text: str) -> str:
    return text.split("\n")[0].strip()


def imported_modules(text: str, n: int) -> list[str]:
    """The first `n` standard-library modules the file imports that are single files."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[str] = []
    for match in re.finditer(r"^(?:from|import)[ \t]+([A-Za-z_]\w*)", text, re.M):
        for name in (f"{match.group(1)}.py", f"{match.group(1)}/__init__.py"):
            if name not in found and (root / name).is_file():
                found.append(name)
    return found[:n]


async def run_places(
    server: Server,
    plain: Plain,
    name: str,
    n: int,
    seed: int,
    read_s: float = 0.0,
    tabs: int = 0,
) -> list[Ask]:
    """At each place: the line emptied (an edit), `read_s` of reading, then an Invoked request,
    and plain llama-cpp-python at the same place (the two take turns going first). `tabs`: the
    modules the file imports open in tabs (context for spec-lsp's prompt; plain sees none)."""
    text = stdlib(name)
    uri = f"file:///bench/{read_s:g}/{name}"  # a document of its own per reading time
    for module in imported_modules(text, tabs):
        tab = f"file:///bench/{read_s:g}/{module}"
        server.open(server.request(tab, module, "", stdlib(module)))
    asks = []
    for order, line in enumerate(places(text, n, seed)):
        prefix, suffix, expected = emptied(text, line)
        request = server.request(uri, name, prefix, suffix)
        ask = Ask(name, line + 1, order, expected, read_s=read_s if order else 0.0)
        server.edit(request)
        await server.read(ask.read_s)
        for who in ("spec", "plain") if order % 2 == 0 else ("plain", "spec"):
            if who == "spec":
                completion, ask.spec_s = await server.ask(request)
                if completion is not None:
                    ask.spec_text = completion.text
                    ask.prompt_tokens = completion.stats.prompt_tokens
                    ask.prompt_evaluated = completion.stats.prompt_tokens_evaluated
                    ask.prompt_s = completion.stats.prompt_seconds
                    ask.cache = completion.stats.cache
                    ask.context_tokens = completion.stats.context_tokens
                    ask.context_cached = completion.stats.context_cached_tokens
            else:
                async with server.paused():
                    ask.plain_text, ask.plain_s = plain.complete(prefix, suffix)
        log(
            f"{name}:{ask.line} spec {ask.spec_s:6.2f}s "
            f"(prompt {ask.prompt_evaluated}/{ask.prompt_tokens} in {ask.prompt_s:.2f}s "
            f"{ask.cache}; context {ask.context_cached}/{ask.context_tokens}) "
            f"plain {ask.plain_s:6.2f}s  "
            f"{first_line(ask.spec_text) == expected}/{first_line(ask.plain_text) == expected}"
        )
        asks.append(ask)
    return asks


async def run_typing(
    server: Server,
    plain: Plain,
    name: str,
    n: int,
    key_s: float,
    seed: int,
    read_s: float = 0.0,
) -> list[Typed]:
    """At each line: the line emptied, `read_s` of reading, then its first half typed key by
    key as VS Code sends it (an edit and an Automatic request a key, the previous request
    cancelled with $/cancelRequest). A key's suggestion is shown if answered before the next
    key; the last key's request is the one the person waits for when they pause."""
    text = stdlib(name)
    uri = f"file:///bench/typing/{read_s:g}/{name}"
    results = []
    for line in places(text, n, seed + 1):
        _prefix, _suffix, expected = emptied(text, line)
        half = expected[: max(2, len(expected) // 2)]
        typed = Typed(name, line + 1, len(half), read_s=read_s)
        server.edit(server.request(uri, name, *emptied(text, line)[:2]))
        await server.read(read_s)
        task: asyncio.Task[tuple[Completion | None, float]] | None = None
        for k in range(1, len(half) + 1):
            prefix, suffix, _ = emptied(text, line, half[:k])
            request = server.request(uri, name, prefix, suffix)
            server.edit(request)
            if task is not None and not task.done():
                task.cancel()  # $/cancelRequest
            task = asyncio.ensure_future(server.ask(request, invoked=False))
            await asyncio.sleep(key_s)
            if k < len(half):
                shown = _shown(task)
                typed.outcomes.append("shown" if shown else "-")
                typed.shown_while_typing += shown
        assert task is not None
        completion, typed.spec_after_pause_s = await task  # from the last key
        typed.outcomes.append("pause:" + ("shown" if completion and completion.text else "-"))
        prefix, suffix, _ = emptied(text, line, half)
        async with server.paused():
            _text, typed.plain_after_pause_s = plain.complete(prefix, suffix)
        log(
            f"typing {name}:{typed.line}: shown {typed.shown_while_typing}/{typed.keys - 1} keys; "
            f"after the pause spec {typed.spec_after_pause_s:.2f}s, "
            f"plain {typed.plain_after_pause_s:.2f}s"
        )
        results.append(typed)
    return results


def _shown(task: asyncio.Task[tuple[Completion | None, float]]) -> bool:
    if not task.done() or task.cancelled():
        return False
    completion, _seconds = task.result()
    return completion is not None and bool(completion.text)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)] if ordered else float("nan")


def _context(group: list[Ask]) -> str:
    """The context block's tokens per prompt (mean), and the share the KV cache held."""
    shown = sum(a.context_tokens for a in group)
    if not shown:
        return "0"
    return f"{shown / len(group):.0f} ({sum(a.context_cached for a in group) / shown:.0%})"


def render(asks: list[Ask], typing: list[Typed], header: str) -> str:
    groups = [("a file's first ask", [a for a in asks if a.order == 0])]
    for read_s in sorted({a.read_s for a in asks if a.order > 0}):
        label = f"later places, {'back to back' if not read_s else f'after reading {read_s:g} s'}"
        groups.append((label, [a for a in asks if a.order > 0 and a.read_s == read_s]))
    rows = [
        header,
        "",
        "| asks | n | spec-lsp p50 (s) | p95 | plain p50 (s) | p95 | ratio of p50s | "
        "prompt evaluated | from the file prefix | context tokens a prompt (held) | "
        "exact spec / plain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, group in groups:
        spec = [a.spec_s for a in group]
        plain_ = [a.plain_s for a in group]
        evaluated = sum(a.prompt_evaluated for a in group) / max(
            1, sum(a.prompt_tokens for a in group)
        )
        exact_spec = sum(first_line(a.spec_text) == a.expected for a in group)
        exact_plain = sum(first_line(a.plain_text) == a.expected for a in group)
        rows.append(
            f"| {label} | {len(group)} | {median(spec):.2f} | {p95(spec):.2f} | "
            f"{median(plain_):.2f} | {p95(plain_):.2f} | {median(spec) / median(plain_):.2f}x | "
            f"{evaluated:.0%} | {sum(a.cache == 'file_prefix' for a in group)} | "
            f"{_context(group)} | {exact_spec} / {exact_plain} |"
        )
    if typing:
        rows += [
            "",
            "| typing half a line, then a pause | lines | keys | shown while typing | after "
            "the pause: spec-lsp p50 (s) | plain p50 (s) | ratio |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
    for read_s in sorted({t.read_s for t in typing}):
        lines = [t for t in typing if t.read_s == read_s]
        spec = [t.spec_after_pause_s for t in lines]
        plain_ = [t.plain_after_pause_s for t in lines]
        label = "at once" if not read_s else f"after reading {read_s:g} s"
        rows.append(
            f"| {label} | {len(lines)} | {sum(t.keys for t in lines)} | "
            f"{sum(t.shown_while_typing for t in lines)} | {median(spec):.2f} | "
            f"{median(plain_):.2f} | {median(spec) / median(plain_):.2f}x |"
        )
    return "\n".join(rows) + "\n"


def plot(asks: list[dict[str, Any]], out: Path) -> None:
    """Each ask's time to a suggestion, spec-lsp against plain llama-cpp-python, by reading
    time (points under the diagonal: spec-lsp was faster)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(6, 5))
    groups = [("a file's first ask", [a for a in asks if a["order"] == 0], "o")]
    for read_s in sorted({a["read_s"] for a in asks if a["order"] > 0}):
        label = "later, back to back" if not read_s else f"later, after reading {read_s:g} s"
        groups.append((label, [a for a in asks if a["order"] > 0 and a["read_s"] == read_s], "s"))
    for label, group, marker in groups:
        ax.scatter(
            [a["plain_s"] for a in group], [a["spec_s"] for a in group], label=label, marker=marker
        )
    times = [a["plain_s"] for a in asks] + [a["spec_s"] for a in asks]
    low, top = min(times + [1.0]) / 2, max(times + [1.0]) * 1.5
    ax.plot([low, top], [low, top], color="grey", linewidth=0.8, label="as fast as plain")
    ax.plot(
        [low, top],
        [0.35 * low, 0.35 * top],
        color="grey",
        linewidth=0.8,
        linestyle=":",
        label="0.35x plain",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("plain llama-cpp-python FIM (s)")
    ax.set_ylabel("spec-lsp, to its first answer (s)")
    ax.set_title("time to a suggestion at places in an open file")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="*", default=FILES)
    parser.add_argument("--places", type=int, default=6)
    parser.add_argument("--typing", type=int, default=2, help="lines typed per file")
    parser.add_argument("--key-ms", type=float, default=150.0)
    parser.add_argument(
        "--read-s",
        type=float,
        nargs="*",
        default=[0.0, 15.0],
        help="idle seconds before each later place and each typed line (the person reading); "
        "each value is a run of its own",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tabs",
        type=int,
        default=0,
        help="open up to this many of the standard-library modules each file imports in tabs "
        "(what spec-lsp's context block is chosen from)",
    )
    engine_options(parser)
    parser.add_argument(
        "--no-prewarm",
        action="store_true",
        help="the server without its prewarm of an edited place (to measure what it does)",
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "places.md"))
    args = parser.parse_args()
    engine, plain, extra = with_plain(args)
    model = plain.model_path  # (the engine is closed after the run)
    asks, typing = asyncio.run(
        measure(Server(engine, engine.settings, prewarm=not args.no_prewarm), plain, args)
    )
    digests = ", ".join(
        f"{name} {hashlib.sha256(stdlib(name).encode()).hexdigest()[:12]}" for name in args.files
    )
    header = (
        f"# Time to a suggestion: {machine(model)}\n\n"
        f"`python -m bench.places {' '.join(_argv_shown(args))}`; files (stdlib, "
        f"sha256): {digests}; spec-lsp settings: {extra or 'defaults'}; plain llama-cpp-python: "
        f"the same window and FIM template, create_completion, stop at the line's end."
    )
    out = Path(args.out)
    report(
        out,
        render(asks, typing, header),
        {
            "asks": [asdict(a) for a in asks],
            "typing": [asdict(t) for t in typing],
            "settings": extra,
        },
    )
    plot([asdict(a) for a in asks], out.with_suffix(".png"))


def engine_options(parser: argparse.ArgumentParser) -> None:
    """--model and --setting: the engine spec-lsp runs (plain llama-cpp-python: its model)."""
    parser.add_argument("--model", default=None, help="target GGUF (default: the pulled Qwen)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another engine setting, e.g. answer_budget_ms=0",
    )


def with_plain(args: argparse.Namespace) -> tuple[Engine, Plain, dict[str, Any]]:
    """The engine `engine_options` name, loaded; plain llama-cpp-python on its model; the
    settings given (for the report)."""
    engine, extra = loaded_engine(args)
    return engine, Plain(engine, engine.parts.models.target.info.path, engine.settings), extra


def loaded_engine(args: argparse.Namespace) -> tuple[Engine, dict[str, Any]]:
    """The engine `engine_options` name, loaded; the settings given (for the report)."""
    extra: dict[str, Any] = {}
    for item in args.setting:
        name, _, value = item.partition("=")
        extra[name] = value
    engine = build_engine(Settings(model=args.model, **extra))
    engine.load()
    return engine, extra


def machine(model: str) -> str:
    """The model (its file) and the machine, for a report's title."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{Path(model).name}, {os.cpu_count()} CPUs (load average {load:.1f} at the end)"


def report(out: Path, table: str, raw: dict[str, Any]) -> None:
    """The table to stdout and `out`, the raw results beside it (`.json.gz`)."""
    print(table)
    out.write_text(table)
    write_results(out.with_suffix(".json.gz"), raw)


async def measure(
    server: Server, plain: Plain, args: argparse.Namespace
) -> tuple[list[Ask], list[Typed]]:
    asks: list[Ask] = []
    typing: list[Typed] = []
    try:
        for read_s in args.read_s:
            for name in args.files:
                asks += await run_places(
                    server, plain, name, args.places, args.seed, read_s, args.tabs
                )
                typing += await run_typing(
                    server, plain, name, args.typing, args.key_ms / 1000, args.seed, read_s
                )
    finally:
        server.close()
    return asks, typing


def _argv_shown(args: argparse.Namespace) -> list[str]:
    shown = [f"--places {args.places}", f"--typing {args.typing}"]
    shown += [f"--read-s {' '.join(f'{r:g}' for r in args.read_s)}"]
    shown += [f"--setting {s}" for s in args.setting]
    shown += ["--no-prewarm"] if args.no_prewarm else []
    shown += [f"--tabs {args.tabs}"] if args.tabs else []
    shown += [f"--key-ms {args.key_ms:g}"] if args.key_ms != 150.0 else []
    shown += [f"--files {' '.join(args.files)}"] if args.files != FILES else []
    return shown


if __name__ == "__main__":
    main()
