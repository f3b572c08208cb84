"""What an edit may have changed in a table's member sets, read from the text alone.

A table is made for one version of a file; the person goes on typing. Each edit is read once,
where it arrives (instant: the lines it touched, the headers above them), into a `Change`: the
receivers whose sets it may have changed. A request, and the next analysis, use an entry of an
older table only where no edit since its text can have changed it (`Change.stale`).

Python, line by line (the lines the edit removed or added, blank lines and comments aside):

- a `def`/`class` header, a decorator, a line directly in a class body, an assignment to an
  attribute (`x.name =`, `self.name =`): a class's members may differ, so may every set of the
  file (`members`; except those of names only imported, and of what the file imports);
- a `return`/`yield`, or an assignment to a name that a `return` or an attribute assignment of
  the same function reads: what calls of that function infer to may differ (`flows`: the sets
  outside it, `self`'s and `cls`'s aside);
- any other binding (`x = ...`, `for x in`, `import x`, `with ... as x`, `isinstance(x, ...)`):
  the receivers starting with that chain (`prefixes`, in every scope);
- anything else (a call, an `if`, a comment, blank lines): nothing.

Typing a member after its receiver (`self.wi` on from `self.`: letters and dots added on one
line right after a dot) changes nothing but what the line assigns to. The brace languages:
that typing, and edits of blank lines and comments, change nothing; any other edit, the whole
table (their analysis takes milliseconds: the next one is near).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

from spec_lsp.engine.guide.scopes import Scope, code_line, indent_of
from spec_lsp.engine.guide.table import SELF, Key
from spec_lsp.textdiff import common_prefix, common_suffix

_OTHER_FILES = ("from ", "module ")  # (the table's keys of what other files hold)
MAX_LINES = 40  # lines an edit changes beyond which everything is taken as changed
BODY_LINES = 2000  # lines of a function read for what its returns read

_HEADER = re.compile(r"^[ \t]*(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_WORD = re.compile(r"[A-Za-z_]\w*")
_RETURN = re.compile(r"^[ \t]*(?:return|yield)\b|(?<![\w.])yield\b")
_FOR = re.compile(r"^[ \t]*(?:async[ \t]+)?for[ \t]+(.+?)[ \t]+in\b")
_AS = re.compile(r"\bas[ \t]+([A-Za-z_]\w*)")
_WALRUS = re.compile(r"([A-Za-z_]\w*)[ \t]*:=")
_IMPORT = re.compile(r"^[ \t]*import[ \t]+(.+)")
_FROM = re.compile(r"^[ \t]*from[ \t]+\S+[ \t]+import[ \t]+(.+)")
_GLOBAL = re.compile(r"^[ \t]*(?:global|nonlocal|del)[ \t]+(.+)")
_ISINSTANCE = re.compile(r"\bisinstance\([ \t]*([A-Za-z_][\w.]*)")
_MEMBER_TYPED = re.compile(r"(?:[\w)\]]\.|::|->)\w*$")  # (the line so far ends in `x.na`)
_BRACED_DECLARES = re.compile(
    r"(?<![=!<>])=(?![=>])|:=|\b(?:let|const|var|fn|func|function|class|interface|struct|enum|"
    r"type|impl|trait|extends|implements|import|package|use|mod|def|val)\b"
)


@dataclass(frozen=True)
class Change:
    """What edits may have changed (the union of several: `|`)."""

    prefixes: frozenset[str] = frozenset()  # chains bound anew: receivers equal or under one
    members: bool = False  # a class's members may differ: every set of the file
    flows: frozenset[Scope] = frozenset()  # functions whose calls may infer otherwise
    everything: bool = False  # too much to tell: no set of the file holds
    exported: bool = False  # what another file reads of this one may differ

    def __or__(self, other: Change) -> Change:
        return Change(
            self.prefixes | other.prefixes,
            self.members or other.members,
            self.flows | other.flows,
            self.everything or other.everything,
            self.exported or other.exported,
        )

    @functools.cached_property
    def _under(self) -> tuple[str, ...]:
        return tuple(p + "." for p in self.prefixes)

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.members or self.flows or self.everything)

    def stale(self, key: Key, imported: frozenset[str]) -> bool:
        """Whether the entry `key` may no longer hold. `imported`: the names the file binds by
        its imports alone (what they name is another file's: an edit here changes none)."""
        scope, receiver = key
        if receiver.startswith(_OTHER_FILES):
            return self.everything  # (other files' sets: `Analyses` follows those)
        chain = receiver.removeprefix("call ")
        if self.everything or chain in self.prefixes or chain.startswith(self._under):
            return True
        if chain.partition(".")[0] in imported:
            return False
        if self.members:
            return True
        if not self.flows or chain in SELF:
            return False
        for function in self.flows:  # (a set read inside the function: not its callers')
            if scope[: len(function)] != function:
                return True
        return False


NOTHING = Change()
EVERYTHING = Change(everything=True, exported=True)


def python_change(old: str, new: str, at: int | None = None) -> Change:
    """What editing Python `old` into `new` may have changed (`at`: their common prefix's
    length, where the caller has it)."""
    region = _region(old, new, at)
    if region is None:
        return NOTHING
    start, old_end, new_end, at = region
    old_lines, new_lines = old[start:old_end].split("\n"), new[start:new_end].split("\n")
    if len(old_lines) == len(new_lines) == 1 and _member_typed(old, new, start, at):
        return _targets_only(new_lines[0])
    if len(old_lines) == len(new_lines) == 1:
        rhs = _right_side_edit(old_lines[0], new_lines[0], at - start)
        if rhs is not None:
            return _bound(rhs, new, start)
    removed = Counter(_key(line) for line in old_lines if code_line(line))
    added = Counter(_key(line) for line in new_lines if code_line(line))
    gone, came = removed - added, added - removed
    if sum(gone.values()) + sum(came.values()) > MAX_LINES:
        return EVERYTHING
    change = NOTHING
    for text, lines, differing in ((old, old_lines, gone), (new, new_lines, came)):
        offset = start
        for line in lines:
            if differing[_key(line)] > 0:
                differing[_key(line)] -= 1
                change = change | _line(line, text, offset)
            offset += len(line) + 1
    return change


def braced_change(old: str, new: str, at: int | None = None) -> Change:
    """What editing a brace language's `old` into `new` may have changed: nothing, or all."""
    region = _region(old, new, at)
    if region is None:
        return NOTHING
    start, old_end, new_end, at = region
    old_lines, new_lines = old[start:old_end].split("\n"), new[start:new_end].split("\n")
    if [_key(x) for x in old_lines if _braced_code(x)] == [
        _key(x) for x in new_lines if _braced_code(x)
    ]:
        return NOTHING
    typed = len(old_lines) == len(new_lines) == 1 and _member_typed(old, new, start, at)
    if typed and not _BRACED_DECLARES.search(new_lines[0]):
        return NOTHING
    return EVERYTHING


# -- where the texts differ --------------------------------------------------------------------
def _region(old: str, new: str, at: int | None) -> tuple[int, int, int, int] | None:
    """The whole lines the edit touched: their start (the same in both), their end in `old` and
    in `new`, and where the edit starts; None: the same text."""
    if old == new:
        return None
    at = common_prefix(old, new) if at is None else at
    tail = common_suffix(old[at:], new[at:])
    start = old.rfind("\n", 0, at) + 1
    old_end, new_end = old.find("\n", len(old) - tail), new.find("\n", len(new) - tail)
    return (
        start,
        len(old) if old_end < 0 else old_end,
        len(new) if new_end < 0 else new_end,
        at,
    )


def _member_typed(old: str, new: str, start: int, at: int) -> bool:
    """Letters, digits and dots added on one line right after a receiver's dot (or a dot
    after a name): a member typed."""
    added = len(new) - len(old)
    if added <= 0 or old[at:] != new[at + added :]:
        return False
    inserted = new[at : at + added]
    if not re.fullmatch(r"[\w.]+", inserted):
        return False
    before = new[start:at]
    return bool(_MEMBER_TYPED.search(before)) or (
        inserted.startswith(".") and bool(re.search(r"[\w)\]]$", before))
    )


def _key(line: str) -> str:
    return line.rstrip()


def _braced_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("//", "/*", "*"))


