"""The guide's answer for a file of a brace language (JS/TS, Go, Rust, Java), from tree-sitter.

declared.py reads what each file declares; here a name the file binds is resolved to a type of
the workspace and the type to its members: inherited ones where its bases are defined in the
workspace, Go's methods from every file of its package (its directory), Rust's from the impls
in the files beside it. Other files are read from disk (each parsed once per change of its
modification time); only the folder the file is in and those its imports name are read.

A member set is complete (a hard mask) where the type is declared in source and nothing else
can add to it: a TypeScript class or interface of a module (not a script: its types are
global), whose bases are all in the workspace, without an index signature, a namespace of its
name or a `declare module` adding to it (with what every object has: `toString`, ...; all the
declarations of its name merged), a Java class likewise (with Object's methods; not in a file
importing Lombok), a Go struct whose embedded types are all in the workspace (its package's
files all read), a workspace Go package, a TypeScript module without `export *`. A JavaScript
class (fields made by any assignment) and every Rust type (traits implemented anywhere, macros,
Deref to a type outside) are not; a Rust type's set has what its derives, the traits
implemented for it beside it and the standard library's blanket impls give.

An incomplete set is not guided by default (`incomplete_bias` 0: a bias lowers real names:
what a library base class, a trait or an assignment adds); `guideBias` sets one.

`this` is not known in a JS/TS `function` expression, a class expression or an object
literal's method, nor in Java's anonymous classes (their own `this`).

The table answers `lookup(scope, receiver)` with dict reads: the receiver's first name in the
innermost scope that binds it, then each field's declared type.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.guide import scopes
from spec_lsp.engine.guide.braced import declared
from spec_lsp.engine.guide.braced.outline import Outline
from spec_lsp.engine.guide.braced.resolve import Outlines, Ref, Resolved, Resolver
from spec_lsp.engine.guide.braced.returns import returned
from spec_lsp.engine.guide.scopes import Scope
from spec_lsp.engine.guide.table import KEY_PREFIXES, Key, Members, Table

# ("value" | "type", Ref): an instance, a type's name (Rust's: "path", named with `::` only);
# ("namespace", Members); ("none", None): a name bound to what is not known here
Entry = tuple[str, Any]
_RUST_PATH = re.compile(r"\b(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*")
_INLINE_MODULE = re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?mod[ \t]+\w+[ \t]*\{", re.M)
MAX_PATHS = 400  # distinct Rust paths of a file resolved ahead
SELF_NAMES = {"js": "this", "ts": "this", "java": "this", "rust": "self", "go": ""}
OWN_THIS = "\x00own this"  # the last scope where the cursor's line opens a `this` of its own
# on the cursor's line, before it: a function or class whose `this` is its own (JS/TS), an
# anonymous class (Java); its body still open where the line ends (declared.rebinds_this)
_OWN_THIS = {
    "ts": re.compile(r"\b(?:function\b[^{]*|class\b[^{]*)\{"),
    "js": re.compile(r"\b(?:function\b[^{]*|class\b[^{]*)\{"),
    "java": re.compile(r"\bnew\s+[\w.]+\s*(?:<[^>]*>)?\s*\([^)]*\)\s*\{"),
}


def own_this(line: str, language: str) -> bool:
    """Whether the cursor's `line` is inside a function or class opened on it whose `this` is
    not the enclosing class's (`list.forEach(function (x) { this.`)."""
    pattern = _OWN_THIS.get(language)
    if pattern is None or "{" not in line:
        return False
    for found in pattern.finditer(line):
        rest = line[found.end() :]
        if rest.count("{") - rest.count("}") >= 0:
            return True
    return False


@dataclass
class Structural(Table):
    """One file's prepared answers (a Table: the store and the monitor read it as Jedi's)."""

    syntax = "braces"
    # `guideBias` unset: an incomplete set's outsiders are left alone (what a set may miss is
    # what its bias would forbid: an inherited, derived or assigned member)
    incomplete_bias = 0.0
    language: str = ""  # the file's: "ts", "js", "go", "rust", "java"
    headers: frozenset[str] = frozenset()  # the scopes' header lines
    names: dict[Key, Entry] = field(default_factory=dict)
    types: dict[Ref, Resolved] = field(default_factory=dict)

    def scope_at(self, text: str) -> Scope:
        found = tuple(line for line in scopes.enclosing_lines(text) if line in self.headers)
        line = text[text.rfind("\n") + 1 :]
        return (*found, OWN_THIS) if own_this(line, self.language) else found

    def lookup(self, scope: Scope, receiver: str) -> Members | None:
        if receiver.startswith(tuple(KEY_PREFIXES.values())):  # (Python's points alone)
            return None
        path = receiver.endswith("::")
        parts = receiver[:-2].split("::") if path else receiver.split(".")
        if path and len(parts) > 1:  # (`crate::a::T::`: the file's paths, resolved ahead)
            parts = ["::".join(parts)]
        if scope[-1:] == (OWN_THIS,) and parts[0] == SELF_NAMES.get(self.language):
            return None
        entry = None
        for i in range(len(scope), -1, -1):
            entry = self.names.get((scope[:i], parts[0]))
            if entry is not None:
                break
        if entry is None or entry[0] == "none" or len(parts) > 1 and entry[0] != "value":
            return None
        if entry[0] == "path" and not path:
            return None
        kind, ref = entry
        if kind == "namespace":
            return ref if isinstance(ref, Members) else None
        for part in parts[1:]:
            found = self.types.get(ref)
            ref = found.fields.get(part) if found is not None else None
            if ref is None:
                return None
        resolved = self.types.get(ref)
        if resolved is None:
            return None
        if path and resolved.refs is not None:  # (Java's `T::`, `this::`: any method, `new`)
            return resolved.refs
        return resolved.members if kind == "value" and not path else resolved.statics

    def nbytes(self) -> int:
        sets = {id(m.names): m.names for m in self._sets()}
        names = sum(len(n) for s in sets.values() for n in s) + 64 * sum(map(len, sets.values()))
        return names + 200 * len(self.names) + 100 * len(self.headers)

    def _sets(self) -> list[Members]:
        found = [r.members for r in self.types.values()] + [r.statics for r in self.types.values()]
        found += [r.refs for r in self.types.values()]
        found += [e[1] for e in self.names.values() if e[0] == "namespace"]
        return [m for m in found if isinstance(m, Members)]


