"""The decode stage for a remote engine: stream a completion from the server and stop it early.

The server drafts and verifies on its own (vLLM's n-gram or EAGLE, llama-server's draft model):
local speculation does not apply. What stays here is what the in-process loop does around the
model: the stop rules on the text so far (end of line, suffix reached: the stream is closed
then, so the server stops generating), the running text for in-flight reuse, and the stats:
time to the first text, tokens per second, and the server's own timings where it sends them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.remote.client import COMPLETIONS, INFILL, Chunk, RemoteClient
from spec_lsp.engine.types import CancelToken, DecodeStats, SamplingParams


@dataclass(frozen=True)
class StreamJob:
    prompt: str
    model: str
    max_tokens: int
    sampling: SamplingParams
    stop: tuple[str, ...]
    should_stop: Callable[[str], bool]  # on the text generated so far
    on_text: Callable[[str], None] = lambda _text: None  # the text so far, after each chunk
    infill: dict[str, Any] | None = None  # llama-server's /infill fields, in place of `prompt`
    extra: dict[str, Any] = field(default_factory=dict)  # the server's own fields
    logprobs: bool = False  # ask for the tokens' log probabilities (the confidence gate's)

    @property
    def path(self) -> str:
        return INFILL if self.infill is not None else COMPLETIONS


def payload(job: StreamJob) -> dict[str, Any]:
    """The /v1/completions (or /infill) request. top_k, seed, min_p and repeat_penalty are extensions that
    vLLM, llama-server and llama_cpp.server read (others ignore them); greedy is temperature 0.
    The in-process engine samples from the model's distribution as it is: no repetition
    penalty (llama_cpp.server's default is 1.1, which changes even greedy text) and no min_p."""
    sampling = job.sampling
    body: dict[str, Any] = {
        "model": job.model,
        "max_tokens": job.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p if not sampling.greedy else 1.0,
        "stream": True,
        "stream_options": {"include_usage": True},  # vLLM, llama-server: token counts at the end
        "repeat_penalty": 1.0,
        "min_p": 0.0,
    }
    if sampling.top_k and not sampling.greedy:
        body["top_k"] = sampling.top_k
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if job.stop:
        body["stop"] = list(job.stop)
    body.update({"prompt": job.prompt} if job.infill is None else job.infill)
    if job.logprobs:  # (OpenAI's completions; llama-server's own streams: n_probs)
        body.update({"logprobs": 1} if job.infill is None else {"n_probs": 1})
    body.update(job.extra)
    return body


def stream_decode(
    client: RemoteClient, job: StreamJob, *, cancel: CancelToken, stats: DecodeStats
) -> str:
    """The server's completion of `job.prompt`, ended by the server (length, end token) or by
    `job.should_stop`. Raises Cancelled (the stream closed at once) or RemoteFault."""
    started = time.perf_counter()
    first: float | None = None
    text, chunks = "", 0
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    stats.stop_reason = "max_tokens"
    stream = client.stream(payload(job), cancel, job.path)
    try:
        for chunk in stream:
            usage, timings = chunk.usage or usage, chunk.timings or timings
            if chunk.timings:  # (llama-server's, every chunk: an early answer shows them)
                _server_counts(stats, chunk.timings)
            stats.token_logprobs.extend(chunk.logprobs)
            if chunk.text:
                first = time.perf_counter() if first is None else first
                text += chunk.text
                chunks += 1
                job.on_text(text)
            if chunk.finish_reason:
                stats.stop_reason = _stop_reason(chunk)
            if chunk.text and job.should_stop(text):
                stats.stop_reason = "stop_string"
                break
    finally:
        stream.close()  # early stop or cancel: the connection closes, the server stops
        end = time.perf_counter()
        stats.first_token_seconds = (first or end) - started
        stats.prompt_seconds = stats.first_token_seconds
        stats.decode_seconds = end - first if first is not None else 0.0
        counted = usage.get("completion_tokens") if usage else None
        stats.tokens = counted if isinstance(counted, int) and counted >= chunks else chunks
        prompt_tokens = usage.get("prompt_tokens") if usage else None
        if isinstance(prompt_tokens, int):
            stats.prompt_tokens = prompt_tokens
        stats.server_timings = _server_timings(usage, timings)
        _server_counts(stats, timings)
    return text


def _server_counts(stats: DecodeStats, timings: dict[str, Any] | None) -> None:
    """llama-server's counts in the engine's own terms: the prompt's tokens, those it evaluated
    (the rest came from its cache), and its speculation's drafted and accepted tokens. (With
    `timings_per_token` every chunk has them: a stream closed early still tells.)"""
    if not timings:
        return
    evaluated, cached = timings.get("prompt_n"), timings.get("cache_n")
    if isinstance(evaluated, int) and isinstance(cached, int):
        stats.prompt_tokens = evaluated + cached
    for name, key in (
        ("prompt_tokens_evaluated", "prompt_n"),
        ("drafted", "draft_n"),
        ("accepted", "draft_n_accepted"),
    ):
        value = timings.get(key)
        if isinstance(value, int) and value >= 0:
            setattr(stats, name, value)


def _stop_reason(chunk: Chunk) -> str:
    return {"length": "max_tokens", "stop": "eos"}.get(chunk.finish_reason or "", "eos")


def _server_timings(
    usage: dict[str, Any] | None, timings: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The server's own figures: llama-server's `timings` (prompt and decode ms, tokens per
    second, draft tokens accepted), vLLM's `usage` (token counts)."""
    found: dict[str, Any] = {}
    if timings:
        found.update({k: v for k, v in timings.items() if isinstance(v, (int, float))})
    if usage:
        found.update({f"usage_{k}": v for k, v in usage.items() if isinstance(v, int)})
    return found or None
