"""The words a context source weighs: identifiers, less the stop words (keywords, builtins,
the other languages' keywords and types), less the word being typed at the cursor (the block
must not change with each key)."""

from __future__ import annotations

import builtins
import keyword
import re

IDENTIFIER = re.compile(r"[^\W\d]\w*")
STOP_WORDS = (
    set(keyword.kwlist)
    | set(getattr(keyword, "softkwlist", ()))
    | set(dir(builtins))
    | {
        # common to the other languages the symbol index reads (keywords, literals, types)
        *"abstract any as async await auto bool boolean break byte case catch char chan class"
        " const constexpr continue crate debugger def default defer delete do double dyn elif"
        " else enum export extends extern false fallthrough final finally float fn for func"
        " function go goto if impl implements import in include instanceof int interface let"
        " long loop map match mod module move mut namespace new nil null number object"
        " override package pragma private protected pub public readonly ref register return"
        " self Self short signed sizeof static string struct super switch template this throw"
        " throws trait true try type typedef typename typeof u8 u16 u32 u64 usize i8 i16 i32"
        " i64 isize f32 f64 uint uint8 uint16 uint32 uint64 int8 int16 int32 int64 float32"
        " float64 undefined union unsafe unsigned use using var virtual void volatile where"
        " while yield define ifdef ifndef endif elseif std String Vec Option Some Ok Err"
        " console require exports len cap make append println printf".split()
    }
)


def word_at(text: str, cursor: int) -> tuple[int, int]:
    """The span of the identifier the cursor is in or just after (the word being typed)."""
    start = cursor
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = cursor
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return start, end


def without_word_at(text: str, cursor: int) -> str:
    """The text with the word at the cursor blanked out (same length: offsets and lines hold)."""
    start, end = word_at(text, cursor)
    return text[:start] + " " * (end - start) + text[end:]
