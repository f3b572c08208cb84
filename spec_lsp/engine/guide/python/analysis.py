"""Jedi's answer for one version of a Python file, prepared off the request path.

For each receiver the file dereferences (`x.` with `x` a chain of names), each module it
imports from (`from m import`) and each package an import names a module of (`from a.b.c`:
`a`'s submodules and `a.b`'s), the members Jedi completes there, keyed by the scope the
occurrence is in (scopes.py) and the receiver's text: a lookup while decoding is two dict
reads. A set is `complete` (a hard mask) where every type Jedi infers for the receiver is a
module, class or instance defined in source (a .py file) without `__getattr__`; a stub's
(.pyi), a compiled module's or an unresolved one's is not. A class's members are Jedi's and
every name its own body reads or writes on `self`/`cls`: Jedi does not list an attribute set
through another name (`self = object.__new__(cls)`, a `__slots__` class's) or one a mixin
expects its subclasses to set (tkinter's `Misc` reads `self.tk`), and the mask must not forbid
a name the class itself uses. They also take in what the class's metaclass gives it (an enum's
`__members__`), which Jedi leaves out too.

Jedi's inference is pure Python and takes milliseconds to seconds per receiver: the receivers
nearest the cursor first, new ones before those an earlier version had, within a time budget.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from inspect import Parameter
from pathlib import Path

import jedi
import parso
import parso.cache
import parso.utils

from spec_lsp.engine.guide import scopes
from spec_lsp.engine.guide.python import buffers as open_documents
from spec_lsp.engine.guide.table import NO_HOOKS, SELF, Hooks, Key, Members, Table, key_of, keyed

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
_ON_SELF = re.compile(r"(?<![\w.])(?:self|cls)\.([A-Za-z_]\w*)")
# Jedi's inference keeps process-wide state and is not safe from two threads at once (two
# engines in one process, a benchmark's and a test's): one analysis at a time
_JEDI = threading.Lock()
NEAR = 40  # lines either side of the cursor whose receivers are asked again after an edit
FIRST = 8  # receivers (the nearest the cursor) after which what is ready is published
EVERY_S = 2.0  # then at most this often


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
        table = Table(version)
        todo = self._order(text, near_line, earlier)
        module_names = _module_level_names(script)
        shared: dict[frozenset[str], frozenset[str]] = {}  # (one copy of each member set)
        bodies = Bodies(text.split("\n"), path)
        published = 0.0
        for n, occurrence in enumerate(todo):
            started += hooks.paused()
            now = time.perf_counter()
            if n >= FIRST and (published == 0.0 or now - published >= EVERY_S):
                published = now
                partial = Table(version, dict(table.members), now - started, partial=True)
                hooks.publish(partial.merged(earlier))
            if hooks.cancelled() or now - started > self.budget_seconds:
                break
            members = _members(script, occurrence, bodies)
            if members is None:
                continue
            members = Members(
                shared.setdefault(members.names, members.names),
                members.complete,
                shared.setdefault(members.sources, members.sources),
            )
            table.members[occurrence.key] = members
            first = occurrence.key[1].removeprefix("call ").split(".", 1)[0]
            if occurrence.key[0] and first in module_names and first not in SELF:
                table.members.setdefault(((), occurrence.key[1]), members)
        else:
            table.done = True
        table.seconds = time.perf_counter() - started
        return table.merged(earlier)  # (what this run did not reach keeps the earlier answer)

    def _order(self, text: str, near_line: int, earlier: Table | None) -> list[Occurrence]:
        """One occurrence per key: new keys first, then by distance from `near_line`. After an
        edit (an earlier table), a key it answered is asked again only near `near_line` (where
        the person works): typing does not re-analyse the whole file at every pause."""
        first: dict[Key, Occurrence] = {}
        for occurrence in occurrences(text):
            held = first.get(occurrence.key)
            if held is None or abs(occurrence.line - near_line) < abs(held.line - near_line):
                first[occurrence.key] = occurrence
        known = earlier.members if earlier is not None else {}
        todo = [o for o in first.values() if o.key not in known or abs(o.line - near_line) <= NEAR]
        todo.sort(key=lambda o: (o.key in known, abs(o.line - near_line)))
        return todo[: self.max_receivers]

    def forget(self, path: str) -> None:
        """A document closed: parso's cache of its parsed text (kept by path for Jedi's next
        parse of it, process-wide, until 600 files are held) lets it go."""
        with _JEDI:
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


def _members(script: object, occurrence: Occurrence, bodies: Bodies) -> Members | None:
    """Jedi's completions at the occurrence, with what the classes behind it use on `self`,
    and whether they are all there is (a call: the names its keyword arguments may take, and
    whether no `**kwargs` takes others)."""
    if occurrence.key[1].startswith("call "):
        return _parameters(script, occurrence)
    try:
        found = script.complete(occurrence.line, occurrence.column)  # type: ignore[attr-defined]
        names = frozenset(c.name for c in found if c.type != "keyword")
        if not names:
            return None
        inferred = script.infer(occurrence.line, occurrence.name_end)  # type: ignore[attr-defined]
        names |= bodies.used_on_self(inferred) | _metaclass_names(inferred)
    except Exception:  # noqa: BLE001 (Jedi's own errors on odd code: no answer there)
        return None
    complete = bool(inferred) and "__getattr__" not in names and _in_source(inferred)
    if occurrence.key[1].startswith("module "):
        complete = complete and all(_a_whole_package(name) for name in inferred)
    return Members(names, complete, _sources([*found, *inferred]) if complete else frozenset())


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
    return Path(path).name == "__init__.py" and "__path__" not in _source(path)


class Bodies:
    """What the bodies of the classes behind a receiver read or write on `self` or `cls`: the
    file being analysed (its lines) or another module (read from disk), each class once."""

    def __init__(self, lines: list[str], path: str | None) -> None:
        self.lines, self.path = lines, path
        self._found: dict[tuple[str, int, int], frozenset[str]] = {}

    def used_on_self(self, inferred: list[object]) -> frozenset[str]:
        found: set[str] = set()
        for name in inferred:
            if getattr(name, "type", "") not in ("class", "instance"):
                continue
            start = name.get_definition_start_position()  # type: ignore[attr-defined]
            end = name.get_definition_end_position()  # type: ignore[attr-defined]
            if start is None or end is None:
                continue
            module = str(getattr(name, "module_path", None) or "")
            key = (module, start[0], end[0])
            if key not in self._found:
                here = not module or (self.path is not None and Path(module) == Path(self.path))
                lines = self.lines if here else _source(module).split("\n")
                body = "\n".join(lines[start[0] - 1 : end[0]])
                self._found[key] = frozenset(_ON_SELF.findall(body))
            found |= self._found[key]
        return frozenset(found)


def _source(path: str) -> str:
    """Another module's text (an open document's as the editor holds it), read once while its
    modification time holds."""
    edited = open_documents.text(path)
    if edited is not None:
        return edited
    try:
        stamp = Path(path).stat().st_mtime_ns
    except OSError:
        return ""
    return _read(path, stamp)


@functools.lru_cache(maxsize=16)
def _read(path: str, stamp: int) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


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
    return Members(names, complete, _sources(found) if complete else frozenset())


def _sources(names: list[object]) -> frozenset[str]:
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
