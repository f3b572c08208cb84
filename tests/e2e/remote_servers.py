"""Servers for the remote engine's tests, on loopback: real ones (llama-cpp-python's
`python -m llama_cpp.server`, its `server` extra; llama.cpp's own llama-server, built by
`make llama-server`) and a stub that misbehaves on demand.

The stub speaks just enough of the OpenAI API (GET /v1/models, POST /v1/completions streamed
as server-sent events in chunked transfer encoding, as uvicorn does) and records what happened:
the requests, and streams the client closed before their end.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from bench import llama_server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` with a GGUF model on a loopback port; start/kill/restart."""

    def __init__(self, model: Path, port: int | None = None, *, threads: int = 2) -> None:
        self.model, self.port, self.threads = model, port or free_port(), threads
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    name = "llama_cpp.server"
    ready_path = "/v1/models"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--verbose",
            "False",
        ]

    def start(self, timeout_s: float = 60.0) -> LlamaServer:
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}{self.ready_path}", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"{self.name} did not answer at {self.url} in {timeout_s} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


def llama_server_binary() -> Path | None:
    """The llama-server `make llama-server` built, when `make llama-server-e2e` runs the tests
    (SPEC_LSP_LLAMA_SERVER names it)."""
    named = os.environ.get("SPEC_LSP_LLAMA_SERVER")
    return Path(named) if named and Path(named).is_file() else None


