"""Source 4: recently edited places of other files, newest first, with a few lines around
them."""

from __future__ import annotations

from collections.abc import Iterator

from spec_lsp.engine.context.source import Candidate, Place, fixed

RECENT_AROUND = 4  # lines shown before and after an edited place
RECENT_MAX_LINES = 32


def candidates(place: Place) -> Iterator[Candidate]:
    for age, (edited, first, last) in enumerate(reversed(place.recent_edits)):
        source = place.text_of(edited)
        lines = source.split("\n") if source is not None else []
        start = max(0, first - RECENT_AROUND)
        end = min(len(lines), max(last, first + 1) + RECENT_AROUND, start + RECENT_MAX_LINES)
        if start < end:
            chunk = "\n".join(lines[start:end])
            variant = (start, end, chunk, [(start, end)])
            yield Candidate(edited, "recent_edit", 1.0 / (1 + age), fixed(variant))
