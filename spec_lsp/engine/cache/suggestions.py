"""Suggestions shown recently, so that typing *through* a suggestion is answered at once with its
remainder (no model call): a cachetools TTL/LRU keyed by document, the suffix window and the
prefix up to the suggestion's start.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

from cachetools import TTLCache

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
