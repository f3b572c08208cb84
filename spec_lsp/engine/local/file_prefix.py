"""The file prefix: the open file from a stable line on, evaluated while idle, which the prompt
at every place below that line starts with.

A prompt is laid out around the cursor, so moving to another place of a file changes its
window, and a window that slides with the cursor shares nothing with the last one: every ask
at a new place re-read ~400 tokens (~20 s on a slow 2-core CPU). Instead, while the person
reads, the file from an anchor line on is evaluated once, up to a budget of tokens
(`filePrefixTokens`), and kept as a KV snapshot. A request at a place below the anchor may lay
its prompt out from that line (`PromptBuilder.build_anchored`: the text before the cursor from
the anchor, the suffix window, the middle): it restores the snapshot and evaluates only what
follows its head in the prompt (the suffix, the last lines before the cursor, the middle).

- The anchored prompt is used only when it evaluates fewer tokens than the window's, so the
  first ask in a file costs what it did; and only when its text starts at or above the
  window's, so the model never sees less of the file than the window would show it.
- The anchor is a stable start chosen when a place needs one: the file's first line when the
  text above the place fits 3/4 of the budget, else a 16-line edge about half the budget above
  the place, so that places above and below are covered. It moves only when a place falls
  outside (its window starts above the anchor, or its cursor is past the budget), not when the
  place is inside but not evaluated yet.
- An edit keeps what comes before it: growth resumes from the first changed line.
- One document at a time: the last one opened, edited or asked about. An opened one grows
  from its first line (the cursor is not known yet), its context block first, and only its
  first OPENED_TOKENS until a place is known. The snapshot is bounded by the budget
  (Qwen2.5-Coder-1.5B: 28 KB a token, 86 MB for 3,000 tokens); closing the document frees it.
- The context block comes first, and is chosen before the text is evaluated: each token is
  evaluated once. A block that changes later (another document, the workspace) is evaluated
  with the text after it again (exact); `shift_blocks` instead evaluates the block alone and
  puts it before the text's KV (`_put_block`), which changes answers (see there). A part
  dropped from the block moves what follows it (`kvShift`). Otherwise nothing moves, and the
  cost of a place is one snapshot copy (~50 ms for 86 MB).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine.backends.base import (
    ABORTABLE_CHUNK,
    ModelBackend,
    Snapshot,
    append,
    common_prefix_len,
    kept_by_sync,
    moved_runs,
    sync,
)
from spec_lsp.engine.cache.states import StatePool
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.local.prompt_tokens import Prompt, PromptBuilder
from spec_lsp.engine.types import Cancelled, CancelToken, CompletionRequest
from spec_lsp.prompts import window

ANCHOR_LINES = 16  # anchors sit on multiples of this many lines
MIDDLE_ROOM = 512  # tokens left in the context for the last lines before the cursor, margins
SAVE_AFTER = 32  # tokens grown before a new snapshot is worth its copy
# the text evaluated after a document's block when it is only opened (no place known yet); the
# rest once a request or an edit places the cursor there
OPENED_TOKENS = 1024


@dataclass(frozen=True)
class _Kept:
    """What a kept file prefix was evaluated from, besides its text (in its snapshot)."""

    anchor: int
    request: CompletionRequest | None
    block: Block | None
    warmed: Block | None
    opened: bool


class FilePrefix:
    """The file prefix of the document last asked about: its anchor, text and KV snapshot."""

    # A block that changes under an evaluated text is put before the text's KV (`_put_block`)
    # only with this on (and kvShift): measured (`spec-lsp bench block-swap`, 16 lines), the
    # shortcut saved 7.4 s of idle work a change (3.5 s against 10.9 s) but changed the
    # answer's first line in 8 of 16 and gave 2 exact lines against 4: the text is evaluated
    # again instead. (A part dropped from the block is still moved: the same answers, 5 of 6.)
    shift_blocks = False

    def __init__(self, *, kept: StatePool | None = None) -> None:
        self.document = ""
        self.anchor = 0
        self.text = ""  # the document's text, as of its last edit
        self.request: CompletionRequest | None = None  # its file name and language
        self.snapshot: Snapshot | None = None
        self.block: Block | None = None  # the context block it opens with (context/block.py)
        self.warmed: Block | None = None  # the block the last place was prewarmed with
        self.pending = False  # the text from the anchor is not all evaluated yet
        self.opened = False  # anchored at open (focus), before any request placed the cursor
        self.evaluated = 0  # tokens evaluated while idle, over all documents
        self.moved = 0  # tokens moved into place while idle instead (kvShift)
        self.reanchored = 0
        self.focused = 0  # documents that took the file prefix at open, before any request
        self.used = 0  # requests whose prompt was laid out from the anchor
        self.restored = 0  # documents whose file prefix came back from the state pool
        self.came_back = False  # the document's block came back with it, not adopted yet
        # where the file prefix of a document the focus leaves is kept (the state pool)
        self.kept = kept
        # the tokens before the file's text in the snapshot's plan (the block and markers): a
        # new block is put before the text's KV there (swap_tail) instead of evaluating it again
        self.snapshot_head = 0
        # a block being put in: (tokens kept, text tokens moved, the new head's length)
        self.swapping: tuple[int, int, int] | None = None
        self.since = 0.0  # when the document took the file prefix (monotonic)
        self.ready = False  # the block (and all before it) is in the KV
        self.ready_s: float | None = None  # seconds from taking the document to that
        # (anchor, cursor line) -> within the budget: typing on a line asks again each key
        self._covered: tuple[int, int, bool] | None = None

    @staticmethod
    def budget(settings: Settings, n_ctx: int) -> int:
        room = n_ctx - settings.suffix_tokens - settings.max_tokens - MIDDLE_ROOM
        return max(0, min(settings.file_prefix_tokens, room))

    def text_budget(self, settings: Settings, prompts: PromptBuilder) -> int:
        """The budget for the file's text: what the context block leaves of it."""
        budget = self.budget(settings, prompts.target.n_ctx)
        block = self.block.tokens if self.block is not None else 0  # (counted: set_block)
        return max(0, budget - block) if budget else 0

    def set_block(self, block: Block | None) -> bool:
        """The context block to open with (chosen while idle, its tokens counted). A different
        one re-evaluates the file prefix from the block on (the KV after a changed token is
        not reused)."""
        if block is not None and block.tokens < 0:
            raise ValueError("a block's tokens are counted before it is set")
        if (block is None and self.block is None) or (block is not None and block.same(self.block)):
            return False
        # pending first: a reader on another thread that sees the new block (memory() reads
        # the block first) sees it pending too
        self.pending = bool(self.document)
        self.block, self.ready = block, False
        return True

    # -- a request ---------------------------------------------------------------------------
    def anchor_for(
        self, request: CompletionRequest, settings: Settings, n_ctx: int
    ) -> tuple[int, int] | None:
        """(The anchor line, the budget with the block's share) a request's prompt may be laid
        out from, if the document has a file prefix (PromptBuilder.candidates)."""
        budget = self.budget(settings, n_ctx)
        if request.document_id != self.document or not budget or self.snapshot is None:
            return None
        return self.anchor, budget

    def unwarmed(self) -> CompletionRequest | None:
        """The place last asked about, if its prompt with a new context block is still to be
        evaluated (the text unchanged since: else an edit's prewarm does it)."""
        request = self.request
        if self.pending or self.block is None or request is None or self.warmed is self.block:
            return None
        if self.opened:  # no place yet (the document was only opened)
            return None
        text, prefix, suffix = self.text, request.prefix, request.suffix
        same = len(prefix) + len(suffix) == len(text) and text.startswith(prefix)
        return request if same and text.endswith(suffix) else None  # (no copy: checked often)

    def held(self, tokens: Sequence[int]) -> int:
        """Tokens of `tokens` the snapshot holds."""
        return common_prefix_len(self.snapshot.tokens, tokens) if self.snapshot else 0

    def holds_all(self, tokens: Sequence[int]) -> bool:
        return bool(tokens) and self.held(tokens) == len(tokens)

    def restore(self, target: ModelBackend, tokens: Sequence[int]) -> bool:
        """Load the snapshot if it holds more of `tokens` than the live cache does."""
        if self.snapshot is None or self.held(tokens) <= common_prefix_len(target.tokens, tokens):
            return False
        target.load_state(self.snapshot)
        return True

    def follow(
        self,
        request: CompletionRequest,
        prompt: Prompt,
        prompts: PromptBuilder,
        settings: Settings,
    ) -> None:
        """After a request or a prewarm at a place: the document and place whose file prefix
        grows next (anchored anew if the place is outside the current one)."""
        budget = self.text_budget(settings, prompts)
        if not budget or not prompts.shares_prefix:
            return
        text = request.prefix + request.suffix

        def place_anchor() -> int:  # (it tokenizes: only when needed)
            return choose_anchor(request.prefix, prompt.first_line, prompts.texts.count, budget)

        if request.document_id == self.document:
            self.document_changed(request.document_id, text)
            self.request = request
            if self.opened:  # anchored at open: kept if the place would have chosen it too
                self.opened, self.pending = False, True  # (and grown on to the whole budget)
                if place_anchor() == self.anchor:
                    return
            elif prompt.anchored or self._covers(request, prompt, prompts, budget):
                return
        if request.document_id != self.document:
            if self._take(request):  # kept from its last focus: the place decides the anchor
                self.request, self.opened = request, False
                if place_anchor() == self.anchor:
                    return
        else:  # a new anchor: the snapshot still holds the block before the text
            self.document, self.request, self.text = request.document_id, request, text
        self.anchor, self.opened, self.pending = place_anchor(), False, True
        self.reanchored += 1

    def focus(self, request: CompletionRequest, prompts: PromptBuilder, settings: Settings) -> bool:
        """A document opened (or brought into view): the file prefix is its own now, grown from
        the file's first line while the person reads, after a block chosen from what the file
        says as a whole (its imports), before any request. The cursor is not known yet: the
        first request keeps that anchor if its place would have chosen it (choose_anchor), else
        anchors anew, keeping the block's KV."""
        budget = self.budget(settings, prompts.target.n_ctx)
        if request.document_id == self.document or not budget or not prompts.shares_prefix:
            return False
        self.focused += 1
        if self._take(request):  # its block and text kept from its last focus
            return True
        self.anchor, self.pending, self.opened = 0, True, True
        self.reanchored += 1
        return True

    def _take(self, request: CompletionRequest) -> bool:
        """Another document's file prefix. The last one's is kept in the state pool (bounded:
        cache/states.py) with what it was evaluated from; this one's, if kept there, comes back
        (its block, anchor and snapshot: nothing is evaluated again for a text unchanged since).
        Returns whether it came back."""
        if self.kept is not None and self.document and self.snapshot is not None:
            meta = _Kept(self.anchor, self.request, self.block, self.warmed, self.opened)
            self.kept.keep_prefix(self.document, self.snapshot, (meta, self.snapshot_head))
        text = request.prefix + request.suffix
        back = self.kept.take_prefix(request.document_id) if self.kept is not None else None
        self.document, self.request, self.text = request.document_id, request, text
        self.block = self.warmed = self.snapshot = self.swapping = None
        self.snapshot_head, self.ready, self.ready_s = 0, False, None
        self.since, self.came_back = time.monotonic(), False
        if back is None:
            return False
        self.snapshot, (meta, self.snapshot_head) = back
        self.anchor, self.block, self.warmed, self.opened = (
            meta.anchor,
            meta.block,
            meta.warmed,
            meta.opened,
        )
        self.request = meta.request if meta.request is not None else request
        self.pending, self.restored = True, self.restored + 1  # (grow: nothing left, or the edit)
        self.came_back = True  # (its block is the context provider's choice again: adopted)
        return True

    def _covers(
        self, request: CompletionRequest, prompt: Prompt, prompts: PromptBuilder, budget: int
    ) -> bool:
        if prompt.first_line < self.anchor:
            return False
        line = request.prefix.count("\n")
        if self._covered is not None and self._covered[:2] == (self.anchor, line):
            return self._covered[2]
        before = request.prefix[window.line_offset(request.prefix, self.anchor) :]
        # (a token is rarely longer than 16 characters: past that, not worth tokenizing)
        covered = len(before) <= budget * 16 and prompts.texts.count(before) <= budget
        self._covered = (self.anchor, line, covered)
        return covered

    def document_changed(self, document: str, text: str) -> None:
        if document == self.document and text != self.text:
            self.text, self.pending = text, True

    # -- idle time ---------------------------------------------------------------------------
    def grow(
        self,
        target: ModelBackend,
        prompts: PromptBuilder,
        settings: Settings,
        cancel: CancelToken,
        park: Callable[[], None],
    ) -> int:
        """Evaluate the file prefix further (until done, or cancelled) and keep it as the
        snapshot: the block first, then the file's text, each token once. A new block under an
        evaluated text is evaluated alone and put before the text's KV (`_put_block`, with
        `kvShift`). `park` saves the live cache first if it holds a request's prompt (the next
        keystroke at that place wants it back). Returns the tokens evaluated."""
        total = self.evaluated
        budget = self.text_budget(settings, prompts)
        if self.opened:  # no place known yet: the file's first lines only (a person switching
            budget = min(budget, OPENED_TOKENS)  # files often keeps the CPU busy less)
        if not self.pending or self.request is None or not budget:
            return 0
        plan = prompts.file_prefix(self.text, self.request, self.anchor, budget, self.block)
        head = len(prompts.file_prefix("", self.request, 0, 1 << 20, self.block))
        saved, live = self.held(plan), common_prefix_len(target.tokens, plan)
        if max(saved, live) >= len(plan) - 1 or len(plan) < 2:
            if live > saved + SAVE_AFTER:
                self._save(target, plan, head)
            self.pending = False
            self._check_ready(max(saved, live), head)
            return 0
        if len(target.tokens) > live and not self._swapping_in(target.tokens, plan):
            park()  # a request's prompt and answer: the next request may want them back
        try:
            self._put_block(target, plan, head, cancel)
            saved, live = self.held(plan), common_prefix_len(target.tokens, plan)
            if saved > live:
                target.load_state(self.snapshot)  # type: ignore[arg-type]
            start = min(max(saved, live), len(plan) - 1)
            moved = target.moved  # (tokens moved into place are not evaluated)
            try:
                # a request stops the chunk being computed, within ~50 ms, and it is lost: idle
                # work, cheap to lose; 16-token chunks with checks between ran ~20% slower
                # the block first, in a step of its own (its readiness known at once, and an
                # edit's prewarm not kept waiting for the text); the text at the next step
                # (a head of one token, no block: the text at once; else it waited for ever)
                ends = [len(plan)]
                if 2 <= head and common_prefix_len(target.tokens, plan) < head:
                    ends = [head]
                if target.shift_min and target.info.can_shift:  # (unless the text is moved)
                    keep = kept_by_sync(target, plan)
                    if moved_runs(target.tokens, plan, keep, target.shift_min):
                        ends = [len(plan)]
                for end in ends:
                    if end < 2:
                        continue
                    sync(
                        target,
                        plan[:end],
                        check=cancel.raise_if_cancelled,
                        chunk=ABORTABLE_CHUNK,
                        abort=cancel,
                    )
                    self._check_ready(end, head)
                self.pending = ends[-1] < len(plan)  # (the text still to come)
            finally:
                grown = common_prefix_len(target.tokens, plan)
                self.evaluated += max(0, grown - start - (target.moved - moved))
                self.moved += target.moved - moved
                if grown > saved + SAVE_AFTER or (not self.pending and grown > saved):
                    self._save(target, plan, head)
                self._check_ready(grown, head)
        except Cancelled:
            pass
        return self.evaluated - total

    def _put_block(
        self, target: ModelBackend, plan: Sequence[int], head: int, cancel: CancelToken
    ) -> None:
        """A block changed under an evaluated file prefix (the snapshot holds the text after
        another head): the text's KV is kept and moved after the new head, and only the head's
        new tokens are evaluated, after the text, then the two swapped in place (llama.cpp
        evaluates only at the end of a sequence). The text's keys and values were computed
        with the old head before them, the head's with the text: an approximation, as
        llama-server's `--cache-reuse` (bench: block-swap). Without `kvShift`, or on models
        that cannot shift, nothing here: the text is evaluated again. A cancel keeps what was
        done (the snapshot), resumed next time."""
        if not (self.shift_blocks and target.shift_min and target.info.can_shift):
            return
        snapshot, swapping = self.snapshot, self.swapping
        if swapping is not None and self._swapping_in(target.tokens, plan):
            keep, n, _head = swapping  # (resumed where it stopped: the live cache)
        elif swapping is not None and snapshot and self._swapping_in(snapshot.tokens, plan):
            keep, n, _head = swapping  # (resumed from what was saved)
            target.load_state(snapshot)
        else:
            self.swapping = None
            if snapshot is None:
                return
            cached, old = snapshot.tokens, self.snapshot_head
            keep = common_prefix_len(cached[:old], plan[:head])
            n = common_prefix_len(cached[old:], plan[head:]) if old else 0
            if keep >= head or n < target.shift_min:
                return
            runs = moved_runs(cached, plan, keep, target.shift_min)
            if any(at <= head < at + n for _c, at, n in runs):  # a part dropped: sync moves
                return  # the text back with what follows it
            if list(target.tokens) != list(cached):
                target.load_state(snapshot)
            if target.move_back(keep, [(old, keep, n)]) != keep + n:
                return
            # (the move applied now, by an evaluation no cancel stops: a snapshot is safe)
            target.evaluate(plan[keep : keep + 1], logits_from=1)
            self.evaluated += 1
            self.swapping = (keep, n, head)
            self.moved += n
        before = len(target.tokens)
        done = before - keep - n  # of the head's new tokens
        try:
            append(
                target,
                plan[keep + done : head],
                check=cancel.raise_if_cancelled,
                chunk=ABORTABLE_CHUNK,
                abort=cancel,
            )
        except Cancelled:
            if len(target.tokens) > before + SAVE_AFTER // 2:
                self.snapshot, self.snapshot_head = target.save_state(), 0  # (resumed from here)
            raise
        finally:
            self.evaluated += len(target.tokens) - before
        target.swap_tail(keep, n)
        target.truncate(head + n - 1)  # (the shifts applied now, by an evaluation no cancel stops)
        target.evaluate(plan[head + n - 1 : head + n], logits_from=1)
        self.swapping = None
        self._save(target, plan, head)

    def _swapping_in(self, cached: Sequence[int], plan: Sequence[int]) -> bool:
        """`cached` is a block being put in for `plan`: its kept tokens, the text moved after
        them, then the head's new tokens evaluated so far."""
        if self.swapping is None:
            return False
        keep, n, head = self.swapping
        done = len(cached) - keep - n
        return (
            0 <= done <= head - keep
            and list(cached[:keep]) == list(plan[:keep])
            and list(cached[keep : keep + n]) == list(plan[head : head + n])
            and list(cached[keep + n :]) == list(plan[keep : keep + done])
        )

    def _save(self, target: ModelBackend, plan: Sequence[int], head: int) -> None:
        self.snapshot = _snapshot_of(target, plan)
        self.snapshot_head = head

    def _check_ready(self, held: int, head: int) -> None:
        """The block is in the KV (the head held): when that came, from the document's taking."""
        if not self.ready and self.block is not None and held >= head:
            self.ready = True
            if self.ready_s is None:  # (the first block since: a later one is another figure)
                self.ready_s = time.monotonic() - self.since

    # -- lifecycle -----------------------------------------------------------------------------
    def forget(self, document: str) -> None:
        if document == self.document:
            self.clear()

    def clear(self) -> None:
        self.document, self.text, self.request, self.block = "", "", None, None
        self.snapshot, self.pending, self.opened, self.swapping = None, False, False, None
        self.ready = False

    def memory(self) -> dict[str, Any]:
        snapshot, block = self.snapshot, self.block
        return {
            "block_tokens": sum(c.tokens for c in block.chunks) if block else 0,
            "documents": int(bool(self.document)),
            "anchor_line": self.anchor if self.document else None,
            "tokens": len(snapshot.tokens) if snapshot else 0,
            "bytes": snapshot.nbytes if snapshot else 0,
            "pending": self.pending,
            "block_ready": self.ready,
        }

    def report(self) -> dict[str, Any]:
        """Work done: tokens evaluated while idle (and moved into place instead), anchors
        chosen, prompts laid out from one."""
        return {
            "evaluated": self.evaluated,
            "moved": self.moved,
            "anchors": self.reanchored,
            "focused": self.focused,
            "prompts": self.used,
            "restored": self.restored,
            "block_ready_s": None if self.ready_s is None else round(self.ready_s, 3),
        }


