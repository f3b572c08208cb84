"""Does the typing-friendly prompt layout keep completion quality? Held-out infilling tasks.

Real Python modules (the standard library of the running interpreter), one code line removed,
the cursor after its indentation; greedy completion to the end of the line, exact match. The
same windows go through plain PSM (prefix, suffix, then the middle token) and through the
engine's layout (the cursor line and up to 7 lines above moved after the middle token), and,
with `--file-prefix`, through the layout a place gets from the file prefix (the text before the
cursor from the file prefix's anchor, up to `filePrefixTokens`: engine/file_prefix.py).

    .venv/bin/python -m spec_lsp.bench.fim_quality --tasks 24
"""

from __future__ import annotations

import argparse
import random
import sysconfig
from pathlib import Path

import numpy as np

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, build_engine
from spec_lsp.engine.backends.base import detokenize
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.engine import Engine
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.prompt import split_for_typing
from spec_lsp.engine.types import DecodeStats, SamplingParams
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
    root = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(seed)
    found = []
    for name in MODULES:
        lines = (root / name).read_text().splitlines(keepends=True)
        candidates = [
            i
            for i, line in enumerate(lines[20:], 20)
            if len(line.strip()) > 25
            and not line.strip().startswith(("#", '"', "'", "def ", "class ", "@"))
            and '"""' not in line
        ]
        for i in rng.sample(candidates, min(4, len(candidates))):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            found.append(
                ("".join(lines[:i]) + indent, "\n" + "".join(lines[i + 1 :]), lines[i].strip())
            )
    rng.shuffle(found)
    return found[:n]


def complete(engine: Engine, tokens: list[int]) -> str:
    """The engine's target completing `tokens` greedily, to the end of the line."""
    loaded = engine.loaded
    assert loaded is not None
    stats = DecodeStats()
    job = DecodeJob(
        tokens,
        40,
        SamplingParams(),
        loaded.stop_ids,
        should_stop=lambda out: "\n" in detokenize(loaded.target, out),
    )
    out = generate(
        loaded.target,
        None,
        FixedPolicy(0),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return detokenize(loaded.target, out).split("\n")[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--file-prefix", action="store_true", help="also the file prefix layout")
    args = parser.parse_args()
    engine = build_engine(Settings(drafter="none", prefix_tokens=256, suffix_tokens=96))
    engine.load()
    loaded = engine.loaded
    assert loaded is not None
    target, template = loaded.target, loaded.template
    count = lambda text: len(target.tokenize(text))  # noqa: E731
    scores = {"psm": 0, "split": 0, **({"file_prefix": 0} if args.file_prefix else {})}
    for n, (prefix, suffix, expected) in enumerate(tasks(args.tasks), 1):
        # both layouts get the same window; the indentation is left to the model (token healing)
        pre, suf = window.window(
            prefix.rstrip(" \t"), suffix, count_tokens=count, prefix_budget=256, suffix_budget=96
        )
        for layout in scores:
            if layout == "file_prefix":
                got = complete(engine, file_prefix_tokens(engine, prefix, suffix))
                scores[layout] += got == expected
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
            got = complete(engine, tokens)
            scores[layout] += got == expected
        print(f"{n:3d} {scores}   expected: {expected[:60]}")
    total = min(args.tasks, n)
    print(
        f"\nexact single-line matches over {total} held-out lines: PSM {scores['psm']}/{total}, "
        f"split layout {scores['split']}/{total}"
        + (f", file prefix layout {scores['file_prefix']}/{total}" if args.file_prefix else "")
    )


def file_prefix_tokens(engine: Engine, prefix: str, suffix: str) -> list[int]:
    """The prompt a place gets from a file prefix anchored for it (the window's suffix and
    split, the text before the cursor from the anchor)."""
    from spec_lsp.engine.file_prefix import FilePrefix, choose_anchor
    from spec_lsp.engine.types import CompletionRequest

    loaded, prompts = engine.loaded, engine.prompts
    assert loaded is not None and prompts is not None
    request = CompletionRequest(prefix, suffix)
    settings = engine.settings
    budget = FilePrefix.budget(settings, loaded.target.n_ctx)
    window_first = prompts.build(request, settings).first_line
    anchor = choose_anchor(prefix, window_first, prompts.count, budget)
    anchored = prompts.build_anchored(request, settings, anchor, budget)
    return (anchored or prompts.build(request, settings)).tokens


if __name__ == "__main__":
    main()
