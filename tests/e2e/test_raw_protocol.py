"""The wire, byte by byte: bad input is answered or ignored and the server keeps serving;
shutdown and exit are prompt even mid-generation; TCP works and warns off loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import IO, Any

import pytest

SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", "fake"]


def frame(payload: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(payload) + payload


def message(obj: dict) -> bytes:
    return frame(json.dumps(obj).encode())


def request(msg_id: Any, method: str, params: Any) -> bytes:
    return message({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


def notification(method: str, params: Any) -> bytes:
    return message({"jsonrpc": "2.0", "method": method, "params": params})


def inline_params(uri: str, line: int, character: int) -> dict:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 1},
    }


def did_open(uri: str, text: str) -> bytes:
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    return notification("textDocument/didOpen", {"textDocument": item})


class Wire:
    """A JSON-RPC peer over any pair of byte streams; keeps every answer it has read."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.reader, self.writer = reader, writer
        self.answers: dict[Any, dict] = {}

    def send(self, data: bytes) -> None:
        self.writer.write(data)
        self.writer.flush()

    def read(self) -> dict:
        length = 0
        while line := self.reader.readline().strip():
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert length, "the server closed the stream"
        return json.loads(self.reader.read(length))

    def response(self, msg_id: Any) -> dict:
        while msg_id not in self.answers:
            msg = self.read()
            if "id" in msg and "method" not in msg:
                assert msg["id"] not in self.answers, f"two answers to {msg['id']!r}"
                self.answers[msg["id"]] = msg
        return self.answers[msg_id]

    def call(self, msg_id: Any, method: str, params: Any) -> dict:
        self.send(request(msg_id, method, params))
        return self.response(msg_id)

    def handshake(self) -> None:
        assert "capabilities" in self.call(0, "initialize", {"capabilities": {}})["result"]
        self.send(notification("initialized", {}))
        for i in range(500):  # the model loads in the background
            if self.call(f"ready-{i}", "specLsp/stats", None)["result"]["ready"]:
                return
            time.sleep(0.02)
        raise AssertionError("never ready")

    def serves(self) -> bool:
        self.send(did_open("file:///ok.py", "def fo\n"))
        answer = self.call(
            f"ok-{len(self.answers)}",
            "textDocument/inlineCompletion",
            inline_params("file:///ok.py", 0, 6),
        )
        return answer["result"]["items"][0]["insertText"].startswith("o(x):")


class Stdio(Wire):
    def __init__(self, **env: str) -> None:
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdout, self.proc.stdin)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def raw():
    server = Stdio()
    server.handshake()
    yield server
    server.close()


def test_malformed_json_is_survived(raw):
    raw.send(frame(b"{this is not json"))
    raw.send(frame(b"\xff\xfe\x00 not utf-8"))
    assert raw.serves()


def test_unknown_method_gets_method_not_found(raw):
    assert raw.call("u", "no/suchMethod", {})["error"]["code"] == -32601
    assert raw.serves()


def test_wrong_parameter_types_get_an_error(raw):
    bad = {"textDocument": {"uri": 42}, "position": {"line": "x", "character": -1}}
    assert "error" in raw.call("w", "textDocument/inlineCompletion", bad)
    assert raw.serves()


def test_negative_and_huge_positions(raw):
    raw.send(did_open("file:///p.py", "def fo\n"))
    negative = raw.call("n", "textDocument/inlineCompletion", inline_params("file:///p.py", -1, -5))
    assert negative["error"]["code"] == -32602  # InvalidParams: positions are unsigned
    huge = raw.call(
        "h", "textDocument/inlineCompletion", inline_params("file:///p.py", 10**6, 10**6)
    )
    assert "result" in huge
    assert raw.serves()


def test_large_document_and_long_line(raw):
    raw.send(did_open("file:///big.py", "x = 1\n" * 900_000))  # ~5 MB: over maxDocumentChars
    big = raw.call(
        "big", "textDocument/inlineCompletion", inline_params("file:///big.py", 899_999, 5)
    )
    assert big["result"]["items"] == []
    raw.send(did_open("file:///long.py", "y = '" + "a" * 20_000 + "'\ndef fo"))
    assert "result" in raw.call(
        "long", "textDocument/inlineCompletion", inline_params("file:///long.py", 1, 6)
    )
    assert raw.serves()


def test_shutdown_mid_generation_is_prompt_and_every_request_is_answered():
    server = Stdio(SPEC_LSP_FAKE_DELAY_MS="200")
    try:
        server.handshake()
        server.send(did_open("file:///c.py", "class Po\n"))
        server.send(
            request("gen", "textDocument/inlineCompletion", inline_params("file:///c.py", 0, 8))
        )
        time.sleep(0.5)  # mid-generation
        started = time.monotonic()
        assert server.call("bye", "shutdown", None)["result"] is None
        assert time.monotonic() - started < 0.5
        answer = server.response("gen")  # pygls cancels what is pending at shutdown: answered
        assert answer.get("error", {}).get("code") == -32800 or "result" in answer
        server.send(notification("exit", None))
        assert server.proc.wait(timeout=5) == 0
    finally:
        server.close()


def test_stdin_closed_mid_generation_exits_within_seconds():
    server = Stdio(SPEC_LSP_FAKE_DELAY_MS="200")
    try:
        server.handshake()
        server.send(did_open("file:///c.py", "class Po\n"))
        server.send(
            request("gen", "textDocument/inlineCompletion", inline_params("file:///c.py", 0, 8))
        )
        time.sleep(0.5)
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        started = time.monotonic()
        server.proc.wait(timeout=10)
        assert time.monotonic() - started < 5
    finally:
        server.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tcp_off_loopback_warns_and_serves(tmp_path):
    port, log = free_port(), tmp_path / "server.log"
    command = [*SERVER, "--tcp", "--host", "0.0.0.0", "--port", str(port), "--log-file", str(log)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("the server never listened")
        with connection:
            wire = Wire(connection.makefile("rb"), connection.makefile("wb"))
            wire.handshake()
            assert wire.serves()
            wire.call("bye", "shutdown", None)
            wire.send(notification("exit", None))
        proc.wait(timeout=10)
        assert "anyone who can reach it" in log.read_text()
        assert proc.stdout is not None and proc.stdout.read() == b""  # nothing but the protocol
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
