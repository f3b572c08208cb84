"""Document sync, fuzzed: after any sequence of incremental edits the server's text is the
client's text.

The client's model below is written from the LSP specification alone, independently of pygls:
lines end at \\n, \\r\\n or \\r; `character` counts code units of the negotiated encoding; a
character past the end of its line means the line's end, a line past the last one means the end
of the text; a position inside a surrogate pair (or a UTF-8 sequence) rounds up to the end of the
character; a reversed range is the same range forwards (as VS Code's Range normalizes it).
Versions do not matter: the client's changes apply in the order sent, stale version or not.

The server side is the real thing: the workspace and documents the server creates
(`LspWorkspace`, via pygls' `update_text_document`) and `convert.offset_at`/`convert.clamp`.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from spec_lsp.server import convert
from spec_lsp.server.protocol import LspWorkspace

URI = "file:///fuzz/doc.py"
UNIT_BYTES = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}
UNIT_SIZE = {"utf-8": 1, "utf-16": 2, "utf-32": 4}


# -- the client's model -------------------------------------------------------------------------
def units(text: str, encoding: str) -> int:
    return len(text.encode(UNIT_BYTES[encoding], "surrogatepass")) // UNIT_SIZE[encoding]


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end of body) of every line, the last (possibly empty) one included."""
    spans, start = [], 0
    for brk in re.finditer(r"\r\n|\r|\n", text):
        spans.append((start, brk.start()))
        start = brk.end()
    spans.append((start, len(text)))
    return spans


def client_offset(text: str, line: int, character: int, encoding: str) -> int:
    spans = line_spans(text)
    if line >= len(spans):
        return len(text)
    start, end = spans[line]
    used = 0
    for i in range(start, end):
        if used >= character:
            return i
        used += units(text[i], encoding)
    return end


def client_edit(text: str, change: tuple[int, int, int, int, str], encoding: str) -> str:
    sl, sc, el, ec, new = change
    a, b = client_offset(text, sl, sc, encoding), client_offset(text, el, ec, encoding)
    a, b = min(a, b), max(a, b)
    return text[:a] + new + text[b:]


# -- strategies ---------------------------------------------------------------------------------
PIECES = [
    "a",
    "x",
    " ",
    "\t",
    "é",
    "中",
    "文",
    "😀",
    "👍🏽",
    "\n",
    "\r\n",
    "\r",
    "\x0c",
    "\u2028",
    "def ",
]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
coordinates = st.tuples(st.integers(0, 8), st.integers(0, 12))  # past the ends too
changes = st.tuples(coordinates, coordinates, texts).map(lambda c: (*c[0], *c[1], c[2]))
encodings = st.sampled_from(["utf-16", "utf-8", "utf-32"])


def server_document(text: str, encoding: str):
    workspace = LspWorkspace(None, position_encoding=encoding)
    workspace.put_text_document(
        lsp.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)
    )
    return workspace


def apply(workspace: LspWorkspace, change: tuple[int, int, int, int, str], version: int) -> None:
    sl, sc, el, ec, new = change
    workspace.update_text_document(
        lsp.VersionedTextDocumentIdentifier(uri=URI, version=version),
        lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec)), text=new
        ),
    )


@settings(max_examples=600, deadline=None)
@given(
    text=texts,
    edits=st.lists(st.tuples(changes, st.integers(0, 50)), max_size=12),
    encoding=encodings,
)
def test_server_text_equals_client_text_after_any_edits(text, edits, encoding):
    workspace = server_document(text, encoding)
    expected = text
    for change, version in edits:  # versions in any order: stale ones apply all the same
        apply(workspace, change, version)
        expected = client_edit(expected, change, encoding)
        assert workspace.get_text_document(URI).source == expected, (change, encoding)


@settings(max_examples=600, deadline=None)
@given(text=texts, position=coordinates, encoding=encodings)
def test_offsets_and_clamping_agree_with_the_client(text, position, encoding):
    document = server_document(text, encoding).get_text_document(URI)
    line, character = position
    expected = client_offset(text, line, character, encoding)
    assert convert.offset_at(document, lsp.Position(line, character)) == expected
    clamped = convert.clamp(document, lsp.Position(line, character))
    assert convert.offset_at(document, clamped) == expected  # clamping moves nothing
    spans = line_spans(text)
    assert clamped.line < len(spans)
    start, end = spans[clamped.line]
    assert clamped.character <= units(text[start:end], encoding)  # and lands inside the text


def test_known_corruptions_are_fixed():
    """Cases pygls got wrong, kept as named examples."""
    cases = [
        # a character past the end of a CRLF line split the \r\n
        ("ab\r\ncd", (0, 9, 0, 9, "X"), "abX\r\ncd"),
        # past the end of the last line (no newline) landed one character early
        ("abc", (0, 9, 0, 9, "X"), "abcX"),
        # a reversed range on one line duplicated the text between
        ("abcdef", (0, 4, 0, 1, "X"), "aXef"),
        # a reversed range across lines dropped the edit
        ("ab\ncd", (1, 1, 0, 1, "X"), "aXd"),
    ]
    for text, change, expected in cases:
        workspace = server_document(text, "utf-16")
        apply(workspace, change, 2)
        assert workspace.get_text_document(URI).source == expected
        assert client_edit(text, change, "utf-16") == expected
