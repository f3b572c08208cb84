"""`spec-lsp bench retention`: what one retention check costs on the event loop (is accepted text
still there, 30 s and 2 min later: server/acceptance.still_there), rapidfuzz's alignment against
the exact pure-Python dynamic programme it replaced (Sellers: Levenshtein with a free start and
end in the document), timed back to back on the same checks; and whether they agree.

The checks, by a rule: a standard-library module's text (textwrap.py, not this repository's);
every `step`-th line starts an accepted text of NEEDLE_MAX characters, checked three ways: kept
as it was, tweaked (six letters changed), and rewritten (replaced by other lines).
"""

from __future__ import annotations

import argparse
import statistics
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from spec_lsp.server.acceptance import NEEDLE_MAX, WINDOW, distance_in

Check = tuple[str, str, int]  # accepted text, the document now, where it was


def exact_distance_in(needle: str, hay: str) -> int:
    """The least edit distance between `needle` and any stretch of `hay` (the reference)."""
    column = list(range(len(needle) + 1))
    best = column[-1]
    for ch in hay:
        previous_diagonal, column[0] = column[0], 0
        for i, nc in enumerate(needle, 1):
            above = column[i]
            column[i] = min(above + 1, column[i - 1] + 1, previous_diagonal + (nc != ch))
            previous_diagonal = above
        best = min(best, column[-1])
    return best


def checks(cases: int) -> list[tuple[str, Check]]:
    """`cases` places of textwrap.py, each checked kept, tweaked and rewritten."""
    text = Path(textwrap.__file__).read_text()
    starts = [i for i, ch in enumerate(text) if ch == "\n" and 1000 < i < len(text) - 1000]
    step = max(1, len(starts) // cases)
    out: list[tuple[str, Check]] = []
    for start in starts[::step][:cases]:
        at = start + 1
        accepted = text[at : at + NEEDLE_MAX]
        tweaked = text[:at] + accepted.replace("e", "E", 6) + text[at + NEEDLE_MAX :]
        rewritten = text[:at] + "pass\n" * 12 + text[at + NEEDLE_MAX :]
        out += [(kind, (accepted, doc, at)) for kind, doc in (("kept", text), ("tweaked", tweaked))]
        out.append(("rewritten", (accepted, rewritten, at)))
    return out


def timed(distance: Callable[[str, str], int], check: Check) -> tuple[float, bool]:
    """Seconds for one check with `distance`, and its verdict (still there)."""
    accepted, doc, at = check
    started = time.perf_counter()
    hay = doc[max(0, at - WINDOW) : at + len(accepted) + WINDOW]
    there = distance(accepted, hay) <= len(accepted) // 2
    return time.perf_counter() - started, there


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=40, help="places (three checks each)")
    args = parser.parse_args()
    rows = []
    for kind, check in checks(args.cases):
        exact, exact_there = timed(exact_distance_in, check)  # (back to back, same check)
        fast, fast_there = timed(distance_in, check)
        rows.append((kind, exact, fast, exact_there == fast_there, fast_there))
    print("| checks | exact DP ms p50 | rapidfuzz ms p50 | ratio | same verdict | still there |")
    print("|---|---|---|---|---|---|")
    for kind in ("kept", "tweaked", "rewritten", "all"):
        part = [r for r in rows if kind in ("all", r[0])]
        exact_ms = statistics.median(r[1] for r in part) * 1000
        fast_ms = statistics.median(r[2] for r in part) * 1000
        same = sum(r[3] for r in part)
        there = sum(r[4] for r in part)
        print(
            f"| {kind} ({len(part)}) | {exact_ms:.1f} | {fast_ms:.3f} | {exact_ms / fast_ms:.0f}x "
            f"| {same}/{len(part)} | {there}/{len(part)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
