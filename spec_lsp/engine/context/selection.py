"""Which parts of other files the model is shown, best first, under a token budget.

Each source (source.py: `Place -> candidates`, best first) proposes parts of other files; they
are weighed in this order, each taken whole or not at all (or as a smaller stand-in: an outline,
a head), skipped when it does not fit and the next tried:
1. definitions.py: definitions of the names the file imports but uses nowhere else (the first
   `UNUSED_FIRST`, in import order: what is imported and not yet used is what is about to be,
   and nothing else in the prompt says what it takes), then of the names used around the cursor
   (near_names.py: nearer first), then of the other unused ones. A definition of more than
   `MAX_DEFINITION_LINES` lines (or over half the budget) is shown as its outline (outline.py);
2. import_outlines.py: the files the current one imports (imports.py resolves them), as
   outlines, those whose names are used nearest first;
3. similar_chunks.py: the chunks of open documents most like the text around the cursor;
4. recent_edits.py: recently edited places of other files, newest first.
The candidates for a name about to be used (1.'s first ones, and the outlines of their
modules: the rest of that API beside them) come before all others. A chunk overlapping lines
already shown is dropped, and so is a chunk of the current file overlapping its window (the
prompt shows that already). The same inputs give the same chunks in the same order: the block's
KV is reused only while its text stays the same.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from spec_lsp.engine.context import (
    definitions,
    import_outlines,
    recent_edits,
    similar_chunks,
)
from spec_lsp.engine.context.imports import shared_folders
from spec_lsp.engine.context.source import Candidate, Place, Source, overlaps
from spec_lsp.engine.context.types import ContextChunk
from spec_lsp.engine.context.workspace import Workspace

SOURCES: tuple[Source, ...] = (
    definitions.candidates,
    import_outlines.candidates,
    similar_chunks.candidates,
    recent_edits.candidates,
)
MAX_SHARE = 0.5  # of the budget, one chunk at most (else its outline, else its head)
MAX_CANDIDATES = 64  # chunks weighed for one block, at most (each one's tokens are counted)


def select(
    place: Place,
    *,
    budget: int,
    count_tokens: Callable[[str], int],
    sources: Sequence[Source] = SOURCES,
) -> list[ContextChunk]:
    """The chunks of other files to show before the current one, best first, their tokens
    (count_tokens of each chunk's text) within `budget`."""
    if budget <= 0:
        return []
    chosen: list[ContextChunk] = []
    taken: dict[str, list[tuple[int, int]]] = {place.path: [place.window]}
    left = budget
    for candidate in ranked(place, sources)[:MAX_CANDIDATES]:
        if candidate.path == place.path:  # (its copy on disk may be older than the text edited)
            continue
        variants = candidate.variants(taken.get(candidate.path, []))
        last = len(variants) - 1
        for number, (start, end, chunk, shows) in enumerate(variants):
            if not chunk.strip() or overlaps(shows, taken.get(candidate.path, [])):
                continue
            tokens = count_tokens(chunk)
            if tokens > left or (tokens > budget * MAX_SHARE and number < last):
                continue  # a smaller stand-in may fit
            shown_as = shown_path(candidate.path, place.path, place.workspace)
            score = round(candidate.score, 4)
            chosen.append(
                ContextChunk(shown_as, start, end, chunk, candidate.reason, score, tokens)
            )
            taken.setdefault(candidate.path, []).extend(shows)
            left -= tokens
            break
        if left <= 0:
            break
    return chosen


def ranked(place: Place, sources: Sequence[Source]) -> list[Candidate]:
    """The sources' candidates, each source's in its order, the sources in theirs; those for a
    name about to be used first (a stable sort: in the same orders)."""
    return sorted((c for source in sources for c in source(place)), key=lambda c: not c.soon)


def shown_path(path: str, current: str, workspace: Workspace | None) -> str:
    """The path the block names a file by: relative to the workspace folder, else to the folder
    it shares with the current file (`re/__init__.py` beside `json/decoder.py`, not a bare
    `__init__.py`), else its name."""
    if workspace is not None and workspace.contains(path):
        return workspace.relative(path)
    shared = shared_folders(path, current)
    if shared > 1 or (shared == 1 and not path.startswith("/")):
        return "/".join(path.split("/")[shared:])
    return posixpath.basename(path) or path
