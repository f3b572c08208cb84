"""What one file of a brace language declares, as the guide keeps it (declared.py reads it from
the file's tree-sitter tree): its types and their own members, the imports that name other
files, and per named scope the variables whose type its text says; with the small readers of
syntax nodes the readers share.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.syntax import node_text

Header = tuple[str, ...]
LANGUAGES = {
    ".js": "js",
    ".jsx": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "ts",
    ".mts": "ts",
    ".cts": "ts",
    ".tsx": "ts",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}


@dataclass
class TypeDecl:
    name: str
    kind: str  # the syntax node's type
    members: set[str] = field(default_factory=set)  # what an instance has
    statics: set[str] = field(default_factory=set)  # what the type's name has (`K.`, `K::`)
    fields: dict[str, str] = field(default_factory=dict)  # field -> its declared type
    bases: list[str] = field(default_factory=list)  # types it takes members from
    open: bool = False  # members the source does not declare may exist
    underlying: str = ""  # Go `type A B`: B (A has B's fields, not its methods)
    nested: bool = False  # declared inside another declaration (not seen from other files)
    indexed: bool = False  # TS: an index signature (`[key: string]: T`): any name is a member
    callable: bool = False  # TypeScript: a call or construct signature (a function's members)
    traits: list[str] = field(default_factory=list)  # Rust: the traits its `#[derive]` names

    def add_field(self, name: str, kind: str | None, *, static: bool = False) -> None:
        """A field, with its declared type where one is written (`kind`)."""
        (self.statics if static else self.members).add(name)
        if kind:
            self.fields[name] = kind


@dataclass
class Outline:
    path: str
    language: str
    package: str = ""  # Go's package clause, Java's package
    types: dict[str, TypeDecl] = field(default_factory=dict)
    methods: dict[str, set[str]] = field(default_factory=dict)  # Go/Rust: type -> its methods
    assoc: dict[str, set[str]] = field(default_factory=dict)  # Rust: type -> associated items
    traits: dict[str, list[str]] = field(default_factory=dict)  # Rust: type -> traits it has
    returns: dict[str, str] = field(default_factory=dict)  # `NewFoo` / `Foo::new` -> its type
    exports: set[str] = field(default_factory=set)  # what another file may name of this one
    open_exports: bool = False  # `export *`, `pub use x::*`: more than the list
    namespaces: dict[str, str] = field(default_factory=dict)  # alias -> module / package
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, name)
    star_imports: list[str] = field(default_factory=list)  # Java `import a.b.*;`: "a.b"
    aliases: dict[str, str] = field(default_factory=dict)  # `type A = B`: A -> B
    module: bool = False  # JS/TS: a top-level import or export (else a script: its names global)
    merged: set[str] = field(default_factory=set)  # TS: namespaces (their names merge into a type)
    augmented: set[str] = field(default_factory=set)  # TS: `declare module`/`global` interfaces
    blanket: list[str] = field(default_factory=list)  # Rust: traits of `impl<T> Trait for T`
    deref: dict[str, str] = field(default_factory=dict)  # Rust: type -> its Deref's Target
    # scope (header lines) -> variable -> its type ("" unknown; "()f" the result of f)
    bindings: dict[Header, dict[str, str]] = field(default_factory=dict)
    selves: dict[Header, str] = field(default_factory=dict)  # scope -> the type `this` is ("")


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def named(node: Any, kind: str) -> Iterator[Any]:
    return (c for c in node.named_children if c.type == kind)


def type_name(node: Any | None) -> str:
    """A type's name as the text writes it (`Foo`, `pkg.Foo`), behind pointers, references,
    annotations and generic arguments; "" for any other type (a union, a function, a slice)."""
    for _ in range(6):
        if node is None:
            return ""
        kind = node.type
        if kind in ("type_identifier", "identifier"):
            return node_text(node)
        if kind in ("qualified_type", "scoped_type_identifier"):  # Go pkg.T, Rust a::T, Java a.T
            return node_text(node)
        if kind in ("type_annotation", "pointer_type", "reference_type", "parenthesized_type"):
            inner = node.child_by_field_name("type")
            node = inner if inner is not None else (node.named_children or [None])[-1]
            continue
        if kind == "generic_type":
            inner = node.child_by_field_name("type") or node.child_by_field_name("name")
            node = inner if inner is not None else (node.named_children or [None])[0]
            continue
        return ""
    return ""


def names_of(node: Any) -> list[str]:
    return [node_text(c) for c in node.children_by_field_name("name")]


def has_self(function: Any) -> bool:
    params = function.child_by_field_name("parameters")
    return params is not None and any(c.type == "self_parameter" for c in params.named_children)


def is_static(node: Any) -> bool:
    for child in node.children:
        if child.type == "static" or (child.type == "modifiers" and "static" in node_text(child)):
            return True
    return False
