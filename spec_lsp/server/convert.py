"""Pure translations between LSP shapes and engine requests/completions (no I/O)."""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from spec_lsp.config import Settings
from spec_lsp.engine import Completion, CompletionRequest, SamplingParams


def offset_at(document: TextDocument, position: lsp.Position) -> int:
    """Character offset in the document's text of a client (UTF-16 by default) position.

    Positions past the end of a line clamp to its end, past the last line to the end of text."""
    lines = document.lines
    if position.line >= len(lines):
        return len(document.source)
    python_position = document.position_codec.position_from_client_units(lines, position)
    line_text = lines[position.line]
    body = len(line_text.rstrip("\r\n"))
    column = min(python_position.character, body)
    return sum(len(line) for line in lines[: position.line]) + column


def position_back(document: TextDocument, cursor: lsp.Position, text: str) -> lsp.Position:
    """The position `text` (which ends at the cursor, on the same line) starts at, in client units."""
    units = document.position_codec.client_num_units(text)
    return lsp.Position(line=cursor.line, character=max(0, cursor.character - units))


def to_request(
    document: TextDocument,
    position: lsp.Position,
    settings: Settings,
    selected: lsp.SelectedCompletionInfo | None = None,
) -> CompletionRequest:
    source = document.source
    cursor = offset_at(document, position)
    prefix = source[:cursor]
    if selected is not None:  # complete after the selected item's text, as if it were typed
        start = offset_at(document, selected.range.start)
        prefix = source[:start] + selected.text
    file_name = document.uri.rsplit("/", 1)[-1]
    return CompletionRequest(
        prefix=prefix,
        suffix=source[cursor:],
        document_id=document.uri,
        file_name=file_name,
        language=document.language_id or "",
        max_tokens=settings.max_tokens,
        sampling=SamplingParams(
            settings.temperature, settings.top_k, settings.top_p, settings.seed
        ),
        version=document.version or 0,
    )


def replaced_range(
    document: TextDocument,
    position: lsp.Position,
    completion: Completion,
    selected: lsp.SelectedCompletionInfo | None,
) -> tuple[lsp.Range, str]:
    """The range an item replaces and its text: the completion plus whatever before the cursor
    it re-types (the selected item's text, or text typed into an earlier suggestion)."""
    if selected is not None:
        return lsp.Range(
            start=selected.range.start, end=position
        ), selected.text + completion.typed + completion.text
    start = position_back(document, position, completion.typed) if completion.typed else position
    return lsp.Range(start=start, end=position), completion.typed + completion.text


def to_inline_list(
    document: TextDocument,
    position: lsp.Position,
    completion: Completion | None,
    selected: lsp.SelectedCompletionInfo | None = None,
) -> lsp.InlineCompletionList:
    if completion is None or not completion.text:
        return lsp.InlineCompletionList(items=[])
    edit_range, text = replaced_range(document, position, completion, selected)
    return lsp.InlineCompletionList(
        items=[lsp.InlineCompletionItem(insert_text=text, range=edit_range)]
    )


def to_completion_list(
    document: TextDocument, position: lsp.Position, completion: Completion | None
) -> lsp.CompletionList:
    if completion is None or not completion.text:
        return lsp.CompletionList(is_incomplete=True, items=[])
    edit_range, text = replaced_range(document, position, completion, None)
    first_line = text.strip().splitlines()[0] if text.strip() else text
    item = lsp.CompletionItem(
        label=first_line[:60] or text,
        kind=lsp.CompletionItemKind.Text,
        detail="spec-lsp",
        documentation=lsp.MarkupContent(kind=lsp.MarkupKind.PlainText, value=text),
        text_edit=lsp.TextEdit(range=edit_range, new_text=text),
        insert_text_format=lsp.InsertTextFormat.PlainText,
        filter_text=document.source[
            offset_at(document, edit_range.start) : offset_at(document, position)
        ]
        + text,
        sort_text="0",
    )
    return lsp.CompletionList(is_incomplete=True, items=[item])
