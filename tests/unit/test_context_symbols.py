"""Definitions per file from tree-sitter, one generic rule across grammars, and the index by
name that other files' definitions are looked up in."""

from __future__ import annotations

import threading

import pytest

from spec_lsp.engine.context import symbols
from spec_lsp.engine.context.symbols import SymbolIndex, around, definitions

PYTHON = '''import os
from .shapes import area

LIMIT = 10
RATE: float = 0.5


@dataclass
@register("x")
class Circle(Shape):
    """A circle."""

    radius: float = 1.0

    def area(self):
        local = 2
        def inner():
            return local
        return inner()

    @property
    def diameter(self):
        return 2 * self.radius


def scale(
    shape,
    factor,
):
    result = shape
    return result


if TYPE_CHECKING:
    def checked(): ...
'''


def table(path: str, text: str) -> list[tuple[str, str, int, int, str]]:
    return [(d.name, d.kind, d.start_line, d.end_line, d.parent) for d in definitions(path, text)]


def test_python_definitions_with_decorators_methods_and_module_assignments() -> None:
    assert table("m.py", PYTHON) == [
        ("LIMIT", "assignment", 3, 4, ""),
        ("RATE", "assignment", 4, 5, ""),
        ("Circle", "class_definition", 7, 23, ""),  # from its first decorator
        ("area", "function_definition", 14, 19, "Circle"),  # not `local`, not `inner`
        ("diameter", "function_definition", 20, 23, "Circle"),  # with @property
        ("scale", "function_definition", 25, 31, ""),
        ("checked", "function_definition", 34, 35, ""),  # under a top-level `if`
    ]


def test_the_head_of_a_definition_ends_where_its_body_starts() -> None:
    found = {d.name: d for d in definitions("m.py", PYTHON)}
    assert found["Circle"].head_end == 10  # decorators and `class Circle(Shape):`
    assert found["scale"].head_end == 29  # the signature over four lines
    assert found["LIMIT"].head_end == 4  # no body: all of it


JAVASCRIPT = (
    "function foo(a) { return a }\n"
    "export class Bar extends Base {\n"
    "  method(x) {\n"
    "    const inside = 1\n"
    "    return x\n"
    "  }\n"
    "}\n"
    "const baz = (x) => {\n"
    "  return x + 1\n"
    "};\n"
)
GO = (
    "package main\n"
    'import f "fmt"\n'
    "type Point struct {\n\tX int\n}\n"
    "func (p Point) Norm() float64 {\n\tq := 1\n\treturn 0\n}\n"
    "func New() *Point { return nil }\n"
    "const (\n\tA = 1\n\tB = 2\n)\n"
)
RUST = (
    "#[derive(Debug)]\n"
    "pub struct S {\n    x: i32,\n}\n"
    "impl S {\n    pub fn new() -> S {\n        let y = 1;\n        S { x: y }\n    }\n}\n"
    "trait T {\n    fn t(&self);\n}\n"
    "const K: i32 = 1;\n"
    "use std::fmt;\n"
)
# name kind lines [parent]
EXPECTED = {
    # functions, classes and their methods, a const holding a function (from `const`), a class
    # with its `export`; not the local `inside`
    "a.js": """
        foo function_declaration 0-1
        Bar class_declaration 1-7
        method method_definition 2-6 Bar
        baz variable_declarator 7-10
    """,
    # types (not their fields), functions, methods, grouped constants; not the import's alias
    "a.go": """
        Point type_spec 2-5
        Norm method_declaration 5-9
        New function_declaration 9-10
        A const_spec 11-12
        B const_spec 12-13
    """,
    # items, the methods of an impl (named by its type), a trait's signatures; not `use`
    "a.rs": """
        S struct_item 1-4
        new function_item 5-9 S
        T trait_item 10-13
        t function_signature_item 11-12 T
        K const_item 13-14
    """,
}


@pytest.mark.parametrize(("path", "source"), [("a.js", JAVASCRIPT), ("a.go", GO), ("a.rs", RUST)])
def test_javascript_go_and_rust_by_the_same_rule(path: str, source: str) -> None:
    rows = [
        f"{n} {k} {start}-{end} {parent}".strip()
        for n, k, start, end, parent in table(path, source)
    ]
    assert rows == [line.strip() for line in EXPECTED[path].strip().splitlines()]


def test_typescript_interfaces_types_and_tsx() -> None:
    source = "interface Shape {\n  area(): number\n}\ntype Id = string;\nenum Color { Red }\n"
    assert [(n, k) for n, k, *_ in table("a.ts", source)] == [
        ("Shape", "interface_declaration"),
        ("area", "method_signature"),
        ("Id", "type_alias_declaration"),
        ("Color", "enum_declaration"),
    ]
    assert [n for n, *_ in table("a.tsx", "export function App() { return <div/> }\n")] == ["App"]


