"""Recorded editor sequences: what an editor really sent around a suggestion (accept, typing
along, Enter with auto-indent, cycling, Escape ...), kept as fixtures in
tests/unit/editor_sequences/ and replayed through the acceptance bookkeeping in
tests/unit/test_editor_sequences.py.

A recording (tests/editors/lsp_recorder.py) holds every message; a fixture keeps the ones that
tell a suggestion's fate: the editor's document notifications, its inline completion requests
(and cancels), the server's answers to those, and the item commands the editor ran. The
recording's file URI becomes FIXTURE_URI (the temporary folder is no part of it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "editor_sequences"
FIXTURE_URI = "file:///work/demo.py"
EDITOR_METHODS = {
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "textDocument/inlineCompletion",
    "workspace/executeCommand",
    "$/cancelRequest",
}


def keep(records: list[dict[str, Any]], uri: str) -> list[dict[str, Any]]:
    """The messages of a recording that tell the fate of suggestions in the document `uri`
    (made FIXTURE_URI): its notifications and requests, the answers to those, the cancels of
    those and the commands of the items answered."""
    asked: set[Any] = set()
    numbers: set[Any] = set()  # the items' command arguments answered for the document
    kept = []
    for record in records:
        message = record["message"]
        method, params = message.get("method"), message.get("params") or {}
        if record["from"] == "editor" and method in EDITOR_METHODS:
            document = (params.get("textDocument") or {}).get("uri")
            if method == "$/cancelRequest" and params.get("id") not in asked:
                continue
            if method == "workspace/executeCommand" and not set(params.get("arguments") or []) & numbers:
                continue
            if document is not None and document != uri:
                continue
            if method == "textDocument/inlineCompletion":
                asked.add(message.get("id"))
        elif record["from"] == "server" and method is None and message.get("id") in asked:
            result = message.get("result") or {}
            items = result.get("items", []) if isinstance(result, dict) else result or []
            numbers |= {a for i in items for a in (i.get("command") or {}).get("arguments", [])}
        else:
            continue
        text = json.dumps(message).replace(json.dumps(uri)[1:-1], FIXTURE_URI)
        kept.append({"from": record["from"], "t": record["t"], "message": json.loads(text)})
    return kept


def save(name: str, *, editor: str, keys: str, records_file: Path, uri: str) -> Path:
    """Write the fixture `name` from a recording; returns its path."""
    records = [json.loads(line) for line in records_file.read_text().splitlines() if line]
    messages = ",\n".join(json.dumps(message) for message in keep(records, uri))
    head = json.dumps({"editor": editor, "keys": keys})[:-1]  # (one message a line)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{name}.json"
    path.write_text(f'{head}, "messages": [\n{messages}\n]}}\n')
    return path


def main(argv: list[str]) -> None:
    """`python tests/editors/sequences.py RECORDING EDITOR PREFIX`: one fixture per document of
    a recording whose actions are listed in RECORDING.files.json ([{name, uri}], as
    vscode_e2e.mjs writes them), named PREFIX-<action>."""
    recording, editor, prefix = Path(argv[0]), argv[1], argv[2]
    files = json.loads(Path(f"{recording}.files.json").read_text())
    for entry in files:
        name = f"{prefix}-{entry['name']}"
        path = save(name, editor=editor, keys=entry["name"], records_file=recording, uri=entry["uri"])
        print(path)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
