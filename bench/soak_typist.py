"""The soak's scripted user, who edits as in an editor.

Each document is a buffer with a cursor and a plan: the text the user is about to type at the
cursor, taken from a real Python file. Each key is one action:

- type the plan's next character, or backspace (the deleted character goes back into the plan);
- jump: the cursor moves to the end of another line (no change sent), and the plan becomes the
  lines that follow that line in the file;
- paste: several lines of the file inserted below the cursor's line in one didChange;
- delete a block: the cursor's line and a few after it go in one didChange (and the plan is to
  type them again);
- accept a suggestion (30 % of the answers with one, when it answers the document as it stands):
  the part of it that matches the plan is inserted at once;
- switch documents (to one not yet visited while there is one, so that the server's caches
  of every document fill early, in the warm-up); close and reopen one.

As editors do (VS Code), every change of the current document is followed by an Automatic
inline completion request, after a `$/cancelRequest` for the document's previous request if
that is still open. Positions are UTF-16 code units, the LSP default.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from typing import Any

from bench.soak_client import INLINE, Client, Request, items_of

Change = dict[str, Any]  # one of didChange's contentChanges

# cumulative probabilities per key: the rest types a character
ACTIONS = (
    (0.020, "switch"),
    (0.025, "reopen"),
    (0.035, "jump"),
    (0.040, "paste"),
    (0.045, "delete_block"),
    (0.100, "backspace"),
)
ACCEPT_P = 0.3  # share of the suggestions for the document as it stands that are accepted


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class Document:
    """A buffer being edited: its text, the cursor (an offset), and what is to be typed next."""

    def __init__(self, uri: str, source: str, rng: random.Random) -> None:
        self.uri, self.source, self.rng = uri, source, rng
        self.version = 1
        self.pending: int | None = None  # the inline completion request not yet answered
        self.restart()

    def restart(self) -> None:
        """Back to the first 40 % of the file, the cursor at its end, the rest to type."""
        start = len(self.source) * 2 // 5
        self.text, self.cursor, self.plan = self.source[:start], start, self.source[start:]

    def position(self, offset: int) -> dict[str, int]:
        line_start = self.text.rfind("\n", 0, offset) + 1
        return {
            "line": self.text.count("\n", 0, offset),
            "character": utf16_len(self.text[line_start:offset]),
        }

    def digest(self) -> str:
        """As specLsp/document gives it: sha256 of the UTF-8 text."""
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    def edit(self, start: int, end: int, new: str) -> Change:
        """Replace text[start:end] with `new`, the cursor after it; the change as LSP sends it."""
        change = {"range": {"start": self.position(start), "end": self.position(end)}, "text": new}
        self.text = self.text[:start] + new + self.text[end:]
        self.cursor = start + len(new)
        return change

    def _lines(self, at: int, n: int) -> tuple[str, int]:
        """From offset `at` of the source (a newline, or its end), the next n lines, each with
        the newline before it; and where they end."""
        end = at
        for _ in range(n):
            following = self.source.find("\n", end + 1)
            if following < 0:
                return self.source[at:], len(self.source)
            end = following
        return self.source[at:end], end

    def _anywhere(self) -> int:
        """A random newline of the source (its end when it has none)."""
        at = self.source.find("\n", self.rng.randrange(len(self.source)))
        return at if at >= 0 else len(self.source)

    def type_char(self) -> list[Change]:
        if not self.plan:  # done with the plan: start over, or go on elsewhere
            if len(self.text) > 2 * len(self.source) or self.rng.random() < 0.3:
                self.restart()
                return [{"text": self.text}]
            self.jump()
        if not self.plan:
            self.plan = "\n"
        char, self.plan = self.plan[0], self.plan[1:]
        return [self.edit(self.cursor, self.cursor, char)]

    def backspace(self) -> list[Change]:
        if self.cursor == 0:
            return []
        self.plan = self.text[self.cursor - 1] + self.plan
        return [self.edit(self.cursor - 1, self.cursor, "")]

    def jump(self) -> list[Change]:
        """The cursor to the end of a random line; the plan: what follows that line in the file."""
        starts = [0] + [i + 1 for i, c in enumerate(self.text) if c == "\n"]
        start = self.rng.choice(starts)
        end = self.text.find("\n", start)
        end = len(self.text) if end < 0 else end
        self.cursor = end
        line = self.text[start:end]
        found = self.source.find(line + "\n") if line.strip() else -1
        at = found + len(line) if found >= 0 else self._anywhere()
        self.plan = self._lines(at, self.rng.randint(1, 6))[0]
        return []

    def paste(self) -> list[Change]:
        """3 to 15 lines of the file below the cursor's line; the plan: the lines after them."""
        end = self.text.find("\n", self.cursor)
        end = len(self.text) if end < 0 else end
        block, after = self._lines(self._anywhere(), self.rng.randint(3, 15))
        if not block:
            return []
        self.plan = self._lines(after, self.rng.randint(1, 6))[0]
        return [self.edit(end, end, block)]

    def delete_block(self) -> list[Change]:
        """The cursor's line and 1 to 9 after it; the plan: to type them again."""
        start = self.text.rfind("\n", 0, self.cursor) + 1
        end = start
        for _ in range(self.rng.randint(2, 10)):
            following = self.text.find("\n", end)
            if following < 0:
                end = len(self.text)
                break
            end = following + 1
        if end == start:
            return []
        self.plan = self.text[start:end]
        return [self.edit(start, end, "")]

    def accept(self, suggestion: str) -> list[Change]:
        """Insert the part of the suggestion that the plan agrees with (nothing if none)."""
        n = next(
            (i for i, (a, b) in enumerate(zip(suggestion, self.plan)) if a != b),
            min(len(suggestion), len(self.plan)),
        )
        if not n:
            return []
        typed, self.plan = self.plan[:n], self.plan[n:]
        return [self.edit(self.cursor, self.cursor, typed)]


