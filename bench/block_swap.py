"""A new context block under an evaluated text: its KV moved behind the block, or evaluated again.

What moving the text's KV behind a new context block costs in answers, against evaluating the
block and the text again.

When the file prefix's context block changes under a text already evaluated (another document
changed, and the ranking picks another part), with `kvShift` on the engine evaluates only the
block's new tokens and moves the text's KV behind them (file_prefix `_put_block`, the backend's
`swap_tail`): an approximation, as the text's keys and values were computed after the old block,
and the new block's after the text. With `kvShift` off everything after the change is evaluated
again: exact. Both run at each line, through the Engine's API (no scheduler), the two taking
turns going first from line to line (`turns`):

1. every document closed and the KV emptied (crossfile.cold);
2. the line's file opened (its real URI, the line emptied to its indentation), no tab defining
   the name: it takes the file prefix, and the idle work runs to its end (a block is chosen
   from what is known, likely none, and the text evaluated after it);
3. the defining module's text comes in as another document's (document_changed, not opened:
   the focus stays), and the idle work runs to its end again: the block is chosen anew, with
   the module's parts, and put under the evaluated text. The file prefix's counters before and
   after give the tokens evaluated and moved (`swap`: the block's new tokens evaluated, the
   text moved; `exact`: all of it evaluated, nothing moved);
4. an Invoked request at the line (greedy with the default settings), timed.

Cases: context_time's (cross-file lines of the packages of its PACKAGES in which crossfile.uses
finds at least MIN_USES lines, chosen by crossfile.choose with `--seed`), kept to the lines the
file prefix reaches (`within_reach`: the text above the line within the file prefix's budget
less the largest block), as only there does the answer's prompt start with the swapped KV
(`--anywhere`: all lines). Reported: first lines the same for swap and exact, exact lines
(crossfile.same_line) for each, the tokens evaluated and moved at step 3, the seconds of step 3
and of the answer (p50), and how many answers were laid out from the file prefix with a block.

The results in bench/results/block-swap.md came from

    spec-lsp bench block-swap --lines 20 --setting file_prefix_tokens=1024

(a budget of 1,024 tokens keeps each step short on a 2-core CPU; the block takes up to half).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import log
from bench.context_time import (
    PACKAGES,
    case_parser,
    eligible,
    package_versions,
    quantile,
)
from bench.crossfile import (
    Use,
    choose,
    cold,
    line_row,
    package_dir,
    same_line,
    uses,
)
from bench.places import emptied, loaded_engine, machine, report
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, Engine, SamplingParams
from spec_lsp.engine.toolkit import FilePrefix

LINES = 20
VARIANTS = ("swap", "exact")  # kvShift on, off
MARGIN = 64  # tokens of the block's markers and the template's opening, besides the budgets
MAX_STEPS = 10_000  # idle steps before the work is taken as never ending


@dataclass
class Run:
    """One variant at one line."""

    variant: str
    text: str = ""  # the answer's first line
    exact: bool = False
    block_before: int = 0  # the block's tokens after step 2
    block_after: int = 0  # after step 3
    evaluated: int = 0  # tokens evaluated at step 3
    moved: int = 0  # tokens moved into place at step 3
    open_s: float = 0.0  # step 2's idle work
    swap_s: float = 0.0  # step 3's idle work
    answer_s: float = 0.0
    anchored: bool = False  # the answer's prompt laid out from the file prefix
    prompt_tokens: int = 0
    prompt_evaluated: int = 0
    context_tokens: int = 0
    context_chunks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""


# ---------------------------------------------------------------------------------------------
# The cases


def reach(settings: Settings, n_ctx: int) -> int:
    """Tokens of text above a line for the file prefix to hold it after any block: the budget
    less the largest block (half of it, at most contextTokens) and MARGIN."""
    budget = FilePrefix.budget(settings, n_ctx)
    return max(0, budget - min(settings.context_tokens, budget // 2) - MARGIN)


def within_reach(use: Use, text: str, count: Callable[[str], int], tokens: int) -> bool:
    """The text above the line takes at most `tokens` (a token is rarely over 16 characters:
    a longer text is not tokenized)."""
    above = "\n".join(text.split("\n")[: use.line])
    return len(above) <= tokens * 16 and count(above) <= tokens


def cases(found: dict[str, list[Use]], n: int, seed: int, keep: Callable[[Use], bool]) -> list[Use]:
    """`n` lines of context_time's eligible packages that `keep` keeps (crossfile.choose)."""
    return choose([u for lines in eligible(found).values() for u in lines if keep(u)], n, seed)


