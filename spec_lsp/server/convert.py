"""Pure translations between LSP shapes and engine requests/completions (no I/O).

Positions arrive in the negotiated encoding (UTF-16 unless the client asked for another);
the document's position codec turns them into string offsets and back.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from spec_lsp.config import Settings
from spec_lsp.engine import Completion, CompletionRequest, SamplingParams


def clamp(document: TextDocument, position: lsp.Position) -> lsp.Position:
    """The position itself, or, as LSP says, the end of its line when the character is past
    it, and the end of the text when the line is past the last one."""
    lines = document.lines
    units = document.position_codec.client_num_units
    if position.line >= len(lines):
        if not lines or lines[-1].endswith(("\n", "\r")):
            return lsp.Position(line=len(lines), character=0)
        return lsp.Position(line=len(lines) - 1, character=units(lines[-1]))
    body = units(lines[position.line].rstrip("\r\n"))
    if position.character > body:
        return lsp.Position(line=position.line, character=body)
    return position


def offset_at(document: TextDocument, position: lsp.Position) -> int:
    """Offset in the document's text of a client position.

    As LSP says, a character past the end of its line means the line's end; a line past the
    last one means the end of the text."""
    lines = document.lines
    if position.line >= len(lines):
        return len(document.source)
    body = lines[position.line].rstrip("\r\n")
    codec = document.position_codec
    character = min(position.character, codec.client_num_units(body))
    column = codec.position_from_client_units([body], lsp.Position(0, character)).character
    return sum(len(line) for line in lines[: position.line]) + column


def after_edit(change: lsp.TextDocumentContentChangeEvent) -> lsp.Position | None:
    """Where the cursor is after an incremental change: the end of the inserted text (UTF-16
    units, as LSP counts); None for a whole-document change."""
    if not isinstance(change, lsp.TextDocumentContentChangePartial):
        return None
    start, lines = change.range.start, change.text.split("\n")
    if len(lines) == 1:
        return lsp.Position(start.line, start.character + _utf16_len(lines[0]))
    return lsp.Position(start.line + len(lines) - 1, _utf16_len(lines[-1]))


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _before(a: lsp.Position, b: lsp.Position) -> bool:
    return (a.line, a.character) < (b.line, b.character)


def usable_selection(
    position: lsp.Position, selected: lsp.SelectedCompletionInfo | None
) -> lsp.SelectedCompletionInfo | None:
    """The popup's selected item if its range is on the cursor's line and touches the cursor
    (it replaces the word being typed); anything else is ignored."""
    if selected is None:
        return None
    start, end = selected.range.start, selected.range.end
    if start.line != position.line or end.line != position.line:
        return None
    if _before(position, start) or _before(end, start) or _before(end, position):
        return None
    return selected


def to_request(
    document: TextDocument,
    position: lsp.Position,
    settings: Settings,
    selected: lsp.SelectedCompletionInfo | None = None,
) -> CompletionRequest:
    """The engine's request: the text before and after the cursor. With a selected popup item,
    its text replaces its range, as if the user had accepted it, and completion follows it."""
    source = document.source
    cursor = offset_at(document, position)
    prefix, suffix = source[:cursor], source[cursor:]
    if selected is not None:
        prefix = source[: offset_at(document, selected.range.start)] + selected.text
        suffix = source[offset_at(document, selected.range.end) :]
    return CompletionRequest(
        prefix=prefix,
        suffix=suffix,
        document_id=document.uri,
        file_name=document.filename or "",
        language=document.language_id or "",
        max_tokens=settings.max_tokens,
        sampling=SamplingParams.from_settings(settings),
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
        return selected.range, selected.text + completion.typed + completion.text
    # Ranges stay on the cursor's line (VS Code requires it): of the typed text, re-cover only
    # what follows its last line break (typing "\n    " re-covers the indentation).
    typed = re.split(r"\r\n|\r|\n", completion.typed)[-1]
    units = document.position_codec.client_num_units(typed)
    start = lsp.Position(line=position.line, character=max(0, position.character - units))
    return lsp.Range(start=start, end=position), typed + completion.text


def to_inline_list(
    document: TextDocument,
    position: lsp.Position,
    completion: Completion | None,
    selected: lsp.SelectedCompletionInfo | None = None,
) -> lsp.InlineCompletionList:
    """One item with an explicit range (VS Code shows nothing without one), or no items."""
    if completion is None or not completion.text:
        return lsp.InlineCompletionList(items=[])
    edit_range, text = replaced_range(document, position, completion, selected)
    return lsp.InlineCompletionList(
        items=[lsp.InlineCompletionItem(insert_text=text, range=edit_range)]
    )


def to_completion_list(
    document: TextDocument, position: lsp.Position, completion: Completion | None
) -> lsp.CompletionList:
    """The fallback for clients without inline completion: one item whose textEdit inserts
    the completion, labelled with its first line. Incomplete, so every keystroke asks again."""
    if completion is None or not completion.text:
        return lsp.CompletionList(is_incomplete=True, items=[])
    edit_range, text = replaced_range(document, position, completion, None)
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), text)
    item = lsp.CompletionItem(
        label=first_line[:80],
        kind=lsp.CompletionItemKind.Text,
        detail="spec-lsp",
        documentation=text,
        text_edit=lsp.TextEdit(range=edit_range, new_text=text),
        insert_text_format=lsp.InsertTextFormat.PlainText,
        filter_text=text,  # starts with what the edit replaces, so the client keeps it
        sort_text="0",
    )
    return lsp.CompletionList(is_incomplete=True, items=[item])
