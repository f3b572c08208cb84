"""Saved KV caches for a few documents, so switching files does not re-evaluate the prompt."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from spec_lsp.engine.backends.base import ModelBackend, Snapshot, common_prefix_len

DOCUMENTS = 4  # documents whose KV cache is kept
# bytes of saved KV over all documents (target and draft snapshots). One snapshot of a full 8k
# context of a 1.5B model is ~100-250 MB, so a long context keeps one or two documents, short
# ones keep DOCUMENTS; without it, 4 snapshots of a large model's 32k context held gigabytes
MAX_BYTES = 256 * 1024 * 1024


def _nbytes(saved: tuple[Snapshot, Snapshot | None]) -> int:
    return saved[0].nbytes + (saved[1].nbytes if saved[1] is not None else 0)


class StatePool:
    """KV snapshots of the last few documents, swapped in when a document comes back."""

    def __init__(self, *, size: int = DOCUMENTS, max_bytes: int = MAX_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.owner = ""
        self.nbytes = 0  # held over all saved documents
        self._saved: OrderedDict[str, tuple[Snapshot, Snapshot | None]] = OrderedDict()

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
                self._save(self.owner, (target.save_state(), draft.save_state() if draft else None))
            self.owner = document
        if self.held(document, prompt) <= common_prefix_len(target.tokens, prompt):
            return ""
        saved = self._take(document)
        assert saved is not None
        target.load_state(saved[0])
        if draft is not None and saved[1] is not None:
            draft.load_state(saved[1])
        return "state_pool"

    def held(self, document: str, prompt: Sequence[int]) -> int:
        """Tokens of `prompt` the document's saved state holds."""
        saved = self._saved.get(document)
        return common_prefix_len(saved[0].tokens, prompt) if saved else 0

    def park(self, document: str, target: ModelBackend) -> None:
        """Save the live cache as `document`'s before idle work replaces it (file prefix)."""
        if document and target.tokens:
            self._save(document, (target.save_state(), None))

    def _save(self, document: str, saved: tuple[Snapshot, Snapshot | None]) -> None:
        self._take(document)
        size = _nbytes(saved)
        if size > self.max_bytes:
            return  # larger than the whole bound: not kept
        self._saved[document] = saved
        self.nbytes += size
        while len(self._saved) > self.size or self.nbytes > self.max_bytes:
            _, dropped = self._saved.popitem(last=False)
            self.nbytes -= _nbytes(dropped)

    def _take(self, document: str) -> tuple[Snapshot, Snapshot | None] | None:
        saved = self._saved.pop(document, None)
        if saved is not None:
            self.nbytes -= _nbytes(saved)
        return saved

    def forget(self, document: str) -> None:
        """A closed document: its saved state goes, and the live caches belong to no one."""
        self._take(document)
        if self.owner == document:
            self.owner = ""

    def saved(self) -> list[str]:
        return list(self._saved)

    def clear(self) -> None:
        self._saved.clear()
        self.nbytes = 0
        self.owner = ""

    def memory(self) -> dict[str, Any]:
        return {
            "count": len(self._saved),
            "bytes": self.nbytes,
            "max_count": self.size,
            "max_bytes": self.max_bytes,
        }
