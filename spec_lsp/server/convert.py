"""Pure translations between LSP shapes and engine requests/completions (no I/O).

Positions arrive in the negotiated encoding (UTF-16 unless the client asked for another);
the document's position codec turns them into string offsets and back.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from spec_lsp.config import Settings
from spec_lsp.engine import Completion, CompletionRequest, SamplingParams
from spec_lsp.textdiff import common_prefix, common_suffix

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
ACCEPTED_COMMAND = "specLsp.accepted"  # an inline item's command: the client ran it on accept


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


def told_position(value: Any) -> lsp.Position | None:
    """A position a client sent in a notification of ours (an object with `line` and
    `character`, or its mapping), or None where it is not one."""
    get = value.get if isinstance(value, dict) else lambda name: getattr(value, name, None)
    numbers = [
        n
        for n in (get("line"), get("character"))
        if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**31  # (LSP's uinteger)
    ]
    return lsp.Position(line=numbers[0], character=numbers[1]) if len(numbers) == 2 else None


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


def after_edit(
    change: lsp.TextDocumentContentChangeEvent, units: Callable[[str], int] | None = None
) -> lsp.Position | None:
    """Where the cursor is after an incremental change: the end of the inserted text, in the
    negotiated encoding's code units (`units`: the document codec's client_num_units; UTF-16,
    LSP's default, without one); None for a whole-document change (see edit_end)."""
    if not isinstance(change, lsp.TextDocumentContentChangePartial):
        return None
    count = units or _utf16_len
    start, lines = change.range.start, change.text.split("\n")
    if len(lines) == 1:
        return lsp.Position(start.line, start.character + count(lines[0]))
    return lsp.Position(start.line + len(lines) - 1, count(lines[-1]))


def inserted_texts(changes: Sequence[Any] | None) -> list[str]:
    """What each incremental change of a didChange inserted, in order (a deletion: ""); empty if
    any change sent the whole document (then the keys of a batch are not known)."""
    if not changes or not all(isinstance(c, lsp.TextDocumentContentChangePartial) for c in changes):
        return []
    return [change.text for change in changes]


def edit_end(old: str, new: str) -> int | None:
    """Where the cursor is after `old` became `new` (a whole-document change): the end of the
    inserted text, as an offset in `new`; None when the text is the same.

    The edit is what lies between the common prefix and the common suffix of the two texts.
    Where they overlap (a run of equal characters: "fo" -> "foo", Enter typed before a line
    break), the smallest edit could lie anywhere along the run: the cursor is taken at the first
    line end there (Enter at a line's end leaves the cursor on the new line, before the line
    break that was already there), else after the run. Slices are compared in halving steps:
    linear work in C, log n steps in Python."""
    if old == new:
        return None
    shortest = min(len(old), len(new))
    prefix, suffix = common_prefix(old, new), common_suffix(old, new)
    earliest = len(new) - suffix
    latest = len(new) - min(suffix, shortest - prefix)
    if earliest < latest:
        line_end = _LINE_BREAK.search(new, earliest, latest + 1)
        if line_end is not None:
            return line_end.start()
    return latest


def position_at(document: TextDocument, offset: int) -> lsp.Position:
    """The client position of an offset in the document's text (offset_at's inverse): the
    character counts code units of the negotiated encoding."""
    lines = document.lines
    ends = list(accumulate(map(len, lines)))  # where each line ends, its line break included
    line = bisect_right(ends, offset)  # an offset at a line's end, after its break: the next
    if line == len(lines):
        if not lines or lines[-1].endswith(("\n", "\r")):
            return lsp.Position(line=len(lines), character=0)
        line -= 1  # the end of a last line without a line break
    column = offset - (ends[line - 1] if line else 0)
    units = document.position_codec.client_num_units(lines[line][:column])
    return lsp.Position(line=line, character=units)


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
    typed = _LINE_BREAK.split(completion.typed)[-1]
    units = document.position_codec.client_num_units(typed)
    start = lsp.Position(line=position.line, character=max(0, position.character - units))
    return lsp.Range(start=start, end=position), typed + completion.text


def to_inline_list(
    document: TextDocument,
    position: lsp.Position,
    completion: Completion | None,
    selected: lsp.SelectedCompletionInfo | None = None,
    number: int | None = None,
) -> lsp.InlineCompletionList:
    """One item with an explicit range (VS Code shows nothing without one), or no items. With
    the suggestion's `number`, the item's command tells the server it was accepted (clients
    run it on accept)."""
    if completion is None or not completion.text:
        return lsp.InlineCompletionList(items=[])
    edit_range, text = replaced_range(document, position, completion, selected)
    command = (
        lsp.Command(title="spec-lsp: accepted", command=ACCEPTED_COMMAND, arguments=[number])
        if number is not None
        else None
    )
    return lsp.InlineCompletionList(
        items=[lsp.InlineCompletionItem(insert_text=text, range=edit_range, command=command)]
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


def workspace_folders(params: lsp.InitializeParams) -> list[str]:
    """The folders the editor opened, as local paths: workspaceFolders, else rootUri, else
    the deprecated rootPath."""
    if params.workspace_folders:
        return local_paths([folder.uri for folder in params.workspace_folders])
    if params.root_uri:
        return local_paths([params.root_uri])
    return [params.root_path] if params.root_path else []


def local_paths(uris: Sequence[str]) -> list[str]:
    """The file-system paths of `file:` URIs (others are not on this machine)."""
    return [uri_to_path(uri) for uri in uris if uri.startswith("file:")]


def uri_to_path(uri: str) -> str:
    return url2pathname(unquote(urlparse(uri).path))


def file_events(events: Sequence[lsp.FileEvent]) -> tuple[list[str], list[str]]:
    """(created or changed, deleted) local paths of didChangeWatchedFiles events."""
    changed = [e.uri for e in events if e.type != lsp.FileChangeType.Deleted]
    deleted = [e.uri for e in events if e.type == lsp.FileChangeType.Deleted]
    return local_paths(changed), local_paths(deleted)
