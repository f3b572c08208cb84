"""What the source says beyond Jedi's completions: the names a class, a module or the document
adds to a receiver's members, and whether something there can add names nobody can list.

Jedi completes what a class and its bases define; it leaves out what is made at run time. A
member set is complete (a hard mask) only where nothing can add to it, so the readers here
look, in the source of the classes behind a receiver (the class, its bases, its metaclass) and
of the module they are defined in, for:

- names they make that Jedi does not list: `__slots__` of literal strings, a literal
  `setattr(x, "name", ...)`, `Class.name = ...` in the class's module, what a dataclass gets;
- what makes the set open-ended (`dynamic`): a `setattr` or a write through `__dict__`/`vars()`
  with a name that is not a literal, on the class or on an instance of it (`self`, a local made
  by `cls()`; an instance of classes that all have literal slots takes no other name; a write
  on a parameter, a member or a local made otherwise is another object's, and one in
  `__setstate__` or a copy writes back names an instance had), a `__getattr__`,
  `__getattribute__` or `__setattr__` defined in source, `__slots__` made by an expression, a
  base that does not resolve, a class decorator that is not one of the few known to add nothing
  unlisted; a module that writes its `globals()` or itself through `sys.modules`.

In the document itself: every name used after a `.` on each receiver (`uses`: a name the file
already writes on a receiver, or on one of the same type, is allowed), the receivers a dynamic
write makes open-ended, and which names each function and class binds (`bindings`: a local
never falls back to an outer scope's receiver of the same text).

Jedi's inference values are read through its internals (a class's bases, its metaclass, its
syntax tree); where they change or fail, the set is taken as open-ended.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parso.tree import search_ancestor

from spec_lsp.engine.guide import scopes
from spec_lsp.engine.guide.python import buffers
from spec_lsp.engine.guide.scopes import Scope
from spec_lsp.engine.guide.table import SELF

# a class's file and where its definition starts; a module's file and (0, 0)
Ident = tuple[str, tuple[int, int]]

_ON_SELF = re.compile(r"(?<![\w.])(?:self|cls)\.([A-Za-z_]\w*)")
_ON_OWN_CLASS = re.compile(r"(?:(?<![\w.])type\(\s*self\s*\)|(?<![\w.])self\.__class__)\.(\w+)")
_HOOKS = re.compile(
    r"(?:^|\n)[ \t]*(?:(?:async[ \t]+)?def[ \t]+(?:__getattr__|__getattribute__|__setattr__)\b"
    r"|(?:__getattr__|__getattribute__|__setattr__)[ \t]*=)"
)
_WRITING = re.compile(r"setattr|__dict__|\bvars[ \t]*\(|\blocals[ \t]*\(")
_SLOTS = re.compile(r"(?:^|\n)[ \t]*__slots__[ \t]*(?::[^=\n]*)?=[ \t]*")
_LITERAL = re.compile(r"""^[rRuU]?(['"])([A-Za-z_]\w*)\1$""")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_ASSIGNED = re.compile(
    r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)"
)
_MODULE_DYNAMIC = re.compile(
    r"\bglobals\(\)\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault|__setitem__)\()"
    r"|\bsys\.modules\[\s*__name__\s*\]"
    r"|^(?:vars|locals)\(\)\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.update\()",
    re.M,
)
# what a local a class's method writes on was made from, where it is the class's own instance
# (or the class): `obj = cls()`, `new = object.__new__(cls)`, `copy.copy(self)`
_OWN = r"(?:cls|self|mcs|metacls|type\(\s*self\s*\)|object\.__new__|super\(|copy\.)"
# methods that write back attributes the instance (or another of its class) already had
RESTORING = frozenset({"__setstate__", "__copy__", "__deepcopy__", "__replace__"})
# class decorators known to add no member a completion would not list (a dataclass's own are
# added: DATACLASS); any other decorator may add anything
KNOWN_DECORATORS = frozenset(
    {
        "dataclass", "dataclasses.dataclass", "total_ordering", "functools.total_ordering",
        "final", "typing.final", "typing_extensions.final", "unique", "enum.unique",
        "runtime_checkable", "typing.runtime_checkable", "typing_extensions.runtime_checkable",
        "verify", "enum.verify",
    }
)  # fmt: skip
DATACLASS = frozenset({"__dataclass_fields__", "__dataclass_params__", "__match_args__"})


