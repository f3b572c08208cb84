"""Prompt lookup: the n-gram drafter (free: it copies what followed an earlier occurrence)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest


class NgramDrafter(Drafter):
    """Prompt lookup: find the earlier occurrence of the context's last n tokens that shares the
    most context before them (the latest among equals) and propose what followed it. Free to
    compute; strong when code repeats its context."""

    name = "ngram"
    free = True

    def __init__(self, *, max_ngram: int = 4, min_ngram: int = 1, max_candidates: int = 32) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.max_candidates = max_candidates  # latest occurrences compared by context length

    def draft(self, request: DraftRequest) -> Draft:
        context = request.tokens()
        ends, lengths = _suffix_matches(context, self.max_ngram + REACH)
        n = min(self.max_ngram, int(lengths.max()) if lengths.size else 0)
        if n < max(self.min_ngram, 1):
            return Draft([])
        # the latest occurrences of the tail n-gram; of those, the one sharing the most context
        # before it (the same code, not just the same few tokens), the latest among equals
        hits = np.flatnonzero(lengths >= n)[-self.max_candidates :]
        pick = hits[len(hits) - 1 - int(np.argmax(lengths[hits][::-1]))]
        start = int(ends[pick]) + 1
        return Draft(
            context[start : start + request.max_tokens].tolist(), strength=int(lengths[pick])
        )


REACH = 64  # context compared before a matched n-gram to rank its occurrences
TAIL = 64  # context tokens a lookup in a fixed run of tokens compares


class TokensLookup(Drafter):
    """A free lookup in a fixed run of tokens (the last suggestion, the text after the cursor):
    the context's tail is looked up in them, and what followed its longest match there (the
    latest among equals) is proposed, with the match's length as its strength, under the
    lookup's own source name."""

    name = "tokens"
    free = True

    def __init__(self, tokens: Sequence[int], *, min_ngram: int = 2) -> None:
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.min_ngram = min_ngram
        # the tokens an occurrence can end on (one with a next token): most rounds' last token
        # is not among them, and the lookup ends there
        self._ends = frozenset(self.tokens[:-1].tolist())

    def draft(self, request: DraftRequest) -> Draft:
        tail = request.tokens(TAIL)
        if not len(tail) or int(tail[-1]) not in self._ends:
            return Draft([])
        joined = np.concatenate([self.tokens, tail])
        ends, lengths = _suffix_matches(joined, REACH)
        inside = ends < len(self.tokens) - 1  # an occurrence in the tokens, with a next token
        ends, lengths = ends[inside], lengths[inside]
        if not len(ends) or int(lengths.max()) < self.min_ngram:
            return Draft([])
        pick = len(ends) - 1 - int(np.argmax(lengths[::-1]))  # the longest match, latest first
        start = int(ends[pick]) + 1
        tokens = self.tokens[start : start + request.max_tokens].tolist()
        return Draft(tokens, strength=int(lengths[pick]), source=self.name)


def _suffix_matches(context: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Every earlier position whose token is the context's last one, and how many tokens the
    context up to there shares with the context's tail (at most `cap`). One pass per matched
    length over the surviving candidates, and once one is left, one comparison of the rest. It
    runs every round: a window scan per n-gram size and a loop over the occurrences took 0.2 ms
    a round on the sources bench, a pass per length up to `cap` for the one long match of
    repeated code 0.1-0.3 ms."""
    last = len(context) - 1
    if last < 1:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ends = np.flatnonzero(context[:last] == context[last])
    lengths = np.ones(len(ends), dtype=np.int64)
    live = np.arange(len(ends))
    length = 1
    while live.size > 1 and length < cap:
        before = ends[live] - length
        inside = before >= 0
        live = live[inside][context[before[inside]] == context[last - length]]
        length += 1
        lengths[live] = length
    if live.size == 1 and length < cap:  # the one left: compare the rest of its reach at once
        end = int(ends[live[0]])
        n = min(cap - length, end - length + 1)  # positions left to compare (not before 0)
        mine = context[end - length - n + 1 : end - length + 1][::-1]
        tail = context[last - length - n + 1 : last - length + 1][::-1]
        differ = np.flatnonzero(mine != tail)
        lengths[live[0]] = length + (int(differ[0]) if differ.size else n)
    return ends, lengths
