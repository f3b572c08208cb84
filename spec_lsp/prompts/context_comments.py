"""Other files' parts shown as comments in the file's own language: the layout of context for
models without a repository format (each part opens with its path, then its lines, each line
commented; Continue and Tabby lay snippets out this way)."""

from __future__ import annotations

from pathlib import PurePosixPath

HASH = "#"
SLASHES = "//"
DASHES = "--"
BY_LANGUAGE = {
    **dict.fromkeys(
        "python ruby shellscript bash sh perl r yaml toml dockerfile makefile elixir julia nim "
        "powershell cmake".split(),
        HASH,
    ),
    **dict.fromkeys("lua sql haskell ada elm".split(), DASHES),
    "latex": "%",
    "erlang": "%",
    "matlab": "%",
    "lisp": ";;",
    "clojure": ";;",
    "scheme": ";;",
    "vim": '"',
}
BY_SUFFIX = {
    **dict.fromkeys(
        ".py .pyi .rb .sh .bash .pl .r .yaml .yml .toml .ex .exs .jl .nim .ps1".split(), HASH
    ),
    **dict.fromkeys(".lua .sql .hs .adb .elm".split(), DASHES),
    ".tex": "%",
    ".erl": "%",
    ".el": ";;",
    ".clj": ";;",
    ".vim": '"',
}


def comment_marker(language: str, file_name: str = "") -> str:
    """The line-comment marker of the language (by its LSP id, else the file's suffix); `//`
    for the C family and anything unknown."""
    found = BY_LANGUAGE.get(language.lower())
    if found is None:
        found = BY_SUFFIX.get(PurePosixPath(file_name).suffix.lower(), SLASHES)
    return found


def as_comments(path: str, text: str, language: str, file_name: str = "") -> str:
    """`text` from `path` as comment lines of the current file's language."""
    mark = comment_marker(language, file_name)
    lines = [f"{mark} Path: {path}"] + [f"{mark} {line}".rstrip() for line in text.splitlines()]
    return "\n".join(lines) + "\n"
