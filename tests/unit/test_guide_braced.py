"""Names that exist in the brace languages (JS/TS, Go, Rust, Java): the trigger, the receivers
tree-sitter's analysis resolves in small workspaces written here, whether a member set is
complete (a hard mask) or not (a bias or nothing), and the monitor reading such a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spec_lsp.engine.guide import scopes, trigger
from spec_lsp.engine.guide.braced.resolve import RUST_EVERY
from spec_lsp.engine.guide.braced.structural import Structural, StructuralAnalyser
from spec_lsp.engine.guide.monitor import Monitor
from spec_lsp.engine.guide.vocabulary import NameTokens


def analysed(root: Path, name: str, files: dict[str, str]) -> tuple[Structural, str]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    path = str(root / name)
    text = files[name]
    return StructuralAnalyser().analyse(text, version=1, path=path), text


def at(table: Structural, text: str, marker: str, receiver: str) -> tuple[frozenset[str], bool]:
    """The members of `receiver` where `marker` stands in the text (the text cut there)."""
    cut = text[: text.index(marker)]
    found = table.lookup(table.scope_at(cut), receiver)
    assert found is not None, (receiver, table.scope_at(cut))
    return found.names, found.complete


def missing(table: Structural, text: str, marker: str, receiver: str) -> bool:
    cut = text[: text.index(marker)]
    return table.lookup(table.scope_at(cut), receiver) is None


# -- the trigger -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    return this.", ("this", "", "")),
        ("    this.#ca", ("this", "#ca", "")),
        ("\tv := s.cache.ge", ("s.cache", "ge", "")),
        ("    let x = Buf::", ("Buf::", "", "")),
        ("    Self::wi", ("Self::", "wi", "")),
        ("fn get<'a>(&'a self) -> &'a u8 { self.", ("self", "", "")),
        ("    const k = store", ("store", "", ".")),
    ],
)
def test_brace_trigger_points(line, expected):
    point = trigger.find(line, "braces")
    assert point is not None
    assert (point.receiver, point.written, point.sep) == expected


@pytest.mark.parametrize(
    "line",
    ["  // call this.", '  s := "a.', "  const t = `x.", "class Foo", "func (s *S) Get",
     "  return", "impl Foo"],
)  # fmt: skip
def test_no_brace_trigger_in_comments_strings_or_definitions(line):
    assert trigger.find(line, "braces") is None


def test_scopes_of_a_brace_language_are_the_less_indented_lines():
    text = (
        "export class Store<\n  T,\n> extends Base {\n  load(key: string)\n  {\n"
        "    if (key) {\n      // this.\n      return this."
    )
    assert scopes.enclosing_lines(text) == (
        "export class Store<",
        "load(key: string)",
        "if (key) {",
    )


# -- TypeScript / JavaScript ------------------------------------------------------------------------
TS_BASE = """export class Base {
  protected items: string[] = [];
  count(): number {
    return this.items.length;
  }
}
export function helper(): void {}
export const VERSION = 1;
"""
TS_MAIN = """import * as util from './base';
import { Base } from './base.js';

class Cache {
  size = 0;
  static create(): Cache {
    return this.HERE_STATIC;
  }
}

export class Store extends Base {
  static instances = 0;
  private cache: Cache;
  constructor(private readonly name: string, public other: Cache) {
    super();
    this.cache = new Cache();
  }