def turns(n: int) -> tuple[str, ...]:
    """The variants' order at the `n`th line: swap first at even lines, exact at odd ones."""
    return VARIANTS if n % 2 == 0 else VARIANTS[::-1]


# ---------------------------------------------------------------------------------------------
# One variant


def fresh(engine: Engine, documents: list[str]) -> None:
    """`documents` closed and the KV emptied: the next step comes to an engine that has seen
    nothing."""
    for document in documents:
        engine.document_closed(document)
    cold(engine)


def idle(engine: Engine) -> float:
    """The idle work to its end; its seconds."""
    started = time.perf_counter()
    for _ in range(MAX_STEPS):
        if not engine.idle_work:
            break
        engine.idle_step(CancelToken())
    else:
        log(f"    idle work not done after {MAX_STEPS} steps")
    return time.perf_counter() - started


def run_variant(engine: Engine, settings: Settings, use: Use, root: Path, variant: str) -> Run:
    """Steps 1-4 (the module's docstring) with kvShift on (`swap`) or off (`exact`)."""
    engine.update_settings(settings.model_copy(update={"kv_shift": variant == "swap"}))
    engine.parts.file_prefix.shift_blocks = variant == "swap"  # (off by default: measured here)
    path, tab = root.parent / use.path, root.parent / use.source
    uri, tab_uri = path.as_uri(), tab.as_uri()
    fresh(engine, [uri, tab_uri])
    prefix, suffix, _ = emptied(path.read_text(encoding="utf-8"), use.line)
    whole = prefix + suffix
    engine.document_changed(uri, whole)
    engine.document_opened(
        CompletionRequest("", whole, document_id=uri, file_name=path.name, language="python")
    )
    run = Run(variant, open_s=idle(engine))
    fp = engine.parts.file_prefix
    run.block_before, before = fp.memory()["block_tokens"], fp.report()
    engine.document_changed(tab_uri, tab.read_text(encoding="utf-8"))
    run.swap_s = idle(engine)
    after = fp.report()
    run.block_after = fp.memory()["block_tokens"]
    run.evaluated = after["evaluated"] - before["evaluated"]
    run.moved = after["moved"] - before["moved"]
    request = CompletionRequest(
        prefix,
        suffix,
        document_id=uri,
        file_name=path.name,
        language="python",
        invoked=True,
        max_tokens=settings.max_tokens,
        sampling=SamplingParams.from_settings(settings),
    )
    started = time.perf_counter()
    completion = engine.complete(request, CancelToken())
    run.answer_s = time.perf_counter() - started
    stats = completion.stats
    run.anchored = fp.report()["prompts"] > after["prompts"]
    run.text = completion.text.split("\n")[0]
    run.exact = same_line(run.text, use.expected)
    run.prompt_tokens, run.prompt_evaluated = stats.prompt_tokens, stats.prompt_tokens_evaluated
    run.context_tokens, run.context_chunks = stats.context_tokens, list(stats.context_chunks)
    run.stop_reason = stats.stop_reason
    fresh(engine, [uri, tab_uri])
    return run


def ask_all(
    engine: Engine, settings: Settings, chosen: list[Use], roots: dict[str, Path]
) -> list[dict[str, Any]]:
    """Both variants at every line, their order turning by line; a result per line."""
    results = []
    for n, use in enumerate(chosen):
        runs = {}
        for variant in turns(n):
            run = run_variant(engine, settings, use, roots[use.package], variant)
            runs[variant] = run
            log(
                f"{n + 1:3d} {use.path}:{use.line + 1} {variant}: {'Y' if run.exact else '-'} "
                f"block {run.block_before}->{run.block_after} evaluated {run.evaluated} moved "
                f"{run.moved} in {run.swap_s:.1f}s (open {run.open_s:.1f}s) answer "
                f"{run.answer_s:.1f}s prompt {run.prompt_evaluated}/{run.prompt_tokens} ctx "
                f"{run.context_tokens}{' anchored' if run.anchored else ''}  {run.text[:50]!r}"
            )
        log(f"    expected: {use.expected[:70]}")
        results.append({"use": asdict(use), "runs": [asdict(runs[v]) for v in VARIANTS]})
    return results


# ---------------------------------------------------------------------------------------------
# Reporting


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the table: per variant, and the two variants' first lines compared."""

    def by(variant: str) -> list[dict[str, Any]]:
        return [r for result in results for r in result["runs"] if r["variant"] == variant]

    def p50(runs: list[dict[str, Any]], key: str) -> float | None:
        return quantile([r[key] for r in runs], 0.5)

    same = sum(
        len({r["text"].rstrip() for r in result["runs"]}) == 1 and len(result["runs"]) > 1
        for result in results
    )
    variants = {}
    for variant in VARIANTS:
        runs = by(variant)
        variants[variant] = {
            "exact": sum(r["exact"] for r in runs),
            "from_file_prefix": sum(r["anchored"] and r["context_tokens"] > 0 for r in runs),
            **{
                key: p50(runs, key)
                for key in ("evaluated", "moved", "swap_s", "answer_s", "block_after")
            },
        }
    return {"lines": len(results), "same_first_line": same, "variants": variants}


