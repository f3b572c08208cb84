"""Which parts of other files the model is shown, best first, under a token budget.

Sources, in this order (each chunk taken whole or not at all, skipped when it does not fit and
the next tried):
1. definitions, in other files, of the names the file imports but uses nowhere else (the first
   `UNUSED_FIRST`, in import order: what is imported and not yet used is what is about to be,
   and nothing else in the prompt says what it takes), then the outlines of their modules (2.,
   brought forward: the rest of that API beside them), then of the names used around the cursor
   (the 30 lines before it and the 10 after; nearer first, a line after the cursor counting
   twice its distance: their uses are in the window already), then the other unused ones. Not the
   word being typed at the cursor (the block must not change with each key), keywords and
   builtins, nor names the current file binds (its definitions, the parameters and locals of the
   functions around the cursor). Where the current file imports the name (`from .m import f`,
   `import m` then `m.f`, a JavaScript import, a C include), the definition in the imported
   file; else a name defined in more than `AMBIGUOUS` places is passed over.
   Names only used as attributes (`x.name`, x no imported module) are looked up among members
   (methods, fields), not the builtin types' (`x.get`). A definition of more than
   `MAX_DEFINITION_LINES` lines (or over half the budget) is shown as its outline: its head,
   its fields, the signatures of its methods, bodies elided (`...`), else as its head alone;
2. the files the current one imports, as outlines (their top-level signatures), those whose
   names are used nearest first;
3. the chunks of open documents most like the text around the cursor (Jaccard similarity of
   their identifier sets; windows of `SIMILAR_LINES` lines every `SIMILAR_STRIDE`; the
   `SIMILAR_DOCUMENTS` latest edited or opened), as Copilot's neighbouring tabs and llama.vim's
   ring do;
4. recently edited places of other files, newest first, with a few lines around them.
A chunk overlapping lines already shown is dropped, and so is a chunk of the current file
overlapping its window (the prompt shows that already). The same inputs give the same chunks in
the same order: the block's KV is reused only while its text stays the same.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import os
import posixpath
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from spec_lsp.engine.context.symbols import SymbolIndex, Used, around, is_function
from spec_lsp.engine.context.types import ContextChunk, Definition
from spec_lsp.engine.context.workspace import Workspace

BEFORE_LINES = 30
AFTER_LINES = 10
MAX_DEFINITION_LINES = 60  # longer: its outline
MAX_SHARE = 0.5  # of the budget, one chunk at most (else its outline, else its head)
AMBIGUOUS = 3  # a name defined in more places than this, no import saying which: passed over
PER_NAME = 2  # definitions shown for one name, at most
# names imported and not yet used whose definitions come before those of the names used near the
# cursor (more come after them: a file that imports much it never uses is no sign of intent)
UNUSED_FIRST = 4
MAX_CANDIDATES = 64  # chunks weighed for one block, at most (each one's tokens are counted)
OUTLINE_LINES = 40  # an outline's lines, at most
OUTLINE_HEAD_LINES = 12  # a class's lines before its first method kept in its outline
SIMILAR_LINES = 48
SIMILAR_STRIDE = 24
SIMILAR_MIN = 0.1  # Jaccard similarity below this: not shown
SIMILAR_MAX = 4  # similar chunks, at most
# the open documents searched for them: the most recently edited or opened (Copilot's neighbouring
# tabs take about as many; with 200 tabs of 2,000 lines open, all of them took 0.2 s a choice)
SIMILAR_DOCUMENTS = 20
RECENT_AROUND = 4  # lines shown before and after an edited place
RECENT_MAX_LINES = 32
ELIDED = "..."

IDENTIFIER = re.compile(r"[^\W\d]\w*")
STOP_WORDS = (
    set(keyword.kwlist)
    | set(getattr(keyword, "softkwlist", ()))
    | set(dir(builtins))
    | {
        # common to the other languages the symbol index reads (keywords, literals, types)
        *"abstract any as async await auto bool boolean break byte case catch char chan class"
        " const constexpr continue crate debugger def default defer delete do double dyn elif"
        " else enum export extends extern false fallthrough final finally float fn for func"
        " function go goto if impl implements import in include instanceof int interface let"
        " long loop map match mod module move mut namespace new nil null number object"
        " override package pragma private protected pub public readonly ref register return"
        " self Self short signed sizeof static string struct super switch template this throw"
        " throws trait true try type typedef typename typeof u8 u16 u32 u64 usize i8 i16 i32"
        " i64 isize f32 f64 uint uint8 uint16 uint32 uint64 int8 int16 int32 int64 float32"
        " float64 undefined union unsafe unsigned use using var virtual void volatile where"
        " while yield define ifdef ifndef endif elseif std String Vec Option Some Ok Err"
        " console require exports len cap make append println printf".split()
    }
)

# Methods of the builtin types: `x.get(...)` is far more often a dict's than a definition
# elsewhere of a member named `get` (a name used only as an attribute, no import saying whose)
COMMON_MEMBERS = {
    name
    for kind in (dict, list, str, bytes, set, int, float, object, tuple, frozenset, BaseException)
    for name in dir(kind)
} | set(
    "push pop shift map filter reduce forEach some every find includes indexOf slice splice then"
    " catch finally length size toString equals hashCode close read write open run start stop"
    " send next close flush seek tell emit log debug info warning error exception".split()
)


# -- what the current file says ------------------------------------------------------------------
@dataclass
class Use:
    """A name used around the cursor."""

    name: str
    distance: int  # lines from the cursor (those after it count double)
    bare: bool  # used other than as an attribute (`x`, not only `a.x`)
    receivers: set[str] = field(default_factory=set)  # `m` of `m.x`


def names_module(module: str, path: str) -> bool:
    """Whether `path` may hold `module` (as written in an import) though the import did not
    resolve to it: one of the path's names begins or ends with one of the module's (a vendored
    copy `vendor/plane_impl.py` of `geometry.plane`, a `src/geometry/` layout); `requests` and
    `other.py`: no."""
    parts = [part.lower() for part in re.split(r"[./\\]+", module) if part]
    segments = [seg.lower() for seg in re.split(r"[/\\]+", path.rsplit(".", 1)[0]) if seg]
    return any(seg.startswith(part) or seg.endswith(part) for part in parts for seg in segments)


@dataclass
class Import:
    """What an import statement of the current file brings in."""

    module: str  # as written: "pkg.mod", ".shapes", "./util", "config.h"
    line: int
    paths: list[str]  # the files it resolves to (known ones: open, in the workspace, indexed)
    names: dict[str, str] = field(default_factory=dict)  # local name -> name in the module
    alias: str = ""  # the local name of the module itself (`import m as alias`, `* as ns`)
    star: bool = False
    lines: int = 1  # the statement's (`from m import (\n a,\n b,\n)`: 4)


def _partial_word(text: str, cursor: int) -> tuple[int, int]:
    """The span of the identifier the cursor is in or just after (the word being typed)."""
    start = cursor
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = cursor
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return start, end


def uses_near(path: str, text: str, cursor: int) -> tuple[dict[str, Use], set[str]]:
    """The names used within BEFORE_LINES before and AFTER_LINES after the cursor's line, each
    at its nearest distance, the word at the cursor left out; and the names the current file
    binds there (symbols.around). Without a grammar for the file: every identifier of the
    lines, comments and strings included, and no bound names."""
    here = text.count("\n", 0, cursor)
    column = cursor - (text.rfind("\n", 0, cursor) + 1)
    lines = (max(0, here - BEFORE_LINES), here + AFTER_LINES + 1)
    parsed = around(path, text, lines, (here, column))
    occurrences, bound = parsed if parsed is not None else (_regex_uses(text, cursor, lines), set())
    found: dict[str, Use] = {}
    for used in occurrences:
        if len(used.name) < 2 or used.name in STOP_WORDS:
            continue
        distance = here - used.line if used.line <= here else 2 * (used.line - here)
        use = found.setdefault(used.name, Use(used.name, distance, False))
        use.distance = min(use.distance, distance)
        if used.receiver is None:
            use.bare = True
        elif used.receiver:
            use.receivers.add(used.receiver)
    return found, bound


def _regex_uses(text: str, cursor: int, lines: tuple[int, int]) -> list[Used]:
    start, end = _partial_word(text, cursor)
    text = text[:start] + " " * (end - start) + text[end:]
    found = []
    for number, line in enumerate(text.split("\n")[lines[0] : lines[1]], start=lines[0]):
        for match in IDENTIFIER.finditer(line):
            before = line[: match.start()].rstrip()
            receiver = None
            if before.endswith(".") and not before.endswith(".."):
                tail = _RECEIVER.search(before[:-1])
                receiver = tail.group(1) if tail is not None else ""
            found.append(Used(match.group(), number, receiver))
    return found


# `self.name = ...`, `self.a, self.b = ...`: attributes of the current file's class (not
# another file's definitions)
_SELF_ASSIGNMENT = re.compile(r"^[ \t]*\(?((?:self|this|cls)\.[^=\n]*?)[-+*/%&|^@]?=(?!=)", re.M)
_SELF_ATTRIBUTE = re.compile(r"\b(?:self|this|cls)\.([^\W\d]\w*)")
_RECEIVER = re.compile(r"([^\W\d]\w*)\s*$")
_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
_JS_IMPORT = re.compile(
    r"""^[ \t]*(?:import|export)[ \t]+(?:type[ \t]+)?([\w$*{},\s]+?)[ \t]+from[ \t]+['"]([^'"]+)['"]""",
    re.M,
)
_JS_REQUIRE = re.compile(
    r"""(?:const|let|var)[ \t]+([\w$]+|\{[^}]*\})[ \t]*=[ \t]*require\(['"]([^'"]+)['"]\)"""
)
_C_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


class _Paths:
    """The files known (open, in the workspace, indexed), for resolving imports."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.all = set(paths)
        self.by_name: dict[str, list[str]] = {}
        for path in sorted(self.all):
            self.by_name.setdefault(posixpath.basename(path), []).append(path)

    def first(self, candidates: Iterable[str]) -> list[str]:
        for candidate in candidates:
            if candidate in self.all:
                return [candidate]
        return []

    def ending(self, tail: str, near: str) -> list[str]:
        """The known file whose path ends with `tail` (a/b.py), the nearest to `near`."""
        found = [
            p for p in self.by_name.get(posixpath.basename(tail), []) if p.endswith("/" + tail)
        ]
        return sorted(found, key=lambda p: (-_shared(p, near), p))[:1]


