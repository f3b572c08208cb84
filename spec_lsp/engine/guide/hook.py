"""The guide's hook in the decode loop: every row the target verifies is guided first.

A guide (monitor.py) turns the target's row for the token after a text into the
guided row (the logits of tokens that cannot come next at -inf, or lowered). Row i of a round
follows `out + draft[:i]`, so each row is guided for its own text: the draft is verified against
the guided distribution (T = 0 its argmax, T > 0 the masked distribution renormalised), and a
token the guide forbids is never committed, whatever drafted it. The text is the guided
target's; speculation changes only its speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Guide(Protocol):
    def guide(self, logits: np.ndarray, out: Sequence[int]) -> np.ndarray:
        """The row for the token after `out`, guided (or `logits` unchanged)."""
        ...

    def draft(self, out: Sequence[int], limit: int) -> list[int]:
        """Tokens the guide is sure of after `out` (the rest of the only name left)."""
        ...


def first_row(guide: Guide | None, logits: np.ndarray) -> np.ndarray:
    """The prompt's last row guided (where every token is already masked away: unchanged)."""
    if guide is None:
        return logits
    guided = guide.guide(logits, [])
    return guided if np.isfinite(guided).any() else logits


def rows(
    guide: Guide | None, rows: np.ndarray, out: Sequence[int], draft: Sequence[int]
) -> np.ndarray:
    """Each verified row guided for the text it follows (`out` and the draft before it); the
    rows are copied only where one changes."""
    if guide is None:
        return rows
    text, guided = [*out], rows
    for i in range(len(rows)):
        given = rows[i]
        row = guide.guide(given, text)
        if row is not given:
            if guided is rows:
                guided = rows.copy()
            guided[i] = row
        if i < len(draft):
            text.append(draft[i])
    return guided


def certain(guide: Guide | None, out: Sequence[int], limit: int) -> list[int]:
    """The tokens the guide is sure of after `out` (the rest of the only name left), at most
    `limit`; none without a guide."""
    return guide.draft(out, limit) if guide is not None and limit > 0 else []
