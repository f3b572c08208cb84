"""The monitor: at each token the decode loop asks, the tokens that may come next.

It reads the text before the token (the prompt's text before the cursor, healing undone, and
the tokens generated so far), finds a trigger point (trigger.py), looks the receiver up in the
prepared table (table.py: dict reads, never Jedi) and, where the receiver resolves, keeps
the tokens that begin, continue or end one of its members (vocabulary.py). A complete member set is
a hard mask; an incomplete one lowers the others' logits by `bias` (0: left alone).

Where one valid name is left by what is written, its remaining tokens are the symbol draft.
`self.` opening a statement (or a tuple target opening one) where attributes are made
(`__init__`, DEFINING) is left open: it may be a new attribute's target. A line inside
brackets opened after code on the statement's line (`register(` then `[` then `(str, self.`)
continues the statement and is masked as any other place (trigger.continues_statement).
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from spec_lsp.engine.guide import trigger
from spec_lsp.engine.guide.scopes import Scope
from spec_lsp.engine.guide.table import Members, Table, key_of
from spec_lsp.engine.guide.vocabulary import NameTokens

DEFINING = ("def __init__", "def __post_init__", "def setUp", "def setup")


@dataclass
class Row:
    """What the monitor did at one position of the generation."""

    triggered: bool = False
    resolved: bool = False
    masked: bool = False
    changed: bool = False  # the unguided row's best token was not among those kept


@dataclass
class Monitor:
    names: NameTokens
    table: Table
    text: str  # the text the prompt ends with (before the cursor, as the model reads it)
    scope: Scope
    bias: float = 0.0  # for an incomplete member set: subtracted from the other tokens' logits
    syntax: str = "python"  # how the text is read (trigger.py): "python" or "braces"
    rows: dict[int, Row] = field(default_factory=dict)  # position in the generation -> Row
    seconds: float = 0.0  # spent here (reading the text, masking)
    _masks: OrderedDict[tuple[int, str, str, str], np.ndarray] = field(default_factory=OrderedDict)
    # the generated lines before the one being written -> whether it continues a statement
    _continues: dict[str, bool] = field(default_factory=dict)
    _above: trigger.Brackets | None = None  # (open at the start of the prompt's last line)

    def __post_init__(self) -> None:
        cut = self.text.rfind("\n") + 1
        self._line = self.text[cut:]
        self._open = open_span(self.text, self.syntax)  # (the span the generation starts in)

    # -- the loop's two questions ------------------------------------------------------------
    def guide(self, logits: np.ndarray, out: Sequence[int]) -> np.ndarray:
        """The row of logits for the token after `out`, guided (a new array) or as it was."""
        started = time.perf_counter()
        try:
            return self._guided(logits, out)
        finally:
            self.seconds += time.perf_counter() - started

    def _guided(self, logits: np.ndarray, out: Sequence[int]) -> np.ndarray:
        found = self._members(out)
        row = self.rows.setdefault(len(out), Row())
        row.triggered = found is not None
        members, point = found if found is not None else (None, None)
        if members is None or point is None:
            return logits
        row.resolved = True
        keep = self._keep(members, point)
        if not keep.any() or (not members.complete and self.bias <= 0):
            return logits
        row.masked = True
        row.changed = not keep[int(np.argmax(logits))]
        if members.complete:
            return np.where(keep, logits, -np.inf).astype(logits.dtype, copy=False)
        return np.where(keep, logits, logits - self.bias).astype(logits.dtype, copy=False)

    def draft(self, out: Sequence[int], limit: int) -> list[int]:
        """The rest of the only valid name what is written leaves (tokens the vocabulary writes
        it with, longest first), when the set is complete; else nothing."""
        members, point = found if (found := self._members(out)) is not None else (None, None)
        if members is None or point is None or not members.complete or limit <= 0:
            return []
        if point.kind == "keyword" or (not point.written and point.kind in ("member", "module")):
            return []  # (at the `.` every member is open: nothing is sure)
        left = [n for n in members.names if n.startswith(point.written)]
        if len(left) != 1 or left[0] == point.written:
            return []
        rest = point.sep + left[0][len(point.written) :]
        return self.names.spell(rest)[:limit]

    # -- what the stats read -----------------------------------------------------------------
    def counts(self, generated: int) -> dict[str, float]:
        """Per position of the generation kept (rows past its end were drafts thrown away)."""
        kept = [r for p, r in self.rows.items() if p < generated]
        return {
            "guide_triggers": sum(r.triggered for r in kept),
            "guide_resolved": sum(r.resolved for r in kept),
            "guide_masked": sum(r.masked for r in kept),
            "guide_changed": sum(r.changed for r in kept),
            "guide_seconds": self.seconds,
        }

    # -- the reading -------------------------------------------------------------------------
    def _members(self, out: Sequence[int]) -> tuple[Members | None, trigger.Trigger] | None:
        """(the members, the trigger point) at the end of the text so far; None: no trigger;
        (None, point): a trigger whose receiver the table does not know."""
        generated = b"".join(self.names.pieces[t] for t in out).decode("utf-8", "replace")
        if open_span(generated, self.syntax, self._open):
            return None
        cut = generated.rfind("\n")
        line = self._line + generated if cut < 0 else generated[cut + 1 :]
        point = trigger.find(line, self.syntax)
        if point is not None and not (
            point.statement_start and self._defining(point) and not self._continued(generated)
        ):
            members = self.table.lookup(self.scope, key_of(point.kind, point.receiver))
            if members is not None or point.sep != ".":
                return members, point
        call = trigger.find_keyword(line) if self.syntax == "python" else None
        if call is not None:
            return self.table.lookup(self.scope, key_of(call.kind, call.receiver)), call
        return (None, point) if point is not None and point.sep != "." else None

    def _defining(self, point: trigger.Trigger) -> bool:
        """`self.` opening a statement where attributes are made: maybe a new one's target."""
        return (
            point.receiver in ("self", "cls") and bool(self.scope) and (self.scope[-1] in DEFINING)
        )

    def _continued(self, generated: str) -> bool:
        """The line being written continues a statement inside brackets (a list of pairs in a
        call, `(str, self.`): what opens the line there is no attribute's target (Python)."""
        if self.syntax != "python":
            return False
        lines = generated[: generated.rfind("\n") + 1]  # (those before the one being written)
        found = self._continues.get(lines)
        if found is None:  # (once a line: the decode loop asks at every token)
            if self._above is None:  # (the prompt's text above its last line: read once)
                self._above = trigger.open_brackets(self.text[: len(self.text) - len(self._line)])
            found = trigger.continues_statement(self._line + lines, self._above)
            self._continues[lines] = found
        return found

    def _keep(self, members: Members, point: trigger.Trigger) -> np.ndarray:
        key = (id(members), point.receiver, point.written, point.sep)
        keep = self._masks.get(key)
        if keep is None:
            if point.kind == "keyword":
                keep = self.names.keyword_allowed(point.written, members.names)
            else:
                keep = self.names.allowed(
                    point.written,
                    members.names,
                    sep=point.sep,
                    members_of=lambda name: self._complete(
                        key_of(point.kind, f"{point.receiver}.{name}")
                    ),
                )
            self._masks[key] = keep
            if len(self._masks) > 64:
                self._masks.popitem(last=False)
        return keep

    def _complete(self, receiver: str) -> frozenset[str] | None:
        """The members of `receiver` where the table knows them all (None otherwise)."""
        found = self.table.lookup(self.scope, receiver)
        return found.names if found is not None and found.complete else None


