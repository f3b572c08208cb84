"""The open documents' windows (each window's first line and identifiers), kept while a
document is open, for the similar-chunks source."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from spec_lsp.engine.context.words import IDENTIFIER, STOP_WORDS

SIMILAR_LINES = 48
SIMILAR_STRIDE = 24


class SimilarWindows:
    """The open documents' windows (first line, identifiers), kept per document while it is
    open: the stage forgets a document when it closes (nothing of a closed document stays)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, list[tuple[int, frozenset[str]]]]] = {}

    def of(self, path: str, text: str) -> list[tuple[int, frozenset[str]]]:
        with self._lock:
            cached = self._held.get(path)
        if cached is not None and (cached[0] is text or cached[0] == text):
            return cached[1]
        lines = text.split("\n")
        windows = []
        for start in range(0, max(1, len(lines) - SIMILAR_STRIDE), SIMILAR_STRIDE):
            chunk = "\n".join(lines[start : start + SIMILAR_LINES])
            names = {name for name in IDENTIFIER.findall(chunk) if len(name) > 1}
            windows.append((start, frozenset(names - STOP_WORDS)))
        with self._lock:
            self._held[path] = (text, windows)
        return windows

    def keep_only(self, paths: Iterable[str]) -> None:
        """Forget the documents not among `paths` (those closed)."""
        keep = set(paths)
        with self._lock:
            for path in [p for p in self._held if p not in keep]:
                del self._held[path]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)
