"""The last generation per document (prompt + generated tokens, including what post-processing
cut): when the next prompt is a prefix of it, its next tokens are a near-certain first draft,
verified in one target batch (the decode loop's `continuation`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

DOCUMENTS = 16  # documents whose last generation is kept
# tokens kept over all documents: 16 documents at an 8k context. A token is a Python int in a
# list (8-36 bytes), so this is at most ~4.5 MB, whatever the context size or document count
MAX_TOKENS = 131_072


class Continuations:
    def __init__(self, *, size: int = DOCUMENTS, max_tokens: int = MAX_TOKENS) -> None:
        self.size = size
        self.max_tokens = max_tokens
        self.tokens = 0  # held over all documents
        self._by_document: OrderedDict[str, list[int]] = OrderedDict()

    def get(self, document: str) -> Sequence[int]:
        return self._by_document.get(document, ())

    def remember(self, document: str, tokens: list[int]) -> None:
        self.forget(document)
        if len(tokens) > self.max_tokens:
            return  # longer than the whole bound: not kept
        self._by_document[document] = tokens
        self.tokens += len(tokens)
        while len(self._by_document) > self.size or self.tokens > self.max_tokens:
            _, dropped = self._by_document.popitem(last=False)
            self.tokens -= len(dropped)

    def forget(self, document: str) -> None:
        dropped = self._by_document.pop(document, None)
        if dropped is not None:
            self.tokens -= len(dropped)

    def clear(self) -> None:
        self._by_document.clear()
        self.tokens = 0

    def memory(self) -> dict[str, Any]:
        return {
            "documents": len(self._by_document),
            "tokens": self.tokens,
            "max_documents": self.size,
            "max_tokens": self.max_tokens,
        }
