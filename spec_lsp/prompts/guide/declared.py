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

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.syntax import parse

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
_CLASSES = {
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "struct_item",
    "enum_item",
    "union_item",
    "trait_item",
}
_FUNCTIONS = {
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "method_declaration",
    "constructor_declaration",
    "function_item",
}
_SCOPES = _CLASSES | _FUNCTIONS | {"impl_item", "type_spec", "internal_module", "mod_item"}


@dataclass
class TypeDecl:
    name: str
    kind: str  # the syntax node's type
    members: set[str] = field(default_factory=set)  # what an instance has
    statics: set[str] = field(default_factory=set)  # what the type's name has (`K.`, `K::`)
    fields: dict[str, str] = field(default_factory=dict)  # field -> its declared type
    bases: list[str] = field(default_factory=list)  # types it takes members from
    open: bool = False  # members the source does not declare may exist


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
    # scope (header lines) -> variable -> its type ("" unknown; "()f" the result of f)
    bindings: dict[Header, dict[str, str]] = field(default_factory=dict)
    selves: dict[Header, str] = field(default_factory=dict)  # scope -> the type `this` is ("")


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def outline(path: str, text: str) -> Outline | None:
    language = language_of(path)
    tree = parse(path, text) if language else None
    if tree is None or language is None:
        return None
    found = Outline(path, language)
    _Reader(found, text.split("\n")).walk(tree.root_node, (), "")
    return found


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace"))


def _named(node: Any, kind: str) -> Iterator[Any]:
    return (c for c in node.named_children if c.type == kind)


