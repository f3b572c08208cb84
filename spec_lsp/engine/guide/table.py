"""The guide's shared table types: what an analysis prepares for one version of a file (a
receiver's members per scope, complete or not) and what the monitor reads while decoding.

Both analysers write them, Jedi's for Python (python/analysis.py) and tree-sitter's for the brace
languages (braced/structural.py); the monitor (monitor.py) and the analysis thread
(analyses.py) read them. Nothing here imports an analyser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from spec_lsp.engine.guide import scopes
from spec_lsp.engine.guide.scopes import Scope

SELF = ("self", "cls")  # a class's own receivers: keyed by the class
# (scope, receiver); an import's receiver is "from <module>", a call's "call <callee>", a
# package's submodules' (`from a.b.`, `import a.b.`) "module <package>"
Key = tuple[Scope, str]
KEY_PREFIXES = {"import": "from ", "module": "module ", "keyword": "call "}


def key_of(kind: str, receiver: str) -> str:
    """The table's key for a trigger point's receiver (trigger.Trigger's kind)."""
    return KEY_PREFIXES.get(kind, "") + receiver


@dataclass(frozen=True)
class Members:
    names: frozenset[str]
    # nothing can add to the set: a hard mask (a mask that forbids a name that exists is worse
    # than none); where something can (a stub, a dynamic write, an unknown base), False
    complete: bool
    # the files the set was read from (a complete set's: where its types and members are
    # defined): an edit of one of them, open in the editor, may change it
    files: frozenset[str] = frozenset()


@dataclass
class Table:
    """One file's prepared answers."""

    version: int
    members: dict[Key, Members] = field(default_factory=dict)
    seconds: float = 0.0  # time the analysis took
    done: bool = False  # every receiver found was analysed (not cut by the time budget)
    partial: bool = False  # published while the analysis goes on
    # the names each function and class binds (Python's analysis): a receiver whose first name a
    # scope binds is that scope's, never an outer scope's of the same text
    bound: dict[Scope, frozenset[str]] = field(default_factory=dict)

    def merged(self, earlier: Table | None) -> Table:
        """This table with what `earlier` answered and this one has not (yet)."""
        if earlier is not None:
            for key, members in earlier.members.items():
                self.members.setdefault(key, members)
        return self

    syntax = "python"  # how the monitor reads the text (trigger.py); brace languages: "braces"
    # `guideBias` unset: what an incomplete member set's outsiders lose (Jedi's incomplete sets,
    # builtins' stubs mostly: a bias lost a right name and avoided none, bench/README.md)
    incomplete_bias = 0.0

    def scope_at(self, text: str) -> Scope:
        """The scope the end of `text` (the cursor) is in, as this table keys it."""
        return scopes.at_end(text)

    def lookup(self, scope: Scope, receiver: str) -> Members | None:
        """The receiver's members in `scope` or the nearest enclosing scope that has them, as
        Python resolves a name: not past a scope that binds it (its own answer there or none),
        and not in the body of a class around a function (a class's names are not its
        methods')."""
        chain = receiver.removeprefix("call ")
        scope = keyed(scope, chain)
        first = chain.split(".", 1)[0]
        own = first in SELF  # (keyed by the class already)
        for i in range(len(scope), -1, -1):
            if not own and 0 < i < len(scope) and scope[i - 1].startswith("class "):
                continue
            found = self.members.get((scope[:i], receiver))
            if found is not None:
                return found
            if not own and first in self.bound.get(scope[:i], ()):
                return None
        return None

    def binds(self, scope: Scope, name: str) -> bool:
        """Whether `name` in `scope` is bound by `scope` or an enclosing function (not the
        module): a local, not the module-level name of that text."""
        return any(
            name in self.bound.get(scope[:i], ())
            for i in range(len(scope), 0, -1)
            if i == len(scope) or not scope[i - 1].startswith("class ")
        )

    def nbytes(self) -> int:
        """A rough size: the keys and the distinct member sets (shared sets counted once)."""
        sets = {id(m.names): m.names for m in self.members.values()}
        names = sum(len(n) for s in sets.values() for n in s) + 64 * sum(map(len, sets.values()))
        return names + 200 * len(self.members)


@dataclass(frozen=True)
class Hooks:
    """What the analysis's owner gives it: whether to stop, where to wait, and where to put
    what is ready so far (a partial table: the receivers nearest the cursor come first)."""

    cancelled: Callable[[], bool] = lambda: False
    paused: Callable[[], float] = lambda: 0.0  # returns once it may go on: the seconds waited
    publish: Callable[[Table], None] = lambda table: None


NO_HOOKS = Hooks()  # an analysis nobody stops, pauses or reads early


def keyed(scope: Scope, chain: str) -> Scope:
    """`self` and `cls` are the class's: keyed by it, whichever method they are used in."""
    return scopes.enclosing_class(scope) if chain.split(".", 1)[0] in SELF else scope
