"""Free lookups beside the request's drafter, each in a fixed run of tokens (`TokensLookup`,
free like the n-gram drafter); drafters/table.py names them "beside" sources.

- The last suggestion, after an edit (`last_suggestion`). When the prompt still extends the
  document's last generation, the loop drafts its next tokens directly (a near-certain draft).
  After an edit (a word of the suggestion changed, a line of it accepted and another typed), the
  prompt no longer extends it, yet the rest of the suggestion is often what the target writes
  again: the context's tail is looked up in the last generation, and what followed it there is
  proposed, with its match strength.
- The text after the cursor (`suffix`): code being re-typed or moved. A person who retypes a
  line that is still below the cursor, or who completes a call whose arguments follow, makes the
  model write what the prompt already holds after its FIM suffix token. The n-gram lookup finds
  such text too, among all of the prompt; this source looks only there.

Each is a source of its own that the policy sizes, scores and judges (benched alone where it is
wrong). `StrongestOf` puts them beside the request's free drafter: each round, the stronger
match drafts.
"""

from __future__ import annotations

from collections.abc import Sequence

from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.ngram import TokensLookup


class SuffixLookup(TokensLookup):
    name = "suffix"


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
        best: Draft | None = None
        for lookup in self.lookups:
            proposal = lookup.draft(request)
            stronger = best is None or (
                proposal.tokens
                and (not best.tokens or (proposal.strength or 0) > (best.strength or 0))
            )
            if stronger:
                best = proposal if proposal.source else _named(proposal, lookup.name)
        assert best is not None  # (one lookup at least)
        return best


def _named(draft: Draft, source: str) -> Draft:
    draft.source = source
    return draft


def beside(drafter: Drafter | None, lookups: Sequence[Drafter]) -> Drafter | None:
    """The request's drafter with free lookups beside it (drafters/table.py's "beside" sources,
    made for the request; the first wins a tie), where it is a free lookup itself (a draft
    model or `auto` are left as they are)."""
    if drafter is None or not drafter.free or not lookups:
        return drafter
    return StrongestOf([*lookups, drafter])