def type_name(node: Any | None) -> str:
    """A type's name as the text writes it (`Foo`, `pkg.Foo`), behind pointers, references,
    annotations and generic arguments; "" for any other type (a union, a function, a slice)."""
    for _ in range(6):
        if node is None:
            return ""
        kind = node.type
        if kind in ("type_identifier", "identifier"):
            return _text(node)
        if kind == "qualified_type":  # Go pkg.T
            return _text(node)
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
        if kind in _CLASSES or kind == "type_spec":
            decl = self.type_decl(node)
            if decl is not None:
                self.out.types.setdefault(decl.name, decl)
                if not scope or kind != "type_spec":
                    self.bind(scope, decl.name, "type:" + decl.name)
                if kind in _CLASSES and kind not in ("struct_item", "enum_item", "union_item"):
                    self.out.selves[inner] = decl.name
                    return inner, decl.name
        elif kind == "impl_item":
            target = type_name(node.child_by_field_name("type"))
            self.impl(node, target)
            self.out.selves[inner] = target
            return inner, target
        elif kind in _FUNCTIONS:
            self.function(node, scope, inner, self_type)
            if self.lang in ("js", "ts") and kind != "method_definition":
                self.out.selves[inner] = ""  # (a function's own `this`)
        return inner, self_type

    # -- declarations -------------------------------------------------------------------------
    def type_decl(self, node: Any) -> TypeDecl | None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return None
        decl = TypeDecl(_text(name_node), node.type)
        if self.lang in ("js", "ts"):
            _js_type(decl, node, js=self.lang == "js")
        elif self.lang == "go":
            _go_type(decl, node)
        elif self.lang == "rust":
            _rust_type(decl, node)
        else:
            _java_type(decl, node)
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
            if item.type == "function_item" and _has_self(item):
                self.out.methods.setdefault(target, set()).add(_text(name))
            else:
                self.out.assoc.setdefault(target, set()).add(_text(name))
            result = type_name(item.child_by_field_name("return_type"))
            if item.type == "function_item" and result in ("Self", target):
                self.out.returns[f"{target}::{_text(name)}"] = target

    def function(self, node: Any, scope: Header, inner: Header, self_type: str) -> None:
        name = _text(node.child_by_field_name("name"))
        if self.lang == "go":
            result = type_name(node.child_by_field_name("result"))
            receiver = node.child_by_field_name("receiver")
            if receiver is not None:
                for param in _named(receiver, "parameter_declaration"):
                    target = type_name(param.child_by_field_name("type"))
                    self.out.methods.setdefault(target, set()).add(name)
                    self.params(receiver, inner, self_type)
            elif result and node.type == "function_declaration":
                self.out.returns[name] = result
        if not scope and node.type == "function_declaration" and name[:1].isupper():
            self.out.exports.add(name)
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
                self.bind(scope, _text(target), kind and "value:" + kind)
            elif param.type == "parameter_declaration":  # Go: a, b int
                for ident in _named(param, "identifier"):
                    self.bind(scope, _text(ident), kind and "value:" + kind)

    # -- statements: imports, exports, variables -----------------------------------------------
    def statement(self, node: Any, scope: Header, self_type: str) -> None:
        kind = node.type
        if kind == "import_statement" and self.lang in ("js", "ts"):
            _js_import(self.out, node)
        elif kind == "export_statement":
            _js_export(self.out, node)
        elif kind == "import_spec":
            _go_import(self.out, node)
        elif kind == "package_clause" or kind == "package_declaration":
            self.out.package = _text(node.named_children[0]) if node.named_children else ""
        elif kind == "import_declaration" and self.lang == "java":
            path = _text(node.named_children[0]) if node.named_children else ""
            if not path.endswith("*"):
                self.out.imported[path.rsplit(".", 1)[-1]] = (path, path.rsplit(".", 1)[-1])
        elif kind in ("use_declaration", "mod_item"):
            _rust_module(self.out, node, public=scope == ())
        elif self.lang == "go" and not scope and kind in ("var_spec", "const_spec"):
            self.out.exports.update(n for n in _names_of(node) if n[:1].isupper())
        elif self.lang == "go" and not scope and kind == "type_spec":
            name = node.child_by_field_name("name")
            if name is not None and _text(name)[:1].isupper():
                self.out.exports.add(_text(name))
        elif self.lang == "rust" and not scope:
            _rust_export(self.out, node)
        elif kind in ("range_clause", "for_in_statement", "enhanced_for_statement"):
            for name in _loop_names(node):
                self.bind(scope, name, "")  # (a loop's variable: its type not read here)
        elif kind in _BINDING_PLACES:
            # an anonymous function's parameters, a pattern's names: bound in the named scope
            # around them as unknown (one there of a known type is no longer sure)
            place = _binding_place(node)
            for name in _pattern_names(place) if place is not None else ():
                self.bind(scope, name, "")
        for name, value in _variables(node, self.lang):
            if self_type and value in ("value:Self", "()Self::new"):
                value = "value:" + self_type
            value = value.replace("()Self::", f"(){self_type}::")
            self.bind(scope, name, value)


_BINDING_PLACES = {
    "func_literal": "parameters",
    "arrow_function": "parameters",
    "function_expression": "parameters",
    "function": "parameters",
    "closure_expression": "parameters",
    "lambda_expression": "parameters",
    "catch_clause": "parameter",
    "catch_formal_parameter": "name",
    "let_condition": "pattern",
    "match_arm": "pattern",
    "for_expression": "pattern",
    "type_switch_statement": "alias",
    "let_declaration": "pattern",  # (a destructuring one: a plain name is typed below)
    "variable_declarator": "name",  # (likewise)
}


def _binding_place(node: Any) -> Any | None:
    field_name = _BINDING_PLACES[node.type]
    place = node.child_by_field_name(field_name)
    if place is None and node.type == "arrow_function":
        place = node.child_by_field_name("parameter")
    if place is None or (
        node.type in ("let_declaration", "variable_declarator") and place.type == "identifier"
    ):
        return None
    return place


def _pattern_names(node: Any, depth: int = 0) -> Iterator[str]:
    """The identifiers a parameter list or a pattern binds (type names left out)."""
    if node.type == "identifier":
        yield _text(node)
        return
    if depth > 6:
        return
    for child in node.named_children:
        if child.type not in (
            "type_annotation",
            "type_identifier",
            "generic_type",
            "qualified_type",
        ):
            yield from _pattern_names(child, depth + 1)