  load(key: string, given: Cache): string {
    const c = new Cache();
    const unknown = make();
    function inner() {
      return this.HERE_INNER;
    }
    return this.HERE;
  }
}
"""


def test_typescript_receivers_resolve_with_inherited_members(tmp_path):
    table, text = analysed(tmp_path, "main.ts", {"base.ts": TS_BASE, "main.ts": TS_MAIN})
    names, complete = at(table, text, "HERE;", "this")
    assert {"load", "cache", "other", "name", "count", "items", "toString"} <= names and complete
    assert "size" not in names
    assert at(table, text, "HERE;", "c")[0] >= {"size"}
    assert at(table, text, "HERE;", "given") == at(table, text, "HERE;", "c")
    assert at(table, text, "HERE;", "this.cache")[0] >= {"size"}
    assert at(table, text, "HERE;", "util") == (frozenset({"Base", "helper", "VERSION"}), True)
    statics, complete = at(table, text, "HERE;", "Store")
    assert "instances" in statics and "load" not in statics and complete
    assert "create" in at(table, text, "HERE;", "Cache")[0]


def test_typescript_unknowns_are_left_alone(tmp_path):
    table, text = analysed(tmp_path, "main.ts", {"base.ts": TS_BASE, "main.ts": TS_MAIN})
    assert missing(table, text, "HERE;", "unknown")  # (a call's result: not typed)
    assert missing(table, text, "HERE_INNER", "this")  # (a function's own `this`)
    assert missing(table, text, "HERE_STATIC", "this")  # (a static method's: the class)
    assert missing(table, text, "HERE;", "key")  # (a string: not a workspace type)
    assert missing(table, text, "HERE;", "this.items")


@pytest.mark.parametrize(
    ("files", "name"),
    [
        ({"a.js": "class A {\n  constructor() { this.x = 1; }\n  f() {\n    this.HERE\n  }\n}\n"}, "a.js"),
        ({"a.ts": "class A {\n  x = 1;\n  f() {\n    this.HERE\n  }\n}\n"}, "a.ts"),  # (a script)
    ],
)  # fmt: skip
def test_an_open_class_is_incomplete(tmp_path, files, name):
    table, text = analysed(tmp_path, name, files)
    names, complete = at(table, text, "HERE", "this")
    assert not complete and "f" in names


@pytest.mark.parametrize(
    ("files", "name"),
    [
        ({"a.ts": "import { Far } from 'far';\nexport class A extends Far {\n  x = 1;\n  f() {\n    this.HERE\n  }\n}\n"}, "a.ts"),
        ({"a.ts": "export class A {\n  [key: string]: number;\n  f() {\n    this.HERE\n  }\n}\n"}, "a.ts"),
    ],
)  # fmt: skip
def test_a_class_with_members_not_read_here_is_not_guided(tmp_path, files, name):
    # (a library's base class, an index signature: a set of the rest would forbid its names)
    table, text = analysed(tmp_path, name, files)
    assert missing(table, text, "HERE", "this")


# -- Go -------------------------------------------------------------------------------------------
GO_MOD = "module example.com/shop\n\ngo 1.21\n"
GO_ITEMS = """package items

type Item struct {
\tName  string
\tprice int
}

func (i *Item) Price() int { return i.price }

func New(name string) *Item { return &Item{Name: name} }

const Max = 3
"""
GO_CART_METHODS = """package cart

func (c *Cart) Total() int { return 0 }
"""
GO_CART = """package cart

import (
\t"fmt"
\t"example.com/shop/items"
)

type Cart struct {
\tlog
\tfirst *items.Item
\tcount int
}

type log struct{ lines []string }

func (l *log) Add(s string) { l.lines = append(l.lines, s) }

func NewCart() *Cart { return &Cart{} }

func (c *Cart) Add(it *items.Item) {
\tother := NewCart()
\tvar spare Cart
\tfmt.Println(c.count)
\tc.HERE
}
"""
GO_FILES = {
    "go.mod": GO_MOD,
    "items/items.go": GO_ITEMS,
    "cart/methods.go": GO_CART_METHODS,
    "cart/cart.go": GO_CART,
}


def test_go_receivers_methods_from_the_package_embedded_fields_and_packages(tmp_path):
    table, text = analysed(tmp_path, "cart/cart.go", GO_FILES)
    names, complete = at(table, text, "HERE", "c")
    assert {"first", "count", "log", "lines", "Add", "Total"} <= names and complete
    assert at(table, text, "HERE", "other") == (names, True)
    assert at(table, text, "HERE", "spare") == (names, True)
    assert at(table, text, "HERE", "it") == (frozenset({"Name", "price", "Price"}), True)
    assert at(table, text, "HERE", "c.first")[0] == frozenset({"Name", "price", "Price"})
    assert at(table, text, "HERE", "items") == (frozenset({"Item", "New", "Max"}), True)
    assert missing(table, text, "HERE", "fmt")  # (not a workspace package)


def test_go_embedding_a_type_from_elsewhere_is_not_guided(tmp_path):
    # (what it promotes, `Lock`, is not read here)
    files = {"a.go": "package a\n\nimport \"sync\"\n\ntype A struct {\n\tsync.Mutex\n\tn int\n}\n\nfunc (a *A) F() {\n\ta.HERE\n}\n"}  # fmt: skip
    table, text = analysed(tmp_path, "a.go", files)
    assert missing(table, text, "HERE", "a")


# -- Rust -----------------------------------------------------------------------------------------
RUST = """use std::fmt;

