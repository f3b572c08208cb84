"""What one file of a brace language declares, read from its tree-sitter tree (JS/TS, Go, Rust,
Java): its types and their members, the imports that name other files, and per named scope
(a class, an impl, a function) the variables whose type its text says.

A type's own members only: what it inherits, and Go's methods and Rust's impls in other files,
are structural.py's to add. A variable is typed only where the text says it soundly: an
annotation or a parameter's type (`x: Foo`, `Foo x`, `x *Foo`), a constructor (`new Foo(...)`,
`Foo{...}`, `&Foo{...}`, `Foo { .. }`), or a call to a function whose declared result is the
type (Go `NewFoo()`, Rust `Foo::new()` returning `Self`, kept as "()name" for structural.py).
Any other binding of a name is kept as "" (unknown): it hides a known one of an outer scope.

Scopes are keyed by their header line (the source line holding the definition's name, without
its indentation): the same key the cursor's text gives (scopes.enclosing_lines).
"""

from __future__ import annotations

from typing import Any

from spec_lsp.engine.guide.braced.declared_names import (
    BINDING_PLACES,
    binding_place,
    go_import,
    java_import,
    js_export,
    js_import,
    loop_names,
    pattern_names,
    rust_export,
    rust_module,
    variables,
)
from spec_lsp.engine.guide.braced.declared_types import (
    CLASSES,
    go_type,
    java_type,
    js_type,
    rust_type,
)
from spec_lsp.engine.guide.braced.outline import (
    Header,
    Outline,
    TypeDecl,
    has_self,
    is_static,
    language_of,
    named,
    names_of,
    node_text,
    type_name,
)
from spec_lsp.syntax import parse

_FUNCTIONS = {
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "method_declaration",
    "constructor_declaration",
    "function_item",
}
_SCOPES = CLASSES | _FUNCTIONS | {"impl_item", "type_spec", "internal_module", "mod_item"}


def outline(path: str, text: str) -> Outline | None:
    language = language_of(path)
    tree = parse(path, text) if language else None
    if tree is None or language is None:
        return None
    found = Outline(path, language)
    _Reader(found, text.split("\n")).walk(tree.root_node, (), "")
    return found