def _shared(a: str, b: str) -> int:
    """How many leading folders two paths share."""
    count = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1]):
        if x != y:
            break
        count += 1
    return count


def imports(path: str, text: str, paths: _Paths) -> list[Import]:
    """The current file's imports (Python, JavaScript/TypeScript, C/C++ quoted includes)."""
    ext = os.path.splitext(path)[1].lower()
    if ext in (".py", ".pyi", ".pyw"):
        return _python_imports(path, text, paths)
    if ext in (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"):
        return _js_imports(path, text, paths)
    if ext in (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"):
        found = []
        for match in _C_INCLUDE.finditer(text):
            name = match.group(1)
            here = paths.first([posixpath.normpath(posixpath.join(posixpath.dirname(path), name))])
            resolved = here or paths.ending(name, path)
            found.append(Import(name, text.count("\n", 0, match.start()), resolved, star=True))
        return found
    return []


def _python_module(path: str, module: str, paths: _Paths) -> list[str]:
    level = len(module) - len(module.lstrip("."))
    rest = module[level:].replace(".", "/")
    if level:
        base = posixpath.dirname(path)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        stem = posixpath.join(base, rest) if rest else base
        if not rest:
            return paths.first([posixpath.join(stem, "__init__.py")])
        return paths.first([stem + ".py", posixpath.join(stem, "__init__.py")])
    if not rest:
        return []
    return paths.ending(rest + ".py", path) or paths.ending(rest + "/__init__.py", path)


def _python_imports(path: str, text: str, paths: _Paths) -> list[Import]:
    found: list[Import] = []
    for match in _PY_IMPORT.finditer(text):
        line = text.count("\n", 0, match.start())
        for part in match.group(1).split(","):
            words = part.split()
            if not words:
                continue
            module = words[0]
            alias = words[2] if len(words) == 3 and words[1] == "as" else module.split(".")[0]
            found.append(Import(module, line, _python_module(path, module, paths), alias=alias))
    for match in _PY_FROM.finditer(text):
        line = text.count("\n", 0, match.start())
        module, names = match.group(1), match.group(2).strip("() \t\n")
        resolved = _python_module(path, module, paths)
        star = names.strip() == "*"
        entry = Import(module, line, resolved, star=star, lines=match.group().count("\n") + 1)
        found.append(entry)
        for part in names.replace("\n", " ").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            local = words[2] if len(words) == 3 and words[1] == "as" else words[0]
            submodule = module + ("." if module.strip(".") else "") + words[0]
            sub = _python_module(path, submodule, paths)
            if sub and sub != resolved:  # `from pkg import module`
                found.append(Import(submodule, line, sub, alias=local))
            else:
                entry.names[local] = words[0]
        if not entry.names and not star:  # (all of them modules)
            found.remove(entry)
    return sorted(found, key=lambda i: (i.line, i.module, i.alias))


def _js_imports(path: str, text: str, paths: _Paths) -> list[Import]:
    found: list[Import] = []
    pairs = [(m.group(1), m.group(2), m.start()) for m in _JS_IMPORT.finditer(text)]
    pairs += [(m.group(1), m.group(2), m.start()) for m in _JS_REQUIRE.finditer(text)]
    for clause, spec, at in sorted(pairs, key=lambda p: p[2]):
        lines = clause.count("\n") + 1
        stem = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        candidates = [stem, *(stem + e for e in _JS_EXTENSIONS)]
        candidates += [posixpath.join(stem, "index" + e) for e in _JS_EXTENSIONS]
        resolved = paths.first(candidates) if spec.startswith(".") else []  # (not a package's)
        entry = Import(spec, text.count("\n", 0, at), resolved, lines=lines)
        braces = re.search(r"\{([^}]*)\}", clause)
        for part in (braces.group(1) if braces else "").split(","):
            words = part.split()
            if words:
                entry.names[words[-1]] = words[0]
        outside = re.sub(r"\{[^}]*\}", "", clause)
        star = re.search(r"\*\s+as\s+([\w$]+)", outside)
        if star:
            entry.alias = star.group(1)
        else:
            default = re.match(r"\s*([\w$]+)", outside)
            if default:
                entry.alias = default.group(1)  # a default export, or a whole require()
        found.append(entry)
    return found


# -- the chunks ------------------------------------------------------------------------------------
Lines = list[tuple[int, int]]  # line ranges: (first, past the last)
Variant = tuple[int, int, str, Lines]  # (start, end, text, the lines whose text it shows)


@dataclass
class _Candidate:
    """A chunk to weigh: its variants, largest first (a definition whole, its outline, its
    head: smaller stand-ins for when it does not fit), made knowing the lines of its file shown
    already (an outline leaves them out)."""

    path: str
    reason: str
    score: float
    variants: Callable[[Lines], list[Variant]]
    soon: bool = False  # for a name imported and not yet used (of the first UNUSED_FIRST)


def _fixed(*variants: Variant) -> Callable[[Lines], list[Variant]]:
    return lambda taken: list(variants)


def _outline(
    lines: list[str], definition: Definition, members: Sequence[Definition]
) -> tuple[str, list[tuple[int, int]]]:
    """A definition with bodies elided (`...`): its head (with, for a class, what stands before
    its first member: fields, docstring; OUTLINE_HEAD_LINES at most), each member's head, and
    its last line where that only closes it (`}`). About OUTLINE_LINES lines at most.
    Returns the text and the lines it shows."""
    d = definition
    first_member = members[0].start_line if members else d.end_line
    head_end = max(d.head_end, min(first_member, d.start_line + OUTLINE_HEAD_LINES))
    head_end = min(head_end if members else d.head_end, d.start_line + OUTLINE_LINES // 2)
    out = lines[d.start_line : head_end]
    shown = [(d.start_line, head_end)]
    if head_end < first_member:
        out.append(_indent_of(lines, head_end, d.start_line) + ELIDED)
    for member in members:
        if len(out) >= OUTLINE_LINES:
            out.append(_indent_of(lines, member.start_line, d.start_line) + ELIDED)
            break
        _head(lines, member, out, shown)
    last = d.end_line - 1
    if last >= max(e for _, e in shown) and lines[last].strip().startswith("}"):
        out.append(lines[last])
        shown.append((last, last + 1))
    return "\n".join(out), shown


def _head(lines: list[str], d: Definition, out: list[str], shown: Lines) -> None:
    """A definition's head (its signature: a few lines at most), its body elided."""
    end = min(d.head_end, d.start_line + OUTLINE_HEAD_LINES // 2)
    out.extend(lines[d.start_line : end])
    shown.append((d.start_line, end))
    if end < d.end_line:
        out.append(_indent_of(lines, end, d.start_line) + ELIDED)


def _indent_of(lines: list[str], number: int, fallback: int) -> str:
    """The indentation of line `number` (a body's first), else one deeper than `fallback`'s."""
    text = lines[number] if 0 <= number < len(lines) else ""
    if not text.strip():
        text = lines[fallback] if 0 <= fallback < len(lines) else ""
        return text[: len(text) - len(text.lstrip())] + "    "
    return text[: len(text) - len(text.lstrip())]


def _members(definitions: Sequence[Definition], owner: Definition) -> list[Definition]:
    return [
        d
        for d in definitions
        if d.parent == owner.name
        and owner.start_line <= d.start_line < owner.end_line
        and d is not owner
    ]


def _definition_candidate(
    path: str,
    lines: list[str],
    d: Definition,
    all_defs: Sequence[Definition],
    reason: str,
    score: float,
) -> _Candidate:
    """A definition whole, else its outline, else its head (where they differ)."""
    variants: list[Variant] = []
    members = [] if is_function(d.kind) else _members(all_defs, d)
    if d.end_line - d.start_line <= MAX_DEFINITION_LINES:
        text = "\n".join(lines[d.start_line : d.end_line])
        variants.append((d.start_line, d.end_line, text, [(d.start_line, d.end_line)]))
    if members or d.end_line - d.start_line > MAX_DEFINITION_LINES:
        text, shows = _outline(lines, d, members)
        variants.append((d.start_line, d.end_line, text, shows))
    head_end = min(d.head_end, d.start_line + OUTLINE_LINES // 2)
    head = "\n".join(lines[d.start_line : head_end])
    variants.append((d.start_line, d.end_line, head, [(d.start_line, head_end)]))
    unique = [v for i, v in enumerate(variants) if all(v[2] != w[2] for w in variants[:i])]
    return _Candidate(path, reason, score, _fixed(*unique))


def _module_outline(lines: list[str], defs: Sequence[Definition], taken: Lines) -> list[Variant]:
    """A file's top-level definitions, heads only (a class with its methods' heads), but those
    shown already."""
    out: list[str] = []
    shown: Lines = []
    for d in defs:
        if d.parent or len(out) >= OUTLINE_LINES or _overlaps([(d.start_line, d.end_line)], taken):
            continue
        members = [] if is_function(d.kind) else _members(defs, d)
        if members:
            text, parts = _outline(lines, d, members)
            out.extend(text.split("\n"))
            shown.extend(parts)
            continue
        _head(lines, d, out, shown)
    if not defs:  # a language without a grammar here: its first lines
        end = min(len(lines), OUTLINE_LINES // 2)
        out, shown = lines[:end], [(0, end)]
    if not shown:
        return []
    return [(shown[0][0], shown[-1][1], "\n".join(out[: OUTLINE_LINES + 1]), shown)]


class SimilarWindows:
    """The open documents' windows (first line, identifiers), kept per document while it is
    open: the stage forgets a document when it closes (nothing of a closed document stays)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, list[tuple[int, frozenset[str]]]]] = {}

    def of(self, path: str, text: str) -> list[tuple[int, frozenset[str]]]:
        with self._lock:
            cached = self._held.get(path)
        if cached is not None and (cached[0] is text or cached[0] == text):
            return cached[1]
        lines = text.split("\n")
        windows = []
        for start in range(0, max(1, len(lines) - SIMILAR_STRIDE), SIMILAR_STRIDE):
            chunk = "\n".join(lines[start : start + SIMILAR_LINES])
            names = {name for name in IDENTIFIER.findall(chunk) if len(name) > 1}
            windows.append((start, frozenset(names - STOP_WORDS)))
        with self._lock:
            self._held[path] = (text, windows)
        return windows

    def keep_only(self, paths: Iterable[str]) -> None:
        """Forget the documents not among `paths` (those closed)."""
        keep = set(paths)
        with self._lock:
            for path in [p for p in self._held if p not in keep]:
                del self._held[path]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


def _overlaps(shows: Lines, taken: Lines) -> bool:
    return any(a < d and c < b for a, b in shows for c, d in taken)


def select(
    *,
    path: str,
    text: str,
    cursor: int,
    window: tuple[int, int],
    open_documents: Mapping[str, str],  # (latest edited or opened last)
    workspace: Workspace | None,
    index: SymbolIndex,
    recent_edits: Sequence[tuple[str, int, int]],
    budget: int,
    count_tokens: Callable[[str], int],
    windows: SimilarWindows | None = None,
) -> list[ContextChunk]:
    """The chunks of other files to show before the current one, best first, their tokens
    (count_tokens of each chunk's text) within `budget`. `window`: the current file's lines the
    prompt shows already. `recent_edits`: (path, first line, line after the last), newest last."""
    if budget <= 0:
        return []
    files = workspace.files() if workspace else {}
    windows = SimilarWindows() if windows is None else windows  # (one that holds none is falsy)
    place = _Place(path, text, open_documents, files, index, windows)
    uses, local = uses_near(path, text, cursor)
    known = _Paths([*open_documents, *place.files, *index.paths()])
    found = _Imports(imports(path, text, known), index)
    unused = _unused_imports(text, cursor, found)
    soon = {use.name for use in unused[:UNUSED_FIRST]}
    definitions = list(_definitions(place, uses, local, found, unused))
    outlines = list(_import_outlines(place, uses, found, soon))
    candidates = [
        *(c for c in definitions if c.soon),
        *(c for c in outlines if c.soon),  # (beside it: the rest of that module's API)
        *(c for c in definitions if not c.soon),
        *(c for c in outlines if not c.soon),
        *_similar(place, uses),
        *_recent(place, recent_edits),
    ]
    chosen: list[ContextChunk] = []
    taken: dict[str, list[tuple[int, int]]] = {path: [window]}
    left = budget
    for candidate in candidates[:MAX_CANDIDATES]:
        if candidate.path == path:  # (its copy on disk may be older than the text edited)
            continue
        variants = candidate.variants(taken.get(candidate.path, []))
        last = len(variants) - 1
        for number, (start, end, chunk, shows) in enumerate(variants):
            if not chunk.strip() or _overlaps(shows, taken.get(candidate.path, [])):
                continue
            tokens = count_tokens(chunk)
            if tokens > left or (tokens > budget * MAX_SHARE and number < last):
                continue  # a smaller stand-in may fit
            shown_as = _shown_path(candidate.path, path, workspace)
            score = round(candidate.score, 4)
            chosen.append(
                ContextChunk(shown_as, start, end, chunk, candidate.reason, score, tokens)
            )
            taken.setdefault(candidate.path, []).extend(shows)
            left -= tokens
            break
        if left <= 0:
            break
    return chosen


def _shown_path(path: str, current: str, workspace: Workspace | None) -> str:
    """The path the block names a file by: relative to the workspace folder, else to the folder
    it shares with the current file (`re/__init__.py` beside `json/decoder.py`, not a bare
    `__init__.py`), else its name."""
    if workspace is not None and workspace.contains(path):
        return workspace.relative(path)
    shared = _shared(path, current)
    if shared > 1 or (shared == 1 and not path.startswith("/")):
        return "/".join(path.split("/")[shared:])
    return posixpath.basename(path) or path


@dataclass
class _Place:
    """The current file, and where the other files' texts are read."""

    path: str
    text: str
    open_documents: Mapping[str, str]
    files: Mapping[str, str]  # the workspace's
    index: SymbolIndex
    windows: SimilarWindows  # of the open documents

    def text_of(self, path: str) -> str | None:
        text = self.open_documents.get(path)
        if text is None:
            text = self.files.get(path)
        return text if text is not None else self.index.text(path)


class _Imports:
    """The current file's imports, those that resolve to known files (`all`), and the names all
    its imports bind. A name imported from a module that resolves to no known file (an
    installed package, a `src/` layout, a vendored copy) is looked up by name instead
    (`by_name` holds it with no paths; `_definitions_of`), if the index defines it somewhere
    (`unresolved`): else it is no definition of the workspace's (a standard module's)."""

    def __init__(self, found: list[Import], index: SymbolIndex) -> None:
        self.bound = {n for i in found for n in [i.alias, *i.names] if n}
        self.all = [i for i in found if i.paths]
        self.by_alias = {i.alias: i for i in self.all if i.alias}
        self.by_name = {n: (i, original) for i in self.all for n, original in i.names.items()}
        self.star_paths = {p for i in self.all if i.star for p in i.paths}
        self.unresolved: list[tuple[str, str]] = []  # (local name, name in its module)
        for entry in found:
            if entry.paths:
                continue
            for local, original in entry.names.items():
                if local not in self.by_name and any(
                    not d.parent and names_module(entry.module, p)
                    for p, d in index.lookup(original)
                ):
                    self.by_name[local] = (entry, original)
                    self.unresolved.append((local, original))


def _definitions(
    place: _Place, uses: Mapping[str, Use], local: set[str], found: _Imports, unused: list[Use]
) -> Iterator[_Candidate]:
    """1. Definitions of the names imported and unused (the first few), of the names used near
    the cursor, then of the other unused ones."""
    assigned = {
        n for m in _SELF_ASSIGNMENT.finditer(place.text) for n in _SELF_ATTRIBUTE.findall(m[1])
    }
    local = local | found.bound | assigned
    ordered = sorted(
        (u for u in uses.values() if u.name not in local or u.name in found.by_name),
        key=lambda u: (u.distance, u.name),
    )
    seen: set[tuple[str, int]] = set()
    for number, use in enumerate([*unused[:UNUSED_FIRST], *ordered, *unused[UNUSED_FIRST:]]):
        about_to_be = use.distance < 0 and number < UNUSED_FIRST
        score = 1.0 / (1 + max(0, use.distance)) if use.distance >= 0 or about_to_be else 0.0
        for path, d in _definitions_of(use, place, found):
            parsed = place.index.text(path)
            if (path, d.start_line) in seen or parsed is None:
                continue
            seen.add((path, d.start_line))
            lines, defs = parsed.split("\n"), place.index.definitions(path)
            found_it = _definition_candidate(path, lines, d, defs, f"definition:{use.name}", score)
            found_it.soon = about_to_be
            yield found_it


def _import_outlines(
    place: _Place, uses: Mapping[str, Use], found: _Imports, soon: set[str]
) -> Iterator[_Candidate]:
    """2. The imported files' outlines: first those of the names about to be used (`soon`),
    then those whose names are used nearest first."""

    def nearest(entry: Import) -> tuple[int, int]:
        if soon & set(entry.names):
            return (-1, entry.line)
        distances = [uses[n].distance for n in [*entry.names, entry.alias] if n in uses]
        if entry.alias:
            distances += [u.distance for u in uses.values() if entry.alias in u.receivers]
        return (min(distances) if distances else 1 << 20, entry.line)

    for entry in sorted(found.all, key=nearest):
        target = entry.paths[0]
        parsed = place.index.text(target)
        defs = place.index.definitions(target) if parsed is not None else ()
        parsed = parsed if parsed is not None else place.text_of(target)
        if target == place.path or parsed is None:
            continue
        distance = nearest(entry)[0]
        score = 1.0 / (1 + max(0, distance)) if distance < 1 << 20 else 0.0
        outline = functools.partial(_module_outline, parsed.split("\n"), defs)
        yield _Candidate(target, f"import:{entry.module}", score, outline, distance < 0)


def _similar(place: _Place, uses: Mapping[str, Use]) -> Iterator[_Candidate]:
    """3. Chunks of open documents like the text around the cursor."""
    query = set(uses)
    if not query:
        return
    scored = []
    recent = [p for p in place.open_documents if p != place.path][-SIMILAR_DOCUMENTS:]
    for other in sorted(recent):
        for start, words in place.windows.of(other, place.open_documents[other]):
            union = len(query | words)
            score = len(query & words) / union if union else 0.0
            if score >= SIMILAR_MIN:
                scored.append((-score, other, start))
    for negative, other, start in sorted(scored)[:SIMILAR_MAX]:
        lines = place.open_documents[other].split("\n")
        end = min(len(lines), start + SIMILAR_LINES)
        chunk = "\n".join(lines[start:end])
        yield _Candidate(other, "similar", -negative, _fixed((start, end, chunk, [(start, end)])))


def _recent(place: _Place, recent_edits: Sequence[tuple[str, int, int]]) -> Iterator[_Candidate]:
    """4. Recently edited places, newest first, with RECENT_AROUND lines around them."""
    for age, (edited, first, last) in enumerate(reversed(recent_edits)):
        source = place.text_of(edited)
        lines = source.split("\n") if source is not None else []
        start = max(0, first - RECENT_AROUND)
        end = min(len(lines), max(last, first + 1) + RECENT_AROUND, start + RECENT_MAX_LINES)
        if start < end:
            chunk = "\n".join(lines[start:end])
            variant = (start, end, chunk, [(start, end)])
            yield _Candidate(edited, "recent_edit", 1.0 / (1 + age), _fixed(variant))


def _unused_imports(text: str, cursor: int, found: _Imports) -> list[Use]:
    """Names the file imports and uses nowhere else (about to be used), in import order. The
    word at the cursor is no use yet (the block must not change with each key)."""
    start, end = _partial_word(text, cursor)
    text = text[:start] + " " * (end - start) + text[end:]
    entries = {id(e): e for e, _name in found.by_name.values()}.values()  # (resolved or not)
    import_lines = {n for i in entries for n in range(i.line, i.line + i.lines)}
    rest = "\n".join(line for n, line in enumerate(text.split("\n")) if n not in import_lines)
    used = {n for n in found.by_name if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", rest)}
    return sorted(
        (
            Use(name, -1, True)
            for entry in entries
            for name in entry.names
            if name not in used and found.by_name.get(name, (None,))[0] is entry
        ),
        key=lambda use: found.by_name[use.name][0].line,  # (in import order)
    )


def _definitions_of(use: Use, place: _Place, found: _Imports) -> list[tuple[str, Definition]]:
    """Where the name is defined, as the current file's imports say, else anywhere (unless that
    is too many places to choose from)."""
    index = place.index
    unresolved = ""  # the module of a name imported from one that resolves to no known file
    if use.name in found.by_name:  # from m import name
        entry, original = found.by_name[use.name]
        hits = [(p, d) for p, d in index.lookup(original) if p in entry.paths and not d.parent]
        if hits:
            return hits[:PER_NAME]
        if not entry.paths:  # m resolves to no known file: the name, where m may be
            use, unresolved = Use(original, use.distance, True, use.receivers), entry.module
    for receiver in sorted(use.receivers):  # m.name, m imported
        module = found.by_alias.get(receiver)
        if module is not None:
            hits = [(p, d) for p, d in index.lookup(use.name) if p in module.paths and not d.parent]
            if hits:
                return hits[:PER_NAME]
    everywhere = [(p, d) for p, d in index.lookup(use.name) if p != place.path]
    if use.bare:  # a bare name: a top-level definition (else a member: a class attribute...)
        top = [(p, d) for p, d in everywhere if not d.parent]
        everywhere = top or everywhere
    elif use.name in COMMON_MEMBERS:
        return []
    else:  # only `x.name`, x no module imported: a member (a method, a field)
        everywhere = [(p, d) for p, d in everywhere if d.parent]
    starred = [(p, d) for p, d in everywhere if p in found.star_paths]
    if starred:
        return starred[:PER_NAME]
    if len(everywhere) > AMBIGUOUS:
        return []
    if unresolved:  # (`from requests import Session`: no class Session of an unrelated file)
        everywhere = [(p, d) for p, d in everywhere if names_module(unresolved, p)]
    return sorted(
        everywhere,
        key=lambda pd: (
            pd[0] not in place.open_documents,
            -_shared(pd[0], place.path),
            pd[0],
            pd[1].start_line,
        ),
    )[:PER_NAME]
