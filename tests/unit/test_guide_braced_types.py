"""Names the brace languages' guide types beyond a declaration or a constructor: a variable
assigned from a factory (its declared result), a type alias (TS/Go/Rust) and Go's defined type,
a Java class imported from another package of the source tree, a Rust path of several
segments (`crate::a::T::`, `super::T::`, a `use ... as`)."""

from __future__ import annotations

from tests.unit.test_guide_braced import analysed, at, missing

# -- factories: a variable is the type its factory's declaration returns --------------------------
TS_FOO = """export class Foo {
  size = 0;
  grow(): void {}
  static of(n: number): Foo { return new Foo(); }
  static create(): Foo { return new Foo(); }
  static bar(): Bar { return new Bar(); }
  static loose() { return new Foo(); }
}
export class Bar {
  width = 1;
}
export function makeFoo(): Foo { return new Foo(); }
"""
TS_USE = """import { Foo, makeFoo } from './foo';

export function run(): void {
  const c = Foo.of(1);
  const d = Foo.create();
  const b = Foo.bar();
  const m = makeFoo();
  const l = Foo.loose();
  HERE;
}
"""


def test_typescript_factories_type_the_variable(tmp_path):
    table, text = analysed(tmp_path, "use.ts", {"foo.ts": TS_FOO, "use.ts": TS_USE})
    foo = at(table, text, "HERE", "c")
    assert {"size", "grow"} <= foo[0] and "width" not in foo[0] and foo[1]
    assert at(table, text, "HERE", "d") == foo
    assert at(table, text, "HERE", "m") == foo
    assert "width" in at(table, text, "HERE", "b")[0]
    assert missing(table, text, "HERE", "l")  # (no declared result: not typed)


JAVA_ITEM = """package shop;

public class Item {
    int count;
    public static Item of(int n) { return new Item(); }
    public static Box boxed() { return null; }
    public static Item pick(int n) { return null; }
    public static Box pick(String s) { return null; }
    public Item copy() { return this; }
}
"""
JAVA_BOX = "package shop;\n\npublic class Box {\n    int depth;\n}\n"
JAVA_USE = """package shop;

class Use {
    void run() {
        var x = Item.of(3);
        var b = Item.boxed();
        var y = x.copy();
        var p = Item.pick(1);
        HERE;
    }
}
"""


def test_a_typescript_function_imported_from_a_package_is_not_the_files_own(tmp_path):
    source = (
        "import { makeFoo } from 'elsewhere';\nimport { Foo } from './foo';\n\n"
        "function run(): void {\n  const m = makeFoo();\n  HERE;\n}\n"
        "function makeFoo(): Foo { return new Foo(); }\n"
    )
    table, text = analysed(tmp_path, "use.ts", {"foo.ts": TS_FOO, "use.ts": source})
    assert missing(table, text, "HERE", "m")


def test_java_var_from_a_static_factory_is_its_declared_type(tmp_path):
    files = {"shop/Item.java": JAVA_ITEM, "shop/Box.java": JAVA_BOX, "shop/Use.java": JAVA_USE}
    table, text = analysed(tmp_path, "shop/Use.java", files)
    names, complete = at(table, text, "HERE", "x")
    assert {"count", "copy", "of", "equals"} <= names and complete
    assert "depth" in at(table, text, "HERE", "b")[0]
    assert missing(table, text, "HERE", "y")  # (an instance method's call: not read)
    assert missing(table, text, "HERE", "p")  # (overloads of different results)


GO_ITEMS = """package items

type Item struct {
\tName string
}

func (i *Item) Price() int { return 0 }

func New(name string) *Item { return &Item{Name: name} }
"""
GO_USE = """package cart

import "example.com/shop/items"

func Run() {
\tc := items.New("x")
\td := items.Missing()
\tHERE
}
"""


def test_go_a_packages_constructor_types_the_variable(tmp_path):
    files = {
        "go.mod": "module example.com/shop\n",
        "items/items.go": GO_ITEMS,
        "cart/cart.go": GO_USE,
    }
    table, text = analysed(tmp_path, "cart/cart.go", files)
    assert at(table, text, "HERE", "c") == (frozenset({"Name", "Price"}), True)
    assert missing(table, text, "HERE", "d")