pub struct Buf {
    data: Vec<u8>,
    pos: usize,
}

pub enum Kind { Small, Large(usize) }

impl Buf {
    pub const LIMIT: usize = 8;
    pub fn new() -> Self { Buf { data: Vec::new(), pos: 0 } }
    pub fn len(&self) -> usize {
        let other = Buf::new();
        let made = Buf { data: vec![], pos: 1 };
        self.HERE
    }
}

impl fmt::Display for Buf {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
}
"""


def test_rust_self_paths_and_constructors_resolve_but_never_complete(tmp_path):
    table, text = analysed(tmp_path, "src/buf.rs", {"Cargo.toml": "", "src/buf.rs": RUST})
    names, complete = at(table, text, "HERE", "self")
    assert {"data", "pos", "len", "fmt"} <= names and not complete
    assert at(table, text, "HERE", "other")[0] == names
    assert at(table, text, "HERE", "made")[0] == names
    assert {"new", "LIMIT"} <= at(table, text, "HERE", "Self::")[0]
    assert {"Small", "Large"} <= at(table, text, "HERE", "Kind::")[0]
    assert missing(table, text, "HERE", "Buf")  # (a type's name takes `::`, not `.`)


# -- Java -----------------------------------------------------------------------------------------
JAVA_BASE = """package shop;

public class Base {
    protected int size;
    public int size() { return size; }
}
"""
JAVA_MAIN = """package shop;

public class Store extends Base {
    public static final int LIMIT = 3;
    private Base spare;

    static Store open() { return new Store(); }

