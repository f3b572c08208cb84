"""Which class and function a line of Python is in, read from indentation alone.

The same reading keys the analysis (prepared for a version of the file) and the lookup (from the
text before the cursor of a later version): a scope is the chain of enclosing `class`/`def`
headers, which edits elsewhere in the file do not change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

Scope = tuple[str, ...]  # ("class Browser", "def fetch"); () is the module
_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def code_line(line: str) -> bool:
    """A line that opens a statement: not blank, not a comment, not the closing bracket of a
    header or call spread over lines (`    ) -> None:`)."""
    stripped = line.strip()
    return bool(stripped) and stripped[0] not in "#)]}"


def each_line(lines: list[str]) -> Iterator[Scope]:
    """The scope of every line, in one pass."""
    stack: list[tuple[int, str]] = []  # (header's indentation, "def name" / "class name")
    for line in lines:
        if code_line(line):
            indent = indent_of(line)
            while stack and stack[-1][0] >= indent:
                stack.pop()
        yield tuple(name for _indent_, name in stack)
        header = _HEADER.match(line)
        if header:
            stack.append((len(header.group(1)), f"{header.group(2)} {header.group(3)}"))


def _outer_lines(
    text: str, max_lines: int, code: Callable[[str], bool], width: Callable[[str], int]
) -> Iterator[str]:
    """The code lines above the end of `text` each less indented than every line after it,
    innermost first (a blank line being typed on: its indentation so far)."""
    lines = text.split("\n")
    limit = width(lines[-1])
    for line in reversed(lines[-max_lines:-1]):
        if not code(line):
            continue
        indent = width(line)
        if indent >= limit:
            continue
        yield line
        limit = indent
        if limit == 0:
            return


def at_end(text: str, *, max_lines: int = 4000) -> Scope:
    """The scope of the end of `text` (the cursor), reading headers upwards."""
    found: list[str] = []
    for line in _outer_lines(text, max_lines, code_line, indent_of):
        header = _HEADER.match(line)
        if header:
            found.append(f"{header.group(2)} {header.group(3)}")
    return tuple(reversed(found))


def enclosing_class(scope: Scope) -> Scope:
    """The scope up to its innermost class (what `self` and `cls` are keyed by)."""
    for i in range(len(scope), 0, -1):
        if scope[i - 1].startswith("class "):
            return scope[:i]
    return scope


def _width(line: str) -> int:
    """Indentation as a width (a tab as 4: files that mix tabs and blanks)."""
    head = line[: len(line) - len(line.lstrip(" \t"))]
    return len(head.expandtabs(4))


def _braced_code(line: str) -> bool:
    """A line of a brace language that may open a scope: not blank, not a comment, not a
    closing bracket, not an annotation."""
    stripped = line.strip()
    if stripped == "{":  # (a body opened on a line of its own: the header is above)
        return False
    return bool(stripped) and not stripped.startswith(
        ("//", "/*", "*", ")", "]", "}", ">", "#", "@")
    )


def enclosing_lines(text: str, *, max_lines: int = 4000) -> tuple[str, ...]:
    """A brace language's lines around the end of `text`, outermost first: each code line less
    indented than every line after it (without its indentation). The scopes' headers are among
    them (the analysis keeps those it knows: a class's, a function's); the others are blocks."""
    found = [line.strip() for line in _outer_lines(text, max_lines, _braced_code, _width)]
    return tuple(reversed(found))
