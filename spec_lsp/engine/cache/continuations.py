"""The last generation per document (prompt + generated tokens, including what post-processing
cut): when the next prompt is a prefix of it, its next tokens are a near-certain first draft,
verified in one target batch (the decode loop's `continuation`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

DOCUMENTS = 16  # documents whose last generation is kept


class Continuations:
    def __init__(self, *, size: int = DOCUMENTS) -> None:
        self.size = size
        self._by_document: OrderedDict[str, list[int]] = OrderedDict()

    def get(self, document: str) -> Sequence[int]:
        return self._by_document.get(document, ())

    def remember(self, document: str, tokens: list[int]) -> None:
        self._by_document[document] = tokens
        self._by_document.move_to_end(document)
        while len(self._by_document) > self.size:
            self._by_document.popitem(last=False)

    def clear(self) -> None:
        self._by_document.clear()
