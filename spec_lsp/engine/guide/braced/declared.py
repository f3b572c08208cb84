"""What one file of a brace language declares, read from its tree-sitter tree (JS/TS, Go, Rust,
Java): its types and their members, the imports that name other files, and per named scope
(a class, an impl, a function) the variables whose type its text says.

A type's own members only: what it inherits, and Go's methods and Rust's impls in other files,
are structural.py's to add. Declarations of one name are merged (TypeScript's declaration
merging; elsewhere two types of one name in different scopes, kept open). A function or class
whose `this` is its own (JS/TS `function` expressions, Java's anonymous classes) is a scope
where `this` is not known. A variable is typed only where the text says it soundly: an
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


def rebinds_this(node: Any, language: str) -> bool:
    """A function or class without a header of its own whose `this` is its own: JS/TS's
    `function` expressions and class expressions, Java's anonymous classes (an object created
    with a body, an enum constant's body). An arrow function's `this` is its scope's."""
    if language in ("js", "ts"):
        return node.type in ("function_expression", "function", "generator_function", "class")
    if language == "java" and node.type in ("object_creation_expression", "enum_constant"):
        return any(c.type == "class_body" for c in node.named_children)
    return False


def _parameter(node: Any) -> str:
    """A Rust generic parameter's name (`T` of `T: Display`)."""
    if node.type in ("type_identifier", "identifier"):
        return node_text(node)
    name = node.child_by_field_name("name")
    if name is None:
        name = next((c for c in node.named_children if c.type == "type_identifier"), None)
    return node_text(name) if name is not None else ""


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
        if kind == "ambient_declaration" and self.augmentation(node):
            return
        self.statement(node, scope, self_type)
        if rebinds_this(node, self.lang):
            scope, self_type = self.opaque(node, scope)
        elif kind in _SCOPES and (node.child_by_field_name("name") or kind == "impl_item"):
            scope, self_type = self.enter(node, scope, self_type)
        self.walk(node, scope, self_type)

    def opaque(self, node: Any, scope: Header) -> tuple[Header, str]:
        """A function or class with no header of its own whose `this` is not the enclosing
        class's (JS/TS `function () {..}`, a class expression, Java's anonymous class): a scope
        keyed by its first line, where `this` is not known."""
        line = self.header(node)
        if scope and scope[-1] == line:  # (it opens on its scope's header line: `this` there
            self.out.selves[scope] = ""  # is not sure either)
            return scope, ""
        inner = (*scope, line)
        self.out.bindings.setdefault(inner, {})
        self.out.selves[inner] = ""
        return inner, ""

    def augmentation(self, node: Any) -> bool:
        """TypeScript's `declare module '..' {..}` and `declare global {..}`: the names of
        the types they add members to (declared elsewhere). Another `declare` is the file's."""
        body = next(
            (c for c in node.named_children if c.type in ("module", "statement_block")), None
        )
        if body is None:
            return False
        stack = [body]
        while stack:
            item = stack.pop()
            name = item.child_by_field_name("name")
            if (item.type in CLASSES or item.type == "internal_module") and name is not None:
                self.out.augmented.add(node_text(name))
            stack.extend(item.named_children)
        return True

    def add_type(self, decl: TypeDecl, scope: Header) -> None:
        """A type of the file; two of one name are merged: TypeScript's declaration merging
        (interfaces, a class and interfaces, enums at the top level: all their members), or
        two types of one name in different scopes (local types, nested classes, Rust's inline
        modules): which one a name means is not read here, so their members together, open."""
        decl.nested = bool(scope)
        held = self.out.types.get(decl.name)
        if held is None:
            self.out.types[decl.name] = decl
            return
        merging = self.lang == "ts" and not (held.nested or decl.nested)
        kinds = {held.kind, decl.kind}
        if not merging or len(kinds & {"class_declaration", "abstract_class_declaration"}) > 1:
            held.open = True
        if decl.kind in ("class_declaration", "abstract_class_declaration"):
            held.kind = decl.kind
        held.members |= decl.members
        held.statics |= decl.statics
        held.bases += decl.bases
        held.traits += decl.traits
        held.open = held.open or decl.open or held.underlying != decl.underlying
        held.callable = held.callable or decl.callable
        held.indexed = held.indexed or decl.indexed
        held.nested = held.nested and decl.nested
        for name, kind in decl.fields.items():
            held.fields[name] = kind if held.fields.get(name, kind) == kind else ""

    def enter(self, node: Any, scope: Header, self_type: str) -> tuple[Header, str]:
        kind, inner = node.type, (*scope, self.header(node))
        self.out.bindings.setdefault(inner, {})
        if kind in CLASSES or kind == "type_spec":
            decl = self.type_decl(node)
            if decl is not None:
                self.add_type(decl, scope)
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
            if self.lang in ("js", "ts") and (
                kind != "method_definition" or is_static(node) or node.parent.type == "object"
            ):  # (a function's own `this`; a static's: the class; an object literal's method's)
                self.out.selves[inner] = ""
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
        params = node.child_by_field_name("type_parameters")
        generic = {_parameter(p) for p in params.named_children} if params is not None else set()
        if trait and target in generic:  # `impl<T: ..> Trait for T`: every type, maybe
            self.out.blanket.append(trait)
        elif trait:
            self.out.traits.setdefault(target, []).append(trait)
        body = node.child_by_field_name("body")
        for item in body.named_children if body is not None else ():
            name = item.child_by_field_name("name")
            if name is None:
                continue
            if item.type == "type_item" and trait.rsplit("::", 1)[-1] == "Deref":
                self.out.deref[target] = type_name(item.child_by_field_name("type"))
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
        if kind in ("import_statement", "export_statement") and not scope:
            self.out.module = True
        if kind == "internal_module" and node.child_by_field_name("name") is not None:
            self.out.merged.add(node_text(node.child_by_field_name("name")))
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
