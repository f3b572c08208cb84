"""The members a type declares in its own body, per language (declared.py's reader calls these):
JS/TS classes, interfaces and enums; Go structs and interfaces; Rust structs, enums and traits;
Java classes, interfaces, enums and records.
"""

from __future__ import annotations

import re
from typing import Any

from spec_lsp.engine.guide.braced.outline import (
    TypeDecl,
    has_self,
    is_static,
    named,
    names_of,
    node_text,
    type_name,
)

CLASSES = {
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


def js_type(decl: TypeDecl, node: Any, *, js: bool) -> None:
    decl.open = js
    for clause in named(node, "class_heritage"):
        for extends in named(clause, "extends_clause"):
            value = extends.child_by_field_name("value")
            decl.bases.append(node_text(value) if value is not None else "?")
    for clause in named(node, "extends_type_clause"):
        decl.bases += [type_name(t) or "?" for t in clause.named_children]
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else ():
        name = member.child_by_field_name("name")
        if member.type in ("call_signature", "construct_signature"):
            decl.callable = True  # (a function: `call`, `apply`, `bind`, ...)
        elif member.type == "index_signature":
            decl.open = decl.indexed = True
        elif node.type == "enum_declaration":
            decl.statics.add(node_text(name if name is not None else member))
        elif name is not None and name.type in (
            "property_identifier",
            "private_property_identifier",
        ):
            if node_text(name) == "constructor":
                constructor_fields(decl, member)
                continue
            kind = type_name(member.child_by_field_name("type"))
            decl.add_field(node_text(name), kind, static=is_static(member))
        elif name is not None and name.type != "computed_property_name":
            decl.open = True


def constructor_fields(decl: TypeDecl, method: Any) -> None:
    """TypeScript's parameter properties (`constructor(private w: W)`); JS's `this.x = ...`."""
    params = method.child_by_field_name("parameters")
    for param in params.named_children if params is not None else ():
        if any(
            c.type in ("accessibility_modifier", "override_modifier") for c in param.children
        ) or (any(c.type == "readonly" for c in param.children)):
            pattern = param.child_by_field_name("pattern")
            if pattern is not None:
                decl.add_field(node_text(pattern), type_name(param.child_by_field_name("type")))
    if decl.open:  # JS: fields are made by assignment
        stack = [method]
        while stack:
            node = stack.pop()
            if node.type == "member_expression":
                target = node.child_by_field_name("object")
                prop = node.child_by_field_name("property")
                if target is not None and target.type == "this" and prop is not None:
                    decl.members.add(node_text(prop))
            stack.extend(node.named_children)


def go_type(decl: TypeDecl, node: Any) -> None:
    body = node.child_by_field_name("type")
    if body is None:
        return
    if body.type == "struct_type":
        for fields in named(body, "field_declaration_list"):
            for item in named(fields, "field_declaration"):
                kind = type_name(item.child_by_field_name("type"))
                names = names_of(item)
                if not names:  # embedded: its name is a field, its members promoted
                    decl.bases.append(kind or "?")
                    names = [kind.rsplit(".", 1)[-1]] if kind else []
                for name in names:
                    decl.add_field(name, kind)
    elif body.type in ("type_identifier", "qualified_type", "generic_type"):
        decl.underlying = type_name(body) or "?"  # a defined type: `type A B`
    elif body.type == "interface_type":
        for item in body.named_children:
            if item.type == "method_elem":
                decl.members.add(node_text(item.child_by_field_name("name")))
            elif item.type == "type_elem":
                decl.bases += [type_name(t) or "?" for t in item.named_children]


def rust_type(decl: TypeDecl, node: Any) -> None:
    decl.open = True  # (trait methods implemented anywhere, macros, Deref)
    decl.traits += derived(node)
    for bounds in named(node, "trait_bounds"):  # a trait's supertraits: `trait A: B + C`
        decl.bases += [type_name(t) for t in bounds.named_children if type_name(t)]
    body = node.child_by_field_name("body")
    for item in body.named_children if body is not None else ():
        name = item.child_by_field_name("name")
        if item.type == "field_declaration" and name is not None:
            decl.add_field(node_text(name), type_name(item.child_by_field_name("type")))
        elif item.type == "enum_variant" and name is not None:
            decl.statics.add(node_text(name))
        elif item.type in ("function_item", "function_signature_item") and name is not None:
            (decl.members if has_self(item) else decl.statics).add(node_text(name))
        elif item.type in ("const_item", "associated_type") and name is not None:
            decl.statics.add(node_text(name))
    if body is not None and body.type == "ordered_field_declaration_list":
        decl.members.update(str(i) for i in range(len(body.named_children)))


_DERIVE = re.compile(r"\bderive\s*\(([^()]*)\)")


def derived(node: Any) -> list[str]:
    """The traits the `#[derive(..)]` attributes above a Rust item name (`Clone`, `Debug`;
    a path's last segment: `std::fmt::Debug` is `Debug`), `cfg_attr`'s too."""
    found: list[str] = []
    above = node.prev_named_sibling
    while above is not None and above.type in ("attribute_item", "line_comment", "block_comment"):
        if above.type == "attribute_item":
            for listed in _DERIVE.finditer(node_text(above)):
                found += [t.strip().rsplit("::", 1)[-1] for t in listed.group(1).split(",")]
        above = above.prev_named_sibling
    return [t for t in found if t]


def java_type(decl: TypeDecl, node: Any) -> None:
    superclass = node.child_by_field_name("superclass")
    if superclass is not None:
        decl.bases += [type_name(t) or "?" for t in superclass.named_children]
    for clause in ("interfaces", "extends_interfaces"):
        found = node.child_by_field_name(clause)
        if found is None and clause == "extends_interfaces":
            found = next(named(node, "extends_interfaces"), None)
        for types in named(found, "type_list") if found is not None else ():
            decl.bases += [type_name(t) or "?" for t in types.named_children]
    body = node.child_by_field_name("body")
    items = list(body.named_children) if body is not None else []
    for extra in [i for i in items if i.type == "enum_body_declarations"]:
        items += extra.named_children
    params = node.child_by_field_name("parameters")  # a record's components
    for param in params.named_children if params is not None else ():
        name = param.child_by_field_name("name")
        if name is not None:
            decl.members.add(node_text(name))
    for item in items:
        static = is_static(item) or node.type == "interface_declaration"
        if item.type == "field_declaration" or item.type == "constant_declaration":
            kind = type_name(item.child_by_field_name("type"))
            for declarator in item.children_by_field_name("declarator"):
                decl.add_field(
                    node_text(declarator.child_by_field_name("name")), kind, static=static
                )
        elif item.type == "method_declaration":
            name = node_text(item.child_by_field_name("name"))
            (decl.statics if is_static(item) else decl.members).add(name)
        elif item.type == "enum_constant" or item.type in CLASSES:
            decl.statics.add(node_text(item.child_by_field_name("name")))
