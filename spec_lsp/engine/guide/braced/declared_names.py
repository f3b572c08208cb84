"""What a statement binds or names, per language (declared.py's reader calls these): imports and
exports, variables and the type their text gives them, the names a pattern or an anonymous
function's parameters bind again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spec_lsp.engine.guide.braced.outline import Outline, named, node_text, type_name

BINDING_PLACES = {
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


def binding_place(node: Any) -> Any | None:
    field_name = BINDING_PLACES[node.type]
    place = node.child_by_field_name(field_name)
    if place is None and node.type == "arrow_function":
        place = node.child_by_field_name("parameter")
    if place is None or (
        node.type in ("let_declaration", "variable_declarator") and place.type == "identifier"
    ):
        return None
    return place


def pattern_names(node: Any, depth: int = 0) -> Iterator[str]:
    """The identifiers a parameter list or a pattern binds (type names left out)."""
    if node.type == "identifier":
        yield node_text(node)
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
            yield from pattern_names(child, depth + 1)


def loop_names(node: Any) -> Iterator[str]:
    target = node.child_by_field_name("left") or node.child_by_field_name("name")
    if target is not None and target.type == "identifier":
        yield node_text(target)
    elif target is not None:
        yield from (node_text(c) for c in target.named_children if c.type == "identifier")


def js_import(out: Outline, node: Any) -> None:
    source = node.child_by_field_name("source")
    spec = node_text(source).strip("'\"`") if source is not None else ""
    for clause in named(node, "import_clause"):
        for item in clause.named_children:
            if item.type == "namespace_import":
                alias = next(named(item, "identifier"), None)
                if alias is not None:
                    out.namespaces[node_text(alias)] = spec
            elif item.type == "named_imports":
                for one in named(item, "import_specifier"):
                    name = node_text(one.child_by_field_name("name"))
                    alias = one.child_by_field_name("alias")
                    out.imported[node_text(alias) if alias is not None else name] = (spec, name)
            elif item.type == "identifier":
                out.imported[node_text(item)] = (spec, "default")


def js_export(out: Outline, node: Any) -> None:
    declaration = node.child_by_field_name("declaration")
    if declaration is not None:
        name = declaration.child_by_field_name("name")
        if name is not None:
            out.exports.add(node_text(name))
        for declarator in named(declaration, "variable_declarator"):
            out.exports.add(node_text(declarator.child_by_field_name("name")))
        return
    if any(c.type == "default" for c in node.children):
        out.exports.add("default")
        return
    clauses = list(named(node, "export_clause"))
    for clause in clauses:
        for one in named(clause, "export_specifier"):
            alias = one.child_by_field_name("alias") or one.child_by_field_name("name")
            out.exports.add(node_text(alias))
    if not clauses:
        out.open_exports = True  # export * from '...'


def go_import(out: Outline, node: Any) -> None:
    path = node.child_by_field_name("path")
    spec = node_text(path).strip('"`') if path is not None else ""
    alias = node.child_by_field_name("name")
    name = node_text(alias) if alias is not None else spec.rsplit("/", 1)[-1]
    if name not in ("_", "."):
        out.namespaces[name] = spec


def java_import(out: Outline, node: Any) -> None:
    if any(c.type == "static" for c in node.children) or not node.named_children:
        return  # (a static member's import: not a type)
    path = node_text(node.named_children[0])
    if any(c.type == "asterisk" for c in node.children):
        out.star_imports.append(path)
    else:
        out.imported[path.rsplit(".", 1)[-1]] = (path, path.rsplit(".", 1)[-1])


def rust_module(out: Outline, node: Any, *, public: bool) -> None:
    if node.type == "mod_item":
        name = node_text(node.child_by_field_name("name"))
        if node.child_by_field_name("body") is None:
            out.namespaces[name] = "mod " + name
        if public and any(c.type == "visibility_modifier" for c in node.children):
            out.exports.add(name)
        return
    argument = node.child_by_field_name("argument")
    if argument is None:
        return
    is_pub = public and any(c.type == "visibility_modifier" for c in node.children)
    for name, path in rust_uses(argument, ""):
        out.imported[name] = (path, path.rsplit("::", 1)[-1])
        if is_pub:
            out.exports.add(name)
    if is_pub and "*" in node_text(argument):
        out.open_exports = True  # (a glob: more than read here)


def rust_uses(node: Any, prefix: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(the name in scope, its whole path) for each name a `use` brings in: `a::B`,
    `a::B as C`, `a::{B, c::D as E, self}` (a glob brings what is not read here)."""
    joined = prefix + "::" if prefix else ""
    if node.type == "scoped_identifier" or (node.type == "identifier" and depth > 0):
        path = joined + node_text(node)
        yield path.rsplit("::", 1)[-1], path
    elif node.type == "self" and prefix:
        yield prefix.rsplit("::", 1)[-1], prefix
    elif node.type == "use_as_clause":
        path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if path is not None and alias is not None:
            yield node_text(alias), (prefix if path.type == "self" else joined + node_text(path))
    elif node.type == "scoped_use_list" and depth < 4:
        path, items = node.child_by_field_name("path"), node.child_by_field_name("list")
        inner = joined + node_text(path) if path is not None else prefix
        for item in items.named_children if items is not None else ():
            yield from rust_uses(item, inner, depth + 1)
    elif node.type == "use_list" and depth < 4:
        for item in node.named_children:
            yield from rust_uses(item, prefix, depth + 1)


