"""Suggestions shown recently, so that typing *through* a suggestion is answered at once with its
remainder (no model call): a cachetools TTL/LRU keyed by document, the suffix window and the
prefix up to the suggestion's start.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cachetools import TTLCache

from spec_lsp.engine.types import CompletionRequest

MAX_TYPED_THROUGH = 256  # characters typed into a suggestion that we still look back over
PREFIX_KEY_CHARS = 2000  # how much of the prefix identifies a suggestion's position
ENTRIES = 512  # suggestions kept
# characters kept over all entries (key prefix, suggestion and raw text): an entry's key alone
# holds up to PREFIX_KEY_CHARS, and a multi-line suggestion's raw text may be long; 2 M
# characters is ~2-8 MB of str, enough for ENTRIES ordinary ones
MAX_CHARS = 2_000_000
ENTRY_CHARS = 64  # an entry's fixed cost (key tuple, digest, objects) counted as characters


@dataclass(frozen=True)
class Suggestion:
    text: str  # what was (or would be) shown at `prefix`
    raw: str  # the model's continuation before post-processing
    chars: int = 0  # what the entry holds, its key included (the size the cache bounds)
    # the target's, of the raw text's tokens (what the gate reads): 4 bytes each
    logprobs: array[float] = field(default_factory=lambda: array("f"))


class Hit(NamedTuple):
    typed: str  # typed into the suggestion since it was shown
    rest: str  # what is left of it
    found: Suggestion
    # typed past the shown text into the model's raw text, across a line break (the lines a
    # single-line suggestion's generation wrote beyond it): `rest` is raw text, to be shaped
    # for the new place
    beyond: bool = False


def _digest(suffix: str) -> str:
    return hashlib.blake2b(suffix.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _key(document: str, prefix: str, end: int, suffix_digest: str) -> tuple[str, int, str, str]:
    """The key of the text before the cursor `prefix[:end]` (without copying all of it: a
    lookup tries up to MAX_TYPED_THROUGH ends, and copying a 25,000-character prefix for each,
    with the suffix hashed each time, made the lookups on the event loop 30% of the server's
    time at 200 keys/s)."""
    return document, end, prefix[max(0, end - PREFIX_KEY_CHARS) : end], suffix_digest


def _beyond(typed: str, found: Suggestion) -> bool:
    """`typed` went past the shown text, through its line break, into the raw text's next line
    (Enter and the editor's indentation after a line typed as suggested), and the raw text
    goes on there."""
    if "\n" not in typed or not found.raw.startswith(typed) or len(found.raw) <= len(typed):
        return False
    return found.raw[len(typed) :].split("\n", 1)[0].strip() != ""


class SuggestionCache:
    """Written by the engine thread, read on the event loop: cachetools needs the lock."""

    def __init__(
        self, *, maxsize: int = ENTRIES, ttl: float = 600.0, max_chars: int = MAX_CHARS
    ) -> None:
        # cachetools bounds the total size (characters); the entry count is bounded in `put`
        self._cache: TTLCache[tuple[str, int, str, str], Suggestion] = TTLCache(
            maxsize=max_chars, ttl=ttl, getsizeof=lambda found: found.chars
        )
        self.maxsize = maxsize
        self._lock = threading.Lock()
        # (document, end of the text before the cursor) of the entries put: a lookup builds a key
        # only where one may be (entries evicted since leave a stale pair: rebuilt when large)
        self._ends: set[tuple[str, int]] = set()

    def put(
        self,
        request: CompletionRequest,
        text: str,
        raw: str = "",
        logprobs: Sequence[float] = (),
    ) -> None:
        prefix = request.prefix
        key = _key(request.document_id, prefix, len(prefix), _digest(request.suffix))
        chars = ENTRY_CHARS + len(key[0]) + len(key[2]) + len(text) + len(raw) + 4 * len(logprobs)
        with self._lock:
            try:
                self._cache[key] = Suggestion(text, raw, chars, array("f", logprobs))
            except ValueError:  # larger than the whole bound: not kept
                self._cache.pop(key, None)
            while len(self._cache) > self.maxsize:
                self._cache.popitem()  # the least recently used
            self._ends.add((key[0], key[1]))
            if len(self._ends) > 4 * self.maxsize:
                self._ends = {(k[0], k[1]) for k in self._cache}

    def lookup(self, request: CompletionRequest) -> Hit | None:
        """(typed, remainder, the suggestion) if the text before the cursor ends by typing into
        a suggestion.

        Walks back over up to MAX_TYPED_THROUGH characters just typed; the suffix must be the
        one the suggestion was made with (an edit elsewhere changes the key: no stale answer).
        """
        prefix, digest = request.prefix, _digest(request.suffix)
        document, ends = request.document_id, self._ends
        for typed_len in range(0, min(MAX_TYPED_THROUGH, len(prefix)) + 1):
            start = len(prefix) - typed_len
            if (document, start) not in ends:
                continue
            with self._lock:
                found = self._cache.get(_key(document, prefix, start, digest))
            if found is None:
                continue
            typed = prefix[start:]
            if found.text.startswith(typed) and len(found.text) > len(typed):
                return Hit(typed, found.text[len(typed) :], found)
            if _beyond(typed, found):
                return Hit(typed, found.raw[len(typed) :], found, beyond=True)
        return None

    def forget(self, document: str) -> None:
        """A closed document: its suggestions go."""
        with self._lock:
            self._cache.expire()  # (deleting an expired entry raises)
            for key in [key for key in self._cache if key[0] == document]:
                del self._cache[key]
            self._ends = {(k[0], k[1]) for k in self._cache}

    def documents(self) -> set[str]:
        with self._lock:
            self._cache.expire()
            return {key[0] for key in self._cache}

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._ends = set()

    def memory(self) -> dict[str, Any]:
        with self._lock:
            self._cache.expire()
            return {
                "entries": len(self._cache),
                "chars": int(self._cache.currsize),
                "max_entries": self.maxsize,
                "max_chars": int(self._cache.maxsize),
            }