def open_document(client: Client, doc: Document) -> None:
    """didOpen with the document's text and version (Python)."""
    item = {"uri": doc.uri, "languageId": "python", "version": doc.version, "text": doc.text}
    client.notify("textDocument/didOpen", {"textDocument": item})


def send_change(client: Client, doc: Document, changes: list[Change]) -> int:
    """didChange, then an Automatic inline completion request at the cursor in place of the
    document's open one, which gets a `$/cancelRequest` (as VS Code does); the new request's id."""
    if doc.pending is not None:
        client.cancel(doc.pending)
    doc.version += 1
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": doc.uri, "version": doc.version}, "contentChanges": changes},
    )
    params = {
        "textDocument": {"uri": doc.uri},
        "position": doc.position(doc.cursor),
        "context": {"triggerKind": 2},  # Automatic
    }
    doc.pending = client.request(INLINE, params)
    return doc.pending


class Typist:
    """Keys into the documents through a Client; keys counts each kind of key pressed."""

    def __init__(self, client: Client, sources: dict[str, str], rng: random.Random) -> None:
        self.client, self.rng = client, rng
        self.docs = [Document(uri, text, rng) for uri, text in sources.items() if text]
        self.current = self.docs[0]
        self.unvisited = self.docs[1:]  # switches go to these first, in order
        self.keys: Counter[str] = Counter()
        self._asked: dict[int, tuple[Document, int]] = {}  # request id -> (document, version)
        self.mismatches: list[str] = []  # documents whose text differed in the server
        client.on_answer.append(self.answered)
        for doc in self.docs:
            self.open(doc)

    def open(self, doc: Document) -> None:
        open_document(self.client, doc)

    def withdraw(self, doc: Document) -> None:
        """The editor drops the document's open request: $/cancelRequest."""
        if doc.pending is not None:
            self.client.cancel(doc.pending)
            doc.pending = None

    def tick(self) -> str:
        """One key; what it was."""
        roll = self.rng.random()
        kind = next((name for p, name in ACTIONS if roll < p), "type")
        doc = self.current
        changes: list[Change] = []
        if kind == "switch":
            self.withdraw(doc)
            self.current = self.rng.choice(self.docs)
            if self.unvisited:
                self.current = self.unvisited.pop(0)
        elif kind == "reopen":
            self.withdraw(doc)
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
            doc.version = 1
            self.open(doc)
        elif kind == "backspace" and doc.cursor == 0:
            kind = "type"
        if kind in ("jump", "paste", "delete_block", "backspace", "type"):
            method = "type_char" if kind == "type" else kind
            changes = getattr(doc, method)()
        self.keys[kind] += 1
        if changes:
            self.changed(doc, changes)
        return kind

    def changed(self, doc: Document, changes: list[Change]) -> None:
        """didChange, then a new inline completion request in place of the open one."""
        sent = send_change(self.client, doc, changes)
        self._asked[sent] = (doc, doc.version)

    async def check(self, doc: Document) -> None:
        """The server's text of `doc` (specLsp/document) against the client's, as of now."""
        version, digest, length, sent = doc.version, doc.digest(), len(doc.text), self.client.now()
        try:
            got = await self.client.call("specLsp/document", {"uri": doc.uri}, timeout=3600)
        except Exception:
            return  # no answer or an error answer: the ledger reports it
        if not got or got.get("version") != version or got.get("sha256") != digest:
            self.mismatches.append(
                f"{doc.uri} at t={sent:.1f}s: client version {version}, {length} characters; "
                f"server {json.dumps(got)}"
            )

    def answered(self, request: Request, msg: dict[str, Any]) -> None:
        asked = self._asked.pop(request.id, None)
        if asked is None:
            return
        doc, version = asked
        if doc.pending == request.id:
            doc.pending = None
        if request.outcome != "items" or doc is not self.current or doc.version != version:
            return  # an editor shows only a suggestion for the text as it stands
        suggestion = items_of(msg.get("result"))[0].get("insertText")
        if isinstance(suggestion, str) and self.rng.random() < ACCEPT_P:
            changes = doc.accept(suggestion)
            if changes:
                self.keys["accept"] += 1
                self.changed(doc, changes)
