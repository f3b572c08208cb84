"""Does the typing-friendly prompt layout keep completion quality? Held-out infilling tasks.

Real Python modules (the standard library of the running interpreter), one code line removed,
the cursor after its indentation; greedy completion to the end of the line, exact match. The
same windows go through plain PSM (prefix, suffix, then the middle token) and through the
engine's layout (the cursor line and up to 7 lines above moved after the middle token), and,
with `--file-prefix`, through the layout a place gets from the file prefix (the text before the
cursor from the file prefix's anchor, up to `filePrefixTokens`: engine/local/file_prefix.py). With
`--context`, that layout also after the context block the engine would choose with the modules
the file imports open in tabs (ranking.select, within `contextTokens`): context must not crowd
out or mislead single-file infilling.

    .venv/bin/python -m bench.fim_quality --tasks 24
    .venv/bin/python -m bench.fim_quality --tasks 24 --file-prefix --context
    .venv/bin/python -m bench.fim_quality --model qwen2.5-coder-0.5b  # another target

Each completion is timed (the prompt evaluated, as much of it as the last one did not share,
and the line generated): the median per layout is a model's time to a suggestion at a new place.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sysconfig
import time
from pathlib import Path

from bench.timing import greedy
from spec_lsp.config import Settings
from spec_lsp.engine import Engine, build_engine
from spec_lsp.engine.toolkit import Block, detokenize, split_for_typing
from spec_lsp.prompts import fim, window

MODULES = [
    "textwrap.py",
    "json/decoder.py",
    "csv.py",
    "shlex.py",
    "fractions.py",
    "difflib.py",
    "heapq.py",
    "bisect.py",
]


def tasks(n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """(text before the cursor, text after it, the line removed), shuffled."""
    return [task[1:] for task in named_tasks(n, seed)]


def named_tasks(n: int, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """The tasks with their module's name (textwrap.py)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(seed)
    found = []
    for name in MODULES:
        lines = (root / name).read_text().splitlines(keepends=True)
        candidates = candidate_lines(lines)
        for i in rng.sample(candidates, min(4, len(candidates))):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            found.append(
                (
                    name,
                    "".join(lines[:i]) + indent,
                    "\n" + "".join(lines[i + 1 :]),
                    lines[i].strip(),
                )
            )
    rng.shuffle(found)
    return found[:n]


def candidate_lines(lines: list[str]) -> list[int]:
    """The lines a task may empty, by rule: over 25 characters, after line 20, not a comment,
    a docstring's quotes, a def, a class or a decorator (prose inside docstrings included)."""
    return [
        i
        for i, line in enumerate(lines[20:], 20)
        if len(line.strip()) > 25
        and not line.strip().startswith(("#", '"', "'", "def ", "class ", "@"))
        and '"""' not in line
    ]


def complete(engine: Engine, tokens: list[int]) -> str:
    """The engine's target completing `tokens` greedily, to the end of the line."""
    loaded = engine.parts.models
    target = loaded.target
    out = greedy(target, tokens, 40, loaded.stop_ids, lambda out: "\n" in detokenize(target, out))
    return detokenize(target, out).split("\n")[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--file-prefix", action="store_true", help="also the file prefix layout")
    parser.add_argument(
        "--context",
        action="store_true",
        help="the file prefix layout with and without the context block (no PSM, no split)",
    )
    parser.add_argument(
        "--file-prefix-tokens", type=int, default=Settings().file_prefix_tokens, metavar="N"
    )
    parser.add_argument(
        "--context-tokens", type=int, default=Settings().context_tokens, metavar="N"
    )
    parser.add_argument("--tabs", type=int, default=4, help="imported modules open (--context)")
    parser.add_argument("--model", default=None, help="target: a GGUF or a pulled default's name")
    args = parser.parse_args()
    engine = build_engine(
        Settings(
            model=args.model,
            drafter="none",
            prefix_tokens=256,
            suffix_tokens=96,
            file_prefix_tokens=args.file_prefix_tokens,
            context_tokens=args.context_tokens,
        )
    )
    engine.load()
    loaded = engine.parts.models
    target, template = loaded.target, loaded.template
    count = lambda text: len(target.tokenize(text))  # noqa: E731
    layouts = ["psm", "split"] + (["file_prefix"] if args.file_prefix else [])
    layouts = ["file_prefix", "context"] if args.context else layouts
    scores = dict.fromkeys(layouts, 0)
    seconds: dict[str, list[float]] = {layout: [] for layout in layouts}
    prompts = engine.parts.prompt_builder
    assert prompts is not None
    for n, (name, prefix, suffix, expected) in enumerate(named_tasks(args.tasks), 1):
        # both layouts get the same window; the indentation is left to the model (token healing)
        pre, suf = window.window(
            prefix.rstrip(" \t"), suffix, count_tokens=count, prefix_budget=256, suffix_budget=96
        )
        shown = ""
        for layout in scores:
            if layout in ("file_prefix", "context"):
                tokens, block = file_prefix_tokens(
                    engine, prefix, suffix, name, args.tabs if layout == "context" else -1
                )
                got = complete(engine, tokens)
                scores[layout] += got == expected
                if block is not None:
                    shown = f"  context {prompts.block_tokens(block)} tokens: " + ", ".join(
                        f"{c.path}:{c.start_line + 1}-{c.end_line} ({c.reason})"
                        for c in block.chunks
                    )
                continue
            head, middle = (
                (pre, "")
                if layout == "psm"
                else split_for_typing(pre, lines_before=prefix.count("\n"))
            )
            segments = fim.build_prompt(template, prefix=head, suffix=suf) + [
                fim.Segment(middle, special=False)
            ]
            tokens = [t for s in segments for t in target.tokenize(s.text, special=s.special)]
            started = time.perf_counter()
            got = complete(engine, tokens)
            seconds[layout].append(time.perf_counter() - started)
            scores[layout] += got == expected
        print(f"{n:3d} {scores}   expected: {expected[:60]}{shown}", flush=True)
    total = min(args.tasks, n)
    print(
        f"\nexact single-line matches over {total} held-out lines: "
        + ", ".join(f"{LAYOUTS[layout]} {score}/{total}" for layout, score in scores.items())
        + f" ({target.info.name})"
    )
    for layout, times in seconds.items():
        if times:
            print(f"{LAYOUTS[layout]}: {statistics.median(times):.2f} s p50 a completion")


LAYOUTS = {
    "psm": "PSM",
    "split": "split layout",
    "file_prefix": "file prefix layout",
    "context": "file prefix layout after the context block",
}


def file_prefix_tokens(
    engine: Engine, prefix: str, suffix: str, name: str = "", tabs: int = -1
) -> tuple[list[int], Block | None]:
    """The prompt a place gets from a file prefix anchored for it (the window's suffix and
    split, the text before the cursor from the anchor); with `tabs` >= 0, after the context
    block chosen with that many of the modules the file imports open."""
    from spec_lsp.engine import CompletionRequest
    from spec_lsp.engine.toolkit import FilePrefix, choose_anchor

    loaded, prompts = engine.parts.models, engine.parts.prompt_builder
    assert loaded is not None and prompts is not None
    request = CompletionRequest(prefix, suffix, file_name=name)
    settings = engine.settings
    budget = FilePrefix.budget(settings, loaded.target.n_ctx)
    window_first = prompts.build(request, settings).first_line
    anchor = choose_anchor(prefix, window_first, prompts.texts.count, budget)
    block = None if tabs < 0 else context_block(prefix, suffix, name, anchor, tabs, budget, engine)
    anchored = prompts.build_anchored(request, settings, anchor, budget, block)
    return (anchored or prompts.build(request, settings, block)).tokens, block


def context_block(
    prefix: str, suffix: str, name: str, anchor: int, tabs: int, budget: int, engine: Engine
) -> Block | None:
    """The block the engine's context provider chooses at the cursor (as the in-process stage
    asks it), the modules the file imports open in tabs (closed again after)."""
    from bench.places import imported_modules, stdlib

    prompts, stage = engine.parts.prompt_builder, engine.parts.context
    assert prompts is not None
    text, uri = prefix + suffix, f"file:///bench/{name}"
    tabs_open = [f"file:///bench/{m}" for m in imported_modules(text, tabs)]
    for tab in tabs_open:
        stage.document_changed(tab, stdlib(tab.removeprefix("file:///bench/")), focus=uri)
    stage.document_changed(uri, text, focus=uri)
    stage.parse()
    try:
        return stage.choose(
            uri,
            text,
            len(prefix),
            (anchor, prefix.count("\n") + 1),
            budget=min(engine.settings.context_tokens, budget // 2),
            count_tokens=prompts.texts.count,
        )
    finally:
        for document in [*tabs_open, uri]:
            stage.document_closed(document)


if __name__ == "__main__":
    main()
