"""The last suggestion, after an edit: its tokens as a lookup, free like the n-gram drafter.

When the prompt still extends the document's last generation, the loop drafts its next tokens
directly (a near-certain draft). After an edit (a word of the suggestion changed, a line of it
accepted and another typed), the prompt no longer extends it, yet the rest of the suggestion is
often what the target writes again: the context's tail is looked up in the last generation, and
what followed it there is proposed, with its match strength, as its own source
(`last_suggestion`) that the policy sizes, scores and judges like any other.
`StrongestOf` puts it beside the request's free drafter: each round, the stronger match drafts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.ngram import REACH, suffix_matches

TAIL = 64  # context tokens compared with the last generation


class LastSuggestionLookup(Drafter):
    name = "last_suggestion"
    free = True

    def __init__(self, last: Sequence[int], *, min_ngram: int = 2) -> None:
        self.last = np.asarray(last, dtype=np.int64)
        self.min_ngram = min_ngram

    def draft(self, request: DraftRequest) -> Draft:
        tail = np.asarray(request.context[-TAIL:], dtype=np.int64)
        if not len(self.last) or not len(tail):
            return Draft([])
        joined = np.concatenate([self.last, tail])
        ends, lengths = suffix_matches(joined, REACH)
        inside = (
            ends < len(self.last) - 1
        )  # an occurrence in the last generation, with a next token
        ends, lengths = ends[inside], lengths[inside]
        if not len(ends) or int(lengths.max()) < self.min_ngram:
            return Draft([])
        pick = len(ends) - 1 - int(np.argmax(lengths[::-1]))  # the longest match, latest first
        start = int(ends[pick]) + 1
        tokens = self.last[start : start + request.max_tokens].tolist()
        return Draft(tokens, strength=int(lengths[pick]), source=self.name)


class StrongestOf(Drafter):
    """Free lookups side by side: each round, the proposal with the strongest match (the first
    source among equals), named by its source."""

    free = True

    def __init__(self, lookups: Sequence[Drafter]) -> None:
        self.lookups = list(lookups)
        self.name = self.lookups[-1].name

    def draft(self, request: DraftRequest) -> Draft:
        best = Draft([])
        for lookup in self.lookups:
            proposal = lookup.draft(request)
            if proposal.tokens and (proposal.strength or 0) > (best.strength or 0):
                best = proposal if proposal.source else _named(proposal, lookup.name)
        return best


def _named(draft: Draft, source: str) -> Draft:
    draft.source = source
    return draft


def beside(drafter: Drafter | None, last: Sequence[int]) -> Drafter | None:
    """The request's drafter with the last generation's lookup beside it, where both are free
    lookups (a draft model or `auto` are left as they are)."""
    if drafter is None or not drafter.free or not last:
        return drafter
    return StrongestOf([LastSuggestionLookup(last), drafter])
