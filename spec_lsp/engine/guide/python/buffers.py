"""Other modules' text as the editor holds it, for Jedi.

Jedi reads a module another one imports from disk: its environment's `get_module_info` finds
the file and reads it (in Jedi's subprocess), and parso keeps the parse by path while the
file's modification time holds. A module open in the editor with edits not saved would be read
as it was saved. For one analysis (Jedi's lock held) the open documents' texts are set here;
the Script's `get_module_info` is wrapped to hand Jedi an open document's text instead of the
file's, with the time of its last edit as its modification time (so parso parses it again after
an edit, and keeps it meanwhile), and the class bodies read for `self` (analysis.Bodies) read
it too. (jedi-language-server and python-lsp-server pass only the document being completed;
Jedi's Project has no hook for other files' contents.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import parso.cache
from jedi.file_io import KnownContentFileIO

_OPEN: dict[str, tuple[str, float]] = {}  # path -> (text, time of its last edit)


def key(path: str | os.PathLike[str]) -> str:
    """A path as the open documents and the tables' sources are keyed."""
    return os.path.normpath(str(path))


def use(buffers: Mapping[str, tuple[str, float]]) -> None:
    """The open documents for the analysis about to run (path -> (text, time of last edit));
    a parse parso holds of one of them from another text (its file, or an older edit) is let
    go."""
    _OPEN.clear()
    for path, held in buffers.items():
        _OPEN[key(path)] = held
        for cache in parso.cache.parser_cache.values():
            for name in (Path(path), path):
                item = cache.get(name)
                if item is not None and item.change_time != held[1]:
                    del cache[name]


def text(path: str | os.PathLike[str]) -> str | None:
    """An open document's text (None: not open)."""
    held = _OPEN.get(key(path))
    return held[0] if held is not None else None


def install(script: Any) -> None:
    """The script's inference reads the open documents' texts for the modules it imports."""
    process = script._inference_state.compiled_subprocess
    found_by = process.get_module_info

    def get_module_info(*args: Any, **kwargs: Any) -> Any:
        found, is_package = found_by(*args, **kwargs)
        path = getattr(found, "path", None)
        held = _OPEN.get(key(path)) if path is not None else None
        if held is not None and type(found) is KnownContentFileIO:
            found = _Edited(path, held[0], held[1])
        return found, is_package

    process.get_module_info = get_module_info


class _Edited(KnownContentFileIO):  # type: ignore[misc]
    """An open document's text, modified when it was last edited."""

    def __init__(self, path: Any, content: str, stamp: float) -> None:
        super().__init__(path, content)
        self._stamp = stamp

    def get_last_modified(self) -> float:
        return self._stamp
