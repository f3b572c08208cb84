"""The writing bench's editor screen and the person at it (pure: times are passed in).

What is on screen follows VS Code's inline suggestions:
- the latest answer for the document as it stands is shown (its text after the cursor: an item's
  range may re-cover what was typed on the line before the cursor, as the server's do);
- while the person types along it (what a key inserts is its start), it stays shown, trimmed;
  a key that differs from it hides it;
- a new answer with an item replaces it; an empty one leaves a suggestion being typed along on
  screen (VS Code keeps the item it shows while it stays valid);
- Tab inserts all of it; a partial accept (acceptNextWord, acceptNextLine) inserts its next word
  or line, and the rest stays shown.

A suggestion is one text shown at one place (an offset into the body being written): the server
answering the rest of the one on screen (typed along, or grown by more lines) is the same one.
It is right when accepting it would leave the body's real text (it is a prefix of what is left
to write), wrong otherwise, as it stands when last shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# VS Code's default word definition (editor.action.inlineSuggest.acceptNextWord splits on it)
WORD = re.compile(r"(-?\d*\.\d\w*)|([^`~!@#$%^&*()\-=+\[{\]}\\|;:'\",.<>/?\s]+)")
SPACE = re.compile(r"\s+")
PARTIAL = ("off", "word", "line")


def next_word(text: str) -> int:
    """How much of `text` acceptNextWord inserts (VS Code's rule): the first word if the text
    opens with one, else up to the first word, or to the end of the first run of blanks if that
    comes sooner."""
    word = WORD.search(text)
    end = len(text) if word is None else (word.end() if word.start() == 0 else word.start())
    blank = SPACE.search(text)
    if blank is not None and blank.end() < end:
        end = blank.end()
    return end


def next_line(text: str) -> int:
    """How much of `text` acceptNextLine inserts: up to and including its first line break."""
    at = text.find("\n")
    return len(text) if at < 0 else at + 1


@dataclass
class Suggestion:
    """One suggestion shown: where (offset into the body) and its whole text from there."""

    place: int
    text: str
    shown: float  # when it first appeared
    right: bool = False
    accepted: int = 0  # characters of it inserted by accepts (whole or partial)


@dataclass
class Ghost:
    """The suggestion on screen: what it would insert at the cursor now, since when shown."""

    text: str
    since: float
    suggestion: Suggestion


@dataclass
class Screen:
    """The ghost text of one document being written: `body` is what the person writes, `done`
    how much of it the document holds (the cursor is there)."""

    body: str
    done: int = 0
    ghost: Ghost | None = None
    suggestions: list[Suggestion] = field(default_factory=list)
    seen: dict[tuple[int, str], Suggestion] = field(default_factory=dict)  # by (place, text)

    def right(self, text: str) -> bool:
        """Whether inserting `text` at the cursor leaves the body's real text."""
        return bool(text) and self.body.startswith(text, self.done)

    def answer(self, text: str, now: float) -> bool:
        """An answer for the document as it stands, `text` after the cursor ("" for none).
        Returns whether something new appeared (a suggestion not on screen before)."""
        if not text:
            return False
        ghost = self.ghost
        if ghost is not None and (text.startswith(ghost.text) or ghost.text.startswith(text)):
            grown = len(text) > len(ghost.text)
            ghost.text = text  # the same suggestion, answered again (its rest, or more of it)
            if grown:
                shown = ghost.suggestion
                shown.text = self.body[shown.place : self.done] + text
                shown.right = self.body.startswith(shown.text, shown.place)
            return False
        suggestion = self.seen.get((self.done, text))
        if suggestion is None:  # (shown here before: counted once)
            suggestion = Suggestion(self.done, text, now, self.right(text))
            self.seen[(self.done, text)] = suggestion
            self.suggestions.append(suggestion)
        self.ghost = Ghost(text, now, suggestion)
        return True

    def typed(self, inserted: str) -> None:
        """A key inserted `inserted` at the cursor: the ghost text typed along, or hidden."""
        ghost = self.ghost
        self.done += len(inserted)
        if ghost is not None and ghost.text.startswith(inserted) and ghost.text != inserted:
            ghost.text = ghost.text[len(inserted) :]
        else:
            self.ghost = None

    def acceptable(self, partial: str) -> str:
        """What the person would accept of the ghost text now (its whole text, its next word
        or line with `partial`), "" when nothing of it is right."""
        ghost = self.ghost
        if ghost is None:
            return ""
        if self.right(ghost.text):
            return ghost.text
        if partial == "off":
            return ""
        part = ghost.text[: (next_word if partial == "word" else next_line)(ghost.text)]
        return part if part != ghost.text and self.right(part) else ""

    def accept(self, part: str) -> bool:
        """Insert `part` of the ghost text (acceptable's answer): the rest stays shown after a
        partial accept. Returns whether it was the whole."""
        ghost = self.ghost
        assert ghost is not None and ghost.text.startswith(part) and part
        ghost.suggestion.accepted += len(part)
        self.done += len(part)
        whole = part == ghost.text
        if whole:
            self.ghost = None
        else:
            ghost.text = ghost.text[len(part) :]
        return whole


def enter(body: str, at: int) -> str:
    """What Enter at `at` (a line break of `body`) inserts: the break and the next line's
    indentation, in one change, as auto-indent does."""
    end = at + 1
    while end < len(body) and body[end] in " \t":
        end += 1
    return body[at:end]


def next_key(body: str, at: int) -> str:
    """What the person's next key inserts at `at`: Enter (a break and indentation), the
    indentation at a line's start (Tab), or one character."""
    if body[at] == "\n":
        return enter(body, at)
    if body[at] in " \t" and (at == 0 or body[at - 1] == "\n"):
        end = at
        while end < len(body) and body[end] in " \t":
            end += 1
        return body[at:end]
    return body[at]


def line_start(body: str, at: int) -> bool:
    """Whether `at` is where a line's code begins (after its indentation): the person thinks
    there before writing the line."""
    if at >= len(body) or body[at].isspace():
        return False
    start = body.rfind("\n", 0, at) + 1
    return start > 0 and not body[start:at].strip(" \t")


@dataclass
class Pause:
    """The person thinking at the start of a line, and the ghost text in that time."""

    line: int  # the body's line (1: its first)
    start: float
    ghost_s: float | None = None  # seconds from the start to ghost text on screen
    right_s: float | None = None  # to a right suggestion on screen
    # to an answer that showed nothing while the screen had none (the gate, an empty suggestion)
    silent_s: float | None = None
    accepted: bool = False  # the pause ended with an accept

    def seen(self, now: float, right: bool) -> None:
        """Ghost text is on screen at `now` (right or not)."""
        if self.ghost_s is None:
            self.ghost_s = max(0.0, now - self.start)
        if right and self.right_s is None:
            self.right_s = max(0.0, now - self.start)

    def silent(self, now: float) -> None:
        """An answer for the text as it stands came with nothing to show, none on screen."""
        if self.silent_s is None and self.ghost_s is None:
            self.silent_s = max(0.0, now - self.start)