@dataclass(frozen=True)
class Facts:
    """What the code behind a receiver adds to Jedi's members."""

    on_self: frozenset[str] = frozenset()  # what the classes' bodies use on `self`/`cls`
    names: frozenset[str] = frozenset()  # other names they make (slots, patches, setattr)
    dynamic: bool = False  # something there can add names nobody can list
    own: frozenset[Ident] = frozenset()  # the receiver's own classes or module (in source)
    mro: frozenset[Ident] = frozenset()  # those and their bases (in source)


OPEN = Facts(dynamic=True)  # nothing could be read: open-ended


@dataclass(frozen=True)
class _Class:
    on_self: frozenset[str]
    names: frozenset[str]
    dynamic: bool  # something can add names to the class (and so to its instances)
    dynamic_instances: bool  # something can add names to an instance (unless slots forbid)
    slotted: bool  # `__slots__` of literal names without `__dict__`: an instance has no others


@dataclass
class Document:
    """What the document being analysed says, read once per analysis."""

    # (scope key, receiver) -> the names used after `receiver.`; the scope key is the class for
    # a chain opening with `self`/`cls`, else () (the whole file)
    uses: dict[tuple[Scope, str], set[str]] = field(default_factory=dict)
    dynamic: set[tuple[Scope, str]] = field(default_factory=set)  # receivers written dynamically
    bindings: dict[Scope, frozenset[str]] = field(default_factory=dict)  # names a scope binds
    twice: frozenset[str] = frozenset()  # names the module binds more than once
    # receiver -> the names assigned on it (`x.name = ...`, a literal `setattr`; not self's)
    assigned: dict[str, set[str]] = field(default_factory=dict)
    # writes whose target's type is read from Jedi: (line, column at the target's end, the
    # target, the name or None where dynamic)
    targets: list[tuple[int, int, str, str | None]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the document's


def document(text: str, module: Any) -> Document:
    """The document's uses, dynamic writes and bindings (`module`: its parso tree, or None)."""
    found = Document()
    uses: defaultdict[tuple[Scope, str], set[str]] = defaultdict(set)
    lines = found.lines = text.split("\n")
    for line, scope in zip(lines, scopes.each_line(lines)):
        for chain in _CHAIN.findall(line):
            parts = chain.split(".")
            where = scopes.enclosing_class(scope) if parts[0] in SELF else ()
            for i in range(1, len(parts)):
                uses[(where, ".".join(parts[:i]))].add(parts[i])
    found.uses = dict(uses)
    for receiver, name in _ASSIGNED.findall(text):
        if receiver.split(".", 1)[0] not in SELF:
            found.assigned.setdefault(receiver, set()).add(name)
    if module is None:
        return found
    try:
        found.bindings, found.twice = _bindings(module)
    except Exception:  # noqa: BLE001 (parso's tree not as read here: no scope binds anything)
        found.bindings, found.twice = {}, frozenset()
    if _WRITING.search(text):
        try:
            _document_writes(module, found)
        except Exception:  # noqa: BLE001 (as above: the writes found so far)
            pass
    return found


def _document_writes(module: Any, found: Document) -> None:
    for target, name, node in writes(module):
        if not target or target.split(".", 1)[0] in SELF or target.startswith("type("):
            continue  # (the class's own: its reading says)
        function: Any = search_ancestor(node, "funcdef")
        if function is not None and function.name.value in RESTORING:
            continue  # (a copy's, or a state written back: names an instance had)
        key: tuple[Scope, str] = ((), target)
        if name is None:
            found.dynamic.add(key)
        else:
            found.uses.setdefault(key, set()).add(name)
            found.assigned.setdefault(target, set()).add(name)
        if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", target):
            line, column = node.end_pos
            found.targets.append((line, column, target, name))


def _bindings(module: Any) -> tuple[dict[Scope, frozenset[str]], frozenset[str]]:
    """The names each function and class binds (parameters, assignments, loop and `with`
    targets, imports, definitions; less its `global`/`nonlocal` ones), and the names the module
    binds more than once."""
    bound: defaultdict[Scope, set[str]] = defaultdict(set)
    declared: defaultdict[Scope, set[str]] = defaultdict(set)
    at_module: defaultdict[str, int] = defaultdict(int)
    for name, leaves in module.get_used_names().items():
        for leaf in leaves:
            parent = leaf.parent
            if parent.type in ("global_stmt", "nonlocal_stmt"):
                declared[_scope_of(parent)].add(name)
                continue
            if parent.type == "trailer" or not leaf.is_definition():
                continue
            if parent.type in ("funcdef", "classdef") and parent.name is leaf:
                parent = parent.parent  # (a definition's name is its enclosing scope's)
            scope = _scope_of(parent)
            bound[scope].add(name)
            if not scope:
                at_module[name] += 1
    inner = {s: frozenset(n - declared.get(s, set())) for s, n in bound.items() if s}
    return inner, frozenset(n for n, count in at_module.items() if count > 1)


def _scope_of(node: Any) -> Scope:
    found: list[str] = []
    while node is not None:
        if node.type == "funcdef":
            found.append(f"def {node.name.value}")
        elif node.type == "classdef":
            found.append(f"class {node.name.value}")
        node = node.parent
    return tuple(reversed(found))


class Reader:
    """Reads the classes and modules behind receivers (each once per analysis): the document's
    from its text, the others from their files."""

    def __init__(self, text: str, path: str | None, twice: frozenset[str] = frozenset()) -> None:
        self.text, self.path, self.twice = text, path, twice
        self._classes: dict[Ident, _Class] = {}
        self._modules: dict[str, bool] = {}
        self._patches: dict[str, Patches] = {}

    def facts(self, inferred: list[Any]) -> Facts:
        """What the classes (or modules) behind the inferred names add, and whether they are
        open-ended."""
        try:
            return self._facts(inferred)
        except Exception:  # noqa: BLE001 (Jedi's internals not as read here: open-ended)
            return OPEN

    def _facts(self, inferred: list[Any]) -> Facts:
        on_self: set[str] = set()
        names: set[str] = set()
        own: set[Ident] = set()
        mro: set[Ident] = set()
        dynamic = False
        for name in inferred:
            kind = getattr(name, "type", "")
            if kind == "module":
                path = str(getattr(name, "module_path", None) or "")
                if path.endswith(".py"):
                    own.add((path, (0, 0)))
                    mro.add((path, (0, 0)))
                    dynamic |= self._module_dynamic(path)
                continue
            if kind not in ("class", "instance"):
                continue
            for value in name._name.infer():
                cls = value if value.is_class() else value.class_value
                if cls.py__name__() in self.twice and not _stub(cls):
                    dynamic = True  # (defined twice here: `if TYPE_CHECKING: ... else: ...`)
                first, slotted, writes_instances = True, True, False
                for ancestor in cls.py__mro__():
                    ident = _ident(ancestor)
                    if ident is None or _stub(ancestor):
                        first = False
                        slotted = slotted and ancestor.py__name__() == "object"
                        continue
                    if first:
                        own.add(ident)
                    first = False
                    mro.add(ident)
                    read = self._class(ancestor, ident)
                    on_self |= read.on_self
                    names |= read.names
                    dynamic |= read.dynamic
                    writes_instances |= read.dynamic_instances
                    slotted = slotted and read.slotted
                # (an instance of classes that all have slots takes no name a setattr gives)
                dynamic |= writes_instances and not slotted
                for meta in cls.get_metaclasses():
                    ident = _ident(meta)
                    if ident is not None and not _stub(meta):
                        read = self._class(meta, ident)
                        on_self |= read.on_self
                        names |= read.names
                        dynamic |= read.dynamic or read.dynamic_instances
        return Facts(frozenset(on_self), frozenset(names), dynamic, frozenset(own), frozenset(mro))

    def _class(self, cls: Any, ident: Ident) -> _Class:
        if ident not in self._classes:
            self._classes[ident] = self._read_class(cls, ident)
        return self._classes[ident]

    def _read_class(self, cls: Any, ident: Ident) -> _Class:
        node = cls.tree_node
        code = node.get_code(include_prefix=False)
        on_self = set(_ON_SELF.findall(code)) | set(_ON_OWN_CLASS.findall(code))
        names: set[str] = set()
        dynamic = bool(_HOOKS.search(code))
        for lazy in cls.py__bases__():  # (a base that does not resolve: anything)
            if not list(lazy.infer()):
                dynamic = True
        for decorator in node.get_decorators():
            called = decorator.children[1].get_code(include_prefix=False)
            called = re.sub(r"\s+", "", called.split("(", 1)[0])
            if called not in KNOWN_DECORATORS:
                dynamic = True
            elif called.endswith("dataclass"):
                names |= DATACLASS
        slotted = instances = False
        if _SLOTS.search(code) is not None:
            found, literal = _slots(node)
            names |= found
            dynamic |= not literal
            slotted = literal and "__dict__" not in found
        if _WRITING.search(code):
            for target, name, leaf in writes(node):
                if name is not None:
                    names.add(name)
                    continue
                on = _written_on(target, leaf, node.name.value)
                instances |= on == "instance"
                dynamic |= on == "class"
        patched, open_ended = self._patched(ident[0], node.name.value)
        return _Class(
            frozenset(on_self),
            frozenset(names | patched),
            dynamic or open_ended,
            instances,
            slotted,
        )

    def _patched(self, path: str, class_name: str) -> tuple[frozenset[str], bool]:
        """`Class.name = ...` and `setattr(Class, ...)` in the class's module: the names, and
        whether a `setattr` there names one that is not a literal."""
        if path not in self._patches:
            if not path or (self.path is not None and _same(path, self.path)):
                self._patches[path] = _patches(self.text)
            else:
                self._patches[path] = _patches_in(path, _stamp(path))
        assigned, dynamic = self._patches[path]
        return assigned.get(class_name, frozenset()), class_name in dynamic

    def _module_dynamic(self, path: str) -> bool:
        if path not in self._modules:
            self._modules[path] = bool(_MODULE_DYNAMIC.search(self._text(path)))
        return self._modules[path]

    def _text(self, path: str) -> str:
        if not path or (self.path is not None and _same(path, self.path)):
            return self.text
        return source(path)


def source(path: str) -> str:
    """Another module's text (an open document's as the editor holds it), read once while its
    modification time holds."""
    edited = buffers.text(path)
    if edited is not None:
        return edited
    stamp = _stamp(path)
    return "" if stamp < 0 else _read(path, stamp)


def _stamp(path: str) -> int:
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return -1


# in a module's text: (receiver -> the names assigned on it, the receivers `setattr` gives a
# name that is not a literal)
Patches = tuple[dict[str, frozenset[str]], frozenset[str]]
_SETATTR = re.compile(r"(?<![\w.])setattr\(\s*([A-Za-z_][\w.]*)\s*,\s*([^,)]*)")


def _patches(text: str) -> Patches:
    assigned: defaultdict[str, set[str]] = defaultdict(set)
    for receiver, name in _ASSIGNED.findall(text):
        assigned[receiver].add(name)
    dynamic: set[str] = set()
    for receiver, name in _SETATTR.findall(text):
        match = _LITERAL.match(name.strip())
        if match:
            assigned[receiver].add(match.group(2))
        else:
            dynamic.add(receiver)
    return {r: frozenset(n) for r, n in assigned.items()}, frozenset(dynamic)


@functools.lru_cache(maxsize=16)
def _patches_in(path: str, stamp: int) -> Patches:
    return _patches(source(path))


@functools.lru_cache(maxsize=16)
def _read(path: str, stamp: int) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _ident(value: Any) -> Ident | None:
    node = getattr(value, "tree_node", None)
    if node is None or value.is_compiled():
        return None
    path = value.get_root_context().py__file__()
    return (str(path or ""), node.start_pos)


def _stub(value: Any) -> bool:
    if value.is_stub():
        return True
    path = value.get_root_context().py__file__()
    return path is not None and str(path).endswith(".pyi")


def _slots(node: Any) -> tuple[frozenset[str], bool]:
    """The names a class's `__slots__` lists, and whether they are all literal strings."""
    names: set[str] = set()
    literal = True
    for statement in node.get_suite().children:
        for expr in _statements(statement):
            if expr.type != "expr_stmt" or expr.children[0].get_code().strip() != "__slots__":
                continue
            found = _slot_names(expr.children[-1])
            if found is None:
                literal = False
            else:
                names.update(found)
    return frozenset(names), literal


def _statements(node: Any) -> Iterator[Any]:
    if node.type == "simple_stmt":
        yield from node.children
    else:
        yield node


def _slot_names(value: Any) -> list[str] | None:
    """The names a literal string, tuple, list, set or dict (its keys; `dict(a=...)` too)
    gives; None where it is not one."""
    if value.type in ("atom_expr", "power") and len(value.children) == 2:
        called, trailer = value.children
        if called.type == "name" and called.value == "dict" and trailer.children[0] == "(":
            args = [] if len(trailer.children) == 2 else _split(trailer.children[1])
            keywords = [a for a in args if a.type == "argument" and a.children[1] == "="]
            if len(keywords) != len(args):
                return None
            return [a.children[0].value for a in keywords]
        return None
    items: list[Any] = [value]
    if value.type == "atom" and len(value.children) == 2:
        items = []  # (`()`, `[]`)
    elif value.type == "atom" and len(value.children) == 3:
        inner = value.children[1]
        items = [inner]
        if inner.type in ("testlist_comp", "dictorsetmaker"):
            if any(c.type in ("sync_comp_for", "comp_for") for c in inner.children):
                return None  # (a comprehension)
            items = [c for c in inner.children if c.type != "operator"]
            if inner.type == "dictorsetmaker" and any(c == ":" for c in inner.children):
                items = inner.children[0::4]  # (the keys)
    elif value.type in ("testlist", "testlist_star_expr"):
        items = [c for c in value.children if c.type != "operator"]
    names = [_literal(item) for item in items]
    return None if None in names else [n for n in names if n is not None]


def writes(node: Any) -> Iterator[tuple[str, str | None, Any]]:
    """Under `node`, each `setattr(x, ...)` (or `__setattr__`) and each write through `__dict__`,
    `vars(x)` or `locals()`: (the target's code, the name written where it is a literal string
    else None, the node of the target, or the leaf where there is none)."""
    for leaf in _names(node, ("setattr", "__setattr__", "__dict__", "vars", "locals")):
        if leaf.value == "setattr":
            args = _call_args(leaf)
            if args is None:
                continue
            if len(args) < 2:
                yield "", None, leaf
                continue
            yield _code(args[0]), _literal(args[1]), args[0]
        elif leaf.value == "__setattr__":
            found = _bound_setattr(leaf)
            if found is not None:
                yield found
        elif leaf.value == "__dict__":
            atom, trailer = leaf.parent.parent, leaf.parent
            if leaf.parent.type != "trailer" or atom.type not in ("atom_expr", "power"):
                continue
            at = atom.children.index(trailer)
            if _written(atom, at):
                before = atom.children[:at]
                target = "".join(c.get_code(include_prefix=False) for c in before)
                yield target, None, before[-1] if before else leaf
        else:  # vars(x) / locals()
            args = _call_args(leaf)
            atom = leaf.parent
            if args is None or atom.type not in ("atom_expr", "power"):
                continue
            if _written(atom, atom.children.index(leaf) + 1):
                yield (_code(args[0]) if args else ""), None, args[0] if args else leaf


def _names(node: Any, values: tuple[str, ...]) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        children = getattr(current, "children", None)
        if children is not None:
            stack.extend(reversed(children))
        elif current.type == "name" and current.value in values:
            yield current


def _call_args(leaf: Any) -> list[Any] | None:
    """The arguments of the call `leaf(...)`, or None where `leaf` is not called."""
    trailer = leaf.get_next_sibling()
    if trailer is None or trailer.type != "trailer" or trailer.children[0] != "(":
        return None
    if len(trailer.children) == 2:
        return []
    inner = trailer.children[1]
    if inner.type == "arglist":
        return [c for c in inner.children if c != ","]
    return [inner]


def _bound_setattr(leaf: Any) -> tuple[str, str | None, Any] | None:
    """`object.__setattr__(x, name, v)` (x the target), `super().__setattr__(name, v)` and
    `x.__setattr__(name, v)`."""
    trailer = leaf.parent
    if trailer.type != "trailer" or trailer.parent.type not in ("atom_expr", "power"):
        return None
    atom = trailer.parent
    at = atom.children.index(trailer)
    if at + 1 >= len(atom.children):
        return None
    call = atom.children[at + 1]
    if call.type != "trailer" or call.children[0] != "(":
        return None
    args = [] if len(call.children) == 2 else _split(call.children[1])
    before = "".join(c.get_code(include_prefix=False) for c in atom.children[:at]).strip()
    if before in ("object", "type") or before[:1].isupper():  # (unbound: the target first)
        if len(args) < 2:
            return "", None, leaf
        return _code(args[0]), _literal(args[1]), args[0]
    target = "self" if before.startswith("super(") else before
    if not args:
        return target, None, leaf
    return target, _literal(args[0]), atom.children[at - 1] if at else leaf


def _split(inner: Any) -> list[Any]:
    if inner.type == "arglist":
        return [c for c in inner.children if c != ","]
    return [inner]


def _written(atom: Any, at: int) -> bool:
    """Whether `atom`'s trailers from `at` on write into the mapping the part before them is:
    `[k] = v`, `.update(...)`, `.setdefault(...)`, `.__setitem__(...)`, or the whole
    assigned (`x.__dict__ = d`, `|=`)."""
    rest = atom.children[at + 1 :] if at < len(atom.children) else []
    if not rest:
        return _assigned(atom)
    first = rest[0]
    if first.type != "trailer":
        return False
    if first.children[0] == "[":
        return len(rest) == 1 and _assigned(atom)
    if first.children[0] == "." and len(rest) >= 2:
        method = first.children[1].value
        return method in ("update", "setdefault", "__setitem__", "__ior__") and (
            rest[1].children[0] == "("
        )
    return False


def _assigned(node: Any) -> bool:
    """`node` is an assignment's target (`=`, an augmented or an annotated assignment)."""
    parent = node.parent
    if parent is None or parent.type != "expr_stmt":
        return False
    children = parent.children
    at = next((i for i, c in enumerate(children) if c is node), -1)
    if at < 0 or at + 1 >= len(children):
        return False
    after = children[at + 1]
    return after.type == "annassign" or (after.type == "operator" and after.value.endswith("="))


def _code(node: Any) -> str:
    return str(node.get_code(include_prefix=False)).strip()


def _literal(node: Any) -> str | None:
    match = _LITERAL.match(_code(node))
    return match.group(2) if match else None


def _written_on(target: str, leaf: Any, class_name: str) -> str:
    """What a write with a name that is not a literal, in a class's body, is on: "class" (the
    class: `cls`, `type(self)`, the class's name, its body's `vars()`), "instance" (`self`, or a
    local made from the class: `obj = cls()`), or "" (something else: a parameter other than
    a method's first, `setattr(namespace, dest, v)`; a member of something, `setattr(self.
    options, k, v)`; a local made otherwise; or a method that writes back attributes an
    instance had, `__setstate__`)."""
    compact = re.sub(r"\s+", "", target)
    function: Any = search_ancestor(leaf, "funcdef", "lambdef")
    if function is not None and function.type == "funcdef":
        if function.name.value in RESTORING:
            return ""
    if compact in ("", "cls", "type(self)", "type(cls)", "self.__class__", class_name, "mcs"):
        return "class"
    if compact == "self":
        return "instance"
    if not re.fullmatch(r"[A-Za-z_]\w*", compact):
        member = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]]*\])+", compact)
        return "" if member else "class"  # (a call's result: anything)
    if function is None:
        return "class"  # (in the class's body itself)
    params = [p.name.value for p in function.get_params()]
    method = function.type == "funcdef" and _method(function)
    if method and params and compact == params[0]:
        return "class" if function.name.value in ("__new__", "__init_subclass__") else "instance"
    if compact in params:
        return ""
    code = function.get_code(include_prefix=False)
    name = re.escape(compact)
    made = re.findall(rf"(?<![\w.]){name}[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*([^\n]*)", code)
    own = rf"(?:{_OWN}|{re.escape(class_name)}\b)"
    return "instance" if any(re.match(own, value) for value in made) else ""


def _method(function: Any) -> bool:
    """A function defined right in a class's body (its first parameter is the instance or
    the class), not a staticmethod."""
    parent = function.parent
    if parent.type == "decorated":
        names = [d.get_code(include_prefix=False) for d in function.get_decorators()]
        if any("staticmethod" in n for n in names):
            return False
        parent = parent.parent
    return parent.type == "suite" and parent.parent.type == "classdef"
