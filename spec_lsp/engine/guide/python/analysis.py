"""Jedi's answer for one version of a Python file, prepared off the request path.

For each receiver the file dereferences (`x.` with `x` a chain of names), each module it
imports from (`from m import`) and each package an import names a module of (`from a.b.c`:
`a`'s submodules and `a.b`'s), the members Jedi completes there, keyed by the scope the
occurrence is in (scopes.py) and the receiver's text: a lookup while decoding is two dict
reads. A mask that forbids a name that exists is worse than none (the model writes a
contortion, `cfg.__getattribute__("timeout")`), so a set is `complete` (a hard mask) only where
nothing can add to it: every type Jedi infers for the receiver is a module, class or instance
defined in source (a .py file) without `__getattr__` (a stub's, a compiled module's or an
unresolved one's is not), and the code behind it makes nothing at run time that nobody can
list (unlisted.py: a dynamic `setattr` or `__dict__` write on the class, its bases or its
instances, `__getattribute__`/`__setattr__`, slots made by an expression, a base that does not
resolve, an unknown class decorator; a module that writes its own globals).

A class's members are Jedi's and every name its body, its bases' and its metaclass's read or
write on `self`/`cls`: Jedi does not list an attribute set through another name
(`self = object.__new__(cls)`, a `__slots__` class's) or one a mixin expects its subclasses to
set (tkinter's `Misc` reads `self.tk`), and the mask must not forbid a name the class itself
uses. They also take in what the class's metaclass gives it (an enum's `__members__`), the
names its code makes (literal slots, `Class.name = ...` in its module, a literal `setattr`),
and, the union rule, every name the document uses after a `.` on the same receiver text or on a
receiver of the same type or a base of it (`cfg.timeout = 30` outside the class).

A name a function binds (a parameter, a local) is that function's: the table records what each
scope binds, and a lookup does not fall back to an outer scope's receiver of the same text.

Jedi's inference is pure Python and takes milliseconds to seconds per receiver: the receivers
nearest the cursor first, new ones before those an earlier version had, within a time budget.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from inspect import Parameter
from pathlib import Path

import jedi
import parso
import parso.cache
import parso.utils

from spec_lsp.cache_dirs import cache_subdir
from spec_lsp.engine.guide import scopes
from spec_lsp.engine.guide.python import buffers as open_documents
from spec_lsp.engine.guide.python import unlisted
from spec_lsp.engine.guide.python.unlisted import Document, Facts, Ident, Reader, source
from spec_lsp.engine.guide.table import NO_HOOKS, SELF, Hooks, Key, Members, Table, key_of, keyed

# Jedi keeps what it pickles (its parses of other modules, compiled modules' answers) in
# spec-lsp's cache folder, not its own under ~/.cache: spec-lsp writes nowhere else
jedi.settings.cache_directory = str(cache_subdir("jedi", "SPEC_LSP_JEDI_DIR"))

# Python 3.11 compiling on two threads at once can fail ("AST constructor recursion depth
# mismatch", in whichever thread): parso calls ast.literal_eval on the same constant at every
# file it reads, and on its grammars' literals once. The constants' values are kept, and the
# grammars Jedi uses built here, on the thread that loads the engine: the analysis thread then
# compiles nothing but a docstring's literal now and then.
parso.utils.literal_eval = functools.lru_cache(maxsize=256)(parso.utils.literal_eval)  # type: ignore[assignment]
for _version in ("3.13", f"{sys.version_info.major}.{sys.version_info.minor}"):
    parso.load_grammar(version=_version)

_DEREF = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*(?:[A-Za-z_][\w.]*)?)[ \t]+import[ \t]*", re.M)
# an import statement's dotted module path, each `.` in it a place where a submodule is named
_IMPORTING = re.compile(r"^[ \t]*(?:from|import)[ \t]+([A-Za-z_][\w.]*)")
# Jedi's inference keeps process-wide state and is not safe from two threads at once (two
# engines in one process, a benchmark's and a test's): one analysis at a time
_JEDI = threading.Lock()
NEAR = 40  # lines either side of the cursor whose receivers are asked again after an edit
FIRST = 8  # receivers (the nearest the cursor) after which what is ready is published
EVERY_S = 2.0  # then at most this often
NOT_MEMBERS = ("from ", "module ", "call ")  # the keys that are not a receiver's `x.`
Kinds = tuple[frozenset[Ident], frozenset[Ident]]  # a receiver's own classes, and their bases
Target = tuple[str, str | None, str]  # a write's target, the name written, the line's text
UNION = True  # the union rule adds the document's names (False: a benchmark's Jedi-only variant)


@dataclass(frozen=True)
class Occurrence:
    key: Key
    line: int  # 1-based, as Jedi counts
    column: int  # just after the `.` (a member) or after `import ` (an import)
    name_end: int  # the receiver's last name (or the module's) ends here: infer there (-1: a call)


def occurrences(text: str) -> Iterator[Occurrence]:
    """Every dereference of a chain of names, every `from m import` and every package an import
    names a submodule of, with its scope key
    (strings and comments included: Jedi finds nothing there)."""
    lines = text.split("\n")
    for number, (line, scope) in enumerate(zip(lines, scopes.each_line(lines)), start=1):
        importing = _IMPORTING.match(line)
        if importing:  # (`from a.b.c import`: the submodules of `a` and of `a.b`)
            path, start = importing.group(1), importing.start(1)
            for dot in (i for i, c in enumerate(path) if c == "." and i and path[i - 1] != "."):
                key: Key = ((), key_of("module", path[:dot]))
                yield Occurrence(key, number, start + dot + 1, start + dot)
        imported = _FROM.match(line)
        if imported:
            key = ((), key_of("import", imported.group(1)))
            yield Occurrence(key, number, imported.end(), imported.end(1))
            continue
        if importing or line.lstrip().startswith("#"):
            continue
        for found in _CALL.finditer(line):
            if not re.search(r"(?:^|\s)(?:def|class)\s+$", line[: found.start()]):
                callee = found.group(1)
                key = (keyed(scope, callee), key_of("keyword", callee))
                yield Occurrence(key, number, found.end(), -1)
        for found in _DEREF.finditer(line):
            receiver = found.group(1)
            key = (keyed(scope, receiver), receiver)
            yield Occurrence(key, number, found.end(), found.end() - 1)


class Analyser:
    """Runs Jedi on a file's text; one Jedi project per workspace folder."""

    def __init__(self, *, budget_seconds: float = 20.0, max_receivers: int = 400) -> None:
        self.budget_seconds, self.max_receivers = budget_seconds, max_receivers
        self._projects: dict[str, jedi.Project] = {}
        # per document, the types behind each receiver analysed (for the union by type), and
        # those of the targets of its `setattr` and `__dict__` writes
        self._kinds: dict[str, dict[Key, Kinds]] = {}
        self._targets: dict[str, dict[Target, frozenset[Ident]]] = {}

    def analyse(
        self,
        text: str,
        *,
        version: int,
        path: str | None,
        root: str | None,
        near_line: int = 0,
        earlier: Table | None = None,
        hooks: Hooks = NO_HOOKS,
        buffers: Mapping[str, tuple[str, float]] | None = None,
    ) -> Table:
        """The table for `text`. Between receivers, `hooks.paused` (the seconds it waited are
        not counted in the time budget nor in the table's time); after the FIRST receivers and
        then every EVERY_S, `hooks.publish` with what is ready (`done` False). `buffers`: the
        other documents open in the editor (path -> (text, time of its last edit)): read for
        those modules instead of their files (buffers.py)."""
        with _JEDI:
            open_documents.use(buffers or {})
            try:
                return self._analyse(text, version, path, root, near_line, earlier, hooks)
            finally:
                open_documents.use({})

    def _analyse(
        self,
        text: str,
        version: int,
        path: str | None,
        root: str | None,
        near_line: int,
        earlier: Table | None,
        hooks: Hooks,
    ) -> Table:
        started = time.perf_counter()
        script = jedi.Script(code=text, path=path, project=self._project(root))
        open_documents.install(script)
        document = unlisted.document(text, _module_node(script))
        table = Table(version, bound=document.bindings)
        todo, keys = self._order(text, near_line, earlier)
        writes = {key for key in keys if key[1] in document.assigned}  # (their types add names)
        module_names = _module_level_names(script)
        shared: dict[frozenset[str], frozenset[str]] = {}  # (one copy of each member set)
        reading = Reader(text, path, document.twice)
        bodies = Bodies(reading)
        if earlier is None:
            self._kinds[path or ""] = {}
        kinds = self._kinds.setdefault(path or "", {})
        seen = self._targets.get(path or "", {}) if earlier is not None else {}
        typed, dynamic, self._targets[path or ""] = _targets(
            script, document, reading, seen, near_line, started + self.budget_seconds
        )
        widened = Widening(kinds, document, typed, dynamic, writes)
        published = 0.0
        for n, occurrence in enumerate(todo):
            started += hooks.paused()
            now = time.perf_counter()
            if n >= FIRST and (published == 0.0 or now - published >= EVERY_S):
                published = now
                partial = Table(
                    version, dict(table.members), now - started, partial=True, bound=table.bound
                )
                hooks.publish(widened(partial.merged(earlier)))
            if hooks.cancelled() or now - started > self.budget_seconds:
                break
            found = _members(script, occurrence, bodies)
            if found is None:
                continue
            members, facts = found
            members = Members(
                shared.setdefault(members.names, members.names),
                members.complete,
                shared.setdefault(members.files, members.files),
            )
            table.members[occurrence.key] = members
            kinds[occurrence.key] = (facts.own, facts.mro)
            scope, receiver = occurrence.key
            first = receiver.removeprefix("call ").split(".", 1)[0]
            if scope and first in module_names and first not in SELF:
                if not table.binds(scope, first):  # (the module's name, not a local's)
                    table.members.setdefault(((), receiver), members)
                    kinds.setdefault(((), receiver), (facts.own, facts.mro))
        else:
            table.done = True
        table.seconds = time.perf_counter() - started
        # (what this run did not reach keeps the earlier answer)
        return widened(table.merged(earlier))

    def _order(
        self, text: str, near_line: int, earlier: Table | None
    ) -> tuple[list[Occurrence], set[Key]]:
        """One occurrence per key: new keys first, then by distance from `near_line`. After an
        edit (an earlier table), a key it answered is asked again only near `near_line` (where
        the person works): typing does not re-analyse the whole file at every pause. With them,
        every key the text has."""
        first: dict[Key, Occurrence] = {}
        for occurrence in occurrences(text):
            held = first.get(occurrence.key)
            if held is None or abs(occurrence.line - near_line) < abs(held.line - near_line):
                first[occurrence.key] = occurrence
        known = earlier.members if earlier is not None else {}
        todo = [o for o in first.values() if o.key not in known or abs(o.line - near_line) <= NEAR]
        todo.sort(key=lambda o: (o.key in known, abs(o.line - near_line)))
        return todo[: self.max_receivers], set(first)

    def forget(self, path: str) -> None:
        """A document closed: parso's cache of its parsed text (kept by path for Jedi's next
        parse of it, process-wide, until 600 files are held) lets it go."""
        with _JEDI:
            self._kinds.pop(path, None)
            self._targets.pop(path, None)
            for held in parso.cache.parser_cache.values():
                held.pop(Path(path).absolute(), None)
                held.pop(path, None)

    def _project(self, root: str | None) -> jedi.Project | None:
        if root is None:
            return None
        if root not in self._projects:
            self._projects[root] = jedi.Project(path=root)
        return self._projects[root]


