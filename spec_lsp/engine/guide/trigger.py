"""Where a name is to be chosen from a known set, read from the text before the next token.

The trigger points (Python):
- a member: `receiver.name` with `receiver` a dotted chain of names (`self`, `os.path`,
  `self._browser`); before the `.` is written, only tokens opening with `.` are constrained;
- an import: `from module import name` (and each name after a comma); before the blank after
  `import` is written, only tokens opening with a blank are constrained;
- a submodule: `from package.name` or `import package.name` (a module path in an import); before
  the `.` is written, only tokens opening with `.` are constrained.

- a keyword argument: `call(..., name` with `call` a chain of names; only tokens that end the
  name with `=` are constrained (to names the call takes): a positional argument is free.

Brace languages (JS/TS, Go, Rust, Java: `syntax="braces"`): the member trigger alone, with a
TypeScript private name (`this.#x`) and Rust's paths (`Type::`, `module::`, once the `::` is
written; the receiver then ends with `::`); comments are `//`, strings `"`, `'` and `` ` ``
(Rust's lifetimes are not strings), and the words that define a name (`class`, `fn`, `func`,
`let`, ...) or are no receiver (`return`, `new`, ...) keep it free.

Nothing triggers inside a string or a comment (on the line; a triple-quoted string spanning
lines is the caller's to know), after a receiver that is a call or a subscript (`f().`, `x[0].`:
no chain of names), or on a number. Whether the receiver resolves is the analysis's to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_CHAIN = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_MEMBER = re.compile(rf"(?<![\w.])({_CHAIN})\.(\w*)$")  # the `.` written, maybe a name begun
_RECEIVER = re.compile(rf"(?<![\w.])({_CHAIN})$")  # the chain written, its `.` not yet
# what may come before a target of a tuple opening the statement (`self.a, self.b, self.`,
# `(x, *rest, self.`): the chain may be a new attribute's target, as at the statement's start
_TARGETS = re.compile(rf"\s*[(\[]?\s*(?:\*?{_CHAIN}\s*,\s*)+")
_IMPORTED = r"(?:\w+(?:\s+as\s+\w+)?\s*,\s*)*"
_FROM = re.compile(rf"^\s*from\s+(\.*(?:{_CHAIN})?)\s+import\s+(?:\(\s*)?{_IMPORTED}(\w*)$")
_FROM_BARE = re.compile(rf"^\s*from\s+(\.*(?:{_CHAIN})?)\s+import$")
_SUBMODULE = re.compile(rf"^\s*(?:from|import)\s+({_CHAIN})\.(\w*)$")  # `from a.b.` (`.c`)
_PACKAGE = re.compile(rf"^\s*(?:from|import)\s+({_CHAIN})$")  # `from a.b`, its `.` to come
# (pattern, kind, the separator still to come: "" where it is written and a name may be begun)
_IMPORT_POINTS = (
    (_FROM, "import", ""),
    (_FROM_BARE, "import", " "),
    (_SUBMODULE, "module", ""),
    (_PACKAGE, "module", "."),
)
_KEYWORDS = frozenset(
    "and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield "
    "None True False".split()
)


@dataclass(frozen=True)
class Trigger:
    kind: str  # "member" | "import" | "module" (a submodule) | "keyword"
    receiver: str  # the dotted chain before the `.`, the module after `from`, or the package
    written: str  # the part of the name already written ("" at the `.` or before it)
    sep: str  # "" once the separator is written; else the separator still to come (. or blank)
    statement_start: bool = False  # it opens the statement, or a tuple target opening it


def find(line: str, syntax: str = "python") -> Trigger | None:
    """The trigger point at the end of `line` (the text from the last newline on), if any."""
    if syntax != "python":
        return _find_braced(line)
    if _open_string_or_comment(line):
        return None
    for pattern, kind, sep in _IMPORT_POINTS:
        found = pattern.match(line)
        if found:  # (the name begun, where the separator is written)
            return Trigger(kind, found.group(1), "" if sep else found.group(2), sep)
    return _member(line, (_MEMBER, _RECEIVER), _KEYWORDS, _after_def)


def _member(
    line: str,
    patterns: tuple[re.Pattern[str], re.Pattern[str]],
    words: frozenset[str],
    defining: Callable[[str, int], bool],
) -> Trigger | None:
    """`chain.` (maybe a name begun) or `chain` (its `.` to come) at the end of `line`, unless
    the chain opens with one of `words` or is a name being defined."""
    member, receiver_only = patterns
    found = member.search(line)
    sep = ""
    if found is None:
        found, sep = receiver_only.search(line), "."
        if found is None:
            return None
    receiver = found.group(1)
    if receiver.split(".", 1)[0] in words or defining(line, found.start()):
        return None
    written = found.group(2) if not sep else ""
    before = line[: found.start()]
    opens = not before.strip() or _TARGETS.fullmatch(before) is not None
    return Trigger("member", receiver, written, sep, opens)


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


# a string that opens and closes on its line (what the lexers here read past whole)
LINE_STRINGS = r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
# what a Python text is read past to count its brackets: strings (triple-quoted ones across
# lines, maybe left open at the end; one left open on its line ends there), comments, and the
# brackets themselves
_SCANNED = re.compile(
    r"'''(?:\\.|[^\\])*?(?:'''|\Z)"
    r'|"""(?:\\.|[^\\])*?(?:"""|\Z)'
    rf"|{LINE_STRINGS}"
    r"|['\"][^\n]*"
    r"|#[^\n]*"
    r"|[()\[\]{}]",
    re.S,
)
# the brackets a text leaves open: how many, and whether the outermost was opened after code on
# its line (a call's `(`, an assignment's `[`) rather than opening it (maybe a tuple target)
Brackets = tuple[int, bool]
NONE_OPEN: Brackets = (0, False)


def open_brackets(text: str, above: Brackets = NONE_OPEN) -> Brackets:
    """The brackets left open at the end of Python `text` (which starts at a line's start),
    `above` being those open before it; strings and comments are read past (a string left open
    at the end is not carried on: the monitor reads nothing inside one, `open_span`)."""
    depth, after_code = above
    for found in _SCANNED.finditer(text):
        c = found.group()
        if c in "([{":
            if depth == 0:
                start = found.start()
                after_code = bool(text[text.rfind("\n", 0, start) + 1 : start].strip())
            depth += 1
        elif c in ")]}" and depth:
            depth -= 1
    return depth, after_code


def continues_statement(text: str, above: Brackets = NONE_OPEN) -> bool:
    """Whether a line after Python `text` continues a statement begun above it, inside a bracket
    opened after something on that statement's line (`register(` then `[`, then `(str, self.`):
    not where a statement (or an assignment's target) starts. A bracket opening its line, as a
    tuple target may (`(` then `self.a,` then `self.`), is not counted."""
    depth, after_code = open_brackets(text, above)
    return depth > 0 and after_code


def _open_string_or_comment(line: str) -> bool:
    """Whether the end of `line` is inside a string or a comment begun on it."""
    if "#" not in line and "'" not in line and '"' not in line:
        return False
    return _left_open(line, comment="#", quotes="'\"", triple=True)


def _left_open(
    line: str,
    *,
    comment: str,
    quotes: str,
    triple: bool = False,
    opens: Callable[[str, int], bool] = lambda line, i: True,
) -> bool:
    """Whether the end of `line` is inside a quoted text or a comment (`comment` to the end of
    the line); `opens`: whether a quote character at i begins a string."""
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
        elif line.startswith(comment, i):
            return True
        elif c in quotes and opens(line, i):
            quote = c * 3 if triple and line.startswith(c * 3, i) else c
            i += len(quote)
            continue
        i += 1
    return bool(quote)


# -- brace languages -----------------------------------------------------------------------------
_B_MEMBER = re.compile(rf"(?<![\w.$#:])({_CHAIN})\.(#?\w*)$")
_B_RECEIVER = re.compile(rf"(?<![\w.$#:])({_CHAIN})$")
_B_PATH = re.compile(r"(?<![\w.$:])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)::(\w*)$")
_B_DEFINING = frozenset(
    "class interface struct enum trait impl fn func function let const var type mod package "
    "import use extends implements namespace module".split()
)
_B_WORDS = frozenset(
    "return new typeof await yield throw case in of instanceof delete void if else for while "
    "switch do break continue let const var fn func go defer chan map struct type import package "
    "pub use mod impl trait enum match loop as where mut ref static final public private "
    "protected class interface extends implements throws function export default async "
    "unsafe dyn move true false null nil undefined".split()
)


def _find_braced(line: str) -> Trigger | None:
    if _open_braced(line):
        return None
    found = _B_PATH.search(line)
    if found is not None:
        if _defining_braced(line, found.start()) or found.group(1).split("::")[0] in _B_WORDS:
            return None
        return Trigger("member", found.group(1) + "::", found.group(2), "")
    return _member(line, (_B_MEMBER, _B_RECEIVER), _B_WORDS, _defining_braced)


_GO_METHOD = re.compile(r"^\s*func\s*\([^)]*\)\s*$")  # `func (s *S) ` before a method's name


def _defining_braced(line: str, at: int) -> bool:
    before = line[:at].split()
    return bool(before) and before[-1] in _B_DEFINING or bool(_GO_METHOD.match(line[:at]))


def _open_braced(line: str) -> bool:
    """Whether the end of `line` is inside a string or a `//` comment begun on it (a Rust
    lifetime `'a` opens no string: a character literal is one character and its quote)."""
    if "/" not in line and "'" not in line and '"' not in line and "`" not in line:
        return False
    return _left_open(line, comment="//", quotes="'\"`", opens=_char_literal)


def _char_literal(line: str, i: int) -> bool:
    if line[i] != "'":
        return True
    rest = line[i + 1 : i + 4]
    return rest[1:2] == "'" or rest[:1] == "\\" or len(rest) < 2 or not rest[:1].isalpha()