class StructuralAnalyser:
    """The Analyser's interface (python/analysis.py) for the brace languages."""

    def __init__(self) -> None:
        self.outlines = Outlines()

    def analyse(
        self,
        text: str,
        *,
        version: int,
        path: str | None,
        root: str | None = None,
        near_line: int = 0,
        earlier: Table | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Structural:
        started = time.perf_counter()
        table = Structural(version)
        own = declared.outline(path or "", text) if path else None
        table.language = own.language if own is not None else ""
        if own is not None:
            _fill(table, own, Resolver(own, self.outlines), text)
        table.done = True
        table.seconds = time.perf_counter() - started
        return table

    def forget(self, path: str) -> None:
        """(Jedi's interface: nothing is held per open document here.)"""


def _fill(table: Structural, own: Outline, resolver: Resolver, text: str) -> None:
    headers: set[str] = set()
    for scope, bound in own.bindings.items():
        headers.update(scope)
        for name, value in bound.items():
            table.names[(scope, name)] = _entry(value, own, resolver)
    self_name = SELF_NAMES[own.language]
    for scope, kind in own.selves.items():
        ref = resolver.find(kind, own) if kind else None
        if self_name:
            table.names[(scope, self_name)] = ("value", ref) if ref else ("none", None)
        if own.language == "rust":
            table.names[(scope, "Self")] = ("path", ref) if ref else ("none", None)
    for name in own.imported:
        if ((), name) not in table.names:
            ref = resolver.find(name, own)
            if ref is not None:
                table.names[((), name)] = ("path" if own.language == "rust" else "type", ref)
    for alias, spec in own.namespaces.items():
        members = resolver.namespace(own, spec)
        table.names.setdefault(((), alias), ("namespace", members) if members else ("none", None))
    for _kind, ref in list(table.names.values()):
        if isinstance(ref, tuple):
            resolved = resolver.resolve(ref)
            for inner in resolved.fields.values() if resolved else ():
                resolver.resolve(inner)
    if own.language == "rust":
        _rust_paths(table, text, own, resolver)
    table.types = resolver.types
    table.headers = frozenset(headers)


def _entry(value: str, own: Outline, resolver: Resolver) -> Entry:
    if not value:
        return ("none", None)
    kind, _, name = value.partition(":")
    if value.startswith("()"):
        ref = returned(value[2:], own, resolver)
        kind = "value"
    else:
        ref = resolver.find(name, own) if name else None
    if ref is None or resolver.resolve(ref) is None:
        return ("none", None)
    return ("path" if kind == "type" and own.language == "rust" else kind, ref)


def _rust_paths(table: Structural, text: str, own: Outline, resolver: Resolver) -> None:
    """Each `a::b::T` the file's text writes (its prefixes too), resolved to a workspace type:
    the lookup of `crate::a::T::` answers from these (the file's module's paths: where the
    file has inline modules, whose `super::` differs, those starting `super`/`self` are not
    kept)."""
    seen: set[str] = set()
    # (inline modules read in the text: a tree being edited may hold them in an error node)
    inline = _INLINE_MODULE.search(text) is not None
    for found in _RUST_PATH.finditer(text):
        parts = found.group(0).split("::")
        for end in range(2, len(parts) + 1):
            path = "::".join(parts[:end])
            if path in seen or len(seen) >= MAX_PATHS or parts[0] == "Self":
                continue
            if inline and parts[0] in ("super", "self"):
                continue  # (in a `mod tests { .. }` these name other modules than the file's)
            seen.add(path)
            ref = resolver.find(path, own)
            if ref is not None and resolver.resolve(ref) is not None:
                table.names.setdefault(((), path), ("path", ref))