RUST_LIB = "pub mod shapes;\npub mod app;\n"
RUST_SHAPES = """pub struct Shape {
    pub width: u32,
}

pub struct Frame {
    pub depth: u32,
}

impl Shape {
    pub const MAX: u32 = 9;
    pub fn new() -> Self { Shape { width: 0 } }
    pub fn framed(&self) -> u32 { 0 }
    pub fn frame() -> Frame { Frame { depth: 0 } }
}

impl Frame {
    pub fn empty() -> Self { Frame { depth: 0 } }
}
"""
RUST_APP = """use crate::shapes::Shape as Sh;
use crate::shapes;
use super::shapes::{Frame as Fr, self as sh};

pub type Alias = Sh;

pub fn run(a: Alias) {
    let c = crate::shapes::Shape::new();
    let f = Sh::frame();
    let whole = crate::shapes::Shape::HERE;
    let up = super::shapes::Shape::
    let via = shapes::Shape::
    let other = sh::Frame::
    Sh::
    Fr::
}
"""
RUST_FILES = {
    "Cargo.toml": "",
    "src/lib.rs": RUST_LIB,
    "src/shapes.rs": RUST_SHAPES,
    "src/app.rs": RUST_APP,
}


def test_rust_factories_across_modules(tmp_path):
    table, text = analysed(tmp_path, "src/app.rs", RUST_FILES)
    names, complete = at(table, text, "HERE", "c")
    assert {"width", "framed"} <= names and not complete  # (a Rust type: never complete)
    assert "depth" in at(table, text, "HERE", "f")[0]


# -- Rust paths of several segments and `use ... as` ------------------------------------------
def test_rust_paths_of_several_segments_name_a_types_associated_items(tmp_path):
    table, text = analysed(tmp_path, "src/app.rs", RUST_FILES)
    statics = at(table, text, "HERE", "crate::shapes::Shape::")[0]
    assert {"new", "MAX", "frame"} <= statics
    assert at(table, text, "HERE", "super::shapes::Shape::")[0] == statics
    assert at(table, text, "HERE", "shapes::Shape::")[0] == statics
    assert at(table, text, "HERE", "Sh::")[0] == statics
    assert {"empty", "from"} <= at(table, text, "HERE", "Fr::")[0]  # (`From<T> for T`: any type)
    assert missing(table, text, "HERE", "crate::nowhere::Shape::")
    assert missing(table, text, "HERE", "std::fmt::Display::")


def test_rust_super_paths_are_not_read_where_the_file_has_inline_modules(tmp_path):
    inline = (
        RUST_APP + "\n#[cfg(test)]\nmod tests {\n    fn t() {\n        super::Other::\n    }\n}\n"
    )
    files = {**RUST_FILES, "src/app.rs": inline}
    table, text = analysed(tmp_path, "src/app.rs", files)
    assert missing(table, text, "HERE", "super::shapes::Shape::")  # (whose `super`?)
    assert "new" in at(table, text, "HERE", "crate::shapes::Shape::")[0]


def test_a_rust_use_list_with_self_and_as(tmp_path):
    table, text = analysed(tmp_path, "src/app.rs", RUST_FILES)
    assert at(table, text, "HERE", "sh::Frame::")[0] == at(table, text, "HERE", "Fr::")[0]
    assert "empty" in at(table, text, "HERE", "sh::Frame::")[0]
    assert "depth" in at(table, text, "HERE", "f")[0]  # (`Sh::frame()` returns a Frame)


# -- aliases ------------------------------------------------------------------------------------
TS_ALIAS = """import { Foo } from './foo';

type Local = Foo;
export type Shown = Foo;

function f(a: Local, b: Shown): void {
  HERE;
}
"""


def test_a_typescript_alias_is_the_type_it_names(tmp_path):
    table, text = analysed(tmp_path, "alias.ts", {"foo.ts": TS_FOO, "alias.ts": TS_ALIAS})
    foo = at(table, text, "HERE", "a")
    assert {"size", "grow"} <= foo[0] and foo[1]
    assert at(table, text, "HERE", "b") == foo


def test_a_typescript_alias_imported_from_another_file(tmp_path):
    use = "import { Shown } from './alias';\n\nfunction g(s: Shown): void {\n  HERE;\n}\n"
    files = {"foo.ts": TS_FOO, "alias.ts": TS_ALIAS, "use.ts": use}
    table, text = analysed(tmp_path, "use.ts", files)
    assert {"size", "grow"} <= at(table, text, "HERE", "s")[0]


GO_TYPES = """package a

type Base struct {
\tName string
\tinner
}

type inner struct{ depth int }

func (b *Base) Own() {}

func (i *inner) Promoted() {}

type Same = Base

type Defined Base

func (d Defined) Extra() {}

type Count int

func (c Count) Double() Count { return c * 2 }

func use(s *Same, d *Defined, n Count) {
\tHERE
}
"""