def rust_export(out: Outline, node: Any) -> None:
    if node.type.endswith("_item") and any(c.type == "visibility_modifier" for c in node.children):
        name = node.child_by_field_name("name")
        if name is not None:
            out.exports.add(node_text(name))
    elif node.type == "macro_invocation":
        out.open_exports = True  # (a macro may define items)


def variables(node: Any, lang: str) -> Iterator[tuple[str, str]]:
    """(name, "value:Type" | "()f" | "") for each variable the statement binds."""
    kind = node.type
    if kind == "variable_declarator" and lang in ("js", "ts"):
        name = node.child_by_field_name("name")
        if name is not None and name.type == "identifier":
            yield node_text(name), typed(node.child_by_field_name("type"), node, "value")
    elif kind == "short_var_declaration":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        values = list(right.named_children) if right is not None else []
        names = list(left.named_children) if left is not None else []
        for i, name in enumerate(names):
            value = values[i] if len(values) == len(names) else None
            yield node_text(name), typed(None, value, "") if value is not None else ""
    elif kind == "field_declaration" and lang == "java":  # (a method names its class's fields)
        annotation = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            yield (
                node_text(declarator.child_by_field_name("name")),
                typed(annotation, declarator, ""),
            )
    elif kind == "var_spec" or kind == "let_declaration" or kind == "local_variable_declaration":
        annotation = node.child_by_field_name("type")
        if kind == "local_variable_declaration":
            for declarator in node.children_by_field_name("declarator"):
                explicit = None if node_text(annotation) == "var" else annotation
                yield (
                    node_text(declarator.child_by_field_name("name")),
                    typed(explicit, declarator, "value"),
                )
            return
        names = [node.child_by_field_name("pattern")] if kind == "let_declaration" else []
        names += node.children_by_field_name("name")
        for name in names:
            if name is not None and name.type == "identifier":
                yield node_text(name), typed(annotation, node, "value")


def typed(annotation: Any | None, holder: Any | None, value_field: str) -> str:
    """The type a variable gets from its annotation or its value, if the text says it."""
    kind = type_name(annotation) if annotation is not None else ""
    if kind:
        return "value:" + kind
    value = holder.child_by_field_name(value_field) if value_field and holder else holder
    for _ in range(3):
        if value is None:
            return ""
        if value.type == "unary_expression" and node_text(value).startswith("&"):
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
        return "value:" + made_type if made_type and "<" not in node_text(made) else ""
    if value.type in ("composite_literal", "struct_expression"):
        made = value.child_by_field_name("type") or value.child_by_field_name("name")
        return "value:" + type_name(made) if made is not None and type_name(made) else ""
    if value.type in ("call_expression", "method_invocation"):
        return called(value)
    return ""


def called(call: Any) -> str:
    """ "()f" for a call of a function named `f`, `T.f`, `pkg.F` or `a::T::f` (its declared
    result is the variable's type: returns.py), "" for any other call."""
    function = call.child_by_field_name("function")
    if call.type == "method_invocation":  # Java: `T.f(..)`
        owner, name = call.child_by_field_name("object"), call.child_by_field_name("name")
        if owner is None or owner.type != "identifier" or name is None:
            return ""
        return f"(){node_text(owner)}.{node_text(name)}"
    if function is None:
        return ""
    if function.type in ("identifier", "scoped_identifier"):
        return "()" + node_text(function)
    if function.type in ("member_expression", "selector_expression"):  # TS T.f(..), Go pkg.F(..)
        owner = function.child_by_field_name("object") or function.child_by_field_name("operand")
        name = function.child_by_field_name("property") or function.child_by_field_name("field")
        if owner is not None and owner.type == "identifier" and name is not None:
            return f"(){node_text(owner)}.{node_text(name)}"
    return ""
