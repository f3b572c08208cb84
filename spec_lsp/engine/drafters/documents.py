"""The open documents' drafter (`drafter: workspace`): what followed the longest earlier
occurrence of the context's end in any open document or accepted completion
(`OpenDocuments`), as target tokens. (Files of the workspace folders that are not open are
context, `context/workspace.py`, not drafts.)"""

from __future__ import annotations

from spec_lsp.engine.backends.base import ModelBackend
from spec_lsp.engine.drafters.base import Draft, Drafter, DraftRequest
from spec_lsp.engine.drafters.open_documents import Match, OpenDocuments
from spec_lsp.engine.drafters.token_text import ContextText, complete_utf8, text_to_target


class DocumentsDrafter(Drafter):
    """Propose what followed the longest earlier occurrence of the context's end, in any open
    document. Free to compute; strong where code repeats across files."""

    name = "workspace"
    free = True

    def __init__(
        self,
        index: OpenDocuments,
        target: ModelBackend,
        *,
        document_id: str = "",
        cursor: int | None = None,
        context_chars: int = 256,
    ) -> None:
        self.index, self.target = index, target
        self.document_id, self.cursor = document_id, cursor
        self.context_chars = context_chars
        self.text = ContextText(target)
        self.last_match: Match | None = None

    def draft(self, request: DraftRequest) -> Draft:
        view = self.text.update(request.context)
        self.last_match = None
        if not view or complete_utf8(view) < len(view):
            return Draft([])
        context = view[-4 * self.context_chars :].decode("utf-8", "replace")
        exclude = (self.document_id, self.cursor) if self.cursor is not None else None
        match = self.index.lookup(
            context[-self.context_chars :],
            max_chars=8 * request.max_tokens + 16,
            prefer=self.document_id,
            exclude=exclude,
        )
        if match is None:
            return Draft([])
        self.last_match = match
        tokens = text_to_target(self.target, request.context[-1], match.continuation)
        # strength in tokens, as the n-gram lookup's (~4 characters of code per token)
        return Draft(tokens[: request.max_tokens], strength=match.length // 4)
