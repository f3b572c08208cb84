"""convert.py and the document line rules: positions in, requests out, items back."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pygls.workspace import PositionCodec

from spec_lsp.config import Settings
from spec_lsp.engine import Completion, DecodeStats
from spec_lsp.server import convert
from spec_lsp.server.protocol import LspTextDocument, lsp_lines

UTF8, UTF16, UTF32 = (
    lsp.PositionEncodingKind.Utf8,
    lsp.PositionEncodingKind.Utf16,
    lsp.PositionEncodingKind.Utf32,
)


def doc(text: str, encoding=UTF16, uri: str = "file:///w/demo.py") -> LspTextDocument:
    return LspTextDocument(
        uri, source=text, version=3, language_id="python", position_codec=PositionCodec(encoding)
    )


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


def done(text: str, typed: str = "") -> Completion:
    return Completion(text=text, stats=DecodeStats(), typed=typed)


@pytest.mark.parametrize(
    ("encoding", "units"),
    [(UTF16, 2 + 2 + 1), (UTF8, 4 + 4 + 3), (UTF32, 1 + 1 + 1)],  # 😀 🎉 漢 in each encoding
)
def test_offsets_count_code_units_of_the_negotiated_encoding(encoding, units):
    document = doc("# first\ns = '😀🎉漢' + x\n", encoding)
    offset = convert.offset_at(document, pos(1, 5 + units))
    assert document.source[offset:] == "' + x\n"


def test_crlf_and_lone_cr_line_ends():
    document = doc("ab\r\ncd\rxy\nz")
    assert convert.offset_at(document, pos(0, 99)) == 2  # end of the line, before \r\n
    assert convert.offset_at(document, pos(1, 1)) == 5
    assert convert.offset_at(document, pos(2, 2)) == 9
    assert convert.offset_at(document, pos(3, 1)) == 11


def test_lines_break_only_at_lsp_line_ends():
    text = "a\x0cb\nc\u2028d\x85e\x0b\x1c\x1d\x1e\u2029f\r\ng\rh"
    assert lsp_lines(text) == ("a\x0cb\n", "c\u2028d\x85e\x0b\x1c\x1d\x1e\u2029f\r\n", "g\r", "h")
    assert lsp_lines("plain\ntext\r\n") == ("plain\n", "text\r\n")
    assert lsp_lines("") == ()
    assert lsp_lines("\n\n") == ("\n", "\n")


def test_incremental_edits_after_a_form_feed_land_where_the_client_meant():
    document = doc("import os\n\x0c\ndef f\n")
    change = lsp.TextDocumentContentChangePartial(range=lsp.Range(pos(2, 5), pos(2, 5)), text="oo")
    document.apply_change(change)
    assert document.source == "import os\n\x0c\ndef foo\n"


@pytest.mark.parametrize(
    ("text", "asked", "clamped"),
    [
        ("def fo\n", pos(0, 500), pos(0, 6)),
        ("def fo", pos(0, 500), pos(0, 6)),  # the last line, without a newline
        ("def fo", pos(7, 0), pos(0, 6)),  # past the last line: the end of the text
        ("def fo\n", pos(7, 3), pos(1, 0)),
        ("a\r\nb", pos(0, 5), pos(0, 1)),
        ("😀\n", pos(0, 9), pos(0, 2)),  # UTF-16 units
        ("", pos(0, 4), pos(0, 0)),
        ("def fo\n", pos(0, 3), pos(0, 3)),
    ],
)
def test_clamp_positions_past_the_end(text, asked, clamped):
    assert convert.clamp(doc(text), asked) == clamped


def test_request_has_prefix_suffix_and_document_facts():
    settings = Settings(max_tokens=7, temperature=0.5, top_k=3, top_p=0.9, seed=11)
    document = doc("x = 1\ndef fo(): pass\n", uri="file:///w/my%20dir/caf%C3%A9.py")
    request = convert.to_request(document, pos(1, 6), settings)
    assert (request.prefix, request.suffix) == ("x = 1\ndef fo", "(): pass\n")
    assert request.file_name == "café.py" and request.language == "python"
    assert request.document_id == "file:///w/my%20dir/caf%C3%A9.py" and request.version == 3
    assert request.max_tokens == 7
    assert (request.sampling.temperature, request.sampling.top_k) == (0.5, 3)
    assert (request.sampling.top_p, request.sampling.seed) == (0.9, 11)


def test_a_selected_item_is_completed_after_as_if_accepted():
    document = doc("x = gr\ny\n")
    selected = lsp.SelectedCompletionInfo(range=lsp.Range(pos(0, 4), pos(0, 6)), text="greet")
    request = convert.to_request(document, pos(0, 6), Settings(), selected)
    assert (request.prefix, request.suffix) == ("x = greet", "\ny\n")
    items = convert.to_inline_list(document, pos(0, 6), done("(name)"), selected).items
    assert items[0].insert_text == "greet(name)" and items[0].range == selected.range


@pytest.mark.parametrize(
    ("start", "end", "usable"),
    [
        (pos(0, 4), pos(0, 6), True),
        (pos(0, 6), pos(0, 6), True),
        (pos(0, 4), pos(0, 8), True),  # the word goes on after the cursor
        (pos(0, 7), pos(0, 9), False),  # starts after the cursor
        (pos(0, 2), pos(0, 5), False),  # ends before it
        (pos(1, 0), pos(1, 2), False),  # another line
    ],
)
def test_only_selections_around_the_cursor_are_used(start, end, usable):
    selected = lsp.SelectedCompletionInfo(range=lsp.Range(start, end), text="zz")
    assert (convert.usable_selection(pos(0, 6), selected) is not None) == usable


def test_inline_items_always_carry_a_range():
    document = doc("s = '😀'; def fo\n")
    cursor = pos(0, 16)
    (item,) = convert.to_inline_list(document, cursor, done("o(x):")).items
    assert item.range == lsp.Range(cursor, cursor) and item.insert_text == "o(x):"
    assert len(convert.to_inline_list(document, cursor, done("")).items) == 0
    assert len(convert.to_inline_list(document, cursor, None).items) == 0


def test_typed_through_items_cover_what_was_typed_in_client_units():
    document = doc("s = '😀'\n", UTF16)
    cursor = pos(0, 7)  # after s = '😀' (the emoji is 2 units)
    (item,) = convert.to_inline_list(document, cursor, done("'\n", typed="'😀")).items
    assert item.range == lsp.Range(pos(0, 4), cursor) and item.insert_text == "'😀'\n"
    document = doc("s = '😀'\n", UTF8)
    (item,) = convert.to_inline_list(document, pos(0, 9), done("'\n", typed="'😀")).items
    assert item.range.start == pos(0, 4)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_typed_through_a_line_break_stays_on_the_cursor_line(newline):
    document = doc(f"def foo(x):{newline}    {newline}")
    cursor = pos(1, 4)  # Enter and the indentation typed into "\n    return x * 2"
    (item,) = convert.to_inline_list(document, cursor, done("return x * 2", typed="\n    ")).items
    assert item.range == lsp.Range(pos(1, 0), cursor)  # one line, as VS Code requires
    assert item.insert_text == "    return x * 2"


def test_completion_fallback_item():
    document = doc("def fo\n")
    result = convert.to_completion_list(document, pos(0, 6), done("o(x):\n    return x"))
    assert result.is_incomplete
    (item,) = result.items
    assert item.label == "o(x):"  # the first line
    assert item.text_edit == lsp.TextEdit(lsp.Range(pos(0, 6), pos(0, 6)), "o(x):\n    return x")
    typed = convert.to_completion_list(document, pos(0, 6), done("(x):", typed="o")).items[0]
    assert typed.text_edit.range.start == pos(0, 5) and typed.filter_text.startswith("o")
    assert convert.to_completion_list(document, pos(0, 6), None).items == []


def change(line: int, character: int, text: str) -> lsp.TextDocumentContentChangePartial:
    here = lsp.Position(line, character)
    return lsp.TextDocumentContentChangePartial(range=lsp.Range(here, here), text=text)


def test_the_cursor_after_an_edit_is_the_end_of_the_inserted_text():
    assert convert.after_edit(change(3, 4, "abc")) == lsp.Position(3, 7)
    assert convert.after_edit(change(3, 4, "a\n    b")) == lsp.Position(4, 5)
    assert convert.after_edit(change(0, 2, "😀")) == lsp.Position(0, 4)  # UTF-16 units
    assert convert.after_edit(change(5, 0, "")) == lsp.Position(5, 0)  # a deletion
    assert convert.after_edit(lsp.TextDocumentContentChangeWholeDocument(text="x")) is None


def test_after_an_edit_counts_in_the_negotiated_encoding():
    utf8 = PositionCodec(lsp.PositionEncodingKind.Utf8).client_num_units
    utf32 = PositionCodec(lsp.PositionEncodingKind.Utf32).client_num_units
    assert convert.after_edit(change(0, 2, "é😀"), utf8) == lsp.Position(0, 8)  # 2 + 6 bytes
    assert convert.after_edit(change(0, 2, "é😀"), utf32) == lsp.Position(0, 4)
    assert convert.after_edit(change(1, 0, "x\né😀"), utf8) == lsp.Position(2, 6)


@pytest.mark.parametrize(
    ("old", "new", "end"),
    [
        ("def fo\n", "def foo\n", 7),  # an insertion: the end of what was typed
        ("def foo(x)\n", "def f(x)\n", 5),  # a deletion: where it was
        ("x = 1 + 2\n", "x = 3\n", 5),  # a replacement: the end of the new text
        ("a\nb\n", "a\nif x:\n    y\nb\n", 13),  # lines inserted: the end of the last
        ("a\nif x:\n    y\nb\n", "a\nb\n", 1),  # lines deleted: the end of the line before
        ("a = 1\nb = 2\n", "a = 1\nb = [\n    3\n]\n", 19),  # replaced across lines
        ("s = 'x'\n", "s = '😀x'\n", 6),  # code points: the emoji is one
        ("abc", "Xabc", 1),  # at the start
        ("abc", "bc", 0),
        ("abc", "abcX", 4),  # at the end
        ("abc", "ab", 2),
        ("", "hello", 5),
        ("hello", "", 0),
        ("foo(x)", "fooo(x)", 4),  # an 'o' typed in a run of o's: after the run
        ("aa", "aaa", 3),  # prefix and suffix would overlap: the prefix takes the run
        ("aaa", "aa", 2),
        ("a\nb\n", "a\n\nb\n", 2),  # Enter at a line's end: on the new line, not after it
        ("    f()\n    g\n", "    f()\n    \n    g\n", 12),  # and its indentation
        ("a\n\nb\n", "a\nb\n", 1),  # a blank line joined to the one above
    ],
)
def test_a_whole_document_change_ends_where_the_texts_stop_differing(old, new, end):
    assert convert.edit_end(old, new) == end


def test_a_whole_document_change_that_changes_nothing_has_no_place():
    assert convert.edit_end("same\n", "same\n") is None
    assert convert.edit_end("", "") is None


def test_the_end_of_an_edit_in_a_long_text_is_found():
    text = "".join(f"line {i}\n" for i in range(20000))
    middle = len(text) // 2
    assert convert.edit_end(text, text[:middle] + "typed" + text[middle:]) == middle + 5
    assert convert.edit_end(text[:middle] + "typed" + text[middle:], text) == middle


@pytest.mark.parametrize(
    ("text", "offset", "encoding", "position"),
    [
        ("ab\ncd\n", 4, UTF16, pos(1, 1)),
        ("ab\ncd\n", 3, UTF16, pos(1, 0)),  # just after a line break: the next line
        ("ab\ncd\n", 6, UTF16, pos(2, 0)),  # the end, after the last line break
        ("ab\ncd", 5, UTF16, pos(1, 2)),  # the end of a last line without one
        ("", 0, UTF16, pos(0, 0)),
        ("x = '😀🎉' + y", 7, UTF16, pos(0, 9)),  # surrogate pairs: two units each
        ("x = '😀🎉' + y", 7, UTF8, pos(0, 13)),
        ("x = '😀🎉' + y", 7, UTF32, pos(0, 7)),
        ("ab\r\ncd\ref", 7, UTF16, pos(2, 0)),
        ("a\x0cb\nc", 5, UTF16, pos(1, 1)),  # a form feed breaks no line
    ],
)
def test_positions_of_offsets_count_code_units_of_the_negotiated_encoding(
    text, offset, encoding, position
):
    document = doc(text, encoding)
    assert convert.position_at(document, offset) == position
    assert convert.offset_at(document, position) == offset


@pytest.mark.parametrize(
    ("old", "new", "after"),
    [
        ("def fo\n", "def foo(\n", pos(0, 8)),
        ("s = ''\nt\n", "s = '😀'\nt\n", pos(0, 7)),  # UTF-16 units
        ("a\n\nb\n", "a\n    if x:\n        y\nb\n", pos(2, 9)),
        ("a\nb\n", "a\n\nb\n", pos(1, 0)),  # Enter: the new line's start
        ("s = '😀'\n", "s = '😀😀'\n", pos(0, 9)),
        ("abc\n", "abc\n", None),
    ],
)
def test_a_whole_document_change_says_where_the_cursor_is(old, new, after):
    document = doc(old)
    document.apply_change(lsp.TextDocumentContentChangeWholeDocument(text=new))
    assert document.source == new
    assert document.after_whole_change == after
