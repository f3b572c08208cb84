"""The architecture's boundaries, checked on the source: a violation fails this test.

1. spec_lsp.server never imports llama_cpp or an engine backend (it uses spec_lsp.engine).
2. spec_lsp.engine and spec_lsp.prompts never import pygls or lsprotocol.
3. Only spec_lsp/engine/backends/llama.py imports llama_cpp (and the benchmarks' baseline, which
   is plain llama-cpp-python itself).

Imports are read from the syntax tree: `import x`, `from x import y`, relative imports
(resolved against the file's package) and `importlib.import_module("x")` / `__import__("x")`
with a literal name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "spec_lsp"
LLAMA_BACKEND = "engine/backends/llama.py"
BASELINE = "bench/baseline.py"  # the benchmarks' plain llama-cpp-python (not our backend)


def _package(rel: str) -> list[str]:
    """The package a file belongs to, as name parts (spec_lsp/server/app.py -> spec_lsp.server)."""
    return ["spec_lsp", *rel.split("/")][:-1]  # for __init__.py too: its package is its folder


def statements(tree: ast.AST, package: list[str]) -> Iterator[tuple[str, list[str]]]:
    """Each import statement as (module, names): `import m` -> (m, []), `from m import a, b` ->
    (m, [a, b]), relative imports resolved against `package` (a file's package, as parts)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, [alias.name for alias in node.names]


def imports(path: Path, rel: str) -> set[str]:
    """Every module name the file imports, absolute, with `from m import n` also as `m.n`."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    for base, names in statements(tree, _package(rel)):
        found.add(base)
        found.update(f"{base}.{name}" for name in names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _is_dynamic_import(node.func):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return found


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def _under(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def violations(root: Path) -> list[str]:
    problems = []
    for path in sorted(p for p in root.rglob("*.py") if "samples" not in p.parts):
        rel = path.relative_to(root).as_posix()
        names = imports(path, rel)
        if rel not in (LLAMA_BACKEND, BASELINE) and any(_under(n, "llama_cpp") for n in names):
            problems.append(f"{rel} imports llama_cpp (only {LLAMA_BACKEND} may)")
        if rel.startswith(("engine/", "prompts/")) and any(
            _under(n, "pygls") or _under(n, "lsprotocol") for n in names
        ):
            problems.append(f"{rel} imports pygls/lsprotocol (the engine and prompts must not)")
        if rel.startswith("server/") and any(_under(n, "spec_lsp.engine.backends") for n in names):
            problems.append(f"{rel} imports an engine backend (the server uses spec_lsp.engine)")
    return problems


def test_the_project_respects_its_boundaries():
    checked = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")}
    assert {"server/app.py", "engine/engine.py", LLAMA_BACKEND} <= checked  # not vacuous
    assert violations(ROOT) == []


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("server/bad.py", "import llama_cpp\n"),
        ("server/bad.py", "import llama_cpp.llama_cpp as ll\n"),
        ("server/bad.py", "from spec_lsp.engine.backends.llama import LlamaModel\n"),
        ("server/bad.py", "from spec_lsp.engine.backends import llama\n"),
        ("server/bad.py", "from ..engine.backends import llama\n"),
        ("server/bad.py", "import importlib\nimportlib.import_module('llama_cpp')\n"),
        ("engine/bad.py", "from pygls.lsp.server import LanguageServer\n"),
        ("engine/bad.py", "def f():\n    from lsprotocol import types\n"),
        ("engine/sub/bad.py", "__import__('pygls')\n"),
        ("prompts/bad.py", "import lsprotocol.types\n"),
        ("engine/drafting2.py", "from llama_cpp import Llama\n"),
        ("cli2.py", "from llama_cpp import Llama\n"),
    ],
)
def test_the_checker_catches_violations(tmp_path, rel, source):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(source)
    assert len(violations(tmp_path)) == 1


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("engine/backends/llama.py", "import llama_cpp\n"),
        ("server/ok.py", "from spec_lsp.engine import build_engine\nimport pygls\n"),
        ("server/ok.py", "from . import convert\nfrom .scheduler import Scheduler\n"),
        ("engine/ok.py", "from .backends import fake\nimport llama_cpp_helpers_not\n"),
    ],
)
def test_the_checker_allows_what_is_allowed(tmp_path, rel, source):
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(source)
    assert violations(tmp_path) == []


def test_serving_with_the_fake_backend_never_loads_llama_cpp():
    """The transitive check: building and using the server pulls in neither llama_cpp nor the
    llama backend (the engine imports it lazily, only for backend='llama')."""
    script = (
        "import sys\n"
        "from spec_lsp.config import Settings\n"
        "from spec_lsp.engine import build_engine\n"
        "from spec_lsp.server.app import build_server\n"
        "engine = build_engine(Settings(), backend='fake')\n"
        "engine.load()\n"
        "build_server(Settings(), engine)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'llama_cpp'"
        " or m == 'spec_lsp.engine.backends.llama']\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
