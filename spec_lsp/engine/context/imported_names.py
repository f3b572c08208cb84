"""What the current file's imports bind: the names and modules that resolve to known files,
those that resolve to none but that the index defines, and those imported and not yet used
(about to be)."""

from __future__ import annotations

import re

from spec_lsp.engine.context.imports import Import, names_module
from spec_lsp.engine.context.near_names import Use
from spec_lsp.engine.context.symbols import SymbolIndex
from spec_lsp.engine.context.words import without_word_at

# names imported and not yet used whose definitions come before those of the names used near the
# cursor (more come after them: a file that imports much it never uses is no sign of intent)
UNUSED_FIRST = 4


class ImportedNames:
    """The current file's imports, those that resolve to known files (`all`), and the names all
    its imports bind. A name imported from a module that resolves to no known file (an
    installed package, a `src/` layout, a vendored copy) is looked up by name instead
    (`by_name` holds it with no paths; definitions.where_defined), if the index defines it
    somewhere (`unresolved`): else it is no definition of the workspace's (a standard
    module's)."""

    def __init__(self, found: list[Import], index: SymbolIndex) -> None:
        self.bound = {n for i in found for n in [i.alias, *i.names] if n}
        self.all = [i for i in found if i.paths]
        self.by_alias = {i.alias: i for i in self.all if i.alias}
        self.by_name = {n: (i, original) for i in self.all for n, original in i.names.items()}
        self.star_paths = {p for i in self.all if i.star for p in i.paths}
        self.unresolved: list[tuple[str, str]] = []  # (local name, name in its module)
        for entry in found:
            if entry.paths:
                continue
            for local, original in entry.names.items():
                if local not in self.by_name and any(
                    not d.parent and names_module(entry.module, p)
                    for p, d in index.lookup(original)
                ):
                    self.by_name[local] = (entry, original)
                    self.unresolved.append((local, original))


def unused_imports(text: str, cursor: int, found: ImportedNames) -> list[Use]:
    """Names the file imports and uses nowhere else (about to be used), in import order. The
    word at the cursor is no use yet (the block must not change with each key)."""
    text = without_word_at(text, cursor)
    entries = {id(e): e for e, _name in found.by_name.values()}.values()  # (resolved or not)
    import_lines = {n for i in entries for n in range(i.line, i.line + i.lines)}
    rest = "\n".join(line for n, line in enumerate(text.split("\n")) if n not in import_lines)
    used = {n for n in found.by_name if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", rest)}
    return sorted(
        (
            Use(name, -1, True)
            for entry in entries
            for name in entry.names
            if name not in used and found.by_name.get(name, (None,))[0] is entry
        ),
        key=lambda use: found.by_name[use.name][0].line,  # (in import order)
    )