class LlamaCppServer(LlamaServer):
    """llama.cpp's llama-server with a GGUF model on a loopback port, as llama.vim's users start
    it (prompt cache reuse across cursor moves, metrics, slots), plus `extra` arguments."""

    name = "llama-server"
    ready_path = "/health"

    def __init__(
        self,
        binary: Path,
        model: Path,
        port: int | None = None,
        *,
        threads: int = 2,
        extra: tuple[str, ...] = (),
    ) -> None:
        super().__init__(model, port, threads=threads)
        self.binary, self.extra = binary, extra

    def command(self) -> list[str]:
        return llama_server.command(
            self.binary, str(self.model), self.port, self.threads, "--metrics", *self.extra
        )

    def metric(self, name: str) -> float:
        """A counter from its Prometheus /metrics (e.g. tokens_predicted_total)."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        for line in text.splitlines():
            if line.startswith(f"llamacpp:{name} "):
                return float(line.split()[1])
        raise KeyError(name)

    def busy(self) -> bool:
        """Whether a slot is at work on a request (/slots): its prompt, or generating."""
        return any(slot.get("is_processing") for slot in self._slots())

    def generating(self) -> bool:
        """Whether a slot has generated tokens for the request it works on."""
        return any(
            slot.get("is_processing") and (slot.get("next_token") or [{}])[0].get("n_decoded")
            for slot in self._slots()
        )

    def _slots(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.url}/slots", timeout=5).json())


class Stub:
    """An OpenAI-compatible server whose behaviour is set by `mode`:

    ok       stream `pieces`, one chunk per `delay_s`, then [DONE]
    status   answer every completion with HTTP `status`
    garbage  a 200 stream whose chunks are not JSON
    slow     wait `first_byte_s` before the response, then as ok
    die      send two chunks, then close the connection mid-body

    With `llama_server` set it also answers as llama-server does: GET /props, and POST /infill
    streamed in its own chunk shape (`content`, `stop`, at the end its counts and `timings`);
    `infill_status` > 0 answers /infill with that status (501: a model without FIM tokens).
    `count` "lines" makes /tokenize count a token per line (a tokenizer unlike any estimate).
    """

    def __init__(self, *, models: tuple[str, ...] = ("stub-coder",), tls: Any = None) -> None:
        self.mode = "ok"
        self.status = 500
        self.models = list(models)
        self.pieces = ["    return", " a", " +", " b", "\n"]
        self.delay_s = 0.0
        self.first_byte_s = 0.0
        self.chars_per_token = 0.0  # > 0: a /tokenize endpoint counting this many per token
        self.count = "chars"  # /tokenize: chars (chars_per_token a token) or lines
        self.llama_server = False
        self.infill_status = 0
        self.logprob: float | None = None  # each token's, sent where asked for (logprobs, n_probs)
        self.timings: dict[str, Any] = {"prompt_n": 7, "draft_n": 10, "draft_n_accepted": 6}
        self.completions: list[dict[str, Any]] = []  # request bodies
        self.infills: list[dict[str, Any]] = []  # /infill request bodies
        self.spans: list[tuple[str, float, float]] = []  # (path, began, ended) per POST
        self.closed_early: list[int] = []  # per stream the client closed: chunks sent before
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.stub = self  # type: ignore[attr-defined]
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def stub(self) -> Stub:
        return self.server.stub  # type: ignore[attr-defined,no-any-return]

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": m} for m in self.stub.models]})
        elif self.path == "/props" and self.stub.llama_server:
            self._json(200, {"default_generation_settings": {"n_ctx": 2048}, "build_info": "b1"})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        began, self.last_chunk_at = time.monotonic(), 0.0
        try:
            self._post()
        finally:
            # a stream ends when its last chunk with data starts going out: the client may go
            # on (send its next request) before this thread runs again
            self.stub.spans.append((self.path, began, self.last_chunk_at or time.monotonic()))

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/tokenize" and self.stub.chars_per_token:  # llama-server's shape
            text = body.get("content", "")
            if self.stub.count == "lines":
                count = float(text.count("\n") + (not text.endswith("\n")))
            else:
                count = len(text) / self.stub.chars_per_token
            self._json(200, {"tokens": list(range(max(1, round(count))))})
            return
        native = self.path == "/infill" and self.stub.llama_server
        if self.path != "/v1/completions" and not native:
            self._json(404, {"error": {"message": "not found"}})
            return
        stub = self.stub
        (stub.infills if native else stub.completions).append(body)
        if native and stub.infill_status:
            message = "Infill is not supported by this model"
            self._json(
                stub.infill_status, {"error": {"code": stub.infill_status, "message": message}}
            )
            return
        if stub.mode == "status":
            self._json(stub.status, {"error": {"message": f"stub says {stub.status}"}})
            return
        if stub.mode == "slow":
            time.sleep(stub.first_byte_s)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            if stub.mode == "garbage":
                self._chunk(b"data: {this is not json\n\n")
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
                return
            for piece in stub.pieces:
                if stub.mode == "die" and sent == 2:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.connection.close()
                    return
                event: dict[str, Any] = {"content": piece, "stop": False}
                if body.get("timings_per_token"):  # (llama-server's, in every chunk)
                    event["timings"] = stub.timings
                if not native:
                    event = {"choices": [{"text": piece, "index": 0, "finish_reason": None}]}
                if stub.logprob is not None and native and body.get("n_probs"):
                    event["completion_probabilities"] = [
                        {"id": 1, "token": piece, "logprob": stub.logprob, "top_logprobs": []}
                    ]
                elif stub.logprob is not None and body.get("logprobs"):
                    event["choices"][0]["logprobs"] = {
                        "tokens": [piece],
                        "token_logprobs": [stub.logprob],
                    }
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
                sent += 1
                time.sleep(stub.delay_s)
            if native:
                counts = {"tokens_evaluated": 40, "tokens_predicted": sent, "tokens_cached": 33}
                last = {"content": "", "stop": True, "stop_type": "limit", **counts}
                last["timings"] = stub.timings
                self._chunk(f"data: {json.dumps(last)}\n\n".encode())
                self._chunk(b"")
                return
            end = {"choices": [{"text": "", "index": 0, "finish_reason": "length"}]}
            self._chunk(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            stub.closed_early.append(sent)

    def _chunk(self, data: bytes) -> None:
        if data:
            self.last_chunk_at = time.monotonic()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def self_signed(directory: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for 127.0.0.1 (openssl), and a server context with it."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context