def number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(results: list[dict[str, Any]], header: str) -> str:
    """The summary per variant, then every line."""
    figures = summary(results)
    total = figures["lines"]
    rows = [
        header,
        "",
        f"First line the same with swap and exact: {figures['same_first_line']}/{total}.",
        "",
        "| variant | exact lines | answers from the file prefix with a block | block tokens "
        "p50 | evaluated p50 | moved p50 | step 3 p50 (s) | answer p50 (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for variant in VARIANTS:
        v = figures["variants"][variant]
        rows.append(
            f"| {variant} | {v['exact']}/{total} | {v['from_file_prefix']}/{total} | "
            f"{number(v['block_after'])} | {number(v['evaluated'])} | {number(v['moved'])} | "
            f"{number(v['swap_s'], 2)} | {number(v['answer_s'], 2)} |"
        )
    rows += [
        "",
        "Every line: exact (✓) or not (·), swap / exact; the same first line (=); step 3's tokens "
        "evaluated + moved, swap / exact.",
        "",
        "| # | line | uses | defined in | exact | same | step 3 tokens | expected |",
        "|---:|---|---|---|---|---|---|---|",
    ]
    for n, result in enumerate(results, 1):
        use = result["use"]
        runs = {r["variant"]: r for r in result["runs"]}
        marks = " / ".join("✓" if runs[v]["exact"] else "·" for v in VARIANTS)
        same = "=" if runs["swap"]["text"].rstrip() == runs["exact"]["text"].rstrip() else "≠"
        tokens = " / ".join(f"{runs[v]['evaluated']}+{runs[v]['moved']}" for v in VARIANTS)
        rows.append(line_row(n, use, [marks, same, tokens]))
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = case_parser(__doc__, LINES, "block-swap.md")
    parser.add_argument(
        "--anywhere",
        action="store_true",
        help="every line found, also those the file prefix does not reach",
    )
    args = parser.parse_args()
    roots = {name: package_dir(name) for name in PACKAGES}
    found = {name: uses(root) for name, root in roots.items()}
    engine, extra = loaded_engine(args)
    settings = engine.settings
    prompts = engine.parts.prompt_builder
    tokens = reach(settings, prompts.target.n_ctx)
    texts: dict[str, str] = {}

    def keep(use: Use) -> bool:
        if args.anywhere:
            return True
        if use.path not in texts:
            file = roots[use.package].parent / use.path
            texts[use.path] = file.read_text(encoding="utf-8")
        return within_reach(use, texts[use.path], prompts.texts.count, tokens)

    chosen = cases(found, args.lines, args.seed, keep)
    log(
        f"packages: {', '.join(eligible(found))}; {len(chosen)} lines chosen"
        + ("" if args.anywhere else f" (at most {tokens} tokens above them)")
    )
    model = engine.parts.models.target.info.path
    try:
        results = ask_all(engine, settings, chosen, roots)
    finally:
        engine.close()
    versions = package_versions(chosen)
    header = (
        f"# A block swapped under an evaluated text: {machine(model)}\n\n"
        f"`spec-lsp bench block-swap {' '.join(_argv_shown(args))}`; {len(results)} lines "
        f"(per package) of {versions}; settings: {extra or 'defaults'}. Per line: the file "
        f"opened, idle work done, the defining module's text in (another document), idle work "
        f"done (step 3: the block chosen anew, put under the text), an Invoked request; swap: "
        f"kvShift on (the block's new tokens evaluated, the text's KV moved behind them), "
        f"exact: off (the block and the text evaluated again). Exact: the answer's first line "
        f"is the line. Answer: seconds of the request."
    )
    report(
        Path(args.out),
        render(results, header),
        {
            "results": results,
            "summary": summary(results),
            "settings": extra,
            "reach_tokens": None if args.anywhere else tokens,
            "packages": versions,
        },
    )


def _argv_shown(args: argparse.Namespace) -> list[str]:
    shown = [f"--lines {args.lines}"]
    shown += [f"--seed {args.seed}"] if args.seed else []
    shown += ["--anywhere"] if args.anywhere else []
    shown += [f"--model {args.model}"] if args.model else []
    shown += [f"--setting {s}" for s in args.setting]
    return shown


if __name__ == "__main__":
    main()