# -- one line of Python ----------------------------------------------------------------------
def _equals(line: str) -> int:
    """Where the line's assignment `=` is (at no bracket's depth, not `==`, `<=`, ...); -1:
    not an assignment."""
    depth, quote, i = 0, "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#":
            return -1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            if line[i + 1 : i + 2] == "=" or (i and line[i - 1] in "=!<>:"):
                i += 2 if line[i + 1 : i + 2] == "=" else 1
                continue
            if line[:i].lstrip().startswith(("lambda", "def ", "class ", "async ", "@")):
                return -1
            return i
        i += 1
    return -1


def _right_side_edit(old_line: str, new_line: str, at: int) -> str | None:
    """The line, when the edit changed only what an assignment assigns (the same targets, the
    edit after the `=`)."""
    eq = _equals(old_line)
    if eq < 0 or eq != _equals(new_line) or old_line[:eq] != new_line[:eq] or at <= eq:
        return None
    if _RETURN.search(new_line[eq:]) or _RETURN.search(old_line[eq:]):
        return None
    return new_line


def _targets(line: str) -> tuple[set[str], set[str], bool]:
    """The names (and attribute chains) the line binds, and whether it binds an attribute
    (`x.name =`, `del x.name`); `*` among the names: `from m import *`."""
    names: set[str] = set()
    chains: set[str] = set()
    attribute = False
    eq = _equals(line)
    if eq >= 0:
        left = line[:eq].rstrip("+-*/%@&|^<>")
        head = left.split(":", 1)[0] if "(" not in left and "[" not in left else left
        for found in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)", head):
            if found.group(2):
                attribute = True
                chains.add(found.group(0))
            else:
                names.add(found.group(1))
    for pattern in (_FOR, _IMPORT, _FROM, _GLOBAL):
        statement = pattern.match(line)
        if statement:
            listed = statement.group(1).split("#", 1)[0]
            if pattern is _FROM and "*" in listed:
                names.add("*")
            if pattern is _GLOBAL and "." in listed:
                attribute = True
            if pattern in (_IMPORT, _FROM):
                listed = re.sub(r"\S+[ \t]+as[ \t]+", "", listed)
            names.update(w.split(".")[0] for w in re.findall(r"[A-Za-z_][\w.]*", listed))
    names.update(_AS.findall(line))
    names.update(_WALRUS.findall(line))
    chains.update(_ISINSTANCE.findall(line))
    return names, chains, attribute


