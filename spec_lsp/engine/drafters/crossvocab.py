"""Drafting with a small model whose tokenizer is not the target's (cross-vocabulary).

Text is the common currency (as Hugging Face's "universal assisted generation"). Each round:

1. the target's context (prompt + committed tokens) becomes the text a left-to-right model
   continues: for a FIM prompt, the prefix segment plus everything after the middle token;
   `ContextText` keeps that text up to date incrementally, token by token;
2. the draft model's cache is aligned with that text by *bytes*: the draft tokens whose bytes are
   a prefix of the text are kept (less a small look-behind, re-tokenized so a word cut at the old
   end is tokenized whole), only the tail is re-tokenized, and `sync` evaluates what differs.
   The bytes the cache holds are always recomputed from the draft's own tokens, so however a
   round ends (rejection, another document's state loaded) the cache cannot drift from the text;
3. the draft model writes greedily; its text goes back to target tokens with the target's
   tokenizer (`text_to_target`): the context's last token is re-tokenized with the draft text
   so a merge at the boundary is seen, and the last target token, which more text could still
   extend, is held back.

The proposal is deterministic given the context, so it is returned without probabilities: the
verify step treats it as one-hot q, which keeps both greedy decoding and sampling exact.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence

import numpy as np

from spec_lsp.engine import sampling
from spec_lsp.engine.backends.base import ModelBackend, common_prefix_len, kept_by_sync, sync
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.token_text import (
    ContextText,
    check_round_trip,
    complete_utf8,
    text_to_target,
)


class CrossVocabDrafter(Drafter):
    """A small model with its own vocabulary drafts text; the proposal is in target tokens."""

    name = "crossvocab"
    counts_catch_up = True

    def __init__(
        self,
        model: ModelBackend,
        *,
        target: ModelBackend,
        lookbehind: int = 8,
        max_view_bytes: int | None = None,
    ) -> None:
        check_round_trip(model, what="draftModel")
        check_round_trip(target, what="model")
        self.model, self.target = model, target
        self.lookbehind = lookbehind
        self.max_view_bytes = max_view_bytes or max(1024, (model.n_ctx - 160) * 2)
        self.text = ContextText(target)
        bos = model.info.special.get("bos")
        self._bos = [bos] if model.info.add_bos and bos is not None else []
        self._known: list[int] = []  # the draft cache's tokens as last seen ...
        self._known_bytes = bytearray()  # ... their bytes ...
        self._ends: list[int] = []  # ... and where each token's bytes end
        self.last_draft_tokens: list[int] = []  # the draft model's own tokens, last call
        self.last_draft_text = b""  # ... and the text they add after the target's
        self._pieces: tuple[list[bytes], np.ndarray] | None = None  # sorted, for healing
        self.last_catch_up = (0, 0.0)  # draft tokens evaluated before the last draft, seconds

    def draft(self, request: DraftRequest) -> Draft:
        self.last_draft_tokens = []
        view = self.text.update(request.context)
        if complete_utf8(view) < len(view):
            return Draft([])  # the target is inside a character: no text to continue yet
        budget = 2 * request.max_tokens + 4  # draft tokens per call, at most
        limit = self.max_view_bytes
        while True:
            window = _window(view, limit)
            plan = self._plan(window)
            if len(plan) + budget <= self.model.n_ctx:
                break
            if limit < 64:
                return Draft([])
            limit //= 2
        if not plan:
            return Draft([])  # nothing to condition on and no BOS to start from
        healed = b""
        if len(plan) > len(self._bos) + 1:  # token healing, as for the target's prompt
            allowed = self._extensions(self.model.token_bytes(plan[-1]))
            if allowed.size > 1:
                healed, plan = self.model.token_bytes(plan[-1]), plan[:-1]
        started = time.perf_counter()
        logits, evaluated = sync(self.model, plan, check=request.check)
        self.last_catch_up = (evaluated, time.perf_counter() - started)
        self._see(self.model.tokens)
        if healed:
            masked = np.full_like(logits, -np.inf)
            masked[allowed] = logits[allowed]
            logits = masked
        return self._write(request, logits, budget, len(healed))

    def catch_up(self, context: Sequence[int]) -> int:
        """Draft-model tokens it would evaluate before drafting after `context` (what a try
        costs beyond the draft itself: `drafter = auto` budgets it before trying)."""
        view = self.text.update(context)
        if complete_utf8(view) < len(view):
            return 0
        plan = self._plan(_window(view, self.max_view_bytes))
        return max(len(plan) - kept_by_sync(self.model, plan), 0) if plan else 0

    def _plan(self, view: bytes) -> list[int]:
        """The draft tokens the cache should hold for `view`: kept tokens + the re-tokenized tail."""
        self._see(self.model.tokens)
        known, bos = self._known, self._bos
        if known[: len(bos)] != bos:
            return bos + self.model.tokenize(view.decode("utf-8", "replace"))
        common = _common_bytes(self._known_bytes, view)
        keep = max(len(bos), bisect.bisect_right(self._ends, common) - self.lookbehind)
        start = self._ends[keep - 1] if keep else 0
        while keep > len(bos) and start < len(view) and view[start] & 0xC0 == 0x80:
            keep -= 1  # never cut inside a character
            start = self._ends[keep - 1] if keep else 0
        tail = view[start:].decode("utf-8", "replace")
        return known[:keep] + self.model.tokenize(tail)

    def _write(self, request: DraftRequest, logits: np.ndarray, budget: int, skip: int) -> Draft:
        """Draft greedily until the text covers max_tokens whole target tokens (or confidence
        falls, the draft model ends, or the budget is spent). The first `skip` bytes drafted
        are already in the text (the healed token)."""
        model, written, proposal = self.model, bytearray(), []
        self.last_draft_text = b""
        last = request.context[-1] if request.context else None
        drafted = self.last_draft_tokens
        while len(drafted) < budget:
            token = int(np.argmax(logits))
            final = token in model.info.stop_ids
            if final or sampling.top_probability(logits) < request.min_confidence:
                if final and written:  # the draft ended: its last target token is whole
                    proposal = _convert(self.target, last, written, final=True)
                break
            drafted.append(token)
            written += model.token_bytes(token)[skip:]
            skip = 0
            self.last_draft_text = bytes(written)
            proposal = _convert(self.target, last, written, final=False)
            if len(proposal) >= request.max_tokens or len(drafted) >= budget:
                break  # (the last drafted token is never evaluated: it may be rejected)
            logits = model.evaluate([token], logits_from=0)[0]
        return Draft(proposal[: request.max_tokens])

    def _extensions(self, prefix: bytes) -> np.ndarray:
        """Draft token ids whose bytes start with `prefix` (a range of the sorted pieces)."""
        if self._pieces is None:
            pieces = sorted((self.model.token_bytes(i), i) for i in range(self.model.info.n_vocab))
            self._pieces = ([p for p, _ in pieces], np.array([i for _, i in pieces], np.int64))
        keys, ids = self._pieces
        if not prefix:
            return ids[:0]
        lo = bisect.bisect_left(keys, prefix)
        stem = prefix.rstrip(b"\xff")
        upper = stem[:-1] + bytes([stem[-1] + 1]) if stem else None
        hi = bisect.bisect_left(keys, upper) if upper is not None else len(keys)
        return ids[lo:hi]

    def _see(self, tokens: list[int]) -> None:
        """Bring the record of the draft cache (tokens, bytes, ends) up to `tokens`."""
        known, n = self._known, len(self._known)
        c = n if tokens[:n] == known else common_prefix_len(known, tokens)
        del known[c:]
        del self._ends[c:]
        del self._known_bytes[self._ends[-1] if self._ends else 0 :]
        for token in tokens[c:]:
            known.append(token)
            self._known_bytes += self.model.token_bytes(token)
            self._ends.append(len(self._known_bytes))


def _convert(
    target: ModelBackend, last: int | None, written: bytearray, *, final: bool
) -> list[int]:
    whole = complete_utf8(written)
    text = bytes(written[:whole]).decode("utf-8", "replace")
    return text_to_target(target, last, text, final=final and whole == len(written))


def _window(view: bytes, limit: int) -> bytes:
    """At most about `limit` bytes of the view's end, cut after a newline at a point that moves
    in steps of limit/4, so the draft cache's prefix survives while the text grows."""
    if len(view) <= limit:
        return view
    step = max(limit // 4, 1)
    cut = ((len(view) - limit) // step + 1) * step
    newline = view.find(b"\n", cut)
    start = newline + 1 if 0 <= newline < cut + step else cut
    while start < len(view) and view[start] & 0xC0 == 0x80:
        start += 1
    return view[start:]


def _common_bytes(a: bytes | bytearray, b: bytes | bytearray) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    differ = np.frombuffer(a, np.uint8, n) != np.frombuffer(b, np.uint8, n)
    return int(np.argmax(differ))
