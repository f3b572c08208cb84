"""Definitions per file, from tree-sitter syntax trees, and an index of them by name.

One generic rule serves every grammar: a node whose type ends in `_definition`, `_declaration`,
`_item`, `_spec` or `_specifier` (the last with a body: `struct s {...}`, not `struct s x;`) and
that has a name (its `name` field, else the name at the end of its `declarator` chain, as C's
functions have) is a definition; its kind is the node's type, its lines the node's span, widened
to a wrapper that holds it alone (a decorated Python definition with its decorators, an
`export`, a `template <...>`, the `const` of `const f = () => ...`). Python's module-level
`NAME = ...` counts too. The walk enters the bodies of classes, namespaces, modules, impls and
top-level statements (`if TYPE_CHECKING:`, `#ifndef` guards), never a function's: its locals are
not the file's definitions. Fields, parameters, imports and constructors (named as their class)
are not definitions. A language without a grammar here has no definitions.

The grammars and parsers are spec_lsp/syntax.py's (the guide reads the same trees).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from spec_lsp.engine.context.types import Definition
from spec_lsp.syntax import GRAMMARS, grammar_for, node_text, parse

__all__ = ["GRAMMARS", "grammar_for", "parse", "definitions", "around", "SymbolIndex"]

_SUFFIXES = ("_definition", "_declaration", "_item", "_spec", "_specifier")
_ALSO = {  # definitions whose type the suffixes miss
    "type_definition",  # C typedef
    "internal_module",  # TypeScript namespace
    "variable_declarator",  # JavaScript/TypeScript `const f = ...` (top level or in a namespace)
    "method_signature",
    "abstract_method_signature",
    "preproc_def",
    "preproc_function_def",
}
_NOT = {  # have a name and a definition's suffix, but say less than what holds them
    "field_declaration",
    "field_definition",
    "public_field_definition",
    "enum_variant",
    "import_declaration",
    "import_spec",
    "use_declaration",
    "extern_crate_declaration",
    "package_declaration",
    "module_declaration",
    "constructor_declaration",
    "local_variable_declaration",
    "let_declaration",
    "friend_declaration",
    "using_declaration",
}
# Wrappers: a definition alone inside one takes the wrapper's lines.
_WRAPPERS = {
    "decorated_definition",
    "export_statement",
    "template_declaration",
    "lexical_declaration",
    "variable_declaration",
    "type_declaration",
    "var_declaration",
    "const_declaration",
    "ambient_declaration",
    "expression_statement",
}
# Not definitions, but their children may be: entered by the walk.
_CONTAINER_SUFFIXES = ("block", "_body", "_list", "_clause", "_statement", "_declaration")
_CONTAINERS = {
    "linkage_specification",
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "impl_item",  # Rust: its methods (named by the impl's type)
    *_WRAPPERS,
}
_NOT_ENTERED = {"return_statement", "import_statement", "import_from_statement", "package_clause"}
_FUNCTION_WORDS = ("function", "method", "constructor", "lambda", "arrow", "closure", "macro")
_NAME_TYPES = {
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "private_property_identifier",
    "namespace_identifier",
    "constant",
    "operator_name",
    "destructor_name",
}
_MAX_DEPTH = 8  # nesting of containers walked


def is_function(kind: str) -> bool:
    """A definition whose body is code (its inside holds locals, not definitions)."""
    return any(word in kind for word in _FUNCTION_WORDS)


def definitions(path: str, text: str) -> tuple[Definition, ...]:
    """The file's definitions, in the order they stand."""
    tree = parse(path, text)
    if tree is None:
        return ()
    found: list[Definition] = []
    _walk(tree.root_node, "", 0, found, python=path.endswith((".py", ".pyi", ".pyw")))
    return tuple(found)


def _name(node: Any) -> str | None:
    """A definition's name: its `name` field, else the end of its `declarator` chain (C)."""
    target = node.child_by_field_name("name")
    if target is None:
        target = node.child_by_field_name("declarator")
        for _ in range(8):
            if target is None or target.type in _NAME_TYPES or target.type.startswith("qualified"):
                break
            target = target.child_by_field_name("declarator")
    for _ in range(8):  # a::b::c -> c
        if target is None or not target.type.startswith("qualified"):
            break
        target = target.child_by_field_name("name")
    if target is None or target.type not in _NAME_TYPES:
        return None
    return str(target.text.decode("utf-8", "replace"))


def _is_definition(node: Any) -> bool:
    kind = node.type
    if kind in _NOT or "parameter" in kind:
        return False
    if kind.endswith("_specifier"):  # struct/class/enum/union: only with a body
        return node.child_by_field_name("body") is not None
    if kind == "declaration":  # C/C++ top level: a prototype or a global
        return True
    return kind in _ALSO or kind.endswith(_SUFFIXES)


