"""One request to a remote server: the prompt for the endpoint it is asked at (llama-server's
/infill, else /v1/completions), its streamed answer, and the fallback from an /infill the server
cannot serve (a model without FIM tokens) to /v1/completions, then and after.

The stop rules are the answer's (as in process), and the text so far goes to it (in-flight
reuse, the first answer).

`prewarm`: llama-server keeps the KV of the last prompt (`cache_prompt`); after an edit, while
the person reads, it is asked the prompt of the place edited for one token, so that the request
there evaluates only what changed since (as in process, where the engine prewarms its own KV).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from spec_lsp.config import Settings
from spec_lsp.engine.answer import Answer
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.remote.client import RemoteFault
from spec_lsp.engine.remote.connect import RemoteLoaded
from spec_lsp.engine.remote.prompt_text import TextPrompt, build, build_infill
from spec_lsp.engine.remote.stream import StreamJob, stream_decode
from spec_lsp.engine.types import CancelToken, CompletionRequest, DecodeStats, SamplingParams

log = logging.getLogger(__name__)

# llama-server: its timings in every chunk (a stream closed at the line's end still tells what
# it evaluated), and its prompt cache kept for the next request
LLAMA_SERVER_FIELDS = {"timings_per_token": True, "cache_prompt": True}


def prompt_for(
    remote: RemoteLoaded,
    request: CompletionRequest,
    settings: Settings,
    *,
    multiline: bool,
    block: Block | None,
) -> TextPrompt:
    """The prompt for the endpoint the server is asked at, budgeted in its tokens."""
    if remote.endpoint == "infill":
        return build_infill(
            request,
            settings,
            count_tokens=remote.tokens.count,
            multiline=multiline,
            block=block,
        )
    return build(request, settings, remote.template, count_tokens=remote.tokens.count, block=block)


def ask(
    remote: RemoteLoaded,
    answer: Answer,
    settings: Settings,
    *,
    block: Block | None,
    logprobs: bool = True,
) -> tuple[TextPrompt, str]:
    """The prompt sent and the server's text (the stream closed once the answer's stop rules
    are met; its text so far told to it, and its end however it came: `answer.settled`).
    Raises RemoteFault or Cancelled."""
    try:
        return _ask(remote, answer, settings, block, logprobs)
    finally:
        answer.stats.cache = answer.kind or "remote"
        answer.settled()


def _ask(
    remote: RemoteLoaded, answer: Answer, settings: Settings, block: Block | None, logprobs: bool
) -> tuple[TextPrompt, str]:
    request = answer.request
    while True:
        prompt = prompt_for(remote, request, settings, multiline=answer.multiline, block=block)

        def should_stop(text: str, prompt: TextPrompt = prompt) -> bool:
            return answer.stop_reached(prompt.generated(text))

        def progress(text: str, prompt: TextPrompt = prompt) -> None:
            answer.progress(prompt.generated(text))

        job = _job(remote, prompt, request.max_tokens, request.sampling, should_stop, progress)
        # the confidence gate's token probabilities, as in process: asked only with it on
        job = replace(job, logprobs=logprobs and settings.gate_threshold != 0)
        try:
            with remote.tokens.asking():
                return prompt, stream_decode(
                    remote.client, job, cancel=answer.cancel, stats=answer.stats
                )
        except RemoteFault as fault:
            if fault.kind != "unsupported" or remote.endpoint != "infill":
                raise
            log.warning("%s", fault)
            remote.endpoint = "completions"


def prewarm(
    remote: RemoteLoaded,
    request: CompletionRequest,
    settings: Settings,
    *,
    multiline: bool,
    block: Block | None,
    cancel: CancelToken,
) -> int:
    """llama-server: evaluate the prompt for `request` into its prompt cache (one token
    generated). Returns the tokens it evaluated (0 for other servers, whose cache is unknown).
    Raises RemoteFault or Cancelled (the connection closed: the server ends after the batch it
    is evaluating, and keeps what it evaluated)."""
    if remote.server != "llama-server":
        return 0
    prompt = prompt_for(remote, request, settings, multiline=multiline, block=block)
    job = _job(remote, prompt, 1, SamplingParams(temperature=0.0), lambda _text: False)
    stats = DecodeStats(drafter="none", engine="remote")
    with remote.tokens.asking():
        stream_decode(remote.client, job, cancel=cancel, stats=stats)
    return stats.prompt_tokens_evaluated


def _job(
    remote: RemoteLoaded,
    prompt: TextPrompt,
    max_tokens: int,
    sampling: SamplingParams,
    should_stop: Callable[[str], bool],
    on_text: Callable[[str], None] = lambda _text: None,
) -> StreamJob:
    return StreamJob(
        prompt.text,
        remote.model,
        max_tokens,
        sampling,
        prompt.stop,
        should_stop,
        on_text=on_text,
        infill=prompt.infill,
        extra=LLAMA_SERVER_FIELDS if remote.server == "llama-server" else {},
    )
