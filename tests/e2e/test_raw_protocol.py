"""Bad input on the wire, sent as raw bytes: the server answers or ignores it, and keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", "fake"]


def frame(payload: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(payload) + payload


def message(obj: dict) -> bytes:
    return frame(json.dumps(obj).encode())


class Raw:
    def __init__(self, **env: str) -> None:
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        length = 0
        while line := self.proc.stdout.readline().strip():
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def response(self, msg_id) -> dict:
        while True:
            msg = self.read()
            if msg.get("id") == msg_id and "method" not in msg:
                return msg

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()


@pytest.fixture
def raw():
    server = Raw()
    server.send(
        message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    )
    assert "capabilities" in server.response(1)["result"]
    server.send(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    yield server
    server.close()


def inline(server: Raw, msg_id, uri: str, line: int, character: int) -> dict:
    server.send(
        message(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "method": "textDocument/inlineCompletion",
                "params": {
                    "textDocument": {"uri": uri},
                    "position": {"line": line, "character": character},
                    "context": {"triggerKind": 1},
                },
            }
        )
    )
    return server.response(msg_id)


def open_doc(server: Raw, uri: str, text: str) -> None:
    server.send(
        message(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
                },
            }
        )
    )


def served(server: Raw) -> bool:
    open_doc(server, "file:///ok.py", "def fo\n")
    for i in range(100):
        result = inline(server, f"ok-{i}", "file:///ok.py", 0, 6).get("result") or {}
        if result.get("items"):
            return result["items"][0]["insertText"].startswith("o(x):")
        time.sleep(0.05)
    return False


def test_malformed_json_is_survived(raw):
    raw.send(frame(b"{this is not json"))
    raw.send(frame(b"\xff\xfe\x00 not utf-8"))
    assert served(raw)


def test_unknown_method_gets_method_not_found(raw):
    raw.send(message({"jsonrpc": "2.0", "id": "u", "method": "no/suchMethod", "params": {}}))
    assert raw.response("u")["error"]["code"] == -32601
    assert served(raw)


def test_wrong_parameter_types_get_an_error(raw):
    raw.send(
        message(
            {
                "jsonrpc": "2.0",
                "id": "w",
                "method": "textDocument/inlineCompletion",
                "params": {"textDocument": {"uri": 42}, "position": {"line": "x", "character": -1}},
            }
        )
    )
    assert "error" in raw.response("w")
    assert served(raw)


def test_negative_and_huge_positions(raw):
    open_doc(raw, "file:///p.py", "def fo\n")
    raw.send(
        message(
            {
                "jsonrpc": "2.0",
                "id": "n",
                "method": "textDocument/inlineCompletion",
                "params": {
                    "textDocument": {"uri": "file:///p.py"},
                    "position": {"line": -1, "character": -5},
                    "context": {"triggerKind": 1},
                },
            }
        )
    )
    assert raw.response("n")["error"]["code"] == -32602  # InvalidParams: positions are unsigned
    assert "result" in inline(raw, "h", "file:///p.py", 10**6, 10**6)
    assert served(raw)


def test_large_document_and_long_line(raw):
    open_doc(raw, "file:///big.py", "x = 1\n" * 900_000)  # ~5 MB
    assert inline(raw, "big", "file:///big.py", 899_999, 5)["result"]["items"] == []
    open_doc(raw, "file:///long.py", "y = '" + "a" * 20_000 + "'\ndef fo")
    assert "result" in inline(raw, "long", "file:///long.py", 1, 6)
    assert served(raw)


def test_stdin_closed_exits_cleanly_within_seconds():
    server = Raw(SPEC_LSP_FAKE_DELAY_MS="200")
    server.send(
        message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    )
    server.response(1)
    server.send(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    open_doc(server, "file:///c.py", "class Po\n")
    server.send(
        message(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "textDocument/inlineCompletion",
                "params": {
                    "textDocument": {"uri": "file:///c.py"},
                    "position": {"line": 0, "character": 8},
                    "context": {"triggerKind": 1},
                },
            }
        )
    )
    time.sleep(0.5)  # mid-generation
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    started = time.monotonic()
    server.proc.wait(timeout=10)
    assert time.monotonic() - started < 5
