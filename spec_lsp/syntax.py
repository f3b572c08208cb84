"""tree-sitter syntax trees for a file by its extension: the grammars and one parser per thread.

A grammar is a wheel of its own (tree-sitter-python, ...): nothing is downloaded at run time; a
missing one means no tree for its files (no definitions, no guide), logged once. The context's
definitions (engine/context/symbols.py) and the guide's members (engine/guide) read them.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

# file extension -> (grammar module, its function returning the language)
GRAMMARS: dict[str, tuple[str, str]] = {}
for _exts, _grammar in (
    ((".py", ".pyi", ".pyw"), ("tree_sitter_python", "language")),
    ((".js", ".jsx", ".mjs", ".cjs"), ("tree_sitter_javascript", "language")),
    ((".ts", ".mts", ".cts"), ("tree_sitter_typescript", "language_typescript")),
    ((".tsx",), ("tree_sitter_typescript", "language_tsx")),
    ((".go",), ("tree_sitter_go", "language")),
    ((".rs",), ("tree_sitter_rust", "language")),
    ((".java",), ("tree_sitter_java", "language")),
    ((".c", ".h"), ("tree_sitter_c", "language")),
    (
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp"),
        ("tree_sitter_cpp", "language"),
    ),  # fmt: skip
):
    GRAMMARS.update(dict.fromkeys(_exts, _grammar))


def grammar_for(path: str) -> tuple[str, str] | None:
    return GRAMMARS.get(os.path.splitext(path)[1].lower())


class _Parsers(threading.local):
    """A tree-sitter parser is not for two threads at once: one per thread and grammar."""

    def __init__(self) -> None:
        self.parsers: dict[tuple[str, str], Any] = {}


_parsers = _Parsers()
_languages: dict[tuple[str, str], Any] = {}
_missing: set[tuple[str, str]] = set()
_languages_lock = threading.Lock()


def _language(grammar: tuple[str, str]) -> Any | None:
    with _languages_lock:
        if grammar in _languages:
            return _languages[grammar]
        if grammar in _missing:
            return None
        try:
            import tree_sitter

            module = importlib.import_module(grammar[0])
            language = tree_sitter.Language(getattr(module, grammar[1])())
        except Exception as error:  # not installed, or a grammar this tree-sitter cannot load
            log.warning("no syntax trees (definitions, guide) for %s files: %s", grammar[0], error)
            _missing.add(grammar)
            return None
        _languages[grammar] = language
        return language


def parse(path: str, text: str) -> Any | None:
    """The syntax tree of a file (None for a language without a grammar here)."""
    grammar = grammar_for(path)
    if grammar is None:
        return None
    parser = _parsers.parsers.get(grammar)
    if parser is None:
        language = _language(grammar)
        if language is None:
            return None
        import tree_sitter

        parser = _parsers.parsers[grammar] = tree_sitter.Parser(language)
    return parser.parse(text.encode("utf-8", "surrogatepass"))


def node_text(node: Any) -> str:
    """A parsed node's source text."""
    return str(node.text.decode("utf-8", "replace"))
