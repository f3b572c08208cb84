"""The names used near the cursor: each at its nearest distance, whether it stands bare or only
as an attribute (and of what), and the names the current file binds there."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spec_lsp.engine.context.symbols import Used, around
from spec_lsp.engine.context.words import IDENTIFIER, STOP_WORDS, without_word_at

BEFORE_LINES = 30
AFTER_LINES = 10
RECEIVER = re.compile(r"([^\W\d]\w*)\s*$")


@dataclass
class Use:
    """A name used around the cursor."""

    name: str
    distance: int  # lines from the cursor (those after it count double)
    bare: bool  # used other than as an attribute (`x`, not only `a.x`)
    receivers: set[str] = field(default_factory=set)  # `m` of `m.x`


def uses_near(path: str, text: str, cursor: int) -> tuple[dict[str, Use], set[str]]:
    """The names used within BEFORE_LINES before and AFTER_LINES after the cursor's line, each
    at its nearest distance, the word at the cursor left out; and the names the current file
    binds there (symbols.around). Without a grammar for the file: every identifier of the
    lines, comments and strings included, and no bound names."""
    here = text.count("\n", 0, cursor)
    column = cursor - (text.rfind("\n", 0, cursor) + 1)
    lines = (max(0, here - BEFORE_LINES), here + AFTER_LINES + 1)
    parsed = around(path, text, lines, (here, column))
    occurrences, bound = parsed if parsed is not None else (_regex_uses(text, cursor, lines), set())
    found: dict[str, Use] = {}
    for used in occurrences:
        if len(used.name) < 2 or used.name in STOP_WORDS:
            continue
        distance = here - used.line if used.line <= here else 2 * (used.line - here)
        use = found.setdefault(used.name, Use(used.name, distance, False))
        use.distance = min(use.distance, distance)
        if used.receiver is None:
            use.bare = True
        elif used.receiver:
            use.receivers.add(used.receiver)
    return found, bound


def _regex_uses(text: str, cursor: int, lines: tuple[int, int]) -> list[Used]:
    """Every identifier of the lines, and what stands before its dot (a file with no grammar)."""
    text = without_word_at(text, cursor)
    found = []
    for number, line in enumerate(text.split("\n")[lines[0] : lines[1]], start=lines[0]):
        for match in IDENTIFIER.finditer(line):
            before = line[: match.start()].rstrip()
            receiver = None
            if before.endswith(".") and not before.endswith(".."):
                tail = RECEIVER.search(before[:-1])
                receiver = tail.group(1) if tail is not None else ""
            found.append(Used(match.group(), number, receiver))
    return found