def test_go_alias_has_the_methods_a_defined_type_does_not(tmp_path):
    table, text = analysed(tmp_path, "a.go", {"a.go": GO_TYPES})
    same, complete = at(table, text, "HERE", "s")
    assert {"Name", "depth", "inner", "Own", "Promoted"} <= same and complete
    defined, complete = at(table, text, "HERE", "d")
    assert {"Name", "depth", "inner", "Promoted", "Extra"} <= defined and complete
    assert "Own" not in defined  # (a defined type does not have its underlying's methods)
    assert at(table, text, "HERE", "n") == (frozenset({"Double"}), True)


def test_go_alias_declared_in_another_file_of_the_package(tmp_path):
    use = "package a\n\nfunc other(s *Same) {\n\tHERE\n}\n"
    table, text = analysed(tmp_path, "b.go", {"a.go": GO_TYPES, "b.go": use})
    assert {"Name", "Own", "Promoted"} <= at(table, text, "HERE", "s")[0]


def test_go_defined_type_over_a_type_from_elsewhere_is_not_guided(tmp_path):
    # (its underlying type's fields are not read: a set without them would forbid them)
    source = 'package a\n\nimport "sync"\n\ntype M sync.Mutex\n\nfunc (m *M) F() {\n\tm.HERE\n}\n'
    table, text = analysed(tmp_path, "a.go", {"a.go": source})
    assert missing(table, text, "HERE", "m")


def test_a_rust_alias_is_the_type_it_names(tmp_path):
    table, text = analysed(tmp_path, "src/app.rs", RUST_FILES)
    assert {"width", "framed"} <= at(table, text, "HERE", "a")[0]
    assert {"new", "MAX"} <= at(table, text, "HERE", "Alias::")[0]


# -- Java: classes of other packages of the source tree ----------------------------------------
JAVA_MODEL = """package com.acme.model;

public class Order {
    public int total;
    public void close() {}
    public static class Line { public int qty; }
}
"""
JAVA_UTIL = """package com.acme.util;

public class Clock {
    public long now() { return 0; }
}
"""
JAVA_APP = """package com.acme.app;

import com.acme.model.Order;
import com.acme.model.Order.Line;
import com.acme.util.*;
import static com.acme.util.Clock.now;

public class App extends Order {
    void run(Order o, Clock c, Line l, Missing m, Order.Line n) {
        HERE;
    }
}
"""
JAVA_FILES = {
    "src/com/acme/model/Order.java": JAVA_MODEL,
    "src/com/acme/util/Clock.java": JAVA_UTIL,
    "src/com/acme/app/App.java": JAVA_APP,
}


def test_java_imports_of_a_class_and_of_a_package_resolve_in_the_source_tree(tmp_path):
    table, text = analysed(tmp_path, "src/com/acme/app/App.java", JAVA_FILES)
    order, complete = at(table, text, "HERE", "o")
    assert {"total", "close", "equals"} <= order and complete
    assert {"now", "hashCode"} <= at(table, text, "HERE", "c")[0]
    assert "qty" in at(table, text, "HERE", "l")[0]
    assert "qty" in at(table, text, "HERE", "n")[0]  # (`Order.Line`: a nested class)
    this, complete = at(table, text, "HERE", "this")
    assert {"run", "total", "close"} <= this and complete  # (its base imported)
    assert missing(table, text, "HERE", "m")


def test_java_imports_reach_a_module_beside_the_source_root(tmp_path):
    files = {
        "lib/mod.model/com/acme/model/Order.java": JAVA_MODEL,
        "lib/mod.util/com/acme/util/Clock.java": JAVA_UTIL,
        "lib/mod.app/com/acme/app/App.java": JAVA_APP,
    }
    table, text = analysed(tmp_path, "lib/mod.app/com/acme/app/App.java", files)
    assert "close" in at(table, text, "HERE", "o")[0]
    assert "now" in at(table, text, "HERE", "c")[0]


def test_a_java_file_outside_its_package_folders_resolves_only_beside_it(tmp_path):
    files = {"Order.java": JAVA_MODEL.replace("package com.acme.model;", "package x;"),
             "App.java": JAVA_APP}  # fmt: skip
    table, text = analysed(tmp_path, "App.java", files)
    assert missing(table, text, "HERE", "c")