def _targets_only(line: str) -> Change:
    names, chains, _attribute = _targets(line)
    if "*" in names:
        return EVERYTHING
    return Change(prefixes=frozenset(names | chains))


def _bound(line: str, text: str, start: int) -> Change:
    """A change of what the line assigns (its targets kept)."""
    names, chains, attribute = _targets(line)
    scope, header = _enclosing(text, start)
    if scope and scope[-1].startswith("class "):
        return Change(members=True, exported=True)
    function = scope if scope and scope[-1].startswith("def ") else None
    flows = frozenset([function]) if function and _flows(text, header, names) else frozenset()
    return Change(
        prefixes=frozenset(names | chains),
        flows=flows,
        exported=not scope or bool(flows) or attribute,
    )


def _line(line: str, text: str, start: int) -> Change:
    """What a line removed or added may have changed (`start`: where it is in `text`)."""
    stripped = line.lstrip()
    if _HEADER.match(line) or stripped.startswith("@"):
        return Change(prefixes=frozenset(_WORD.findall(line)), members=True, exported=True)
    names, chains, attribute = _targets(line)
    if "*" in names:
        return EVERYTHING
    scope, header = _enclosing(text, start)
    if attribute or (scope and scope[-1].startswith("class ")):
        return Change(prefixes=frozenset(names | chains), members=True, exported=True)
    function = scope if scope and scope[-1].startswith("def ") else None
    if _RETURN.search(line) and function is not None:
        return Change(
            prefixes=frozenset(names | chains), flows=frozenset([function]), exported=True
        )
    flows = frozenset([function]) if function and _flows(text, header, names) else frozenset()
    exported = not scope and bool(names) or bool(flows)
    return Change(prefixes=frozenset(names | chains), flows=flows, exported=exported)


