"""Source 3: the chunks of open documents most like the text around the cursor (Jaccard
similarity of their identifier sets, over the windows similar_windows keeps), as Copilot's
neighbouring tabs and llama.vim's ring do."""

from __future__ import annotations

from collections.abc import Iterator

from spec_lsp.engine.context.similar_windows import SIMILAR_LINES
from spec_lsp.engine.context.source import Candidate, Place, fixed

SIMILAR_MIN = 0.1  # Jaccard similarity below this: not shown
SIMILAR_MAX = 4  # similar chunks, at most
# the open documents searched for them: the most recently edited or opened (Copilot's neighbouring
# tabs take about as many; with 200 tabs of 2,000 lines open, all of them took 0.2 s a choice)
SIMILAR_DOCUMENTS = 20


def candidates(place: Place) -> Iterator[Candidate]:
    query = set(place.near[0])
    if not query:
        return
    scored = []
    recent = [p for p in place.open_documents if p != place.path][-SIMILAR_DOCUMENTS:]
    for other in sorted(recent):
        for start, words in place.windows.of(other, place.open_documents[other]):
            union = len(query | words)
            score = len(query & words) / union if union else 0.0
            if score >= SIMILAR_MIN:
                scored.append((-score, other, start))
    for negative, other, start in sorted(scored)[:SIMILAR_MAX]:
        lines = place.open_documents[other].split("\n")
        end = min(len(lines), start + SIMILAR_LINES)
        chunk = "\n".join(lines[start:end])
        yield Candidate(other, "similar", -negative, fixed((start, end, chunk, [(start, end)])))
