"""The change sequences real editors sent around a suggestion (recorded by the editor e2e
harnesses: tests/editors/sequences.py, in tests/unit/editor_sequences/), replayed through the
acceptance bookkeeping as the server feeds it: each action counts as what the person did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from spec_lsp.config import Settings
from spec_lsp.server import convert
from spec_lsp.server.acceptance import Acceptance, typed_keys
from tests.editors.sequences import FIXTURE_URI

FIXTURES = Path(__file__).with_name("editor_sequences")
OUTCOMES = ("accepted", "partial", "typed_through", "rejected")
# what each recorded action is (the fixture's name ends with it): the outcome of the suggestion
# it acted on (the last one decided), and the outcomes no suggestion of the sequence may have.
# (Typing the start of the line first, the person may type along earlier suggestions: VS Code
# shows one at `def`, and its auto-closed `(` inserts `()`, which ends the one typed along.)
EXPECTED = {
    "accept": ({"accepted"}, {"partial", "rejected"}),
    "accept-word": ({"partial"}, {"rejected"}),
    "accept-line": ({"partial", "accepted"}, {"rejected"}),  # (the fake model's body: one line)
    "typing-along": ({"typed_through"}, {"partial", "rejected"}),
    "batched-keys": ({"typed_through"}, {"partial", "rejected"}),
    "enter-autoindent": ({"typed_through"}, {"accepted", "partial", "rejected"}),
    "cycling": ({"accepted"}, {"partial", "rejected"}),
    # Escape sends nothing: the key typed next ends it (typed through if typed along before)
    "escape": ({"rejected", "typed_through"}, {"accepted", "partial"}),
}


def position(data: dict[str, Any]) -> lsp.Position:
    return lsp.Position(line=data["line"], character=data["character"])


def change(data: dict[str, Any]) -> lsp.TextDocumentContentChangeEvent:
    if "range" not in data:
        return lsp.TextDocumentContentChangeWholeDocument(text=data["text"])
    start, end = position(data["range"]["start"]), position(data["range"]["end"])
    return lsp.TextDocumentContentChangePartial(range=lsp.Range(start, end), text=data["text"])


def replay(messages: list[dict[str, Any]]) -> Acceptance:
    """Feed the acceptance bookkeeping what the server's handlers would: the document after each
    didChange (with the keys of a batch), each request's place, each answer's suggestion."""
    acceptance = Acceptance(retention_s=())
    documents: dict[str, TextDocument] = {}
    asked: dict[Any, tuple[TextDocument, lsp.Position, str, str, int | None]] = {}
    settings = Settings()
    for entry in messages:
        message = entry["message"]
        method, params = message.get("method"), message.get("params") or {}
        if method == "textDocument/didOpen":
            item = params["textDocument"]
            documents[item["uri"]] = TextDocument(item["uri"], item["text"], item["version"])
        elif method == "textDocument/didChange":
            document = documents[params["textDocument"]["uri"]]
            changes = [change(c) for c in params["contentChanges"]]
            for each in changes:
                document.apply_change(each)
            document.version = params["textDocument"]["version"]
            keys = typed_keys(convert.inserted_texts(changes))
            acceptance.changed(document.uri, document.source, keys)
        elif method == "textDocument/inlineCompletion":
            document = documents[params["textDocument"]["uri"]]
            request = convert.to_request(document, position(params["position"]), settings)
            acceptance.asked(document.uri, request.prefix, request.suffix)
            place = (document, position(params["position"]), request.prefix, request.suffix)
            asked[message["id"]] = (*place, document.version)
        elif method == "workspace/executeCommand":
            arguments = params.get("arguments") or []
            if len(arguments) == 1 and isinstance(arguments[0], int):
                acceptance.command(arguments[0])
        elif method is None and message.get("id") in asked:
            result = message.get("result") or {}
            items = result.get("items", []) if isinstance(result, dict) else result
            if not items:
                continue
            document, cursor, prefix, suffix, version = asked[message["id"]]
            if document.version != version:  # (stale: answered empty, showing.py)
                continue
            acceptance.shown(document.uri, prefix, suffix, shown_text(document, cursor, items[0]))
    return acceptance


def shown_text(document: TextDocument, cursor: lsp.Position, item: dict[str, Any]) -> str:
    """What the item inserts after the cursor (its range may start before it: the part of the
    line typed since is in its text)."""
    text = item["insertText"]
    text = text if isinstance(text, str) else text["value"]
    if "range" not in item:
        return text
    start = convert.offset_at(document, position(item["range"]["start"]))
    typed = document.source[start : convert.offset_at(document, cursor)]
    return text[len(typed) :] if text.startswith(typed) else text


def fixtures() -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in sorted(FIXTURES.glob("*.json"))]


@pytest.mark.parametrize("path", fixtures())
def test_a_recorded_action_counts_as_what_the_person_did(path: Path) -> None:
    fixture = json.loads(path.read_text())
    action = next(name for name in EXPECTED if path.stem.endswith(f"-{name}"))
    last, never = EXPECTED[action]
    acceptance = replay(fixture["messages"])  # (the suggestion shown last: pending)
    outcomes = list(acceptance.history.get(FIXTURE_URI, ()))
    told = f"{fixture['editor']}, {fixture['keys']}: {outcomes}"
    assert outcomes and outcomes[-1] in last, told
    assert not set(outcomes) & never, told


def test_recordings_cover_each_action_in_each_editor() -> None:
    """Neovim 0.11 (shim), 0.12 (native and shim), VS Code: every action recorded (Neovim has
    no accept-word or accept-line)."""
    names = {path.stem for path in FIXTURES.glob("*.json")}
    for action in EXPECTED:
        for editor in ("neovim-0.11.4-shim", "neovim-0.12.4-native", "neovim-0.12.4-shim"):
            if action not in ("accept-word", "accept-line"):
                assert f"{editor}-{action}" in names
        assert any(n.startswith("vscode-") and n.endswith(f"-{action}") for n in names), action