class _Reader:
    def __init__(self, out: Outline, lines: list[str]) -> None:
        self.out, self.lines = out, lines
        self.lang = out.language

    def header(self, node: Any) -> str:
        anchor = node.child_by_field_name("name") or node.child_by_field_name("type") or node
        row = anchor.start_point[0]
        return self.lines[row].strip() if row < len(self.lines) else ""

    def bind(self, scope: Header, name: str, kind: str) -> None:
        held = self.out.bindings.setdefault(scope, {})
        held[name] = kind if held.get(name, kind) == kind else ""

    def result(self, function: str, kind: str) -> None:
        """What `function` returns; "" where overloads (Java, TypeScript) or impls (Rust) of
        the name say different types."""
        held = self.out.returns.get(function)
        self.out.returns[function] = kind if held in (None, kind) else ""

    # -- the walk --------------------------------------------------------------------------------
    def walk(self, node: Any, scope: Header, self_type: str) -> None:
        for child in node.named_children:
            self.visit(child, scope, self_type)

    def visit(self, node: Any, scope: Header, self_type: str) -> None:
        kind = node.type
        if kind in ("comment", "line_comment", "block_comment", "string", "string_literal"):
            return
        self.statement(node, scope, self_type)
        if kind in _SCOPES and (node.child_by_field_name("name") or kind == "impl_item"):
            scope, self_type = self.enter(node, scope, self_type)
        self.walk(node, scope, self_type)

    def enter(self, node: Any, scope: Header, self_type: str) -> tuple[Header, str]:
        kind, inner = node.type, (*scope, self.header(node))
        self.out.bindings.setdefault(inner, {})
        if kind in CLASSES or kind == "type_spec":
            decl = self.type_decl(node)
            if decl is not None:
                self.out.types.setdefault(decl.name, decl)
                if not scope or kind != "type_spec":
                    self.bind(scope, decl.name, "type:" + decl.name)
                if kind in CLASSES and kind not in ("struct_item", "enum_item", "union_item"):
                    self.out.selves[inner] = decl.name
                    return inner, decl.name
        elif kind == "impl_item":
            target = type_name(node.child_by_field_name("type"))
            self.impl(node, target)
            self.out.selves[inner] = target
            return inner, target
        elif kind in _FUNCTIONS:
            self.function(node, scope, inner, self_type)
            if self.lang in ("js", "ts") and (kind != "method_definition" or is_static(node)):
                self.out.selves[inner] = ""  # (a function's own `this`; a static's: the class)
        return inner, self_type

    # -- declarations -------------------------------------------------------------------------
    def type_decl(self, node: Any) -> TypeDecl | None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return None
        decl = TypeDecl(node_text(name_node), node.type)
        if self.lang in ("js", "ts"):
            js_type(decl, node, js=self.lang == "js")
        elif self.lang == "go":
            go_type(decl, node)
        elif self.lang == "rust":
            rust_type(decl, node)
        else:
            java_type(decl, node)
        return decl

    def impl(self, node: Any, target: str) -> None:
        trait = type_name(node.child_by_field_name("trait"))
        if trait:
            self.out.traits.setdefault(target, []).append(trait)
        body = node.child_by_field_name("body")
        for item in body.named_children if body is not None else ():
            name = item.child_by_field_name("name")
            if name is None:
                continue
            if item.type == "function_item" and has_self(item):
                self.out.methods.setdefault(target, set()).add(node_text(name))
            else:
                self.out.assoc.setdefault(target, set()).add(node_text(name))
            result = type_name(item.child_by_field_name("return_type"))
            if item.type == "function_item" and result:
                self.result(f"{target}::{node_text(name)}", target if result == "Self" else result)

    def function(self, node: Any, scope: Header, inner: Header, self_type: str) -> None:
        name = node_text(node.child_by_field_name("name"))
        if self.lang == "go":
            result = type_name(node.child_by_field_name("result"))
            receiver = node.child_by_field_name("receiver")
            if receiver is not None:
                for param in named(receiver, "parameter_declaration"):
                    target = type_name(param.child_by_field_name("type"))
                    self.out.methods.setdefault(target, set()).add(name)
                self.params(receiver, inner, self_type)
            elif result and node.type == "function_declaration":
                self.result(name, result)
            if not scope and node.type == "function_declaration" and name[:1].isupper():
                self.out.exports.add(name)  # (Go: a capital first letter exports)
        if self.lang in ("ts", "java"):  # what a factory returns: `Foo.of(..)`, `make(..)`
            result = type_name(
                node.child_by_field_name("return_type") or node.child_by_field_name("type")
            )
            if result and node.type == "function_declaration" and not scope:
                self.result(name, result)
            elif result and self_type and is_static(node) and node.type != "function_declaration":
                self.result(f"{self_type}.{name}", result)
        self.params(node.child_by_field_name("parameters"), inner, self_type)

    def params(self, node: Any | None, scope: Header, self_type: str) -> None:
        for param in node.named_children if node is not None else ():
            if "parameter" not in param.type:
                continue
            target = param.child_by_field_name("pattern") or param.child_by_field_name("name")
            kind = type_name(param.child_by_field_name("type"))
            if kind == "Self":
                kind = self_type
            if target is not None and target.type == "identifier":
                self.bind(scope, node_text(target), kind and "value:" + kind)
            elif param.type == "parameter_declaration":  # Go: a, b int
                for ident in named(param, "identifier"):
                    self.bind(scope, node_text(ident), kind and "value:" + kind)

    # -- statements: imports, exports, variables -----------------------------------------------
    def statement(self, node: Any, scope: Header, self_type: str) -> None:
        kind = node.type
        if kind == "import_statement" and self.lang in ("js", "ts"):
            js_import(self.out, node)
        elif kind == "export_statement":
            js_export(self.out, node)
        elif kind == "import_spec":
            go_import(self.out, node)
        elif kind == "package_clause" or kind == "package_declaration":
            self.out.package = node_text(node.named_children[0]) if node.named_children else ""
        elif kind == "import_declaration" and self.lang == "java":
            java_import(self.out, node)
        elif kind in ("type_alias_declaration", "type_alias", "type_item") and not scope:
            name, target = (
                node.child_by_field_name("name"),
                type_name(node.child_by_field_name("value") or node.child_by_field_name("type")),
            )
            if name is not None and target:
                self.out.aliases[node_text(name)] = target
                if self.lang == "rust":  # (`Alias::new()`: a Rust alias names the type's items)
                    self.bind(scope, node_text(name), "type:" + node_text(name))
                if self.lang == "go" and node_text(name)[:1].isupper():
                    self.out.exports.add(node_text(name))
            if self.lang == "rust":
                rust_export(self.out, node)
        elif kind in ("use_declaration", "mod_item"):
            rust_module(self.out, node, public=scope == ())
        elif self.lang == "go" and not scope and kind in ("var_spec", "const_spec"):
            self.out.exports.update(n for n in names_of(node) if n[:1].isupper())
        elif self.lang == "go" and not scope and kind == "type_spec":
            name = node.child_by_field_name("name")
            if name is not None and node_text(name)[:1].isupper():
                self.out.exports.add(node_text(name))
        elif self.lang == "rust" and not scope:
            rust_export(self.out, node)
        elif kind in ("range_clause", "for_in_statement", "enhanced_for_statement"):
            for name in loop_names(node):
                self.bind(scope, name, "")  # (a loop's variable: its type not read here)
        elif kind in BINDING_PLACES:
            # an anonymous function's parameters, a pattern's names: bound in the named scope
            # around them as unknown (one there of a known type is no longer sure)
            place = binding_place(node)
            for name in pattern_names(place) if place is not None else ():
                self.bind(scope, name, "")
        for name, value in variables(node, self.lang):
            if self_type and value in ("value:Self", "()Self::new"):
                value = "value:" + self_type
            value = value.replace("()Self::", f"(){self_type}::")
            self.bind(scope, name, value)
