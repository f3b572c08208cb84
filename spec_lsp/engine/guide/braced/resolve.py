"""Names to the workspace's types and types to their members, for the brace languages' guide
(structural.py builds its table with these): a file's own outline, the other files' read from
disk and kept while their modification time holds, and the rules of each language for what a
type has (inherited members, Go's methods across the package's files, Rust's impls, derives and
the standard library's traits, what every object has) and whether that is all (complete), or
whether what it also has is not read here at all (a library's base class, an index signature,
Lombok, a Rust trait not known: no set, the receiver left alone).
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
FUNCTION_JS = frozenset("name length prototype apply call bind toString arguments caller".split())
# (clone and finalize are Object's protected methods: a subclass calls them on itself)
OBJECT_JAVA = frozenset(
    "equals hashCode toString getClass notify notifyAll wait clone finalize".split()
)
# the JDK's interfaces whose methods (default ones too) have stayed the same since Java 8: a
# class implementing one is still complete
JAVA_INTERFACES = {
    name: frozenset(methods.split())
    for name, methods in (
        ("Serializable", ""),
        ("Cloneable", ""),
        ("RandomAccess", ""),
        ("EventListener", ""),
        ("Comparable", "compareTo"),
        ("Runnable", "run"),
        ("AutoCloseable", "close"),
        ("Closeable", "close"),
        ("Callable", "call"),
        ("Iterable", "iterator forEach spliterator"),
    )
}
JAVA_LANG = frozenset("Cloneable Comparable Runnable AutoCloseable Iterable".split())
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
# Rust: what every type has from the standard library's blanket impls (`Into`, `TryInto` in the
# prelude; `Borrow`, `Any` once imported); `T::from(t)`, and a method by its path (`T::into`)
RUST_EVERY = frozenset("into try_into borrow borrow_mut type_id".split())
RUST_EVERY_STATICS = frozenset("from try_from".split())
_ITERATOR = (
    "next size_hint count last advance_by nth step_by chain zip intersperse intersperse_with map "
    "for_each filter filter_map enumerate peekable skip_while take_while map_while skip take scan "
    "flat_map flatten fuse inspect by_ref collect collect_into partition try_fold try_for_each "
    "fold reduce try_reduce all any find find_map try_find position rposition max min max_by_key "
    "max_by min_by_key min_by rev unzip copied cloned cycle array_chunks sum product cmp cmp_by "
    "partial_cmp partial_cmp_by eq eq_by ne lt le gt ge is_sorted is_sorted_by is_sorted_by_key "
    "next_chunk map_windows into_iter"
)
_IO_WRITE = "write write_all write_vectored write_all_vectored write_fmt flush by_ref"
_OPS = (
    "Add add Sub sub Mul mul Div div Rem rem Neg neg Not not BitAnd bitand BitOr bitor "
    "BitXor bitxor Shl shl Shr shr Index index IndexMut index_mut AddAssign add_assign "
    "SubAssign sub_assign MulAssign mul_assign DivAssign div_assign RemAssign rem_assign"
).split()
# the standard library's traits (and serde's) by name: (the methods a type implementing or
# deriving it gets, its associated functions), supertraits' included
RUST_TRAITS: dict[str, tuple[str, str]] = {
    **{marker: ("", "") for marker in "Copy Eq Send Sync Unpin Sized Drop".split()},
    "Clone": ("clone clone_from to_owned clone_into", ""),
    "Debug": ("fmt", ""),
    "Display": ("fmt to_string", ""),
    "Default": ("", "default"),
    "PartialEq": ("eq ne", ""),
    "PartialOrd": ("partial_cmp lt le gt ge eq ne", ""),
    "Ord": ("cmp max min clamp partial_cmp lt le gt ge eq ne", ""),
    "Hash": ("hash", "hash_slice"),
    "Iterator": (_ITERATOR, ""),
    "DoubleEndedIterator": ("next_back rev rfind rfold nth_back try_rfold advance_back_by", ""),
    "ExactSizeIterator": ("len is_empty", ""),
    "IntoIterator": ("into_iter", ""),
    "FromIterator": ("", "from_iter"),
    "Extend": ("extend extend_one extend_reserve", ""),
    "Error": ("source description cause provide fmt to_string", ""),
    "Write": ("write_str write_char " + _IO_WRITE, ""),  # (fmt::Write and io::Write)
    "Read": (
        "read read_to_end read_to_string read_exact read_vectored read_buf bytes chain take by_ref",
        "",
    ),  # fmt: skip
    "BufRead": ("fill_buf consume read_until read_line lines split skip_until has_data_left", ""),
    "Seek": ("seek rewind stream_position stream_len seek_relative", ""),
    "Deref": ("deref", ""),
    "DerefMut": ("deref_mut deref", ""),
    "AsRef": ("as_ref", ""),
    "AsMut": ("as_mut", ""),
    "Borrow": ("borrow", ""),
    "BorrowMut": ("borrow_mut", ""),
    "From": ("", "from"),
    "TryFrom": ("", "try_from"),
    "FromStr": ("", "from_str"),
    "ToString": ("to_string", ""),
    "ToOwned": ("to_owned clone_into", ""),
    "Future": ("poll", ""),
    "Serialize": ("serialize", ""),
    "Deserialize": ("", "deserialize"),
    **{trait: (method, "") for trait, method in zip(_OPS[::2], _OPS[1::2], strict=True)},
}
_MODULE = re.compile(r"^module\s+(\S+)", re.M)
MAX_DIR_FILES = 200  # files of one folder read for a Go package or beside a file


@dataclass(frozen=True)
class Resolved:
    members: Members | None  # an instance's
    statics: Members | None  # the type's name's (`K.` / `K::`)
    fields: dict[str, Ref]  # field -> its declared type
    refs: Members | None = None  # Java's method references (`K::`, `this::`): any method, new


class Outlines:
    """Other files' outlines, read from disk, kept while their modification time holds."""

    def __init__(self, *, size: int = 4000) -> None:
        self.size = size
        self._held: dict[str, tuple[tuple[int, int], Outline | None]] = {}
        self._lock = threading.Lock()
        self.truncated: set[str] = set()  # folders with more files than `beside` reads

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
        if len(names) > MAX_DIR_FILES * 4:
            self.truncated.add(folder)
        for name in names[: MAX_DIR_FILES * 4]:
            if not name.endswith(suffixes) or len(found) >= MAX_DIR_FILES:
                if name.endswith(suffixes):
                    self.truncated.add(folder)  # (a package's methods may be in those left)
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
            if name in outline.types and not outline.types[name].nested:
                return (outline.path, name)  # (a nested or local type is not named from there)
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
        """The type's members, statics and fields' types. Complete where nothing else can add
        to them; none at all (unguided) where what the type also has is not read here at all:
        a base outside the workspace (a library's class, a mixin's call), an index signature,
        Lombok's accessors, a Rust trait not known or a Deref to a type outside."""
        lang = outline.language
        names, statics = set(decl.members), set(decl.statics)
        complete = not decl.open and lang not in ("js", "rust") and not _open_file(outline, decl)
        complete = complete and decl.name not in self.own.augmented
        known = not decl.indexed and not (lang == "java" and _lombok(outline))
        fields: dict[str, Ref] = {}
        if lang in ("go", "rust"):
            for other in self.beside(outline):
                names |= other.methods.get(decl.name, set())
                statics |= other.assoc.get(decl.name, set())
                # (Rust: the traits implemented for it, or for every type: `impl<T> Tr for T`;
                # a trait's own set is what implementing it gives)
                implemented = other.traits.get(decl.name, []) + other.blanket
                for trait in implemented if decl.kind != "trait_item" else []:
                    known = self.trait_items(trait, other, names, statics) and known
                if other.deref.get(decl.name):  # (Rust: the Deref target's methods)
                    known = self.members_of(other.deref[decl.name], other, names) and known
            complete = complete and os.path.dirname(outline.path) not in self.outlines.truncated
        if lang == "rust":
            for trait in decl.traits:  # (derived)
                known = self.trait_items(trait, outline, names, statics) and known
            names |= RUST_EVERY
            statics |= RUST_EVERY_STATICS | RUST_EVERY
        bases = [b for b in decl.bases if not (lang == "java" and b == "Object")]
        for base_name in bases:
            found = self.find(base_name, outline) if base_name != "?" else None
            base = self.resolve(found) if found else None
            if base is None or base.members is None:
                if lang == "rust":  # (a supertrait)
                    known = self.trait_items(base_name, outline, names, statics) and known
                elif lang == "java" and _jdk_interface(base_name, outline) is not None:
                    names |= _jdk_interface(base_name, outline) or set()
                else:
                    complete = known = False
                continue
            names |= base.members.names
            complete = complete and base.members.complete
            statics |= base.statics.names if base.statics is not None else set()
            fields.update(base.fields)
        if decl.underlying and not self._underlying(outline, decl, names, fields):
            complete = known = False
        for name, kind in decl.fields.items():
            found = self.find(kind, outline) if kind else None
            if found is not None:
                fields[name] = found
        if not known:
            return Resolved(None, None, fields)
        names |= _extra_members(lang, decl)
        statics |= _extra_statics(lang, decl)
        if lang == "java":  # (an instance names its class's static members too)
            names |= statics - JAVA_TYPE_ONLY
        if lang == "rust":  # (a method named by its path: `Type::len`, `Self::helper(self)`)
            statics |= names
        members = Members(frozenset(names), complete) if names else None
        # (a namespace of the type's name adds to what the type's name has: TS's merging)
        static_complete = complete and decl.name not in outline.merged
        static_set = (
            Members(frozenset(statics), static_complete) if lang != "go" and statics else None
        )
        refs = Members(frozenset(names | statics | {"new"}), complete) if lang == "java" else None
        return Resolved(members, static_set, fields, refs)

    def trait_items(self, trait: str, where: Outline, names: set[str], statics: set[str]) -> bool:
        """Add the methods a type implementing `trait` gets to `names` (its associated
        functions to `statics`): a workspace trait's, else the standard library's by the
        trait's name. False where it is neither (what it gives is not known)."""
        found = self.find(trait, where)
        base = self.resolve(found) if found else None
        if base is not None and base.members is not None:
            names |= base.members.names
            statics |= base.statics.names if base.statics is not None else set()
            return True
        known = RUST_TRAITS.get(trait.rsplit("::", 1)[-1]) if found is None else None
        if known is None:
            return False
        names.update(known[0].split())
        statics.update(known[1].split())
        return True

    def members_of(self, name: str, where: Outline, names: set[str]) -> bool:
        """Add the members of the workspace type `name` (from `where`) to `names`; False where
        it is not one (its members not known)."""
        found = self.find(name, where)
        base = self.resolve(found) if found else None
        if base is None or base.members is None:
            return False
        names |= base.members.names
        return True

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
            whole = bool(folder) and folder not in self.outlines.truncated
            return Members(frozenset(exported), whole) if exported else None
        if where.language == "rust":
            module = paths.rust_module(where.path, [spec.removeprefix("mod ")])
        else:
            module = self.module_file(where, spec)
        there = self.outline(module) if module else None
        if there is None or not there.exports:
            return None
        return Members(frozenset(there.exports), not there.open_exports)