def _module_level_names(script: object) -> set[str]:
    try:
        return {n.name for n in script.get_names(all_scopes=False)}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 (Jedi on broken code: no global names)
        return set()


def _module_node(script: object) -> object | None:
    """The document's syntax tree as Jedi parsed it (a private attribute: None where it goes)."""
    try:
        return script._module_node  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return None


def _members(
    script: object, occurrence: Occurrence, bodies: Bodies
) -> tuple[Members, Facts] | None:
    """Jedi's completions at the occurrence, with what the classes behind it use on `self` and
    what their code adds (unlisted.py), and whether they are all there is (a call: the names
    its keyword arguments may take, and whether no `**kwargs` takes others)."""
    if occurrence.key[1].startswith("call "):
        found = _parameters(script, occurrence)
        return None if found is None else (found, Facts())
    try:
        completed = script.complete(occurrence.line, occurrence.column)  # type: ignore[attr-defined]
        names = frozenset(c.name for c in completed if c.type != "keyword")
        if not names:
            return None
        inferred = script.infer(occurrence.line, occurrence.name_end)  # type: ignore[attr-defined]
        facts = bodies.facts(inferred)
        names |= bodies.used_on_self(inferred) | facts.names | _metaclass_names(inferred)
    except Exception:  # noqa: BLE001 (Jedi's own errors on odd code: no answer there)
        return None
    complete = (
        bool(inferred) and "__getattr__" not in names and _in_source(inferred) and not facts.dynamic
    )
    if occurrence.key[1].startswith("module "):
        complete = complete and all(_a_whole_package(name) for name in inferred)
    return Members(
        names, complete, _files([*completed, *inferred]) if complete else frozenset()
    ), facts