    void fill(Base other) {
        Store local = new Store();
        var made = new Store();
        this.HERE;
    }
}
"""


def test_java_receivers_with_the_base_beside_and_objects_methods(tmp_path):
    files = {"shop/Base.java": JAVA_BASE, "shop/Store.java": JAVA_MAIN}
    table, text = analysed(tmp_path, "shop/Store.java", files)
    names, complete = at(table, text, "HERE", "this")
    assert {"fill", "spare", "size", "LIMIT", "equals", "hashCode"} <= names and complete
    assert at(table, text, "HERE", "local") == (names, True)
    assert at(table, text, "HERE", "made") == (names, True)
    assert "size" in at(table, text, "HERE", "other")[0]
    assert "size" in at(table, text, "HERE", "spare")[0]  # (a field, by its bare name)
    assert {"LIMIT", "open", "class"} <= at(table, text, "HERE", "Store")[0]
    assert {"this", "super"} <= at(table, text, "HERE", "Store")[0]  # (`Store.this.x`)
    assert not {"class", "this", "super"} & names


# -- the monitor on a brace language ------------------------------------------------------------
VOCAB = [b"load", b"cache", b"size", b"count", b"invented", b"(", b".", b" ", b"\n", b"#", b"#ca", b"lo"]  # fmt: skip


def kept(table: Structural, text: str, out: list[int] | None = None) -> list[bytes]:
    monitor = Monitor(
        NameTokens(VOCAB), table, text=text, scope=table.scope_at(text), syntax=table.syntax
    )
    row = monitor.guide(np.zeros(len(VOCAB), dtype=np.float32), out or [])
    return [VOCAB[i] for i in np.flatnonzero(np.isfinite(row) & (row == 0))]


def test_the_monitor_masks_a_complete_set_and_leaves_comments_alone(tmp_path):
    table, text = analysed(tmp_path, "main.ts", {"base.ts": TS_BASE, "main.ts": TS_MAIN})
    cut = text[: text.index("HERE;")]
    allowed = kept(table, cut)
    assert {b"load", b"cache", b"count", b"lo"} <= set(allowed)
    assert b"invented" not in allowed and b"size" not in allowed
    assert b"invented" in kept(table, cut[: -len("this.")] + "// this.")
    assert b"invented" in kept(table, cut[: -len("this.")] + "/* this.")


def test_a_private_name_may_begin_with_its_hash(tmp_path):
    source = "export class A {\n  #cache = 1;\n  f() {\n    this.HERE\n  }\n}\n"
    table, text = analysed(tmp_path, "a.ts", {"a.ts": source})
    allowed = kept(table, text[: text.index("HERE")])
    assert b"#" in allowed and b"#ca" in allowed and b"invented" not in allowed


def test_an_incomplete_set_is_not_masked_without_a_bias(tmp_path):
    table, text = analysed(tmp_path, "src/buf.rs", {"Cargo.toml": "", "src/buf.rs": RUST})
    assert b"invented" in kept(table, text[: text.index("HERE")])


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("a.go", "package a\n\ntype T struct{ n int }\n\nfunc (v *T) F() {\n\tg(func(v other.Value) {\n\t\tv.HERE\n\t})\n}\n"),
        ("a.ts", "class T {\n  n = 1;\n  f(v: T) {\n    list.map((v) => {\n      v.HERE\n    });\n  }\n}\n"),
        ("a.rs", "struct T { n: u8 }\nimpl T {\n    fn f(v: &T) {\n        if let Some(v) = g() {\n            v.HERE\n        }\n    }\n}\n"),
        ("A.java", "class T {\n    int n;\n    void f(T v) {\n        list.forEach(v -> {\n            v.HERE\n        });\n    }\n}\n"),
    ],
)  # fmt: skip
def test_a_name_an_anonymous_function_or_a_pattern_binds_again_is_not_known(tmp_path, name, source):
    table, text = analysed(tmp_path, name, {name: source})
    assert missing(table, text, "HERE", "v")


# -- in the engine: the bias an incomplete set gets by default ------------------------------------
RUST_SHAPE = "pub struct Shape {\n    width: u32,\n    height: u32,\n}\n\nimpl Shape {\n    fn grow(&self) -> u32 {\n        self."  # fmt: skip


@pytest.mark.parametrize(("bias", "guided"), [(None, False), (0.0, False), (100.0, True)])
def test_a_rust_types_incomplete_set_is_left_alone_unless_guide_bias_sets_one(
    tmp_path, bias, guided
):
    # (what an incomplete set may miss, a bias forbids: a trait's method, a derived one)
    from spec_lsp.engine import CancelToken, CompletionRequest
    from tests.unit.test_guide_engine import engine_at, first_name

    document = RUST_SHAPE + "\n    }\n}\n"  # (the editor holds the file, the cursor in it)
    (tmp_path / "shape.rs").write_text(document)
    uri = (tmp_path / "shape.rs").as_uri()
    engine = engine_at(tmp_path, guide_bias=bias)
    engine.document_changed(uri, document)
    assert engine.stores.analyses.wait(uri, 60)
    request = CompletionRequest(prefix=RUST_SHAPE, document_id=uri, max_tokens=12, language="rust")
    found = engine.complete(request, CancelToken())
    # (the fake model writes `x` after `self.`: Shape has no x; what every type has, it has)
    members = {"width", "height", "grow", *RUST_EVERY}
    assert (first_name(found.text) in members) == guided, found.text


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("a.ts", ""),
        ("a.go", "\x00\xff{{{ func ((( "),
        ("a.rs", "impl impl impl {"),
        ("a.java", "class {"),
    ],
)
def test_odd_text_gives_an_empty_answer_not_an_error(tmp_path, name, source):
    table, text = analysed(tmp_path, name, {name: source})
    assert table.lookup(table.scope_at(text), "this") is None and table.done


def test_a_typescript_function_not_exported_is_not_a_modules_member(tmp_path):
    # (Go's rule, a capital first letter exports, is Go's alone)
    files = {
        "lib.ts": "export function helper() {}\nfunction Hidden() {}\nexport const VERSION = 1;\n",
        "main.ts": "import * as lib from './lib';\nlib.HERE;\n",
    }
    table, text = analysed(tmp_path, "main.ts", files)
    assert at(table, text, "HERE;", "lib") == (frozenset({"helper", "VERSION"}), True)