def _entered(kind: str) -> bool:
    if kind in _NOT_ENTERED or is_function(kind):
        return False
    return kind in _CONTAINERS or kind.endswith(_CONTAINER_SUFFIXES)


def _end(node: Any) -> int:
    """The line after a node's last (a node ending with its newline ends on the line before)."""
    row, column = node.end_point
    return max(node.start_point[0] + 1, row + (1 if column else 0))


def _head_end(node: Any) -> int:
    """The line after a definition's head (its signature): where its body starts."""
    start, end = node.start_point[0], _end(node)
    body = node.child_by_field_name("body")
    if body is None:
        return end
    row = body.start_point[0]
    if row == start:  # `void f() {` / `class A {`: the head is the line the body opens on
        return start + 1
    return max(start + 1, min(row, end))


def _walk(node: Any, parent: str, depth: int, out: list[Definition], *, python: bool) -> None:
    for child in node.named_children:
        _visit(child, child, parent, depth, out, python=python)


def _visit(
    node: Any, span: Any, parent: str, depth: int, out: list[Definition], *, python: bool
) -> None:
    """`span`: the node whose lines the definition takes (a wrapper holding it alone)."""
    kind = node.type
    if kind in _NOT:
        return
    if kind in _WRAPPERS:
        inner = [c for c in node.named_children if _is_definition(c) or c.type in _WRAPPERS]
        if python and kind == "expression_statement" and not parent:
            _python_assignment(node, span, out)
            return
        if kind == "decorated_definition" and node.child_by_field_name("definition") is not None:
            inner = [node.child_by_field_name("definition")]
        if len(inner) == 1:
            _visit(inner[0], span, parent, depth, out, python=python)
            return
    if kind == "impl_item":
        target = node.child_by_field_name("type")
        if target is not None:
            parent = target.text.decode("utf-8", "replace")
    elif _is_definition(node):
        name = _name(node)
        if name is not None and name != parent:
            start = min(span.start_point[0], node.start_point[0])
            end = max(_end(span), _end(node))
            out.append(Definition(name, kind, start, end, max(start + 1, _head_end(node)), parent))
            if is_function(kind) or depth >= _MAX_DEPTH:
                return
            parent = name
        elif name is not None or is_function(kind):  # a constructor, or a nameless function
            return
    elif not _entered(kind) or depth >= _MAX_DEPTH:
        return
    _walk(node, parent, depth + 1, out, python=python)


def _python_assignment(statement: Any, span: Any, out: list[Definition]) -> None:
    """Module-level `NAME = ...` / `NAME: T = ...`."""
    for child in statement.named_children:
        if child.type != "assignment":
            continue
        left = child.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            start, end = span.start_point[0], _end(span)
            out.append(
                Definition(left.text.decode("utf-8", "replace"), "assignment", start, end, end)
            )


# -- the names around a place: those used, those bound -----------------------------------------
_BINDING_FIELDS = ("left", "pattern", "declarator", "alias")
_NAMING = ("_definition", "_declaration", "_declarator", "_spec", "_item", "_pattern")
_SKIPPED_IN_BINDINGS = ("attribute", "member_expression", "subscript", "field_expression", "call")
_RECEIVER_FIELDS = ("object", "operand", "value", "argument", "path", "scope")
_MEMBER_FIELDS = ("attribute", "property", "field", "name")
_NOT_CODE = ("comment", "string", "heredoc")


@dataclass(frozen=True, slots=True)
class Used:
    """A name used in code (not in a comment or a string)."""

    name: str
    line: int
    receiver: str | None  # `a` of `a.name` ("" when it is not a plain name); None: a bare name


def around(
    path: str, text: str, lines: tuple[int, int], cursor: tuple[int, int]
) -> tuple[list[Used], set[str]] | None:
    """The names used in code on `lines` (first, past the last) but the one at `cursor` (line,
    character: the word being typed), and the names the file binds there: its definitions
    (anywhere in it), the parameters and assignment targets of the functions around the lines
    (a local named like another file's definition is not that definition). None for a
    language without a grammar here."""
    tree = parse(path, text)
    if tree is None:
        return None
    row, column = cursor
    source_lines = text.split("\n")
    at = (row, len(source_lines[row][:column].encode("utf-8")) if row < len(source_lines) else 0)
    first, last = lines
    used: list[Used] = []
    functions: list[Any] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_point[0] < first or node.start_point[0] >= last:
            continue
        kind = node.type
        if any(word in kind for word in _NOT_CODE):
            continue
        if is_function(kind):
            functions.append(node)
        if kind in _NAME_TYPES and not (node.start_point <= at <= node.end_point):
            used.append(Used(node_text(node), node.start_point[0], _receiver(node)))
        stack.extend(reversed(node.named_children))
    found: list[Definition] = []
    _walk(tree.root_node, "", 0, found, python=path.endswith((".py", ".pyi", ".pyw")))
    bound = {d.name for d in found}
    node = tree.root_node.descendant_for_point_range((first, 0), (first, 0))
    while node is not None:  # the functions holding the lines
        if is_function(node.type):
            functions.append(node)
        node = node.parent
    for function in {f.id: f for f in functions}.values():
        bound.update(_bindings(function))
    return used, bound


