"""The text after the cursor as its own free draft source (`suffix`): found in the prompt
whatever the template's order, proposed where the generation re-types it, judged by the ledger
apart from the n-gram lookup, counted per source in the statistics; text at temperature 0
stays plain greedy decoding."""

from __future__ import annotations

import numpy as np

from spec_lsp.engine.decode.speculative import DecodeJob
from spec_lsp.engine.drafters.base import DraftRequest
from spec_lsp.engine.drafters.lookups import SuffixLookup
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.types import DecodeStats, SamplingParams
from spec_lsp.prompts.fim import after_cursor
from tests.unit.test_lookups import decode_with_ledger
from tests.unit.test_speculative import plain_greedy

SPECIAL = {"fim_pre": 90, "fim_suf": 91, "fim_mid": 92, "eos": 93}


def test_the_text_after_the_cursor_is_found_in_either_order() -> None:
    psm = [90, 1, 2, 91, 5, 6, 7, 92, 3]  # prefix, suffix, middle (then the cursor line)
    assert after_cursor(psm, SPECIAL) == [5, 6, 7]
    spm = [91, 5, 6, 90, 1, 2, 92]  # suffix first (Codestral's order)
    assert after_cursor(spm, SPECIAL) == [5, 6]
    assert after_cursor([1, 2, 3], SPECIAL) == [] and after_cursor(psm, {}) == []


def test_the_suffix_proposes_what_follows_the_retyped_text() -> None:
    lookup = SuffixLookup([5, 6, 7, 8, 9])
    request = DraftRequest([1, 2, 6, 7], 2, SamplingParams(), np.random.default_rng(0))
    draft = lookup.draft(request)
    assert draft.tokens == [8, 9] and draft.strength == 2 and draft.source == "suffix"


def test_the_loop_drafts_the_suffix_where_the_generation_retypes_it_and_stays_exact() -> None:
    prompt = [3, 5, 7, 11]
    plain = plain_greedy(prompt, 30)
    # the text after the cursor holds what the target writes (code being moved up)
    job = DecodeJob(prompt, 24, SamplingParams(), frozenset(), suffix=[17, *plain[:20], 19])
    out, stats, ledger = decode_with_ledger(job)
    assert out == plain_greedy(prompt, 24)
    assert "suffix" in {key.split("/")[0] for key in ledger.report()}
    rounds, drafted, accepted = stats.by_source["suffix"]
    assert rounds > 0 and accepted > 0 and accepted <= drafted
    assert ledger.saved_by_source()["suffix"] != 0


def test_the_statistics_count_each_source() -> None:
    totals = EngineTotals()
    for _ in range(2):
        totals.record(DecodeStats(tokens=8, by_source={"suffix": [2, 6, 5], "ngram": [1, 4, 0]}))
    by_source = totals.snapshot()["drafts_by_source"]
    assert by_source["suffix"] == {
        "rounds": 4,
        "drafted": 12,
        "accepted": 10,
        "acceptance_rate": round(10 / 12, 4),
    }
    assert by_source["ngram"]["acceptance_rate"] == 0.0
