"""The last suggestion after an edit: its rest is proposed as a free lookup, its own source for
the policy and the ledger; text at temperature 0 stays plain greedy decoding."""

from __future__ import annotations

import numpy as np

from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.drafters import table
from spec_lsp.engine.drafters.base import DraftRequest
from spec_lsp.engine.drafters.lookups import LastSuggestionLookup, StrongestOf, beside
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import AdaptivePolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.policy.realized import RealizedYield
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams
from tests.unit.test_speculative import fake_target, plain_greedy


def _request(context: list[int], n: int = 8) -> DraftRequest:
    return DraftRequest(context, n, SamplingParams(), np.random.default_rng(0))


def test_the_rest_of_the_last_suggestion_is_proposed_after_an_edit() -> None:
    last = [1, 2, 3, 40, 41, 42, 43, 44, 45, 46]  # prompt, then the suggestion 40..46
    edited = [1, 2, 9, 40, 41, 42]  # a token before it changed, its start typed again
    draft = LastSuggestionLookup(last).draft(_request(edited, 3))
    assert draft.tokens == [43, 44, 45] and draft.strength == 3
    assert draft.source == "last_suggestion"
    assert LastSuggestionLookup(last).draft(_request([5, 6, 7])).tokens == []  # no match


def test_the_stronger_match_drafts_and_says_which_source_it_is() -> None:
    last = [7, 8, 50, 51, 52, 53]
    # the prompt holds an occurrence of 51 with less context than the last suggestion's
    context = [30, 51, 99, 7, 8, 50, 51]
    both = StrongestOf([LastSuggestionLookup(last), NgramDrafter()])
    draft = both.draft(_request(context, 2))
    assert draft.tokens == [52, 53] and draft.source == "last_suggestion"
    assert both.name == "ngram" and both.free
    assert beside(None, [LastSuggestionLookup(last)]) is None
    assert beside(NgramDrafter(), []).name == "ngram"
    # a source with nothing to look in is not made (drafters/table.py)
    assert table.beside_sources(table.Kit(last_suggestion=[], suffix=[])) == []


def decode_with_ledger(job: DecodeJob) -> tuple[list[int], DecodeStats, RealizedYield]:
    """`job` through the loop with n-gram drafts, a cheap batch (drafts pay) and a ledger."""
    ledger = RealizedYield()
    stats = DecodeStats()
    out = generate(
        fake_target(),
        NgramDrafter(),
        AdaptivePolicy(
            CostProfile({1: 0.01, 2: 0.0105, 4: 0.011, 8: 0.012, 16: 0.014}),
            estimate=AcceptanceEstimate(0.9),
            draft_max=8,
            ledger=ledger,
        ),
        job,
        cancel=CancelToken(),
        rng=np.random.default_rng(0),
        stats=stats,
    )
    return out, stats, ledger


def test_the_loop_drafts_the_last_suggestion_after_an_edit_and_stays_exact() -> None:
    prompt = [3, 5, 7, 11]
    before = plain_greedy(prompt, 30)
    last = [*prompt, *before]  # the document's last generation
    edited = [3, 6, 7, 11, *before[:3]]  # an edit above, then the suggestion's start typed
    job = DecodeJob(edited, 20, SamplingParams(), frozenset(), continuation=last)
    out, stats, ledger = decode_with_ledger(job)
    assert out == plain_greedy(edited, 20)
    sources = {key.split("/")[0] for key in ledger.report()}
    assert "last_suggestion" in sources and stats.accepted > 0