def _loop_names(node: Any) -> Iterator[str]:
    target = node.child_by_field_name("left") or node.child_by_field_name("name")
    if target is not None and target.type == "identifier":
        yield _text(target)
    elif target is not None:
        yield from (_text(c) for c in target.named_children if c.type == "identifier")


def _names_of(node: Any) -> list[str]:
    return [_text(c) for c in node.children_by_field_name("name")]


def _has_self(function: Any) -> bool:
    params = function.child_by_field_name("parameters")
    return params is not None and any(c.type == "self_parameter" for c in params.named_children)


def _is_static(node: Any) -> bool:
    for child in node.children:
        if child.type == "static" or (child.type == "modifiers" and "static" in _text(child)):
            return True
    return False


def _js_type(decl: TypeDecl, node: Any, *, js: bool) -> None:
    decl.open = js
    for clause in _named(node, "class_heritage"):
        for extends in _named(clause, "extends_clause"):
            value = extends.child_by_field_name("value")
            decl.bases.append(_text(value) if value is not None else "?")
    for clause in _named(node, "extends_type_clause"):
        decl.bases += [type_name(t) or "?" for t in clause.named_children]
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else ():
        name = member.child_by_field_name("name")
        if member.type == "index_signature":
            decl.open = True
        elif node.type == "enum_declaration":
            decl.statics.add(_text(name if name is not None else member))
        elif name is not None and name.type in (
            "property_identifier",
            "private_property_identifier",
        ):
            target = decl.statics if _is_static(member) else decl.members
            if _text(name) == "constructor":
                _constructor_fields(decl, member)
                continue
            target.add(_text(name))
            kind = type_name(member.child_by_field_name("type"))
            if kind:
                decl.fields[_text(name)] = kind
        elif name is not None and name.type != "computed_property_name":
            decl.open = True


def _constructor_fields(decl: TypeDecl, method: Any) -> None:
    """TypeScript's parameter properties (`constructor(private w: W)`); JS's `this.x = ...`."""
    params = method.child_by_field_name("parameters")
    for param in params.named_children if params is not None else ():
        if any(
            c.type in ("accessibility_modifier", "override_modifier") for c in param.children
        ) or (any(c.type == "readonly" for c in param.children)):
            pattern = param.child_by_field_name("pattern")
            if pattern is not None:
                decl.members.add(_text(pattern))
                kind = type_name(param.child_by_field_name("type"))
                if kind:
                    decl.fields[_text(pattern)] = kind
    if decl.open:  # JS: fields are made by assignment
        stack = [method]
        while stack:
            node = stack.pop()
            if node.type == "member_expression":
                target = node.child_by_field_name("object")
                prop = node.child_by_field_name("property")
                if target is not None and target.type == "this" and prop is not None:
                    decl.members.add(_text(prop))
            stack.extend(node.named_children)


def _go_type(decl: TypeDecl, node: Any) -> None:
    body = node.child_by_field_name("type")
    if body is None:
        return
    if body.type == "struct_type":
        for fields in _named(body, "field_declaration_list"):
            for item in _named(fields, "field_declaration"):
                kind = type_name(item.child_by_field_name("type"))
                names = _names_of(item)
                if not names:  # embedded: its name is a field, its members promoted
                    decl.bases.append(kind or "?")
                    names = [kind.rsplit(".", 1)[-1]] if kind else []
                for name in names:
                    decl.members.add(name)
                    if kind:
                        decl.fields[name] = kind
    elif body.type == "interface_type":
        for item in body.named_children:
            if item.type == "method_elem":
                decl.members.add(_text(item.child_by_field_name("name")))
            elif item.type == "type_elem":
                decl.bases += [type_name(t) or "?" for t in item.named_children]


