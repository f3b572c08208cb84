"""The plain values the context provider passes around."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContextChunk:
    """A part of another file shown to the model: where it is, its text, and why it was chosen
    ("definition:<name>", "similar", "recent_edit", "import:<module>")."""

    path: str  # workspace-relative (or the document's own name outside any folder)
    start_line: int  # 0-based, inclusive
    end_line: int  # exclusive
    text: str
    reason: str
    score: float = 0.0
    tokens: int = 0  # its text's tokens (as counted when it was chosen)


@dataclass(frozen=True, slots=True)
class Definition:
    """A name a file defines: a function, class, type, constant... (symbols.definitions)."""

    name: str
    kind: str  # the syntax node's type: "function_definition", "class_declaration", ...
    start_line: int  # 0-based, inclusive (a decorated definition from its first decorator)
    end_line: int  # exclusive
    head_end: int  # the line after its head (signature): where its body starts
    parent: str = ""  # the name of the definition holding it (a method's class), "" at top level
