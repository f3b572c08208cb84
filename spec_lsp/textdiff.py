"""Where two versions of a text differ: the lengths of their common prefix and suffix.

Slices are compared in halving steps: linear work in C, log n steps in Python (a character loop
over a 100 KB file took milliseconds per edit)."""

from __future__ import annotations

from collections.abc import Callable


def common_prefix(a: str, b: str) -> int:
    return _common_length(a, b, min(len(a), len(b)), lambda text, lo, hi: text[lo:hi])


def common_suffix(a: str, b: str) -> int:
    return _common_length(
        a, b, min(len(a), len(b)), lambda text, lo, hi: text[len(text) - hi : -lo or None]
    )


def _common_length(a: str, b: str, most: int, part: Callable[[str, int, int], str]) -> int:
    """The length n <= most of the longest common run that part(text, 0, n) reads."""
    low, high = 0, most  # part(a, 0, low) == part(b, 0, low); none longer than high
    while low < high:
        middle = (low + high + 1) // 2
        if part(a, low, middle) == part(b, low, middle):
            low = middle
        else:
            high = middle - 1
    return low
