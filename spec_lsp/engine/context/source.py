"""What every context source shares: what it is given (`Place`: the document, the place in it,
the other files and their index) and what it gives (`Candidate`s, ranked: parts of other files,
each with smaller stand-ins for when it does not fit).

A source is a function `Place -> Iterable[Candidate]`, its candidates best first
(selection.SOURCES lists them in the order they are weighed). A candidate's cost is the tokens
of the variant taken: the selection counts them for the variants it weighs only (counting is the
dearest step of a choice). What several sources read of the current file (the names used near
the cursor, its imports, those not used yet) is worked out once per place, when first asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from spec_lsp.engine.context.imported_names import UNUSED_FIRST, ImportedNames, unused_imports
from spec_lsp.engine.context.imports import KnownPaths, imports
from spec_lsp.engine.context.near_names import Use, uses_near
from spec_lsp.engine.context.similar_windows import SimilarWindows
from spec_lsp.engine.context.symbols import SymbolIndex
from spec_lsp.engine.context.workspace import Workspace

Lines = list[tuple[int, int]]  # line ranges: (first, past the last)
Variant = tuple[int, int, str, Lines]  # (start, end, text, the lines whose text it shows)


@dataclass(frozen=True, kw_only=True)
class Place:
    """The place a block is chosen for, and where the other files' texts are read."""

    path: str  # the current file
    text: str
    cursor: int  # an offset into `text`
    window: tuple[int, int]  # the current file's lines the prompt shows already
    open_documents: Mapping[str, str]  # the others (latest edited or opened last)
    index: SymbolIndex  # the definitions of the files known
    workspace: Workspace | None = None
    recent_edits: Sequence[tuple[str, int, int]] = ()  # (path, first line, past the last)
    windows: SimilarWindows = field(default_factory=SimilarWindows)  # of the open documents

    @cached_property
    def files(self) -> Mapping[str, str]:
        """The workspace's files."""
        return self.workspace.files() if self.workspace else {}

    @cached_property
    def near(self) -> tuple[dict[str, Use], set[str]]:
        """The names used near the cursor, and those the current file binds there."""
        return uses_near(self.path, self.text, self.cursor)

    @cached_property
    def imported(self) -> ImportedNames:
        known = KnownPaths([*self.open_documents, *self.files, *self.index.paths()])
        return ImportedNames(imports(self.path, self.text, known), self.index)

    @cached_property
    def unused(self) -> list[Use]:
        """The names imported and not used yet, in import order."""
        return unused_imports(self.text, self.cursor, self.imported)

    @cached_property
    def soon(self) -> set[str]:
        """Those about to be used: the first UNUSED_FIRST unused."""
        return {use.name for use in self.unused[:UNUSED_FIRST]}

    def text_of(self, path: str) -> str | None:
        text = self.open_documents.get(path)
        if text is None:
            text = self.files.get(path)
        return text if text is not None else self.index.text(path)


@dataclass
class Candidate:
    """A chunk to weigh: its variants, largest first (a definition whole, its outline, its
    head: smaller stand-ins for when it does not fit), made knowing the lines of its file shown
    already (an outline leaves them out)."""

    path: str
    reason: str  # "definition:<name>", "import:<module>", "similar", "recent_edit"
    score: float
    variants: Callable[[Lines], list[Variant]]
    soon: bool = False  # for a name imported and not yet used (of the first UNUSED_FIRST)


class Source(Protocol):
    def __call__(self, place: Place) -> Iterable[Candidate]: ...


def fixed(*variants: Variant) -> Callable[[Lines], list[Variant]]:
    """Variants that do not depend on what is shown already."""
    return lambda taken: list(variants)


def overlaps(shows: Lines, taken: Lines) -> bool:
    return any(a < d and c < b for a, b in shows for c, d in taken)
