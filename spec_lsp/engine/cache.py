"""Work carried from one keystroke to the next.

- `SuggestionCache`: the suggestions shown recently, so that typing *through* a suggestion is
  answered at once with its remainder (no model call). A cachetools TTL/LRU keyed by document,
  the suffix window and the prefix up to the suggestion's start.
- `ContinuationDrafter`: the tokens generated for the document's last request (including those
  cut by post-processing) are the first draft of the next one, verified in one target batch.
- `StatePool`: saved KV caches for a few documents, so switching files does not re-evaluate.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from cachetools import TTLCache

from spec_lsp.engine.backends.base import ModelBackend, Snapshot, common_prefix_len
from spec_lsp.engine.drafting import Draft, Drafter, DraftRequest
from spec_lsp.engine.types import CompletionRequest

MAX_TYPED_THROUGH = 256  # characters typed into a suggestion that we still look back over
PREFIX_KEY_CHARS = 2000  # how much of the prefix identifies a suggestion's position


@dataclass(frozen=True)
class Suggestion:
    text: str  # what was (or would be) shown at `prefix`
    raw: str  # the model's continuation before post-processing


def _key(document: str, prefix: str, suffix: str) -> tuple[str, int, str, str]:
    suffix_digest = hashlib.blake2b(
        suffix.encode("utf-8", "surrogatepass"), digest_size=8
    ).hexdigest()
    return document, len(prefix), prefix[-PREFIX_KEY_CHARS:], suffix_digest


class SuggestionCache:
    """Written by the engine thread, read on the event loop: cachetools needs the lock."""

    def __init__(self, *, maxsize: int = 512, ttl: float = 600.0) -> None:
        self._cache: TTLCache[tuple[str, int, str, str], Suggestion] = TTLCache(
            maxsize=maxsize, ttl=ttl
        )
        self._lock = threading.Lock()

    def put(self, request: CompletionRequest, text: str, raw: str = "") -> None:
        key = _key(request.document_id, request.prefix, request.suffix)
        with self._lock:
            self._cache[key] = Suggestion(text, raw)

    def lookup(self, request: CompletionRequest) -> tuple[str, str] | None:
        """(typed, remainder) if the text before the cursor ends by typing into a suggestion.

        Walks back over up to MAX_TYPED_THROUGH characters just typed; the suffix must be the
        one the suggestion was made with (an edit elsewhere changes the key: no stale answer).
        """
        prefix = request.prefix
        for typed_len in range(0, min(MAX_TYPED_THROUGH, len(prefix)) + 1):
            start = len(prefix) - typed_len
            with self._lock:
                found = self._cache.get(_key(request.document_id, prefix[:start], request.suffix))
            if found is None:
                continue
            typed = prefix[start:]
            if found.text.startswith(typed) and len(found.text) > len(typed):
                return typed, found.text[len(typed) :]
        return None

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


class ContinuationDrafter:
    """Propose the rest of the last generation when the context is a prefix of it, else defer."""

    def __init__(self, fallback: Drafter | None) -> None:
        self.fallback = fallback
        self.name = f"continuation+{fallback.name}" if fallback else "continuation"
        self._continuation: list[int] = []

    def remember(self, tokens: Sequence[int]) -> None:
        self._continuation = list(tokens)

    def draft(self, request: DraftRequest) -> Draft:
        context, known = request.context, self._continuation
        n = len(context)
        if len(known) > n and common_prefix_len(context, known) == n:
            return Draft(list(known[n : n + request.max_tokens]))
        return self.fallback.draft(request) if self.fallback else Draft([])


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
