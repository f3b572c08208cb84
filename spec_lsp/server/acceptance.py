"""What people do with the suggestions shown, seen from the document (any client) and, where
the client runs the item's command on accept, from that too.

After a suggestion is shown at a place, the next changes there tell its fate:
- accepted: the whole of it inserted by one change (Tab);
- partial: a part of it (a word, a line) inserted by one change, then the rest left;
- typed_through: the person typed its characters key by key, at least one of them. A key is
  one character, or a line break with the indentation the editor adds after it (Enter with
  auto-indent inserts "\n        " in one change); a client that batches keys (Neovim sends
  the keys typed within its debounce as several changes of one notification) tells `changed`
  how many keys the notification held;
- rejected: something else typed, an edit elsewhere, or a request at another place (the cursor
  moved away; unless it moved over a closing bracket the editor had put after it, which is the
  suggestion's next character: typed over, a key typed along).
A request at the very place shown (asked again, VS Code's cycling) ends nothing: the answer there
is the same suggestion, or, if it differs with nothing typed yet, the old one was replaced
(`replaced`, no outcome: the person never judged it). Escape sends nothing: what follows tells.
A suggestion the gate hid is counted apart (`hidden`). Accepted text (whole, partial or typed
through) is looked for again RETENTION_S later: still there if the closest stretch of the
document near its place is within half its length in edit distance (as Copilot checks).

Pure bookkeeping on strings and a clock: the server feeds it what the editor sent.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

RETENTION_S = (30.0, 120.0)
OUTCOMES = ("accepted", "partial", "typed_through", "rejected")
HISTORY = 8  # outcomes kept per document (the confidence reads the latest)
KEPT_MAX = 256  # accepted texts waiting for their retention checks
NEEDLE_MAX = 120  # characters of an accepted text compared (the check's cost: needle x window)
WINDOW = 600  # characters either side of its place searched (edits above move it)
PAIRS = ("()", "[]", "{}", '""', "''", "``")  # what an editor's auto-close inserts for one key


@dataclass
class Shown:
    """A suggestion on screen: what the document held around the cursor, and what it inserts."""

    number: int
    document: str
    before: str  # the document's text before the cursor when shown
    after: str  # and after it
    text: str  # what the suggestion inserts at the cursor
    progress: int = 0  # characters of it in the document so far (typed or accepted in part)
    typed: int = 0  # of those, typed one at a time

    def at_typed_place(self, before: str, after: str) -> bool:
        """Whether a cursor with `before`|`after` around it stands after the part typed so
        far (compared without building a copy of the document)."""
        head = len(self.before)
        return (
            len(before) == head + self.progress
            and after == self.after
            and before.startswith(self.before)
            and before.endswith(self.text[: self.progress])
        )


@dataclass
class Kept:
    """Accepted text to look for at its retention checks."""

    document: str
    text: str
    offset: int  # where it began in the document
    due: list[float] = field(default_factory=list)  # the clock times of the checks left
    checked: int = 0  # checks done (index into RETENTION_S)


class Acceptance:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        retention_s: tuple[float, ...] = RETENTION_S,
        on_kept: Callable[[float], None] = lambda _due: None,
    ) -> None:
        self.clock = clock
        self.retention_s = retention_s
        self.on_kept = on_kept  # told the first check's time of each text kept (to wake then)
        self.counts: Counter[str] = Counter()
        self.pending: dict[str, Shown] = {}  # per document: the suggestion shown last
        self.kept: deque[Kept] = deque(maxlen=KEPT_MAX)
        self.history: dict[str, deque[str]] = {}
        self._numbers = 0

    # -- events ----------------------------------------------------------------------------
    def shown(self, document: str, before: str, after: str, text: str) -> int:
        """A suggestion was answered for the document; returns its number (the command's
        argument). The rest of one being typed through (or asked for again where it stands) is
        the same suggestion, not a new one."""
        old = self.pending.get(document)
        if old is not None and self.continues(document, before, after, text):
            old.before, old.text, old.progress = before, text, 0  # (typed counts on)
            return old.number
        if old is not None and not old.typed and old.at_typed_place(before, after):
            del self.pending[document]  # another answer in its place, never judged
            self.counts["replaced"] += 1
        elif old is not None:
            self._end(old, "typed_through" if old.typed else "rejected")
        self._numbers += 1
        self.pending[document] = Shown(self._numbers, document, before, after, text)
        self.counts["shown"] += 1
        return self._numbers

    def continues(self, document: str, before: str, after: str, text: str) -> bool:
        """Whether `text` at the cursor `before`|`after` is the rest of the suggestion on screen
        that the person is typing through, or it again where it was shown (the same suggestion,
        not a new one). The rest may have grown since: an early answer showed its first line
        while the generation went on into the cache, and the answer at the next key holds the
        lines after it too; or it may be shorter (an in-flight answer's complete lines)."""
        old = self.pending.get(document)
        if old is None or not text or not old.at_typed_place(before, after):
            return False
        rest = old.text[old.progress :]
        return text.startswith(rest) or rest.startswith(text)

    def hidden(self) -> None:
        """The gate kept a suggestion off the screen."""
        self.counts["hidden"] += 1

    def asked(self, document: str, before: str, after: str) -> None:
        """A new request for the document: at the place being typed through, or at the very
        place shown (asked again, cycled), nothing ends; elsewhere, the cursor moved away."""
        shown = self.pending.get(document)
        if (
            shown is None
            or shown.at_typed_place(before, after)
            or self._typed_over(shown, before, after)
        ):
            return
        self._end(shown, "typed_through" if shown.typed else "rejected")

    def _typed_over(self, shown: Shown, before: str, after: str) -> bool:
        """Whether the cursor moved on over characters after it that are the suggestion's
        next ones, the text unchanged: a closing bracket or quote the editor had put there
        itself (VS Code's auto-close), typed over. A key typed along it."""
        k = len(before) - len(shown.before) - shown.progress
        done = shown.progress + k
        if not (
            k > 0
            and shown.after[:k] == shown.text[shown.progress : done]
            and before.startswith(shown.before)
            and before.endswith(shown.text[:done])
            and after == shown.after[k:]
        ):
            return False
        shown.progress, shown.typed, shown.after = done, shown.typed + 1, after
        if done == len(shown.text):
            self._end(shown, "typed_through")
        return True

    def changed(self, document: str, text: str, keys: int = 0) -> None:
        """The document's text after an edit; `keys`: how many keys the client's notification
        held if each of its changes was one (a batch of typing, `typed_keys`), else 0."""
        shown = self.pending.get(document)
        if shown is None:
            return
        head, tail = len(shown.before), len(text) - len(shown.after)
        if tail < head or not (text.startswith(shown.before) and text.endswith(shown.after)):
            self._end(shown, "typed_through" if shown.typed else "rejected")  # edited elsewhere
            return
        inserted = text[head:tail]
        step = len(inserted) - shown.progress  # what this change added at the place
        added = inserted[shown.progress :] if step > 0 else ""
        if added in PAIRS and shown.text[shown.progress : shown.progress + 1] == added[0]:
            # the suggestion's next character typed, and the editor closed it after the cursor
            shown.after, inserted, step, added = added[1] + shown.after, inserted[:-1], 1, added[0]
        typing = step > 0 and (keys > 0 or is_key(added))  # (else a part inserted at once)
        if inserted.startswith(shown.text):
            whole = typing and len(inserted) == len(shown.text)
            if whole:
                shown.typed += max(keys, 1)
            self._end(shown, "typed_through" if whole else "accepted", len(shown.text))
        elif shown.text.startswith(inserted) and inserted.startswith(shown.text[: shown.progress]):
            if typing:
                shown.progress, shown.typed = len(inserted), shown.typed + max(keys, 1)
            elif step > 0:
                self._end(shown, "partial", len(inserted))
            else:  # (deleted back towards the place: still the suggestion's text)
                shown.progress = len(inserted)
        else:
            self._end(shown, "typed_through" if shown.typed else "rejected")

    def command(self, number: int) -> bool:
        """The client ran the item's command: it was accepted (VS Code, Neovim 0.12). Returns
        whether it was still pending (the edit may have told it first)."""
        for shown in list(self.pending.values()):
            if shown.number == number:
                self._end(shown, "accepted", len(shown.text))
                return True
        return False

    def closed(self, document: str) -> None:
        shown = self.pending.pop(document, None)
        if shown is not None:
            self._count(shown, "typed_through" if shown.typed else "rejected", 0)
        self.history.pop(document, None)

    # -- retention ---------------------------------------------------------------------------
    def due(self, text_of: Callable[[str], str | None]) -> None:
        """Run the retention checks whose time has come (`text_of`: an open document's text)."""
        now = self.clock()
        for kept in list(self.kept):
            while kept.due and kept.due[0] <= now:
                kept.due.pop(0)
                label = f"{self.retention_s[kept.checked]:g}s"
                kept.checked += 1
                text = text_of(kept.document)
                self.counts[f"checked_{label}"] += 1
                if text is not None and still_there(kept.text, text, kept.offset):
                    self.counts[f"still_there_{label}"] += 1
            if not kept.due:
                self.kept.remove(kept)

    def next_due(self) -> float | None:
        """When the next retention check is due (clock time), if any."""
        return min((kept.due[0] for kept in self.kept if kept.due), default=None)

    # -- what it tells -----------------------------------------------------------------------
    def last_outcome(self, document: str) -> str | None:
        history = self.history.get(document)
        return history[-1] if history else None

    def report(self) -> dict[str, Any]:
        counts = self.counts
        decided = sum(counts[k] for k in OUTCOMES)
        taken = counts["accepted"] + counts["partial"]
        keys = ("shown", *OUTCOMES, "hidden", "replaced")
        data: dict[str, Any] = {key: counts[key] for key in keys}
        data["chars_accepted"] = counts["chars_accepted"]
        data["rate"] = round(taken / decided, 4) if decided else None
        for seconds in self.retention_s:
            label = f"{seconds:g}s"
            data[f"still_there_{label}"] = counts[f"still_there_{label}"]
            data[f"checked_{label}"] = counts[f"checked_{label}"]
        data["pending"] = len(self.pending)
        return data

    # -- inside ------------------------------------------------------------------------------
    def _end(self, shown: Shown, outcome: str, chars: int = 0) -> None:
        """`chars`: how much of the suggestion's text is in the document now."""
        del self.pending[shown.document]
        if outcome == "typed_through":
            chars = chars or shown.progress
        self._count(shown, outcome, chars)
        if chars and outcome != "rejected" and self.retention_s:
            due = [self.clock() + seconds for seconds in self.retention_s]
            self.kept.append(Kept(shown.document, shown.text[:chars], len(shown.before), due))
            self.on_kept(due[0])

    def _count(self, shown: Shown, outcome: str, chars: int) -> None:
        self.counts[outcome] += 1
        if outcome in ("accepted", "partial"):
            self.counts["chars_accepted"] += chars
        self.history.setdefault(shown.document, deque(maxlen=HISTORY)).append(outcome)


def is_key(inserted: str) -> bool:
    """Whether one change inserting `inserted` is one key: a character, or a line break with
    the indentation the editor put after it (Enter with auto-indent), or indentation alone (Tab
    with spaces)."""
    if len(inserted) == 1:
        return True
    body = inserted.removeprefix("\r\n").removeprefix("\n")
    return bool(inserted) and not body.strip(" \t")


def typed_keys(inserted: Sequence[str]) -> int:
    """How many keys a notification of changes inserting `inserted` (one text per change, in
    order) held, if each was one key (`is_key`; a deletion, "", too); else 0. One change: 0
    (`changed` reads a lone change itself, from the text)."""
    if len(inserted) < 2 or not all(not text or is_key(text) for text in inserted):
        return 0
    return sum(1 for text in inserted if text)


def still_there(accepted: str, text: str, offset: int) -> bool:
    """Whether `accepted` (once at `offset`) is still in `text` near there, within an edit
    distance of half its length (its first NEEDLE_MAX characters)."""
    needle = accepted[:NEEDLE_MAX]
    if not needle.strip():
        return True
    hay = text[max(0, offset - WINDOW) : offset + len(needle) + WINDOW]
    return distance_in(needle, hay) <= len(needle) // 2


def distance_in(needle: str, hay: str) -> int:
    """The edit distance between `needle` and the stretch of `hay` most like it: the stretch
    of its length that rapidfuzz's partial_ratio aligns with it (insertions and deletions, in
    C), then the Levenshtein distance to that stretch. (A stretch best by that measure, not
    always the least Levenshtein distance over every stretch; the check's threshold, half the
    needle, is far coarser than their difference.)"""
    if len(hay) <= len(needle):
        return int(Levenshtein.distance(needle, hay))
    found = fuzz.partial_ratio_alignment(needle, hay)
    if found is None:  # (no character in common: the stretch is any one of its length)
        return len(needle)
    return int(Levenshtein.distance(needle, hay[found.dest_start : found.dest_end]))
