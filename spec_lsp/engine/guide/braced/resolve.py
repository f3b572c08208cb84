"""Names to the workspace's types and types to their members, for the brace languages' guide
(structural.py builds its table with these): a file's own outline, the other files' read from
disk and kept while their modification time holds, and the rules of each language for what a
type has (inherited members, Go's methods across the package's files, Rust's impls, what every
object has) and whether that is all (complete).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from spec_lsp.engine.guide.braced import declared, paths
from spec_lsp.engine.guide.braced.outline import LANGUAGES, Outline, TypeDecl
from spec_lsp.engine.guide.table import Members
from spec_lsp.paths import js_module_candidates

Ref = tuple[str, str]  # (the file declaring a type, its name)
OBJECT_JS = frozenset(
    "constructor toString toLocaleString valueOf hasOwnProperty isPrototypeOf "
    "propertyIsEnumerable".split()
)
FUNCTION_JS = frozenset("name length prototype apply call bind toString".split())
OBJECT_JAVA = frozenset("equals hashCode toString getClass notify notifyAll wait".split())
JAVA_TYPE_ONLY = frozenset({"class", "this", "super"})  # `T.class`, `T.this.x`, `T.super.f()`
ENUM_JAVA = frozenset("name ordinal compareTo getDeclaringClass describeConstable".split())
# each language's file extensions (outline.LANGUAGES turned around)
EXTENSIONS = {
    language: tuple(ext for ext, its in LANGUAGES.items() if its == language)
    for language in set(LANGUAGES.values())
}
GO_PREDECLARED = frozenset(
    "bool string int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr byte rune "
    "float32 float64 complex64 complex128 any".split()
)  # (no members of their own: a type defined on one has its methods only)
_MODULE = re.compile(r"^module\s+(\S+)", re.M)
MAX_DIR_FILES = 200  # files of one folder read for a Go package or beside a file


@dataclass(frozen=True)
class Resolved:
    members: Members | None  # an instance's
    statics: Members | None  # the type's name's (`K.` / `K::`)
    fields: dict[str, Ref]  # field -> its declared type


class Outlines:
    """Other files' outlines, read from disk, kept while their modification time holds."""

    def __init__(self, *, size: int = 4000) -> None:
        self.size = size
        self._held: dict[str, tuple[tuple[int, int], Outline | None]] = {}
        self._lock = threading.Lock()

    def at(self, path: str) -> Outline | None:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            held = self._held.get(path)
        if held is not None and held[0] == stamp:
            return held[1]
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        found = declared.outline(path, text)
        with self._lock:
            if len(self._held) >= self.size:
                self._held.clear()
            self._held[path] = (stamp, found)
        return found

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def beside(self, path: str, language: str) -> list[Outline]:
        """The files of the same language in `path`'s folder (itself included)."""
        folder = os.path.dirname(path)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        suffixes = EXTENSIONS[language]
        found: list[Outline] = []
        for name in names[: MAX_DIR_FILES * 4]:
            if not name.endswith(suffixes) or len(found) >= MAX_DIR_FILES:
                continue
            if language == "go" and name.endswith("_test.go") and not path.endswith("_test.go"):
                continue  # (a package's tests see its members, not the other way)
            one = self.at(os.path.join(folder, name))
            if one is not None:
                found.append(one)
        return found