def _receiver(node: Any) -> str | None:
    parent = node.parent
    if parent is None:
        return None
    if not any(parent.child_by_field_name(f) == node for f in _MEMBER_FIELDS):
        return None
    for field in _RECEIVER_FIELDS:
        target = parent.child_by_field_name(field)
        if target is not None and target != node:
            return node_text(target) if target.type in _NAME_TYPES else ""
    return None


def _bindings(function: Any) -> Iterator[str]:
    stack = [function]
    seen = 0
    while stack and seen < 50_000:  # a function of a few thousand lines at most
        node = stack.pop()
        seen += 1
        if "parameter" in node.type:
            yield from _identifiers(node)
            continue
        fields = _BINDING_FIELDS + (("name",) if node.type.endswith(_NAMING) else ())
        for field in fields:
            target = node.child_by_field_name(field)
            if target is not None:
                yield from _identifiers(target)
        stack.extend(node.named_children)


def _identifiers(node: Any, depth: int = 0) -> Iterable[str]:
    if node.type == "identifier":
        return [node_text(node)]
    if depth > 4 or node.type.startswith(_SKIPPED_IN_BINDINGS):
        return []
    return [name for child in node.named_children for name in _identifiers(child, depth + 1)]


# -- the index -----------------------------------------------------------------------------------
class SymbolIndex:
    """Definitions of many files, by name. Thread-safe: parsing happens outside the lock, the
    parsed file replaces the old one under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, tuple[str, tuple[Definition, ...]]] = {}  # path -> (text, defs)
        self._names: dict[str, dict[str, list[Definition]]] = {}  # name -> path -> defs
        self.parsed = 0  # files parsed
        self.parse_seconds = 0.0

    def update(self, path: str, text: str) -> None:
        with self._lock:
            old = self._files.get(path)
        if old is not None and (old[0] is text or old[0] == text):
            return
        import time

        started = time.perf_counter()
        found = definitions(path, text)
        elapsed = time.perf_counter() - started
        with self._lock:
            self._drop(path)
            self._files[path] = (text, found)
            for d in found:
                self._names.setdefault(d.name, {}).setdefault(path, []).append(d)
            self.parsed += 1
            self.parse_seconds += elapsed

    def remove(self, path: str) -> None:
        with self._lock:
            self._drop(path)

    def _drop(self, path: str) -> None:
        old = self._files.pop(path, None)
        if old is None:
            return
        for d in old[1]:
            by_path = self._names.get(d.name)
            if by_path is not None:
                by_path.pop(path, None)
                if not by_path:
                    del self._names[d.name]
        if not self._files:  # (a dict keeps its largest table: the last file gone, a new one)
            self._names = {}

    def lookup(self, name: str) -> list[tuple[str, Definition]]:
        """Every definition of `name`, by path and line."""
        with self._lock:
            by_path = self._names.get(name, {})
            return [(path, d) for path in sorted(by_path) for d in by_path[path]]

    def definitions(self, path: str) -> tuple[Definition, ...]:
        with self._lock:
            entry = self._files.get(path)
        return entry[1] if entry is not None else ()

    def text(self, path: str) -> str | None:
        """The text the file's definitions were parsed from (their lines are its lines)."""
        with self._lock:
            entry = self._files.get(path)
        return entry[0] if entry is not None else None

    def paths(self) -> list[str]:
        with self._lock:
            return sorted(self._files)

    def memory(self) -> dict[str, Any]:
        with self._lock:
            files = len(self._files)
            count = sum(len(defs) for _, defs in self._files.values())
            names = len(self._names)
            chars = sum(len(text) for text, _ in self._files.values())
        return {
            "files": files,
            "definitions": count,
            "names": names,
            "text_chars": chars,  # shared with the documents and the workspace, not a copy
            "parsed": self.parsed,
            "parse_ms": round(self.parse_seconds * 1000, 1),
        }
