"""Saved KV caches for a few documents, so switching files does not re-evaluate the prompt.

Two kinds of state, under one bound of bytes: a document's live caches when another takes them
(`switch`: the last request's prompt and answer), and the file prefix of a document the focus
left (`keep_prefix`: its context block and text as evaluated while idle, with what they were
evaluated from), so that going back to a file (A -> B -> A) restores its block and text instead
of evaluating them again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spec_lsp.engine.backends.base import ModelBackend, Snapshot, common_prefix_len

DOCUMENTS = 4  # documents whose live KV caches are kept, and as many file prefixes
# bytes of saved KV over all documents and both kinds (target and draft snapshots). One snapshot
# of a full 8k context of a 1.5B model is ~100-250 MB, so a long context keeps one or two
# documents, short ones keep DOCUMENTS; without it, 4 snapshots of a large model's 32k context
# held gigabytes. A file prefix (block and 1,024 tokens of text) of Qwen2.5-Coder-1.5B: ~47 MB
MAX_BYTES = 256 * 1024 * 1024
LIVE, PREFIX = "live", "file_prefix"


@dataclass
class Saved:
    target: Snapshot
    draft: Snapshot | None = None
    meta: Any = None  # a file prefix's: what its snapshot was evaluated from

    @property
    def nbytes(self) -> int:
        return self.target.nbytes + (self.draft.nbytes if self.draft is not None else 0)


class StatePool:
    """KV snapshots of the last few documents, swapped in when a document comes back; the oldest
    go first when either kind holds more than `size` documents or both more than `max_bytes`."""

    def __init__(self, *, size: int = DOCUMENTS, max_bytes: int = MAX_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.owner = ""
        self.nbytes = 0  # held over all saved documents
        self._saved: OrderedDict[tuple[str, str], Saved] = OrderedDict()  # (kind, document)

    def switch(
        self,
        document: str,
        prompt: Sequence[int],
        target: ModelBackend,
        draft: ModelBackend | None,
        *,
        keep_live: bool = True,
    ) -> str:
        """Make `document` the owner of the live caches, restoring its saved state if that holds
        more of `prompt` than the live cache; returns 'state_pool' when restored. `keep_live`:
        save the previous owner's live cache (not when it is kept elsewhere)."""
        if document != self.owner:
            if self.owner and target.tokens and keep_live:
                saved = Saved(target.save_state(), draft.save_state() if draft else None)
                self._save((LIVE, self.owner), saved)
            self.owner = document
        if self.held(document, prompt) <= common_prefix_len(target.tokens, prompt):
            return ""
        kept = self._take((LIVE, document))
        assert kept is not None
        target.load_state(kept.target)
        if draft is not None and kept.draft is not None:
            draft.load_state(kept.draft)
        return "state_pool"

    def held(self, document: str, prompt: Sequence[int]) -> int:
        """Tokens of `prompt` the document's saved live state holds."""
        saved = self._saved.get((LIVE, document))
        return common_prefix_len(saved.target.tokens, prompt) if saved else 0

    def park(self, document: str, target: ModelBackend) -> None:
        """Save the live cache as `document`'s before idle work replaces it (file prefix)."""
        if document and target.tokens:
            self._save((LIVE, document), Saved(target.save_state()))

    # -- file prefixes ---------------------------------------------------------------------------
    def keep_prefix(self, document: str, snapshot: Snapshot, meta: Any) -> None:
        """The file prefix of a document the focus leaves: its snapshot and what it was
        evaluated from (FilePrefix._take)."""
        self._save((PREFIX, document), Saved(snapshot, meta=meta))

    def take_prefix(self, document: str) -> tuple[Snapshot, Any] | None:
        """The kept file prefix of a document the focus comes back to (no longer kept here)."""
        saved = self._take((PREFIX, document))
        return None if saved is None else (saved.target, saved.meta)

    # -- the bound -------------------------------------------------------------------------------
    def _save(self, key: tuple[str, str], saved: Saved) -> None:
        self._take(key)
        size = saved.nbytes
        if size > self.max_bytes:
            return  # larger than the whole bound: not kept
        self._saved[key] = saved
        self.nbytes += size
        while self._count(key[0]) > self.size or self.nbytes > self.max_bytes:
            oldest = next(k for k in self._saved if k[0] == key[0] or self.nbytes > self.max_bytes)
            self.nbytes -= self._saved.pop(oldest).nbytes

    def _count(self, kind: str) -> int:
        return sum(k[0] == kind for k in self._saved)

    def _take(self, key: tuple[str, str]) -> Saved | None:
        saved = self._saved.pop(key, None)
        if saved is not None:
            self.nbytes -= saved.nbytes
        return saved

    def forget(self, document: str) -> None:
        """A closed document: its saved states go, and the live caches belong to no one."""
        self._take((LIVE, document))
        self._take((PREFIX, document))
        if self.owner == document:
            self.owner = ""

    def saved(self, kind: str = LIVE) -> list[str]:
        return [document for k, document in self._saved if k == kind]

    def clear(self) -> None:
        self._saved.clear()
        self.nbytes = 0
        self.owner = ""

    def memory(self) -> dict[str, Any]:
        return {
            "count": self._count(LIVE),
            "file_prefixes": self._count(PREFIX),
            "bytes": self.nbytes,
            "max_count": self.size,
            "max_bytes": self.max_bytes,
        }