def _open_file(outline: Outline, decl: TypeDecl) -> bool:
    """Whether other code may add to the file's type: a TypeScript script's types are global
    (another file's `interface` of the name merges into them), `declare module` adds to a
    module's."""
    if outline.language == "ts":
        return not outline.module or decl.name in outline.augmented
    return False


def _lombok(outline: Outline) -> bool:
    """A Java file importing Lombok: its annotations make a class's methods (`@Data`,
    `@Getter`, `@Builder`)."""
    imported = [spec for spec, _name in outline.imported.values()] + outline.star_imports
    return any(spec == "lombok" or spec.startswith("lombok.") for spec in imported)


def _jdk_interface(name: str, outline: Outline) -> frozenset[str] | None:
    """The methods of the JDK interface of JAVA_INTERFACES that `name` names there (written
    whole, imported, or java.lang's), None otherwise."""
    simple = name.rsplit(".", 1)[-1]
    if "." in name:
        where = name.rsplit(".", 1)[0]
    elif simple in outline.imported:
        where = outline.imported[simple][0].rsplit(".", 1)[0]
    elif simple in JAVA_LANG:
        where = "java.lang"  # (a star import naming another of the name: not Java)
    else:  # (by a star import: the JDK's alone)
        stars = outline.star_imports
        where = stars[0] if stars and all(p.startswith("java.") for p in stars) else ""
    return JAVA_INTERFACES.get(simple) if where.startswith("java.") else None


def _extra_members(lang: str, decl: TypeDecl) -> frozenset[str]:
    if lang in ("js", "ts") and decl.callable:
        return OBJECT_JS | FUNCTION_JS
    if lang in ("js", "ts") and decl.kind != "enum_declaration":
        return OBJECT_JS
    if lang == "java":
        return OBJECT_JAVA | (ENUM_JAVA if decl.kind == "enum_declaration" else frozenset())
    return frozenset()


def _extra_statics(lang: str, decl: TypeDecl) -> frozenset[str]:
    if lang in ("js", "ts") and "class" in decl.kind:
        return FUNCTION_JS | OBJECT_JS  # (a class is a function, and an object)
    if lang in ("js", "ts") and decl.kind == "enum_declaration":
        return OBJECT_JS
    if lang == "java":
        enum = frozenset({"values", "valueOf"}) if decl.kind == "enum_declaration" else frozenset()
        return JAVA_TYPE_ONLY | enum
    return frozenset()