def _rust_type(decl: TypeDecl, node: Any) -> None:
    decl.open = True  # (trait methods implemented anywhere, derives, Deref)
    body = node.child_by_field_name("body")
    for item in body.named_children if body is not None else ():
        name = item.child_by_field_name("name")
        if item.type == "field_declaration" and name is not None:
            decl.members.add(_text(name))
            kind = type_name(item.child_by_field_name("type"))
            if kind:
                decl.fields[_text(name)] = kind
        elif item.type == "enum_variant" and name is not None:
            decl.statics.add(_text(name))
        elif item.type in ("function_item", "function_signature_item") and name is not None:
            (decl.members if _has_self(item) else decl.statics).add(_text(name))
        elif item.type in ("const_item", "associated_type") and name is not None:
            decl.statics.add(_text(name))
    if body is not None and body.type == "ordered_field_declaration_list":
        decl.members.update(str(i) for i in range(len(body.named_children)))


def _java_type(decl: TypeDecl, node: Any) -> None:
    superclass = node.child_by_field_name("superclass")
    if superclass is not None:
        decl.bases += [type_name(t) or "?" for t in superclass.named_children]
    for clause in ("interfaces", "extends_interfaces"):
        found = node.child_by_field_name(clause)
        if found is None and clause == "extends_interfaces":
            found = next(_named(node, "extends_interfaces"), None)
        for types in _named(found, "type_list") if found is not None else ():
            decl.bases += [type_name(t) or "?" for t in types.named_children]
    body = node.child_by_field_name("body")
    items = list(body.named_children) if body is not None else []
    for extra in [i for i in items if i.type == "enum_body_declarations"]:
        items += extra.named_children
    params = node.child_by_field_name("parameters")  # a record's components
    for param in params.named_children if params is not None else ():
        name = param.child_by_field_name("name")
        if name is not None:
            decl.members.add(_text(name))
    for item in items:
        static = _is_static(item) or node.type == "interface_declaration"
        if item.type == "field_declaration" or item.type == "constant_declaration":
            kind = type_name(item.child_by_field_name("type"))
            for declarator in item.children_by_field_name("declarator"):
                name = _text(declarator.child_by_field_name("name"))
                (decl.statics if static else decl.members).add(name)
                if kind:
                    decl.fields[name] = kind
        elif item.type == "method_declaration":
            name = _text(item.child_by_field_name("name"))
            (decl.statics if _is_static(item) else decl.members).add(name)
        elif item.type == "enum_constant" or item.type in _CLASSES:
            decl.statics.add(_text(item.child_by_field_name("name")))


def _js_import(out: Outline, node: Any) -> None:
    source = node.child_by_field_name("source")
    spec = _text(source).strip("'\"`") if source is not None else ""
    for clause in _named(node, "import_clause"):
        for item in clause.named_children:
            if item.type == "namespace_import":
                alias = next(_named(item, "identifier"), None)
                if alias is not None:
                    out.namespaces[_text(alias)] = spec
            elif item.type == "named_imports":
                for one in _named(item, "import_specifier"):
                    name = _text(one.child_by_field_name("name"))
                    alias = one.child_by_field_name("alias")
                    out.imported[_text(alias) if alias is not None else name] = (spec, name)
            elif item.type == "identifier":
                out.imported[_text(item)] = (spec, "default")


def _js_export(out: Outline, node: Any) -> None:
    declaration = node.child_by_field_name("declaration")
    if declaration is not None:
        name = declaration.child_by_field_name("name")
        if name is not None:
            out.exports.add(_text(name))
        for declarator in _named(declaration, "variable_declarator"):
            out.exports.add(_text(declarator.child_by_field_name("name")))
        return
    if any(c.type == "default" for c in node.children):
        out.exports.add("default")
        return
    clauses = list(_named(node, "export_clause"))
    for clause in clauses:
        for one in _named(clause, "export_specifier"):
            alias = one.child_by_field_name("alias") or one.child_by_field_name("name")
            out.exports.add(_text(alias))
    if not clauses:
        out.open_exports = True  # export * from '...'


def _go_import(out: Outline, node: Any) -> None:
    path = node.child_by_field_name("path")
    spec = _text(path).strip('"`') if path is not None else ""
    alias = node.child_by_field_name("name")
    name = _text(alias) if alias is not None else spec.rsplit("/", 1)[-1]
    if name not in ("_", "."):
        out.namespaces[name] = spec


