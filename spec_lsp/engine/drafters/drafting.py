"""The drafter in use: the one the `drafter` setting names (made by table.py once per load: it
learns), and the index of the open documents it reads, fed by the editor's document changes.

`document_changed` runs on the editor's thread and only records the text; the index takes it on
the engine's thread before the next completion (`for_request`), re-indexing only the lines that
differ, once for any number of keystrokes.
"""

from __future__ import annotations

import threading
from typing import Any

from spec_lsp.engine.backends.base import ModelBackend
from spec_lsp.engine.drafters import table
from spec_lsp.engine.drafters.auto import AutoDrafter
from spec_lsp.engine.drafters.base import Drafter
from spec_lsp.engine.drafters.documents import DocumentsDrafter
from spec_lsp.engine.drafters.open_documents import OpenDocuments
from spec_lsp.engine.policy.profile import CostProfile
from spec_lsp.engine.types import CompletionRequest

SHOWN_TAIL = 256  # characters before a shown suggestion that identify where it was shown
MAX_INDEXED_CHARS = 1_000_000  # documents larger than this are not indexed for lookup


class Drafting:
    def __init__(self) -> None:
        self.open_documents = OpenDocuments()  # open documents + accepted completions
        self.drafter: Drafter | None = None
        self._to_index: dict[str, str | None] = {}  # latest text per changed document (None: drop)
        self._index_lock = threading.Lock()
        # per document: the suggestion shown and where (the prefix's length and its last
        # SHOWN_TAIL characters: not a copy of the whole text before the cursor)
        self._shown: dict[str, tuple[int, str, str]] = {}

    def build(
        self,
        kind: str,
        target: ModelBackend,
        draft: ModelBackend | None,
        profile: CostProfile | None,
    ) -> None:
        """The drafter for the `drafter` setting `kind` (after a load or a settings change):
        drafters/table.py makes it."""
        kit = table.Kit(target, draft, self.open_documents, profile)
        self.drafter = table.for_setting(kind, kit)

    # -- documents (the editor's thread) --------------------------------------------------------
    def document_changed(self, document_id: str, text: str) -> None:
        """A document's text after an edit (or at open); documents over MAX_INDEXED_CHARS are
        left out of the index."""
        with self._index_lock:
            self._to_index[document_id] = text if len(text) <= MAX_INDEXED_CHARS else None

    def document_closed(self, document_id: str) -> None:
        """A closed document leaves the index (at the next catch-up), its shown suggestion and
        auto's acceptance estimates for it go."""
        with self._index_lock:
            self._to_index[document_id] = None
        self._shown.pop(document_id, None)
        if isinstance(self.drafter, AutoDrafter):
            self.drafter.forget(document_id)

    # -- requests (the engine's thread) ---------------------------------------------------------
    def for_request(
        self, request: CompletionRequest, profile: CostProfile | None
    ) -> Drafter | None:
        """The drafter, told about this request (its document, cursor, the costs known now)."""
        self.open_documents.active = request.document_id  # never trimmed from the index
        self.catch_up()
        drafter = self.drafter
        lookups = (
            [s.drafter for s in drafter.candidates] if isinstance(drafter, AutoDrafter) else []
        )
        for source in [drafter, *lookups]:
            if isinstance(source, DocumentsDrafter):
                source.document_id, source.cursor = request.document_id, len(request.prefix)
        if isinstance(drafter, AutoDrafter):
            drafter.set_profile(profile)
            drafter.set_document(request.document_id, request.language)
        return drafter

    def shown(self, request: CompletionRequest, text: str) -> None:
        """The suggestion shown for `request`, the person's request (computed or from the cache;
        never a precomputed one): if the person's next request in the document has it typed
        or accepted whole before the cursor, it is indexed for lookup."""
        previous = self._shown.get(request.document_id)
        if previous is not None and previous[2] and _follows(request.prefix, *previous):
            self.open_documents.add_accepted(previous[2])  # the last suggestion was accepted whole
        self._shown[request.document_id] = (len(request.prefix), request.prefix[-SHOWN_TAIL:], text)

    def to_measure(self) -> Drafter | None:
        """The drafter whose cost the profile measures: auto's draft model (its lookups cost
        nothing worth pricing); not the open documents' lookup, which needs a request's document."""
        drafter = self.drafter
        if isinstance(drafter, AutoDrafter):
            return next((s.drafter for s in drafter.candidates if not s.free), None)
        return None if isinstance(drafter, DocumentsDrafter) else drafter

    def report(self) -> dict[str, Any] | None:
        return self.drafter.report() if isinstance(self.drafter, AutoDrafter) else None

    def forget(self) -> None:
        self._shown.clear()

    def memory(self) -> dict[str, Any]:
        auto = self.drafter if isinstance(self.drafter, AutoDrafter) else None
        return {
            "workspace": self.open_documents.memory(),
            "shown": len(self._shown),
            "auto_estimates": len(auto.documents()) if auto is not None else 0,
        }

    def catch_up(self) -> None:
        """Apply the document changes and closes recorded since (the engine's thread)."""
        with self._index_lock:
            pending, self._to_index = self._to_index, {}
        for document_id, text in pending.items():
            if text is None:
                self.open_documents.remove(document_id)
            else:
                self.open_documents.update(document_id, text)


def _follows(prefix: str, length: int, tail: str, text: str) -> bool:
    """Is `prefix` the prefix a suggestion was shown at, with the suggestion typed after it?"""
    return len(prefix) == length + len(text) and prefix.endswith(tail + text)
