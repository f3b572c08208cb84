"""Where a name is to be chosen from a known set, read from the text before the next token.

Two trigger points (Python):
- a member: `receiver.name` with `receiver` a dotted chain of names (`self`, `os.path`,
  `self._browser`); before the `.` is written, only tokens opening with `.` are constrained;
- an import: `from module import name` (and each name after a comma); before the blank after
  `import` is written, only tokens opening with a blank are constrained.

- a keyword argument: `call(..., name` with `call` a chain of names; only tokens that end the
  name with `=` are constrained (to names the call takes): a positional argument is free.

Nothing triggers inside a string or a comment (on the line; a triple-quoted string spanning
lines is the caller's to know), after a receiver that is a call or a subscript (`f().`, `x[0].`:
no chain of names), or on a number. Whether the receiver resolves is the analysis's to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CHAIN = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_MEMBER = re.compile(rf"(?<![\w.])({_CHAIN})\.(\w*)$")  # the `.` written, maybe a name begun
_RECEIVER = re.compile(rf"(?<![\w.])({_CHAIN})$")  # the chain written, its `.` not yet
_IMPORTED = r"(?:\w+(?:\s+as\s+\w+)?\s*,\s*)*"
_FROM = re.compile(rf"^\s*from\s+(\.*(?:{_CHAIN})?)\s+import\s+(?:\(\s*)?{_IMPORTED}(\w*)$")
_FROM_BARE = re.compile(rf"^\s*from\s+(\.*(?:{_CHAIN})?)\s+import$")
_KEYWORDS = frozenset(
    "and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield "
    "None True False".split()
)


@dataclass(frozen=True)
class Trigger:
    kind: str  # "member" | "import"
    receiver: str  # the dotted chain before the `.`, or the module after `from`
    written: str  # the part of the name already written ("" at the `.` or before it)
    sep: str  # "" once the separator is written; else the separator still to come (. or blank)
    statement_start: bool = False  # the receiver opens the statement (maybe an assignment)


def find(line: str) -> Trigger | None:
    """The trigger point at the end of `line` (the text from the last newline on), if any."""
    if _open_string_or_comment(line):
        return None
    found = _FROM.match(line)
    if found:
        return Trigger("import", found.group(1), found.group(2), "")
    found = _FROM_BARE.match(line)
    if found:
        return Trigger("import", found.group(1), "", " ")
    found = _MEMBER.search(line)
    sep = ""
    if found is None:
        found, sep = _RECEIVER.search(line), "."
        if found is None:
            return None
    receiver = found.group(1)
    if receiver.split(".", 1)[0] in _KEYWORDS or _after_def(line, found.start()):
        return None
    written = found.group(2) if not sep else ""
    return Trigger("member", receiver, written, sep, not line[: found.start()].strip())


def find_keyword(line: str) -> Trigger | None:
    """The argument being written in a call left open on `line`, if it is a bare name so far:
    Trigger("keyword", callee, the name so far, "")."""
    if _open_string_or_comment(line):
        return None
    opened = _last_open_paren(line)
    if opened < 0:
        return None
    callee = _RECEIVER.search(line, 0, opened)
    if callee is None or callee.group(1).split(".", 1)[0] in _KEYWORDS:
        return None
    if _after_def(line, callee.start()):
        return None  # (a definition's parameters, a class's bases)
    argument = _ARGUMENT.search(line[opened + 1 :])
    if argument is None:
        return None
    return Trigger("keyword", callee.group(1), argument.group(1), "")


_ARGUMENT = re.compile(r"(?:^|,)\s*([A-Za-z_]\w*|)$")


def _last_open_paren(line: str) -> int:
    """Where the innermost bracket still open at the end of `line` is, if it is a `(`; -1 if
    none is or another is (quoted text skipped)."""
    stack: list[int] = []
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            stack.append(i)
        elif c in ")]}" and stack:
            stack.pop()
    return stack[-1] if stack and line[stack[-1]] == "(" else -1


def _after_def(line: str, at: int) -> bool:
    """The chain is a name being defined (`def f`, `class C`, `import a.b`, `as x`)."""
    before = line[:at].rstrip().rsplit(None, 1)[-1:] if line[:at].strip() else []
    return bool(before) and before[0] in (
        "def",
        "class",
        "import",
        "from",
        "as",
        "global",
        "nonlocal",
    )


def _open_string_or_comment(line: str) -> bool:
    """Whether the end of `line` is inside a string or a comment begun on it."""
    if "#" not in line and "'" not in line and '"' not in line:
        return False
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif c == "#":
            return True
        elif c in "'\"":
            quote = c * 3 if line.startswith(c * 3, i) else c
            i += len(quote)
            continue
        i += 1
    return bool(quote)