def _rust_module(out: Outline, node: Any, *, public: bool) -> None:
    if node.type == "mod_item":
        name = _text(node.child_by_field_name("name"))
        if node.child_by_field_name("body") is None:
            out.namespaces[name] = "mod " + name
        if public and any(c.type == "visibility_modifier" for c in node.children):
            out.exports.add(name)
        return
    argument = node.child_by_field_name("argument")
    if argument is None:
        return
    path = _text(argument)
    is_pub = public and any(c.type == "visibility_modifier" for c in node.children)
    if argument.type == "scoped_identifier":
        name = path.rsplit("::", 1)[-1]
        out.imported[name] = (path, name)
        if is_pub:
            out.exports.add(name)
    elif is_pub:
        out.open_exports = True  # (a glob, a list: more than read here)


def _rust_export(out: Outline, node: Any) -> None:
    if node.type.endswith("_item") and any(c.type == "visibility_modifier" for c in node.children):
        name = node.child_by_field_name("name")
        if name is not None:
            out.exports.add(_text(name))
    elif node.type == "macro_invocation":
        out.open_exports = True  # (a macro may define items)


def _variables(node: Any, lang: str) -> Iterator[tuple[str, str]]:
    """(name, "value:Type" | "()f" | "") for each variable the statement binds."""
    kind = node.type
    if kind == "variable_declarator" and lang in ("js", "ts"):
        name = node.child_by_field_name("name")
        if name is not None and name.type == "identifier":
            yield _text(name), _typed(node.child_by_field_name("type"), node, "value")
    elif kind == "short_var_declaration":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        values = list(right.named_children) if right is not None else []
        names = list(left.named_children) if left is not None else []
        for i, name in enumerate(names):
            value = values[i] if len(values) == len(names) else None
            yield _text(name), _typed(None, value, "") if value is not None else ""
    elif kind == "field_declaration" and lang == "java":  # (a method names its class's fields)
        annotation = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            yield _text(declarator.child_by_field_name("name")), _typed(annotation, declarator, "")
    elif kind == "var_spec" or kind == "let_declaration" or kind == "local_variable_declaration":
        annotation = node.child_by_field_name("type")
        if kind == "local_variable_declaration":
            for declarator in node.children_by_field_name("declarator"):
                explicit = None if _text(annotation) == "var" else annotation
                yield (
                    _text(declarator.child_by_field_name("name")),
                    _typed(explicit, declarator, "value"),
                )
            return
        names = [node.child_by_field_name("pattern")] if kind == "let_declaration" else []
        names += node.children_by_field_name("name")
        for name in names:
            if name is not None and name.type == "identifier":
                yield _text(name), _typed(annotation, node, "value")


def _typed(annotation: Any | None, holder: Any | None, value_field: str) -> str:
    """The type a variable gets from its annotation or its value, if the text says it."""
    kind = type_name(annotation) if annotation is not None else ""
    if kind:
        return "value:" + kind
    value = holder.child_by_field_name(value_field) if value_field and holder else holder
    for _ in range(3):
        if value is None:
            return ""
        if value.type == "unary_expression" and _text(value).startswith("&"):
            value = value.child_by_field_name("operand")
        elif value.type == "reference_expression":
            value = value.child_by_field_name("value")
        else:
            break
    if value is None:
        return ""
    if value.type in ("new_expression", "object_creation_expression"):
        made = value.child_by_field_name("constructor") or value.child_by_field_name("type")
        made_type = type_name(made) if made is not None else ""
        return "value:" + made_type if made_type and "<" not in _text(made) else ""
    if value.type in ("composite_literal", "struct_expression"):
        made = value.child_by_field_name("type") or value.child_by_field_name("name")
        return "value:" + type_name(made) if made is not None and type_name(made) else ""
    if value.type == "call_expression":
        function = value.child_by_field_name("function")
        if function is not None and function.type in ("identifier", "scoped_identifier"):
            return "()" + _text(function)
    return ""
