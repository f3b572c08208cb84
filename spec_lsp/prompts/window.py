"""The token-budgeted window of text around the cursor.

Whole lines only, so that the window is stable while the user types: the prefix starts at a
line number that is a multiple of SNAP lines and moves only when the budget forces it, so
consecutive keystrokes produce prompts that share their beginning (the KV cache reuses it).
"""

from __future__ import annotations

from collections.abc import Callable

SNAP = 16  # lines


def window(
    prefix: str,
    suffix: str,
    *,
    count_tokens: Callable[[str], int],
    prefix_budget: int,
    suffix_budget: int,
) -> tuple[str, str]:
    return _prefix_window(prefix, count_tokens, prefix_budget), _suffix_window(
        suffix, count_tokens, suffix_budget
    )


def _prefix_window(prefix: str, count: Callable[[str], int], budget: int) -> str:
    lines = prefix.splitlines(keepends=True)
    if not lines:
        return prefix
    if prefix.endswith(("\n", "\r")):
        lines.append("")  # the cursor's (empty) line
    current = lines[-1]
    if count(current) >= budget:
        return _tail_that_fits(current, count, budget)
    # Blocks of SNAP lines counted from the top of the file, so block edges don't move as you type.
    above = lines[:-1]
    first_block = len(above) - (len(above) % SNAP) if len(above) % SNAP else len(above)
    used = count(current) + count("".join(above[first_block:]))
    start = first_block
    while start > 0 and used <= budget:
        block = "".join(above[max(0, start - SNAP) : start])
        cost = count(block)
        if used + cost > budget:
            break
        used += cost
        start = max(0, start - SNAP)
    if used > budget:  # even the partial block does not fit: keep the lines nearest the cursor
        return _tail_lines(above[first_block:], current, count, budget)
    return "".join(above[start:]) + current


def _tail_lines(above: list[str], current: str, count: Callable[[str], int], budget: int) -> str:
    kept: list[str] = []
    used = count(current)
    for line in reversed(above):
        cost = count(line)
        if used + cost > budget:
            break
        kept.insert(0, line)
        used += cost
    return "".join(kept) + current


def _suffix_window(suffix: str, count: Callable[[str], int], budget: int) -> str:
    if budget <= 0 or not suffix:
        return ""
    lines = suffix.splitlines(keepends=True)
    used = 0
    end = 0
    for start in range(0, len(lines), SNAP):
        block = "".join(lines[start : start + SNAP])
        cost = count(block)
        if used + cost > budget:
            break
        used += cost
        end = start + SNAP
    if end == 0:  # the first block alone is too big: line by line, then the first line cut
        kept: list[str] = []
        for line in lines:
            cost = count(line)
            if used + cost > budget:
                break
            kept.append(line)
            used += cost
        if not kept:
            return _head_that_fits(lines[0], count, budget)
        return "".join(kept)
    return "".join(lines[:end])


def _tail_that_fits(text: str, count: Callable[[str], int], budget: int) -> str:
    """The longest end of `text` within budget (binary search over characters)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if count(text[mid:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return text[lo:]


def _head_that_fits(text: str, count: Callable[[str], int], budget: int) -> str:
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]