# what may open a span of lines, and what closes it; a line's strings and comments are read past
# whole so that a quote or `/*` inside one opens nothing (`x = '"""'`, `"src/**/*.js"`)
_CLOSERS = {'"""': '"""', "'''": "'''", "/*": "*/", "`": "`"}
_SPANS = {
    "python": re.compile(rf'#[^\n]*|"""|\'\'\'|{trigger.LINE_STRINGS}', re.S),
    "braces": re.compile(rf"//[^\n]*|/\*|`|{trigger.LINE_STRINGS}", re.S),
}


def open_span(text: str, syntax: str, inside: str = "") -> str:
    """The string or comment spanning lines that `text` leaves open ("" none): Python's
    triple-quoted strings; a brace language's `/* */` comments and template or raw strings
    (`` ` ``). `inside`: the span open where `text` begins. Read left to right as a lexer
    does, each line's strings and comments skipped whole (a quote left unclosed on its line
    opens nothing: a Rust lifetime, a string being typed)."""
    spans = _SPANS["python" if syntax == "python" else "braces"]
    pos, opened = 0, inside
    while True:
        if opened:
            pos = _closed(text, pos, opened)
            if pos < 0:
                return opened
            opened = ""
        found = spans.search(text, pos)
        if found is None:
            return ""
        pos = found.end()
        if found.group() in _CLOSERS:
            opened = found.group()


def _closed(text: str, pos: int, opened: str) -> int:
    """Where the span `opened` ends (past its closer) from `pos` on; -1: not in `text`."""
    closer = _CLOSERS[opened]
    while True:
        at = text.find(closer, pos)
        if at < 0:
            return -1
        before = at
        while opened != "/*" and before > pos and text[before - 1] == "\\":
            before -= 1
        if (at - before) % 2 == 0:
            return at + len(closer)
        pos = at + 1  # (an escaped quote)
