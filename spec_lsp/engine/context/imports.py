"""The current file's imports (Python, JavaScript/TypeScript, C/C++ quoted includes) and the
known files each resolves to."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from spec_lsp.paths import js_module_candidates

PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
JS_IMPORT = re.compile(
    r"""^[ \t]*(?:import|export)[ \t]+(?:type[ \t]+)?([\w$*{},\s]+?)[ \t]+from[ \t]+['"]([^'"]+)['"]""",
    re.M,
)
JS_REQUIRE = re.compile(
    r"""(?:const|let|var)[ \t]+([\w$]+|\{[^}]*\})[ \t]*=[ \t]*require\(['"]([^'"]+)['"]\)"""
)
C_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


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


class KnownPaths:
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
        return sorted(found, key=lambda p: (-shared_folders(p, near), p))[:1]


def shared_folders(a: str, b: str) -> int:
    """How many leading folders two paths share."""
    count = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1]):
        if x != y:
            break
        count += 1
    return count


def imports(path: str, text: str, paths: KnownPaths) -> list[Import]:
    """The current file's imports (Python, JavaScript/TypeScript, C/C++ quoted includes)."""
    ext = os.path.splitext(path)[1].lower()
    if ext in (".py", ".pyi", ".pyw"):
        return _python_imports(path, text, paths)
    if ext in (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"):
        return _js_imports(path, text, paths)
    if ext in (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"):
        found = []
        for match in C_INCLUDE.finditer(text):
            name = match.group(1)
            here = paths.first([posixpath.normpath(posixpath.join(posixpath.dirname(path), name))])
            resolved = here or paths.ending(name, path)
            found.append(Import(name, text.count("\n", 0, match.start()), resolved, star=True))
        return found
    return []


def _python_module(path: str, module: str, paths: KnownPaths) -> list[str]:
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


def _python_imports(path: str, text: str, paths: KnownPaths) -> list[Import]:
    found: list[Import] = []
    for match in PY_IMPORT.finditer(text):
        line = text.count("\n", 0, match.start())
        for part in match.group(1).split(","):
            words = part.split()
            if not words:
                continue
            module = words[0]
            alias = words[2] if len(words) == 3 and words[1] == "as" else module.split(".")[0]
            found.append(Import(module, line, _python_module(path, module, paths), alias=alias))
    for match in PY_FROM.finditer(text):
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


def _js_imports(path: str, text: str, paths: KnownPaths) -> list[Import]:
    found: list[Import] = []
    pairs = [(m.group(1), m.group(2), m.start()) for m in JS_IMPORT.finditer(text)]
    pairs += [(m.group(1), m.group(2), m.start()) for m in JS_REQUIRE.finditer(text)]
    for clause, spec, at in sorted(pairs, key=lambda p: p[2]):
        lines = clause.count("\n") + 1
        stem = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        candidates = js_module_candidates(stem)
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
