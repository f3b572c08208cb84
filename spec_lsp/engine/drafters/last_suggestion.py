"""The last suggestion, after an edit: its tokens as a lookup, free like the n-gram drafter
(`TokensLookup`: a lookup in a fixed run of tokens, which the text after the cursor is too).

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


class TokensLookup(Drafter):
    """A free lookup in a fixed run of tokens: the context's tail is looked up in them, and
    what followed its longest match there (the latest among equals) is proposed, with the
    match's length as its strength, under the lookup's own source name."""

    name = "tokens"
    free = True

    def __init__(self, tokens: Sequence[int], *, min_ngram: int = 2) -> None:
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.min_ngram = min_ngram

    def draft(self, request: DraftRequest) -> Draft:
        tail = np.asarray(request.context[-TAIL:], dtype=np.int64)
        if not len(self.tokens) or not len(tail):
            return Draft([])
        joined = np.concatenate([self.tokens, tail])
        ends, lengths = suffix_matches(joined, REACH)
        inside = ends < len(self.tokens) - 1  # an occurrence in the tokens, with a next token
        ends, lengths = ends[inside], lengths[inside]
        if not len(ends) or int(lengths.max()) < self.min_ngram:
            return Draft([])
        pick = len(ends) - 1 - int(np.argmax(lengths[::-1]))  # the longest match, latest first
        start = int(ends[pick]) + 1
        tokens = self.tokens[start : start + request.max_tokens].tolist()
        return Draft(tokens, strength=int(lengths[pick]), source=self.name)


class LastSuggestionLookup(TokensLookup):
    name = "last_suggestion"


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


def beside(drafter: Drafter | None, *lookups: TokensLookup) -> Drafter | None:
    """The request's drafter with lookups beside it (those with tokens to look in; the first
    wins a tie), where it is a free lookup itself (a draft model or `auto` are left as they
    are)."""
    found = [lookup for lookup in lookups if len(lookup.tokens)]
    if drafter is None or not drafter.free or not found:
        return drafter
    return StrongestOf([*found, drafter])
