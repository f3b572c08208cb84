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
]

if TYPE_CHECKING:
    from spec_lsp.engine.engine import Engine, build_engine


def __getattr__(name: str) -> Any:
    # The facade pulls in prompts and post-processing; importing spec_lsp.engine.types stays light.
    if name in ("Engine", "build_engine"):
        from spec_lsp.engine import engine

        return getattr(engine, name)
    raise AttributeError(name)
