"""Saved KV caches for a few documents, so switching files does not re-evaluate the prompt."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from spec_lsp.engine.backends.base import ModelBackend, Snapshot, common_prefix_len


class StatePool:
    """KV snapshots of the last few documents, swapped in when a document comes back."""

    def __init__(self, *, size: int = 4) -> None:
        self.size = size
        self.owner = ""
        self._saved: OrderedDict[str, tuple[Snapshot, Snapshot | None]] = OrderedDict()

    def switch(
        self, document: str, prompt: Sequence[int], target: ModelBackend, draft: ModelBackend | None
    ) -> str:
        """Make `document` the owner of the live caches; returns 'state_pool' when restored."""
        if document == self.owner:
            return ""
        if self.owner and target.tokens:
            self._saved[self.owner] = (target.save_state(), draft.save_state() if draft else None)
            self._saved.move_to_end(self.owner)
            while len(self._saved) > self.size:
                self._saved.popitem(last=False)
        self.owner = document
        saved = self._saved.pop(document, None)
        if saved is None or common_prefix_len(saved[0].tokens, prompt) <= common_prefix_len(
            target.tokens, prompt
        ):
            return ""
        target.load_state(saved[0])
        if draft is not None and saved[1] is not None:
            draft.load_state(saved[1])
        return "state_pool"

    def clear(self) -> None:
        self._saved.clear()
        self.owner = ""