def choose_anchor(
    prefix: str, window_first_line: int, count: Callable[[str], int], budget: int
) -> int:
    """A stable start for the file prefix of a place: the file's first line if the text from it
    to the cursor takes at most 3/4 of the budget (small files: every place is covered), else a
    16-line edge at or above the window's first line, going up while that text stays within half
    the budget (the other half covers places below).

    (Anchoring at the window's first line instead reuses the asking request's KV, but covers
    only the places below it: on the places benchmark, jumping about a file, no later place was
    served from it.)"""
    lines = prefix.split("\n")
    anchor = max(0, min(window_first_line, len(lines) - 1))
    anchor -= anchor % ANCHOR_LINES
    used = count("\n".join(lines[anchor:]))
    while anchor > 0:
        block = "\n".join(lines[max(0, anchor - ANCHOR_LINES) : anchor]) + "\n"
        cost = count(block)
        if used + cost > budget // 2:
            break
        used += cost
        anchor = max(0, anchor - ANCHOR_LINES)
    above = "\n".join(lines[:anchor]) + "\n" if anchor else ""
    if above and len(above) <= budget * 16 and used + count(above) <= budget * 3 // 4:
        anchor = 0  # (a token is rarely over 16 characters: a longer text is not tokenized)
    return anchor


def _snapshot_of(target: ModelBackend, plan: Sequence[int]) -> Snapshot:
    """The live cache cut back to the file prefix's tokens, saved."""
    target.truncate(common_prefix_len(target.tokens, plan))
    return target.save_state()
