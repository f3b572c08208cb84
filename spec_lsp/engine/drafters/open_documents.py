"""N-gram lookup over the open documents: the whole current document (not just the prompt's window),
the other open documents, and recently accepted completions.

The index is over text, not tokens. Documents arrive as text and change as text (didChange), a
text index survives a change of model or tokenizer, and an edit re-indexes a line without
re-tokenizing anything: token boundaries depend on neighbouring text, so token sequences would
need re-tokenizing around every edit and re-aligning at the seams. The one conversion, of the
continuation found into target tokens, happens per lookup on a few hundred characters, with the
same boundary care as cross-vocabulary drafts (`token_text.text_to_target`).

Structure. A document is a list of lines (each with its newline). Positions after punctuation
or at the end of a run of blanks are indexed (not those inside words or blank runs: half the
entries, and a lookup can always start at one); the key is the last K characters of the
position's line and the line before it (older text blanked). A key depends on two lines only,
so an edit re-indexes the lines it touches and the line after them. Postings map
key -> {line: [columns]}; lines are objects, so positions stay valid while lines above them
come and go. A lookup takes the key at the context's last indexed-kind position, checks each
candidate forward over the text after that position, extends it backwards to measure the
match, and proposes what follows the longest match.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

ACCEPTED = "\0accepted:"  # document ids of accepted completions
# characters indexed over all documents; past it the least recently changed documents leave the
# index (never the one being completed; an open one comes back whole at its next change). The
# index costs ~45 bytes per character (lines, postings), so this is ~180 MB: a hundred
# 40 KB files, where without it every file opened stayed until closed
MAX_CHARS = 4_000_000


class _Line:
    __slots__ = ("doc", "seen", "text")

    def __init__(self, text: str, doc: _Doc) -> None:
        self.text, self.doc = text, doc
        self.seen: str | None = None  # the previous line's text as indexed (None: not indexed)


class _Doc:
    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self.lines: list[_Line] = []
        self.chars = 0  # the text's length
        self._layout: tuple[dict[_Line, int], list[int]] | None = None

    def changed(self) -> None:
        self._layout = None

    def layout(self) -> tuple[dict[_Line, int], list[int]]:
        """Each line's index and each line's start offset (plus the end), computed when needed."""
        if self._layout is None:
            starts = [0, *itertools.accumulate(len(line.text) for line in self.lines)]
            self._layout = ({line: i for i, line in enumerate(self.lines)}, starts)
        return self._layout

    def before(self, i: int, col: int, n: int) -> str:
        parts, size = [self.lines[i].text[:col]], col
        while size < n and i > 0:
            i -= 1
            parts.append(self.lines[i].text)
            size += len(parts[-1])
        return "".join(reversed(parts))[-n:]

    def after(self, i: int, col: int, n: int) -> str:
        parts, size = [self.lines[i].text[col:]], len(self.lines[i].text) - col
        while size < n and i + 1 < len(self.lines):
            i += 1
            parts.append(self.lines[i].text)
            size += len(parts[-1])
        return "".join(parts)[:n]


@dataclass(frozen=True)
class Match:
    doc_id: str
    offset: int  # where the continuation starts in the document
    length: int  # characters of the context matched there
    continuation: str


class OpenDocuments:
    """Documents by id, indexed for `lookup`; every method is thread-safe (the editor's thread
    updates, the engine's thread looks up)."""

    def __init__(
        self,
        *,
        key_chars: int = 8,
        max_accepted: int = 64,
        max_candidates: int = 64,
        max_chars: int = MAX_CHARS,
    ) -> None:
        self.key_chars = key_chars
        self.max_candidates = max_candidates
        self.max_chars = max_chars
        self.active = ""  # the document being completed: never trimmed
        self.chars = 0  # indexed over all documents
        self._docs: dict[str, _Doc] = {}
        self._changed: OrderedDict[str, None] = OrderedDict()  # least recently changed first
        self._postings: dict[int, dict[_Line, list[int]]] = {}
        self._accepted: deque[str] = deque()
        self._max_accepted = max_accepted
        self._counter = itertools.count()
        self._lock = threading.RLock()

    # -- changes ----------------------------------------------------------------------------
    def update(self, doc_id: str, text: str) -> None:
        """Set a document's text; only the lines that differ from what is held are re-indexed."""
        with self._lock:
            doc = self._docs.setdefault(doc_id, _Doc(doc_id))
            old, new = [line.text for line in doc.lines], split_lines(text)
            head = 0
            while head < min(len(old), len(new)) and old[head] == new[head]:
                head += 1
            tail = 0
            while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
                tail += 1
            self._replace(doc, head, len(old) - tail, new[head : len(new) - tail])
            self._trim(doc_id)

    def apply_change(self, doc_id: str, start: int, end: int, new_text: str) -> None:
        """Replace characters [start, end) of a document with `new_text` (an LSP content change,
        as offsets)."""
        with self._lock:
            doc = self._docs.setdefault(doc_id, _Doc(doc_id))
            starts = doc.layout()[1]
            if not 0 <= start <= end <= starts[-1]:
                raise ValueError(f"change [{start}, {end}) outside a {starts[-1]}-char document")
            first = max(0, bisect.bisect_right(starts, start) - 1)
            if first == len(doc.lines) and doc.lines and not doc.lines[-1].text.endswith("\n"):
                first -= 1  # at the very end, after a last line without "\n": that line grows
            last = max(first, bisect.bisect_left(starts, end))
            old = "".join(line.text for line in doc.lines[first:last])
            base = starts[first]
            text = old[: start - base] + new_text + old[end - base :]
            if text and not text.endswith("\n") and last < len(doc.lines):
                text += doc.lines[last].text  # the edit's last line runs into the next one
                last += 1
            self._replace(doc, first, last, split_lines(text))
            self._trim(doc_id)

    def remove(self, doc_id: str) -> None:
        with self._lock:
            doc = self._docs.pop(doc_id, None)
            self._changed.pop(doc_id, None)
            if doc is not None:
                self.chars -= doc.chars
            for line in doc.lines if doc else ():
                self._unindex(line)

    def _trim(self, changed: str) -> None:
        """Mark `changed` as the latest change; drop the least recently changed documents while
        over max_chars (not `changed`, not the active one)."""
        self._changed[changed] = None
        self._changed.move_to_end(changed)
        keep = {changed, self.active}
        for doc_id in list(self._changed):
            if self.chars <= self.max_chars:
                break
            if doc_id not in keep:
                self.remove(doc_id)

    def memory(self) -> dict[str, Any]:
        """Documents and characters indexed, accepted completions apart (over all open
        documents, the latest max_accepted); max_chars bounds both together."""
        with self._lock:
            accepted = [self._docs[d] for d in self._accepted if d in self._docs]
            accepted_chars = sum(doc.chars for doc in accepted)
            return {
                "documents": len(self._docs) - len(accepted),
                "chars": self.chars - accepted_chars,
                "accepted": len(accepted),
                "accepted_chars": accepted_chars,
                "max_chars": self.max_chars,
                "max_accepted": self._max_accepted,
            }

    def add_accepted(self, text: str) -> None:
        """Remember a completion the user accepted (the oldest are forgotten)."""
        with self._lock:
            doc_id = f"{ACCEPTED}{next(self._counter)}"
            self.update(doc_id, text)
            self._accepted.append(doc_id)
            while len(self._accepted) > self._max_accepted:
                self.remove(self._accepted.popleft())

    def text(self, doc_id: str) -> str | None:
        with self._lock:
            doc = self._docs.get(doc_id)
            return "".join(line.text for line in doc.lines) if doc else None

    def documents(self) -> list[str]:
        with self._lock:
            return list(self._docs)

    def entries(self) -> set[tuple[str, int, int, int]]:
        """Every posting as (document, line number, column, key): for tests and debugging."""
        with self._lock:
            return {
                (line.doc.doc_id, line.doc.layout()[0][line], col, key)
                for key, postings in self._postings.items()
                for line, cols in postings.items()
                for col in cols
            }

    def _replace(self, doc: _Doc, first: int, last: int, texts: list[str]) -> None:
        removed = 0
        for line in doc.lines[first:last]:
            self._unindex(line)
            removed += len(line.text)
        added = sum(len(t) for t in texts)
        doc.chars += added - removed
        self.chars += added - removed
        doc.lines[first:last] = [_Line(t, doc) for t in texts]
        doc.changed()
        after = first + len(texts)
        if after < len(doc.lines):  # its keys look back at the line before it, now changed
            self._unindex(doc.lines[after])
        for i in range(first, min(after + 1, len(doc.lines))):
            self._index(doc.lines[i], doc.lines[i - 1].text if i else "")

    def _index(self, line: _Line, previous: str) -> None:
        line.seen = previous[-self.key_chars :]
        for key, col in line_keys(line.seen, line.text, self.key_chars):
            self._postings.setdefault(key, {}).setdefault(line, []).append(col)

    def _unindex(self, line: _Line) -> None:
        if line.seen is None:
            return
        for key in {key for key, _ in line_keys(line.seen, line.text, self.key_chars)}:
            postings = self._postings[key]
            del postings[line]
            if not postings:
                del self._postings[key]
        line.seen = None

    # -- lookup -----------------------------------------------------------------------------
    def lookup(
        self,
        context: str,
        *,
        max_chars: int = 256,
        prefer: str = "",
        exclude: tuple[str, int] | None = None,
        max_back: int = 256,
    ) -> Match | None:
        """The longest match of the context's end elsewhere, and up to `max_chars` after it.

        `exclude` = (document, offset): no match in that document may span that offset (the
        cursor: the current document's own text before it is the context, not a repeat).
        Ties go to `prefer` (the current document), then to the most recently indexed lines.
        """
        anchor = _anchor(context, self.key_chars)
        if anchor is None:
            return None
        gram, a = anchor
        partial, back = context[a:], context[max(0, a - max_back) : a]
        with self._lock:
            postings = self._postings.get(hash(gram))
            if not postings:
                return None
            best: tuple[int, bool, _Doc, int, int] | None = None
            for line in itertools.islice(reversed(postings), self.max_candidates):
                doc = line.doc
                index, starts = doc.layout()
                i = index[line]
                for col in postings[line]:
                    ahead = doc.after(i, col, len(partial) + 1)
                    if ahead[: len(partial)] != partial or len(ahead) <= len(partial):
                        continue  # not this context, or nothing after it to propose
                    length = _common_suffix(back, doc.before(i, col, len(back)))
                    offset = starts[i] + col
                    if exclude and doc.doc_id == exclude[0]:
                        if offset - length < exclude[1] <= offset + len(partial):
                            continue
                    score = (length, doc.doc_id == prefer)
                    if length >= self.key_chars and (best is None or score > best[:2]):
                        best = (length, score[1], doc, i, col)
            if best is None:
                return None
            length, _, doc, i, col = best
            continuation = doc.after(i, col, len(partial) + max_chars)[len(partial) :]
            offset = doc.layout()[1][i] + col + len(partial)
        if not continuation:
            return None
        return Match(doc.doc_id, offset, length + len(partial), continuation)


def split_lines(text: str) -> list[str]:
    """Lines with their newline ('\\n' only: the index's notion of a line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


WORD = re.compile(r"\w")
SPACE = re.compile(r"\s")
# The character before an indexed position: punctuation, or the last of a run of blanks.
# (Positions inside words and inside runs of blanks are not indexed.)
INDEXED_AFTER = re.compile(r"[^\w\s]|\s(?!\s)")


def _blank(gram: str) -> bool:
    return not gram.strip(" \t\r\n\0")


def line_keys(previous: str, text: str, k: int) -> list[tuple[int, int]]:
    """(key, column) at each indexed position of a line (before the character at the column).

    The key is the K characters before the position within this line and the previous one
    (older text blanked to NUL); positions whose K characters are all blank are skipped."""
    window = ("\0" * k + previous)[-k:] + text
    keys = []
    for found in INDEXED_AFTER.finditer(window, k - 1):
        end = found.end()
        gram = window[end - k : end]
        if end < len(window) and not _blank(gram):
            keys.append((hash(gram), end - k))
    return keys


def _anchor(context: str, k: int, max_partial: int = 64) -> tuple[str, int] | None:
    """The key and position where a lookup starts: the last position of the context that the
    index holds whatever text follows it (at the very end: only after punctuation)."""
    for a in range(len(context), max(len(context) - max_partial, 1) - 1, -1):
        before = context[a - 1]
        if WORD.match(before):
            continue
        if SPACE.match(before) and (a == len(context) or SPACE.match(context[a])):
            continue
        start = context.rfind("\n", 0, a) + 1
        previous = context[context.rfind("\n", 0, start - 1) + 1 : start] if start else ""
        gram = (("\0" * k + previous)[-k:] + context[start:a])[-k:]
        if not _blank(gram):
            return gram, a
    return None


def _common_suffix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest m with a[-m:] == b[-m:] (monotone in m)
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo
