"""Where a path the text names lives on disk, for the brace languages' guide (resolve.py asks):
Java's packages under the source roots a file's package declaration gives, and Rust's module
paths (`crate::a::b`, `super::`, `self::`, a `mod` child) under the crate's `src`.

Only files are found here (os.stat and listdir, nothing parsed): which type a file declares is
read from its outline by the resolver.
"""

from __future__ import annotations

import os

MAX_ROOTS = 64  # Java: the source root and the folders beside it (a modular layout)
_RUST_ROOTS = ("lib.rs", "main.rs")


# -- Java -------------------------------------------------------------------------------------
def java_roots(path: str, package: str) -> list[str]:
    """The source root of a Java file (its folder less its package's folders), then the roots
    beside it that hold packages too (`module.a/pkg/...`, `module.b/pkg/...`); [] where the
    folders do not match the package declaration."""
    folder = os.path.dirname(path)
    for part in reversed(package.split(".") if package else []):
        if os.path.basename(folder) != part:
            return []
        folder = os.path.dirname(folder)
    roots = [folder]
    parent = os.path.dirname(folder)
    if package and parent != folder:
        try:
            names = sorted(os.listdir(parent))[: MAX_ROOTS * 4]
        except OSError:
            names = []
        top = package.split(".")[0]
        for name in names:
            other = os.path.join(parent, name)
            if other != folder and os.path.isdir(os.path.join(other, top)):
                roots.append(other)
                if len(roots) >= MAX_ROOTS:
                    break
    return roots


def java_files(roots: list[str], qualified: str) -> list[tuple[str, str]]:
    """(file, class name) that may declare `a.b.C` (or the nested `a.b.C.D`, in C.java)."""
    parts = qualified.split(".")
    found = []
    for cut in range(len(parts), 0, -1):
        relative = os.path.join(*parts[:cut]) + ".java"
        for root in roots:
            candidate = os.path.join(root, relative)
            if os.path.isfile(candidate):
                found.append((candidate, parts[-1]))
        if found:
            return found
    return found


# -- Rust -------------------------------------------------------------------------------------
def _children(path: str) -> str:
    """The folder a Rust module file's child modules are in."""
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.dirname(path)
    return folder if stem in ("mod", "lib", "main") else os.path.join(folder, stem)


def _module_file(children: str) -> str | None:
    """The file of the module whose child modules are in `children`."""
    return _first_file(
        os.path.join(children, "mod.rs"),
        children + ".rs",
        *(os.path.join(children, root) for root in _RUST_ROOTS),
    )


def _crate_src(path: str) -> str | None:
    folder = os.path.dirname(path)
    for _ in range(12):
        if os.path.isfile(os.path.join(os.path.dirname(folder), "Cargo.toml")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def rust_module(path: str, parts: list[str]) -> str | None:
    """The file of the module `parts` names from the module in `path` (`crate`, `super`,
    `self` first or not: a child otherwise), None where no file holds it."""
    here: str | None = path
    for i, part in enumerate(parts):
        if here is None:
            return None
        stem = os.path.splitext(os.path.basename(here))[0]
        if part == "self" and i == 0:
            continue
        if part == "crate" and i == 0:
            src = _crate_src(path)
            here = (_module_file(src) or os.path.join(src, "lib.rs")) if src else None
        elif part == "super":
            if stem in ("lib", "main"):
                return None
            folder = os.path.dirname(here)
            here = _module_file(os.path.dirname(folder) if stem == "mod" else folder)
        else:
            children = _children(here)
            here = _first_file(
                os.path.join(children, part + ".rs"), os.path.join(children, part, "mod.rs")
            )
    return here


def _first_file(*candidates: str) -> str | None:
    return next((c for c in candidates if os.path.isfile(c)), None)
