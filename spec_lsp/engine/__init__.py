"""The completion engine: strings and token ids in, completions and statistics out.

No pygls, no lsprotocol here; llama_cpp only inside backends/llama.py, imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spec_lsp.engine.types import (
    Cancelled,
    CancelToken,
    Completion,
    CompletionRequest,
    DecodeStats,
    EngineError,
    SamplingParams,
)

__all__ = [
    "CancelToken",
    "Cancelled",
    "Completion",
    "CompletionRequest",
    "DecodeStats",
    "Engine",
    "EngineError",
    "SamplingParams",
    "build_engine",
    "prepare_process",
]


def prepare_process() -> None:
    """First thing in a process that will load a model, before anything imports numpy: the
    llama.cpp backend loads its native libraries first where that matters (a GPU build: see
    `backends/llama.py`, `load_library_first`)."""
    import spec_lsp.engine.backends.llama  # noqa: F401


if TYPE_CHECKING:
    from spec_lsp.engine.engine import Engine, build_engine


def __getattr__(name: str) -> Any:
    # The facade pulls in prompts and post-processing; importing spec_lsp.engine.types stays light.
    if name in ("Engine", "build_engine"):
        from spec_lsp.engine import engine

        return getattr(engine, name)
    raise AttributeError(name)
