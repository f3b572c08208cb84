"""An OpenAI-compatible completion server over HTTP (vLLM, llama-server, Ollama, LM Studio,
llama_cpp.server): the one module that imports httpx.

Requests run on an asyncio loop in a thread of its own; the engine's worker thread reads a
streamed completion chunk by chunk from a queue. Cancelling the request's CancelToken cancels
the stream's task, which closes the connection at once, even while it waits for a byte: the
server sees the client go away and stops generating.

Every failure becomes a RemoteFault: an EngineError whose message names the URL and the fix,
with a `kind` (down, tls, slow, dropped, http, auth, malformed, model) for the health book.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import queue
import ssl
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from spec_lsp.engine.types import Cancelled, CancelToken, EngineError

COMPLETIONS = "/v1/completions"
INFILL = "/infill"  # llama-server: prefix, suffix and extra files; it lays out the FIM prompt
MODELS = "/v1/models"
PROPS = "/props"  # llama-server: its settings and build
# token counting endpoints, by server: llama-server, vLLM, llama_cpp.server
TOKENIZERS = (
    ("/tokenize", "content"),
    ("/tokenize", "prompt"),
    ("/extras/tokenize", "input"),
)


class RemoteFault(EngineError):
    """The server failed; the message names its URL and the fix."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Chunk:
    """One streamed piece of a completion."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None  # token counts (vLLM, llama-server; /infill's in kind)
    timings: dict[str, Any] | None = None  # llama-server: its own prompt/decode times
    logprobs: tuple[float, ...] = ()  # of its tokens, where asked for and sent


def base_url(url: str, *, allow_http: bool) -> str:
    """The server's base URL (scheme, host, port, path without /v1). Raises EngineError with
    the fix for a URL that is not http(s), or plain http to another machine without
    `remoteAllowHttp`."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(
            f"setting 'remoteUrl': {url!r} is not an http(s) URL; use e.g. "
            "http://127.0.0.1:8080 (a server on this machine) or https://gpu.example.com"
        )
    if parts.scheme == "http" and not allow_http and not is_loopback(parts.hostname):
        raise EngineError(
            f"setting 'remoteUrl': {url} is plain http to another machine (your code and API "
            "key would travel unencrypted); use https://, or set remoteAllowHttp to true on a "
            "network you trust"
        )
    path = parts.path.rstrip("/").removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc}{path}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """Certificates always verified: against `ca_file` (a private CA) or the system's store
    (which SSL_CERT_FILE / SSL_CERT_DIR can point elsewhere); certifi's where the system has
    none."""
    context = ssl.create_default_context(cafile=ca_file)
    if ca_file is None and not context.cert_store_stats().get("x509_ca"):
        import certifi

        context.load_verify_locations(certifi.where())
    return context


