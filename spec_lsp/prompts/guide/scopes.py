"""Which class and function a line of Python is in, read from indentation alone.

The same reading keys the analysis (prepared for a version of the file) and the lookup (from the
text before the cursor of a later version): a scope is the chain of enclosing `class`/`def`
headers, which edits elsewhere in the file do not change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Scope = tuple[str, ...]  # ("class Browser", "def fetch"); () is the module
_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _code(line: str) -> bool:
    """A line that opens a statement: not blank, not a comment, not the closing bracket of a
    header or call spread over lines (`    ) -> None:`)."""
    stripped = line.strip()
    return bool(stripped) and stripped[0] not in "#)]}"


def each_line(lines: list[str]) -> Iterator[Scope]:
    """The scope of every line, in one pass."""
    stack: list[tuple[int, str]] = []  # (header's indentation, "def name" / "class name")
    for line in lines:
        if _code(line):
            indent = _indent(line)
            while stack and stack[-1][0] >= indent:
                stack.pop()
        yield tuple(name for _indent_, name in stack)
        header = _HEADER.match(line)
        if header:
            stack.append((len(header.group(1)), f"{header.group(2)} {header.group(3)}"))


def at_end(text: str, *, max_lines: int = 4000) -> Scope:
    """The scope of the end of `text` (the cursor), reading headers upwards."""
    lines = text.split("\n")
    last = lines[-1]
    limit = _indent(last)  # (a blank line being typed on: its indentation so far)
    found: list[str] = []
    for line in reversed(lines[-max_lines:-1]):
        if not _code(line):
            continue
        indent = _indent(line)
        if indent >= limit:
            continue
        header = _HEADER.match(line)
        if header:
            found.append(f"{header.group(2)} {header.group(3)}")
        limit = indent
        if limit == 0:
            break
    return tuple(reversed(found))


def enclosing_class(scope: Scope) -> Scope:
    """The scope up to its innermost class (what `self` and `cls` are keyed by)."""
    for i in range(len(scope), 0, -1):
        if scope[i - 1].startswith("class "):
            return scope[:i]
    return scope
