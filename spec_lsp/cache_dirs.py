"""Where spec-lsp keeps what it writes to disk: one folder, `$XDG_CACHE_HOME/spec-lsp`, else
`~/.cache/spec-lsp`, with one subfolder per kind (models, profiles, probes), each of which an
environment variable may move elsewhere. Pointing `XDG_CACHE_HOME` at an empty folder (and
`SPEC_LSP_MODELS_DIR` at the models) gives what a fresh machine sees."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """`$XDG_CACHE_HOME/spec-lsp`, else `~/.cache/spec-lsp` (read at each call)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "spec-lsp"


def cache_subdir(name: str, variable: str) -> Path:
    """`$<variable>` if set, else the `name` folder of the cache home."""
    chosen = os.environ.get(variable)
    return Path(chosen).expanduser() if chosen else cache_home() / name