def test_java_and_c_and_cpp_by_the_same_rule() -> None:
    java = "class A {\n  int f;\n  A() {}\n  void m() { int local = 1; }\n}\n"
    assert table("A.java", java) == [
        ("A", "class_declaration", 0, 5, ""),
        ("m", "method_declaration", 3, 4, "A"),  # not the field, not the constructor
    ]
    c = (
        "#ifndef A_H\n#define A_H\n"
        "struct pt { int x; };\n"
        "struct pt origin;\n"
        "int add(int a, int b);\n"
        "static int *make(void) { int t = 0; return 0; }\n"
        "#endif\n"
    )
    assert [(n, k) for n, k, *_ in table("a.h", c)] == [
        ("A_H", "preproc_def"),
        ("pt", "struct_specifier"),  # once: `struct pt origin;` uses it
        ("origin", "declaration"),
        ("add", "declaration"),
        ("make", "function_definition"),  # its name at the end of the declarator chain
    ]
    cpp = (
        "namespace ns {\nclass C {\n public:\n  int f() { return 1; }\n};\n}\nvoid ns::C::g() {}\n"
    )
    assert [(n, p) for n, _, _, _, p in table("a.cpp", cpp)] == [
        ("ns", ""),
        ("C", "ns"),
        ("f", "C"),
        ("g", ""),
    ]


def test_a_language_without_a_grammar_has_no_definitions() -> None:
    assert definitions("notes.txt", "def f(): pass\n") == ()
    assert definitions("Makefile", "all:\n\techo hi\n") == ()


def test_a_grammar_that_does_not_load_means_no_definitions(monkeypatch) -> None:
    monkeypatch.setitem(symbols.GRAMMARS, ".zz", ("tree_sitter_no_such_grammar", "language"))
    assert definitions("a.zz", "anything") == ()


def test_broken_code_still_gives_what_parses() -> None:
    source = "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    pass\n"
    names = [d.name for d in definitions("m.py", source)]
    assert "ok" in names and "Fine" in names


def test_around_a_place_the_names_used_in_code_and_those_bound() -> None:
    text = PYTHON + "\n\ndef use(values):\n    # area in a comment, LIMIT in a string\n"
    text += '    total = scale(values, "LIMIT") + os.sep.join(area)\n    return tot'
    line = text.count("\n")
    found = around("m.py", text, (line - 3, line + 1), (line, len("    return tot")))
    assert found is not None
    used, bound = found
    assert [(u.name, u.line - line, u.receiver) for u in used] == [
        ("use", -3, None),
        ("values", -3, None),
        ("total", -1, None),
        ("scale", -1, None),
        ("values", -1, None),
        ("os", -1, None),
        ("sep", -1, "os"),
        ("join", -1, ""),  # its receiver is no plain name
        ("area", -1, None),
        # not `tot`, the word being typed; nothing from the comment and the string
    ]
    assert {"values", "total", "Circle", "scale", "LIMIT", "area"} <= bound
    assert "local" not in bound  # a local of another function
    assert "os" not in bound and "join" not in bound


def test_around_binds_the_locals_of_the_functions_holding_the_lines() -> None:
    line = PYTHON.splitlines().index("    return result")
    found = around("m.py", PYTHON, (line, line + 1), (line, 0))
    assert found is not None
    assert {"shape", "factor", "result"} <= found[1]
    assert around("notes.txt", "x = 1", (0, 1), (0, 0)) is None


def test_the_index_looks_names_up_across_files_and_forgets_removed_ones() -> None:
    index = SymbolIndex()
    index.update("/p/a.py", "def shared():\n    pass\n\nclass A:\n    pass\n")
    index.update("/p/b.py", "def shared():\n    return 2\n")
    assert [(p, d.start_line) for p, d in index.lookup("shared")] == [
        ("/p/a.py", 0),
        ("/p/b.py", 0),
    ]
    assert index.text("/p/b.py") == "def shared():\n    return 2\n"
    index.update("/p/a.py", "class A:\n    pass\n")  # shared() is gone from a.py
    assert [p for p, _ in index.lookup("shared")] == ["/p/b.py"]
    assert [d.name for d in index.definitions("/p/a.py")] == ["A"]
    index.remove("/p/b.py")
    assert index.lookup("shared") == []
    assert index.memory()["files"] == 1 and index.memory()["definitions"] == 1


def test_the_same_text_is_not_parsed_again() -> None:
    index = SymbolIndex()
    text = "def f():\n    pass\n"
    index.update("/p/a.py", text)
    index.update("/p/a.py", text)
    assert index.parsed == 1


def test_the_index_takes_updates_from_several_threads() -> None:
    index = SymbolIndex()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(60):
                index.update(f"/p/{i % 7}.py", f"def f{n}_{i}():\n    pass\n")
                index.lookup(f"f{n}_{i}")
                if i % 5 == 0:
                    index.remove(f"/p/{i % 7}.py")
        except BaseException as error:  # pragma: no cover - shown by the assert
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for path in index.paths():  # every name maps back to the file's current definitions
        for d in index.definitions(path):
            assert (path, d) in index.lookup(d.name)


@pytest.mark.parametrize("path", ["m.py", "a.js", "a.go"])
def test_empty_files(path: str) -> None:
    assert definitions(path, "") == ()