def _enclosing(text: str, start: int) -> tuple[Scope, int]:
    """The scope of the line at `start` (as scopes.at_end reads it) and where its innermost
    header's line starts (-1: none)."""
    end = text.find("\n", start)
    limit = indent_of(text[start : len(text) if end < 0 else end])
    found: list[str] = []
    innermost = -1
    pos = start
    for _ in range(4000):
        if pos <= 0 or limit == 0:
            break
        above = text.rfind("\n", 0, pos - 1) + 1
        line, pos = text[above : pos - 1], above
        if not code_line(line) or indent_of(line) >= limit:
            continue
        limit = indent_of(line)
        header = _HEADER.match(line)
        if header:
            found.append(f"{header.group(1)} {header.group(2)}")
            if innermost < 0:
                innermost = above
    return tuple(reversed(found)), innermost


def _flows(text: str, header: int, names: set[str]) -> bool:
    """Whether a `return`/`yield` or an attribute assignment of the function whose header
    starts at `header` reads one of `names` (what it binds may reach its callers or its
    object)."""
    if not names or header < 0:
        return False
    end = text.find("\n", header)
    indent = indent_of(text[header : len(text) if end < 0 else end])
    pos = len(text) if end < 0 else end + 1
    for _ in range(BODY_LINES):
        if pos >= len(text):
            break
        end = text.find("\n", pos)
        line = text[pos : len(text) if end < 0 else end]
        pos = len(text) if end < 0 else end + 1
        if not code_line(line):
            continue
        if indent_of(line) <= indent:
            break
        reads = _RETURN.search(line) or _targets(line)[2]
        if reads and names & set(_NAME.findall(line)):
            return True
    return False


_BOUND = [  # (whole-text patterns) where a name is bound other than by an import
    re.compile(  # an assignment's targets (a name, a tuple of names, annotated or augmented)
        r"^[ \t]*\(?([A-Za-z_]\w*(?:[ \t]*,[ \t]*\*?[A-Za-z_]\w*)*)[ \t]*\)?[ \t]*"
        r"(?::[^=\n]*)?(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)",
        re.M,
    ),
    re.compile(r"^[ \t]*(?:async[ \t]+)?for[ \t]+(.+?)[ \t]+in\b", re.M),
    re.compile(r"^[ \t]*(?:global|nonlocal|del)[ \t]+([^\n#]+)", re.M),
]
_AS_ANYWHERE = re.compile(r"\bas[ \t]+([A-Za-z_]\w*)")
_IMPORTS = re.compile(r"^[ \t]*(?:import|from[ \t]+\S+[ \t]+import)[ \t]+[^\n]*", re.M)
_HEADERS = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+\w+[^\n]*", re.M)


def imported_names(text: str) -> frozenset[str]:
    """The names `text` binds by its imports and in no other way (no assignment, parameter,
    `def`, `class`, loop or `as` binds them): what they name is another file's."""
    imported: set[str] = set()
    for found in _IMPORTS.finditer(text):
        imported.update(_targets(found.group(0))[0])
    bound: set[str] = set()
    for pattern in _BOUND:
        for found in pattern.finditer(text):
            bound.update(_WORD.findall(found.group(1)))
    for found in _AS_ANYWHERE.finditer(text):  # (`with`, `except`: not an import's `as`)
        line = text[text.rfind("\n", 0, found.start()) + 1 : found.start()]
        if not line.lstrip().startswith(("import", "from")):
            bound.add(found.group(1))
    at = text.find(":=")
    while at >= 0:
        line = text[text.rfind("\n", 0, at) + 1 : text.find("\n", at) % (len(text) + 1)]
        bound.update(_WALRUS.findall(line))
        at = text.find(":=", at + 2)
    for found in _HEADERS.finditer(text):
        bound.update(_parameters(found.group(0)))
    return frozenset(imported - bound - {"*"})


def _parameters(header: str) -> set[str]:
    """The name a `def`/`class` header binds and its parameters' names (not their
    annotations' or defaults')."""
    found = _HEADER.match(header)
    names = {found.group(2)} if found else set()
    if found and found.group(1) == "class":
        return names
    opened = header.find("(")
    depth, part = 0, ""
    for c in header[opened + 1 :] if opened >= 0 else "":
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        if c == "," and depth == 0:
            names.update(_WORD.findall(part)[:1])
            part = ""
        else:
            part += c if depth or c not in ":=" else " \0"
    names.update(_WORD.findall(part.split("\0", 1)[0])[:1])
    return names