class Resolver:
    """Types and namespaces of one analysis (the file's own outline in place of its disk copy)."""

    def __init__(self, own: Outline, outlines: Outlines) -> None:
        self.own, self.outlines = own, outlines
        self.types: dict[Ref, Resolved] = {}
        self._busy: set[Ref] = set()
        self._beside: dict[tuple[str, str], list[Outline]] = {}
        self._java_roots: dict[tuple[str, str], list[str]] = {}
        self._go_packages: dict[tuple[str, str], str | None] = {}

    def outline(self, path: str) -> Outline | None:
        return self.own if path == self.own.path else self.outlines.at(path)

    def beside(self, outline: Outline) -> list[Outline]:
        key = (os.path.dirname(outline.path), outline.language)
        found = self._beside.get(key)
        if found is None:  # (read once per analysis: a folder's files are asked often)
            found = self.outlines.beside(outline.path, outline.language)
            found = [self.own if o.path == self.own.path else o for o in found]
            self._beside[key] = found
        return found or [outline]

    # -- names to types ---------------------------------------------------------------------
    def find(self, name: str, where: Outline, depth: int = 0) -> Ref | None:
        if depth > 6:  # (aliases of aliases, re-exports: a cycle ends here)
            return None
        if "." in name and where.language == "go":
            package, _, inner = name.partition(".")
            files = self.go_files(where, package)
            return self._in_files(inner, files) if files else None
        if "::" in name and where.language == "rust":
            return self.rust_path(name.split("::"), where, depth)
        if "." in name and where.language == "java":
            outer, _, inner = name.rpartition(".")
            found = self.java_class(name, where, depth)
            if found is None:  # (a nested class: `Outer.Inner`, Outer found as a name is)
                there = self.find(outer, where, depth + 1)
                held = self.outline(there[0]) if there is not None else None
                if held is not None and inner in held.types:
                    found = (held.path, inner)
            return found
        found = self.declared(name, where, depth)
        if found is not None or name in where.imported:
            return found
        if where.language in ("go", "java", "rust"):
            found = self._in_files(name, self.beside(where), depth)
        for package in where.star_imports if found is None else ():
            found = self.java_class(f"{package}.{name}", where, depth)
            if found is not None:
                break
        return found

    def declared(self, name: str, where: Outline, depth: int) -> Ref | None:
        """A type `where` declares, names by an alias or imports (no search beside it)."""
        if name in where.types:
            return (where.path, name)
        if name in where.aliases:
            return self.find(where.aliases[name], where, depth + 1)
        imported = where.imported.get(name)
        if imported is None:
            return None
        if where.language == "java":
            return self.java_class(imported[0], where, depth)
        if where.language == "rust":
            return self.rust_path(imported[0].split("::"), where, depth + 1)
        module = self.module_file(where, imported[0])
        there = self.outline(module) if module else None
        return self.declared(imported[1], there, depth + 1) if there is not None else None

    def java_class(self, qualified: str, where: Outline, depth: int) -> Ref | None:
        """`a.b.C` under the source roots of `where` (its package's folders)."""
        key = (os.path.dirname(where.path), where.package)
        roots = self._java_roots.get(key)
        if roots is None:  # (read once per analysis: every import asks)
            roots = self._java_roots[key] = paths.java_roots(where.path, where.package)
        for path, name in paths.java_files(roots, qualified):
            there = self.outline(path)
            if there is not None and name in there.types:
                return (there.path, name)
        return None

    def rust_path(self, parts: list[str], where: Outline, depth: int) -> Ref | None:
        """`crate::a::T`, `super::T`, `a::T` (a `mod` child, or a module a `use` names)."""
        head = parts[0]
        if len(parts) < 2 or depth > 6:
            return None
        if head not in ("crate", "super", "self") and head in where.imported:
            spec = where.imported[head][0].split("::")
            if spec[0] not in ("crate", "super", "self"):
                return None  # (another crate)
            return self.rust_path(spec + parts[1:], where, depth + 1)
        if head not in ("crate", "super", "self") and where.namespaces.get(head) != "mod " + head:
            return None
        module = paths.rust_module(where.path, parts[:-1])
        there = self.outline(module) if module else None
        return self.declared(parts[-1], there, depth + 1) if there is not None else None

    def _in_files(self, name: str, outlines: list[Outline], depth: int = 0) -> Ref | None:
        for outline in outlines:
            if name in outline.types:
                return (outline.path, name)
            if name in outline.aliases:
                return self.find(outline.aliases[name], outline, depth + 1)
        return None

    def _folder(self, folder: str, language: str) -> list[Outline]:
        return self.beside(Outline(os.path.join(folder, "x"), language))

    def go_files(self, where: Outline, package: str) -> list[Outline]:
        """The files of the Go package `where` imports as `package` ([]: not in the workspace)."""
        spec = where.namespaces.get(package)
        folder = self.go_package(where.path, spec) if spec else None
        return self._folder(folder, "go") if folder else []

    def go_package(self, path: str, spec: str) -> str | None:
        """The folder of a Go import path in the workspace (by go.mod, or a GOPATH's src/);
        looked up once per analysis for a file's folder."""
        key = (os.path.dirname(path), spec)
        if key not in self._go_packages:
            self._go_packages[key] = self._go_package(path, spec)
        return self._go_packages[key]

    def _go_package(self, path: str, spec: str) -> str | None:
        folder = os.path.dirname(path)
        for _ in range(12):
            mod = os.path.join(folder, "go.mod")
            if os.path.isfile(mod):
                found = _MODULE.search(Path(mod).read_text(errors="replace"))
                if found and (spec == found.group(1) or spec.startswith(found.group(1) + "/")):
                    inner = os.path.join(folder, spec[len(found.group(1)) :].lstrip("/"))
                    return inner if os.path.isdir(inner) else None
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        cut = path.rfind("/src/")
        inner = os.path.join(path[: cut + 5], spec) if cut >= 0 else ""
        return inner if inner and os.path.isdir(inner) else None

    def module_file(self, where: Outline, spec: str) -> str | None:
        """A relative JS/TS import's file."""
        folder = os.path.dirname(where.path)
        if where.language not in ("js", "ts") or not spec.startswith("."):
            return None
        base = os.path.normpath(os.path.join(folder, spec))
        return next(
            (c for c in js_module_candidates(base) if os.path.isfile(c)),
            None,
        )

    # -- types to members -------------------------------------------------------------------
    def resolve(self, ref: Ref) -> Resolved | None:
        if ref in self.types:
            return self.types[ref]
        outline = self.outline(ref[0])
        decl = outline.types.get(ref[1]) if outline is not None else None
        if outline is None or decl is None or ref in self._busy:
            return None
        self._busy.add(ref)
        try:
            found = self._resolve(outline, decl)
        finally:
            self._busy.discard(ref)
        self.types[ref] = found
        return found

    def _resolve(self, outline: Outline, decl: TypeDecl) -> Resolved:
        lang = outline.language
        names, statics = set(decl.members), set(decl.statics)
        complete = not decl.open and lang not in ("js", "rust")
        fields: dict[str, Ref] = {}
        if lang in ("go", "rust"):
            for other in self.beside(outline):
                names |= other.methods.get(decl.name, set())
                statics |= other.assoc.get(decl.name, set())
                for trait in other.traits.get(decl.name, []) if lang == "rust" else []:
                    found = self.find(trait, other)
                    base = self.resolve(found) if found else None
                    if base is not None and base.members is not None:
                        names |= base.members.names
        bases = [b for b in decl.bases if not (lang == "java" and b == "Object")]
        for base_name in bases:
            found = self.find(base_name, outline) if base_name != "?" else None
            base = self.resolve(found) if found else None
            if base is None or base.members is None:
                complete = False
                continue
            names |= base.members.names
            complete = complete and base.members.complete
            statics |= base.statics.names if base.statics is not None else set()
            fields.update(base.fields)
        if decl.underlying:
            complete = self._underlying(outline, decl, names, fields) and complete
        for name, kind in decl.fields.items():
            found = self.find(kind, outline)
            if found is not None:
                fields[name] = found
        names |= _extra_members(lang, decl)
        statics |= _extra_statics(lang, decl)
        if lang == "java":  # (an instance names its class's static members too)
            names |= statics - JAVA_TYPE_ONLY
        members = Members(frozenset(names), complete) if names else None
        static_set = Members(frozenset(statics), complete) if lang != "go" and statics else None
        return Resolved(members, static_set, fields)

    def _underlying(
        self, outline: Outline, decl: TypeDecl, names: set[str], fields: dict[str, Ref]
    ) -> bool:
        """Go's `type A B`: what B's type has (a struct's fields and what it embeds, an
        interface's methods), not the methods declared on B. Whether that is all."""
        if decl.underlying in GO_PREDECLARED:
            return True
        found = self.find(decl.underlying, outline)
        base = self.resolve(found) if found else None
        there = self.outline(found[0]) if found else None
        if found is None or there is None or base is None or base.members is None:
            return False
        declared_on = {m for o in self.beside(there) for m in o.methods.get(found[1], ())}
        names |= base.members.names - declared_on
        fields.update(base.fields)
        return base.members.complete

    def namespace(self, where: Outline, spec: str) -> Members | None:
        if where.language == "go":
            folder = self.go_package(where.path, spec)
            files = self._folder(folder, "go") if folder else []
            exported = {n for o in files for n in o.exports}
            return Members(frozenset(exported), True) if exported else None
        if where.language == "rust":
            module = paths.rust_module(where.path, [spec.removeprefix("mod ")])
        else:
            module = self.module_file(where, spec)
        there = self.outline(module) if module else None
        if there is None or not there.exports:
            return None
        return Members(frozenset(there.exports), not there.open_exports)


def _extra_members(lang: str, decl: TypeDecl) -> frozenset[str]:
    if lang in ("js", "ts") and decl.kind != "enum_declaration":
        return OBJECT_JS
    if lang == "java":
        return OBJECT_JAVA | (ENUM_JAVA if decl.kind == "enum_declaration" else frozenset())
    return frozenset()


def _extra_statics(lang: str, decl: TypeDecl) -> frozenset[str]:
    if lang in ("js", "ts") and "class" in decl.kind:
        return FUNCTION_JS
    if lang == "java":
        enum = frozenset({"values", "valueOf"}) if decl.kind == "enum_declaration" else frozenset()
        return JAVA_TYPE_ONLY | enum
    return frozenset()
