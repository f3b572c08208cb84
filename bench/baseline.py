"""Plain llama-cpp-python, as a user would run it: the baseline every benchmark compares against
(the one module of the benchmarks that imports llama_cpp: the baseline is that library itself,
not our backend)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def plain_llama(
    path: str, *, n_ctx: int, threads: int | None, prompt_lookup: bool, gpu_layers: int = 0
) -> Any:
    """Plain llama-cpp-python, as a user would run it (for benchmarks), optionally with its
    own prompt-lookup draft (which requires logits_all=True)."""
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    threads = threads or os.cpu_count() or 1
    return llama_cpp.Llama(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=gpu_layers,
        verbose=False,
        logits_all=prompt_lookup,
        draft_model=LlamaPromptLookupDecoding() if prompt_lookup else None,
    )


def timed_completion(
    llm: Any, prompt: Sequence[int], *, max_tokens: int, temperature: float
) -> tuple[int, float]:
    """Stream a completion; return (tokens, seconds from the first token to the last).

    Only chunks that carry a token count: the stream ends with an empty chunk that only gives
    the finish reason (counting it read 48 tokens as 49, 2% too fast)."""
    first = last = 0.0
    tokens = 0
    for chunk in llm.create_completion(
        list(prompt),
        max_tokens=max_tokens,
        temperature=temperature,
        top_k=40,
        top_p=0.95,
        min_p=0.0,
        repeat_penalty=1.0,
        stream=True,
        seed=0,
    ):
        choice = chunk["choices"][0]
        if choice.get("finish_reason") is not None and not choice["text"]:
            continue
        last = time.perf_counter()
        if not tokens:
            first = last
        tokens += 1
    return tokens, last - first


@contextmanager
def decode_clock() -> Iterator[list[tuple[float, float, float, float]]]:
    """Every llama_decode call made inside, ours and plain llama-cpp-python's alike, as (wall
    start, wall end, thread CPU start, thread CPU end): what a loop adds between the model's
    passes is then told apart, in wall time and in the CPU time of its own thread (which other
    load does not inflate)."""
    import llama_cpp
    import llama_cpp.llama_cpp as low

    calls: list[tuple[float, float, float, float]] = []
    original = low.llama_decode

    def timed(ctx: Any, batch: Any) -> int:
        start, cpu = time.perf_counter(), time.thread_time()
        rc = original(ctx, batch)
        calls.append((start, time.perf_counter(), cpu, time.thread_time()))
        return int(rc)

    low.llama_decode = llama_cpp.llama_decode = timed
    try:
        yield calls
    finally:
        low.llama_decode = llama_cpp.llama_decode = original