class RemoteClient:
    """One server: its base URL, the API key (kept here only, never logged), the timeouts."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        connect_timeout_s: float = 3.0,
        timeout_s: float = 15.0,
        ca_file: str | None = None,
        allow_http: bool = False,
    ) -> None:
        self.url = base_url(url, allow_http=allow_http)
        self.timeout_s = timeout_s
        try:
            verify = tls_context(ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise EngineError(
                f"setting 'remoteCaFile': cannot read {ca_file} as PEM certificates ({exc}); "
                "point it at the CA certificate that signed the server's"
            ) from exc
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s, pool=connect_timeout_s)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="spec-lsp-remote", daemon=True
        )
        self._thread.start()

        async def make() -> httpx.AsyncClient:
            return httpx.AsyncClient(
                base_url=self.url, headers=headers, timeout=timeout, verify=verify
            )

        self._client = self._call(make(), timeout_s=10)

    # -- plain requests --------------------------------------------------------------------------
    def models(self) -> list[str] | None:
        """The model ids the server lists in /v1/models (None: it has no such endpoint)."""
        response = self._request("GET", MODELS)
        if response.status_code == 404:
            return None
        data = self._json(response, MODELS)
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise self._malformed(MODELS, response.text)
        return [str(e["id"]) for e in entries if isinstance(e, dict) and "id" in e]

    def props(self) -> dict[str, Any] | None:
        """llama-server's /props (its context size, build, generation defaults); None from a
        server that has no such endpoint, or answers it with something else."""
        try:
            response = self._request("GET", PROPS)
        except RemoteFault:
            return None
        if response.status_code >= 400:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) and "default_generation_settings" in data else None

    def count_tokens(self, text: str, model: str) -> int | None:
        """Tokens in `text` by the server's own tokenizer, from whichever tokenize endpoint it
        has; None when it has none."""
        for path, field in TOKENIZERS:
            try:
                response = self._request("POST", path, json={field: text, "model": model})
            except RemoteFault:
                return None
            if response.status_code >= 400:
                continue
            try:
                data = response.json()
            except ValueError:
                continue
            tokens = data.get("tokens") if isinstance(data, dict) else None
            if isinstance(tokens, list) and tokens:
                return len(tokens)
            if isinstance(data, dict) and isinstance(data.get("count"), int):
                return int(data["count"])
        return None

    # -- the streamed completion -----------------------------------------------------------------
    def stream(
        self, payload: dict[str, Any], cancel: CancelToken, path: str = COMPLETIONS
    ) -> Generator[Chunk, None, None]:
        """POST `path` (/v1/completions, or llama-server's /infill) with stream: true; yields
        chunks as they arrive. Raises
        Cancelled when `cancel` fires (the connection is closed at once) and RemoteFault on any
        failure. Closing the iterator early (enough text) closes the connection too."""
        out: queue.Queue[Chunk | BaseException | None] = queue.Queue()
        future = asyncio.run_coroutine_threadsafe(
            self._stream(path, {**payload, "stream": True}, out), self._loop
        )

        def stop() -> None:
            future.cancel()  # cancels the task on the loop: httpx closes the connection
            out.put(Cancelled(cancel.reason or "cancelled"))

        unhook = cancel.on_cancel(stop)
        try:
            while True:
                item = out.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            unhook()
            future.cancel()

    async def _stream(
        self, path: str, payload: dict[str, Any], out: queue.Queue[Chunk | BaseException | None]
    ) -> None:
        try:
            async with self._client.stream("POST", path, json=payload) as response:
                if response.status_code >= 400:
                    body = (await response.aread()).decode("utf-8", "replace")
                    raise self._status_fault(response.status_code, body, payload.get("model"), path)
                finished = False  # [DONE] or a finish_reason seen: the answer is whole
                async for line in response.aiter_lines():
                    chunk = self._parse_event(line, path)
                    if chunk is None:
                        continue
                    if chunk == "done":
                        finished = True
                        break
                    assert isinstance(chunk, Chunk)
                    finished = finished or chunk.finish_reason is not None
                    out.put(chunk)
                if not finished:
                    raise httpx.RemoteProtocolError("the stream ended before its end")
            out.put(None)
        except asyncio.CancelledError:
            raise
        except RemoteFault as exc:
            out.put(exc)
        except httpx.HTTPError as exc:
            out.put(self._transport_fault(exc))
        except Exception as exc:  # a bug here must not leave the reader waiting
            out.put(RemoteFault("malformed", f"{self.url}: {exc!r}"))

    def _parse_event(self, line: str, path: str = COMPLETIONS) -> Chunk | str | None:
        """One server-sent-events line: a Chunk, "done" at [DONE], None for what carries no
        data (blank lines, comments, `event:` lines, pings). OpenAI's completion chunks, or
        llama-server's own (/infill: `content`, `stop`, and at the end its counts)."""
        line = line.strip()
        if not line or line.startswith(":") or not line.startswith("data:"):
            if line and not line.startswith((":", "event:", "id:", "retry:")):
                raise self._malformed(path, line)
            return None
        data = line[5:].strip()
        if data == "[DONE]":
            return "done"
        try:
            event = json.loads(data)
            if "error" in event and "choices" not in event:
                raise self._status_fault(500, data, None, path)
            if "choices" not in event and "content" in event:
                return _native_chunk(event)
            choices = event.get("choices") or [{}]
            text = choices[0].get("text") or ""
            if not isinstance(text, str):
                raise TypeError("text is not a string")
            return Chunk(
                text=text,
                finish_reason=choices[0].get("finish_reason"),
                usage=event.get("usage") if isinstance(event.get("usage"), dict) else None,
                timings=event.get("timings") if isinstance(event.get("timings"), dict) else None,
                logprobs=token_logprobs(choices[0].get("logprobs")),
            )
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            raise self._malformed(path, data) from exc

    # -- faults ----------------------------------------------------------------------------------
    def _transport_fault(self, exc: httpx.HTTPError) -> RemoteFault:
        reason = _reason(exc)
        if isinstance(exc, httpx.ConnectError) and _is_tls(exc):
            return RemoteFault(
                "tls",
                f"the TLS certificate of {self.url} was not accepted ({reason}): set "
                "remoteCaFile to the PEM of the CA that signed it, or install that CA in the "
                "system's trust store (certificates are always verified)",
            )
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            return RemoteFault(
                "down",
                f"cannot connect to {self.url} ({reason}): start the server there, or fix "
                "remoteUrl; completions resume by themselves once it answers",
            )
        if isinstance(exc, httpx.TimeoutException):
            return RemoteFault(
                "slow",
                f"{self.url} sent nothing for {self.timeout_s:g} s: the server is overloaded "
                "or stuck; check it, or raise remoteTimeoutMs",
            )
        return RemoteFault(
            "dropped",
            f"{self.url} broke off its answer ({reason}): the server stopped or restarted; "
            "check its log. Completions resume by themselves once it answers",
        )

    def _status_fault(
        self, status: int, body: str, model: object, path: str = COMPLETIONS
    ) -> RemoteFault:
        detail = _error_text(body)
        where = f"{self.url} answered HTTP {status} ({detail})"
        if path == INFILL and status in (404, 501):  # an old server, or a model without FIM
            return RemoteFault(
                "unsupported",
                f"{where}: its {INFILL} does not serve this model; using {COMPLETIONS} "
                "(set remoteApi to completions to skip this)",
            )
        if status in (401, 403):
            return RemoteFault(
                "auth",
                f"{where}: set remoteApiKeyEnv to the name of an environment variable that "
                "holds a key this server accepts",
            )
        if status == 404:
            return RemoteFault(
                "model",
                f"{where}: the server does not serve model {model!r} at {COMPLETIONS}; set "
                "remoteModel to a model it lists at /v1/models, or fix remoteUrl",
            )
        if status < 500:
            return RemoteFault(
                "http",
                f"{where}: check remoteModel, and maxTokens / contextSize against the "
                "server's limits",
            )
        return RemoteFault(
            "http", f"{where}: the server failed; check its log. Retrying with backoff"
        )

    def _malformed(self, path: str, text: str) -> RemoteFault:
        return RemoteFault(
            "malformed",
            f"{self.url}{path} sent something that is not OpenAI-compatible JSON "
            f"({text[:80]!r}): is remoteUrl an OpenAI-compatible server (vLLM, llama-server, "
            "Ollama, LM Studio)?",
        )

    # -- plumbing --------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            return self._call(self._client.request(method, path, **kw))
        except httpx.HTTPError as exc:
            raise self._transport_fault(exc) from None

    def _json(self, response: httpx.Response, path: str) -> Any:
        if response.status_code >= 400:
            raise self._status_fault(response.status_code, response.text, None)
        try:
            return response.json()
        except ValueError:
            raise self._malformed(path, response.text) from None

    def _call(self, coroutine: Any, timeout_s: float | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=timeout_s)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._client.aclose(), timeout_s=5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()


def _native_chunk(event: dict[str, Any]) -> Chunk:
    """A chunk of llama-server's own stream (/infill, /completion): its text, and at the end
    (`stop`) why it stopped and its counts, named as OpenAI's usage names them."""
    text = event.get("content") or ""
    if not isinstance(text, str):
        raise TypeError("content is not a string")
    timings = event.get("timings")
    timings = timings if isinstance(timings, dict) else None  # (every chunk's: timings_per_token)
    logprobs = token_logprobs(event.get("completion_probabilities"))
    if not event.get("stop"):
        return Chunk(text=text, timings=timings, logprobs=logprobs)
    usage = {
        name: event[field]
        for name, field in (
            ("prompt_tokens", "tokens_evaluated"),
            ("completion_tokens", "tokens_predicted"),
            ("cached_tokens", "tokens_cached"),
        )
        if isinstance(event.get(field), int)
    }
    stop = "length" if event.get("stop_type") == "limit" else "stop"
    return Chunk(
        text=text, finish_reason=stop, usage=usage or None, timings=timings, logprobs=logprobs
    )


def token_logprobs(found: Any) -> tuple[float, ...]:
    """The log probabilities of a chunk's tokens, in the shapes servers send them: OpenAI's
    completions (`logprobs.token_logprobs`), llama-server's OpenAI-compatible chat-style
    (`logprobs.content[].logprob`) and its own streams (`completion_probabilities[]`: `logprob`,
    or, from older builds, the chosen token's `prob` among `probs`); () for anything else."""
    entries: list[Any] = []
    if isinstance(found, dict):
        listed = found.get("token_logprobs")
        entries = listed if isinstance(listed, list) else found.get("content") or []
    elif isinstance(found, list):
        entries = found
    values = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("logprob"), (int, float)):
            values.append(float(entry["logprob"]))
        elif isinstance(entry, dict) and isinstance(entry.get("probs"), list):
            chosen = [
                p.get("prob")
                for p in entry["probs"]
                if isinstance(p, dict) and p.get("tok_str") == entry.get("content")
            ]
            if chosen and isinstance(chosen[0], (int, float)) and chosen[0] > 0:
                values.append(math.log(chosen[0]))
        elif isinstance(entry, (int, float)) and not isinstance(entry, bool):
            values.append(float(entry))
    return tuple(values)


def _is_tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text[:160] if text else type(exc).__name__


def _error_text(body: str) -> str:
    """The server's error message from its JSON error body, else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:160] or "no body"
    error = data.get("error", data) if isinstance(data, dict) else data
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or data)[:160]
