"""A recording pipe between an editor and the language server: `python -m tests.editors.lsp_recorder
OUT.jsonl -- spec-lsp serve ...` runs the server and passes every message through unchanged,
appending each to OUT.jsonl as `{"from": "editor"|"server", "t": seconds, "message": {...}}`.

The editor e2e harnesses start it in the server's place to record what an editor really sends
(tests/editors/sequences.py keeps the parts that tell a suggestion's fate as fixtures)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import BinaryIO


def read_message(stream: BinaryIO) -> bytes | None:
    """One LSP message's body (None at the end of the stream)."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return stream.read(length) if length is not None else b""


def pump(source: BinaryIO, sink: BinaryIO, side: str, out: BinaryIO, lock: threading.Lock) -> None:
    started = time.monotonic()
    while (body := read_message(source)) is not None:
        sink.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sink.flush()
        try:
            message = json.loads(body)
        except ValueError:
            message = {"unparsed": body.decode("utf-8", "replace")}
        record = {"from": side, "t": round(time.monotonic() - started, 3), "message": message}
        with lock:
            out.write(json.dumps(record).encode() + b"\n")
            out.flush()
    sink.close()


def main(argv: list[str]) -> int:
    out_path, command = argv[0], argv[argv.index("--") + 1 :]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    lock = threading.Lock()
    with open(out_path, "ab") as out:
        args = (sys.stdin.buffer, server.stdin, "editor", out, lock)
        editor = threading.Thread(target=pump, args=args, daemon=True)
        editor.start()
        pump(server.stdout, sys.stdout.buffer, "server", out, lock)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