def _targets(
    script: object,
    document: Document,
    reading: Reader,
    seen: dict[Target, frozenset[Ident]],
    near_line: int,
    deadline: float,
) -> tuple[dict[Ident, set[str]], set[Ident], dict[Target, frozenset[Ident]]]:
    """The types the document's `setattr` and `__dict__` writes are on (outside the classes'
    own bodies, which their reading covers): the names a literal one adds to each, and those
    a dynamic one makes open-ended. A write an earlier version had, on a line of the same text
    more than NEAR lines from `near_line`, keeps the types found then (`seen`); returned: the
    types of this version's writes."""
    typed: defaultdict[Ident, set[str]] = defaultdict(set)
    dynamic: set[Ident] = set()
    found: dict[Target, frozenset[Ident]] = {}
    lines = document.lines
    for line, column, target, name in document.targets:
        key = (target, name, lines[line - 1].strip() if line <= len(lines) else "")
        own = seen.get(key) if abs(line - near_line) > NEAR else None
        if own is None:
            if time.perf_counter() > deadline:
                break
            try:
                inferred = script.infer(line, column)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 (Jedi's own errors: the text rule alone)
                continue
            own = reading.facts(inferred).own
        found[key] = own
        if name is None:
            dynamic |= own
        else:
            for ident in own:
                typed[ident].add(name)
    return typed, dynamic, found


@dataclass
class Widening:
    """The union rule, applied to a table (a partial one too): every receiver's set takes in
    the names the document uses after its `.` (the same receiver text; `self`'s in the same
    class) and those used on any receiver of a type it is or derives from; a set is no longer
    complete where the document writes the receiver, or a receiver of such a type,
    dynamically (`setattr(x, name, v)`). A receiver a name is assigned on whose type is not
    known (not analysed yet, or Jedi has no answer) may be of any type: the names assigned on
    it are taken in by every set."""

    kinds: dict[Key, Kinds]  # (the analyser's, filled as the analysis goes)
    document: Document
    typed: dict[Ident, set[str]]
    dynamic: set[Ident]
    writes: set[Key]  # the keys of the receivers a name is assigned on

    def __call__(self, table: Table) -> Table:
        document = self.document
        by_type: defaultdict[Ident, set[str]] = defaultdict(set)
        for ident, names in self.typed.items():
            by_type[ident] |= names
        open_ended = set(self.dynamic)
        for key, (own, _mro) in self.kinds.items():
            where = _text_key(key)
            used = document.uses.get(where)
            if used:
                for ident in own:
                    by_type[ident] |= used
            if where in document.dynamic:
                open_ended |= own
        unknown: set[str] = set()
        for key in self.writes:
            if key not in self.kinds:
                unknown |= document.assigned.get(key[1], set())
        shared: dict[frozenset[str], frozenset[str]] = {}
        for key, members in table.members.items():
            if key[1].startswith(NOT_MEMBERS):
                continue
            where = _text_key(key)
            names = set(document.uses.get(where, ())) | unknown
            written = where in document.dynamic
            kind = self.kinds.get(key)
            if kind is not None:
                for ident in kind[1]:
                    names |= by_type.get(ident, set())
                written = written or bool(kind[1] & open_ended)
            if not UNION:
                names = set()
            if names <= members.names and not (written and members.complete):
                continue
            union = frozenset(members.names | names)
            complete = members.complete and not written
            table.members[key] = Members(shared.setdefault(union, union), complete)
        return table


def _text_key(key: Key) -> tuple[scopes.Scope, str]:
    """Where the document's uses of a receiver are counted: `self`'s per class, the others'
    over the whole file."""
    scope, receiver = key
    return (scope, receiver) if receiver.split(".", 1)[0] in SELF else ((), receiver)


def _metaclass_names(inferred: list[object]) -> frozenset[str]:
    """What a class's metaclass gives the class (an enum's `__members__`, `__len__`): Jedi's
    completions on a class leave them out. Read through Jedi's inference values (not its public
    API: on any change there, nothing is added)."""
    found: set[str] = set()
    for name in inferred:
        if getattr(name, "type", "") != "class":
            continue
        try:
            for value in name._name.infer():  # type: ignore[attr-defined]
                for meta in value.get_metaclasses():
                    for names in meta.get_filters():
                        found.update(n.string_name for n in names.values())
        except Exception:  # noqa: BLE001 (Jedi's internals: nothing added)
            continue
    return frozenset(found)


def _a_whole_package(module: object) -> bool:
    """A package whose submodules are the files in its folder: a plain module's (`os.path`,
    `six.moves`) are made at run time, and a package that extends its `__path__` (pkgutil's or
    setuptools' namespace packages) has others elsewhere."""
    path = str(getattr(module, "module_path", None) or "")
    return Path(path).name == "__init__.py" and "__path__" not in source(path)


class Bodies:
    """What the bodies of the classes behind a receiver (its class, the bases and the metaclass
    in source) read or write on `self` or `cls`, and what else their code says (unlisted.py):
    the file being analysed from its text, another module from its file, each class once."""

    def __init__(self, reading: Reader) -> None:
        self.reading = reading
        self._last: tuple[list[object], Facts] | None = None

    def facts(self, inferred: list[object]) -> Facts:
        self._last = (inferred, self.reading.facts(inferred))
        return self._last[1]

    def used_on_self(self, inferred: list[object]) -> frozenset[str]:
        if self._last is not None and self._last[0] is inferred:
            return self._last[1].on_self
        return self.reading.facts(inferred).on_self


def _parameters(script: object, occurrence: Occurrence) -> Members | None:
    try:
        found = script.get_signatures(occurrence.line, occurrence.column)  # type: ignore[attr-defined]
        kinds = [(p.name, p.kind) for signature in found for p in signature.params]
    except Exception:  # noqa: BLE001 (Jedi's own errors on odd code: no answer there)
        return None
    names = frozenset(
        name
        for name, kind in kinds
        if kind in (Parameter.POSITIONAL_OR_KEYWORD, Parameter.KEYWORD_ONLY)
    )
    if not found or not names:
        return None
    in_source = all(str(s.module_path or "").endswith(".py") for s in found)
    complete = in_source and all(k != Parameter.VAR_KEYWORD for _n, k in kinds)
    return Members(names, complete, _files(found) if complete else frozenset())


def _files(names: list[object]) -> frozenset[str]:
    """The files Jedi read `names` from ("": the text analysed, without a path)."""
    paths = {getattr(name, "module_path", None) for name in names}
    return frozenset(open_documents.key(p) if p else "" for p in paths)


def _in_source(inferred: list[object]) -> bool:
    for name in inferred:
        path = getattr(name, "module_path", None)
        kind = getattr(name, "type", "")
        if kind not in ("module", "class", "instance") or path is None:
            return False
        if Path(path).suffix != ".py" or name.is_stub():  # type: ignore[attr-defined]
            return False
    return True
